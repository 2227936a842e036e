package provision

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
)

// TaskError is a provisioning run that failed at a task (or could not reach the host).
type TaskError struct {
	Instance string
	Host     string
	Task     string
	Role     string
	// Message is the task's failure message (bounded).
	Message     string
	Unreachable bool
}

func (e *TaskError) Error() string {
	what := "failed at task"
	if e.Unreachable {
		what = "lost the host at task"
	}
	return fmt.Sprintf("provisioning %q: host %s %s %q: %s", e.Instance, e.Host, what, e.Task, e.Message)
}

// PlaybookError is ansible-playbook refusing the playbook itself (YAML or syntax error, missing role,
// bad variable file) before any play ran.
type PlaybookError struct {
	Playbook string
	ExitCode int
	Message  string
}

func (e *PlaybookError) Error() string {
	return fmt.Sprintf("ansible-playbook rejected %s (exit code %d): %s", e.Playbook, e.ExitCode, e.Message)
}

type runSpec struct {
	ansible  string
	endpoint controlplane.SSHEndpoint
	hostKey  ssh.PublicKey
	playbook string
	vars     map[string]any
	hostName string
	instance string
	key      []byte
	log      func(string, map[string]any)
}

type runOutcome struct {
	failedTask string
	message    string
}

// hostStats is one host's line of the recap.
type hostStats struct {
	OK          int `json:"ok"`
	Changed     int `json:"changed"`
	Failures    int `json:"failures"`
	Unreachable int `json:"unreachable"`
	Skipped     int `json:"skipped"`
	Rescued     int `json:"rescued"`
	Ignored     int `json:"ignored"`
}

type event struct {
	Event        string               `json:"event"`
	Task         string               `json:"task"`
	Role         string               `json:"role"`
	Action       string               `json:"action"`
	Host         string               `json:"host"`
	Handler      bool                 `json:"handler"`
	IgnoreErrors bool                 `json:"ignore_errors"`
	Play         string               `json:"play"`
	Attempt      any                  `json:"attempt"`
	Retries      any                  `json:"retries"`
	Result       map[string]any       `json:"result"`
	Stats        map[string]hostStats `json:"stats"`
}

// eventWriter receives ansible-playbook's stdout (JSON lines from the hydra_jsonl callback).
type eventWriter struct {
	mu       sync.Mutex
	buf      []byte
	handle   func(event)
	raw      func(string)
	overflow bool
}

const maxLine = 8 << 20

func (w *eventWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		line := w.buf[:i]
		if !w.overflow {
			w.line(line)
		}
		w.overflow = false
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > maxLine {
		w.buf = w.buf[:0]
		w.overflow = true
	}
	return len(p), nil
}

func (w *eventWriter) line(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	if line[0] == '{' {
		var ev event
		if err := json.Unmarshal(line, &ev); err == nil && ev.Event != "" {
			w.handle(ev)
			return
		}
	}
	w.raw(string(line))
}

// tailBuffer keeps the last n bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	n   int
	buf []byte
	fn  func(string)
	acc []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.n {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.n:]...)
	}
	t.acc = append(t.acc, p...)
	for {
		i := bytes.IndexByte(t.acc, '\n')
		if i < 0 {
			break
		}
		if s := strings.TrimSpace(string(t.acc[:i])); s != "" && t.fn != nil {
			t.fn(s)
		}
		t.acc = t.acc[i+1:]
	}
	if len(t.acc) > 64<<10 {
		t.acc = t.acc[:0]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// tempBase returns where per-run directories go: short paths, because ssh control sockets are limited
// to about 104 bytes.
func (r *Runner) tempBase() string {
	if r.cfg.TempDir != "" {
		return r.cfg.TempDir
	}
	if d := os.TempDir(); len(d) <= 40 {
		return d
	}
	return "/tmp"
}

// shellQuote quotes one argument for the shlex splitting Ansible applies to ssh arguments.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-=:,+@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

// run writes the per-run directory, runs ansible-playbook and classifies the outcome.
func (r *Runner) run(ctx context.Context, spec runSpec) (runOutcome, error) {
	var out runOutcome
	dir, err := os.MkdirTemp(r.tempBase(), "hydra-")
	if err != nil {
		return out, fmt.Errorf("provisioning: temporary directory: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o700); err != nil {
		return out, err
	}
	cp := filepath.Join(dir, "cp")
	defer closeMasters(cp)

	pbDir, err := r.stagePlaybooks(dir)
	if err != nil {
		return out, err
	}
	files, err := writeRunFiles(dir, pbDir, spec)
	if err != nil {
		return out, err
	}

	cmd := exec.Command(spec.ansible, "-i", files.inventory, "-e", "@"+files.vars, filepath.Join(pbDir, filepath.FromSlash(spec.playbook)))
	cmd.Dir = dir
	cmd.Env = append(ansibleBaseEnv(),
		"ANSIBLE_CONFIG="+files.config,
		"ANSIBLE_HOME="+filepath.Join(dir, "home"),
		"ANSIBLE_LOCAL_TEMP="+filepath.Join(dir, "tmp"),
		"ANSIBLE_SSH_CONTROL_PATH_DIR="+cp,
		"ANSIBLE_STDOUT_CALLBACK=hydra_jsonl",
		"ANSIBLE_CALLBACK_PLUGINS="+filepath.Join(dir, "cb"),
		"ANSIBLE_HOST_KEY_CHECKING=True",
		"ANSIBLE_PIPELINING=True",
		"ANSIBLE_RETRY_FILES_ENABLED=False",
		"ANSIBLE_NOCOLOR=1",
		"ANSIBLE_FORCE_COLOR=0",
	)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second

	var (
		mu       sync.Mutex
		stats    map[string]hostStats
		sawPlay  bool
		lastTask string
		failure  *TaskError
		unreach  *TaskError
	)
	handle := func(ev event) {
		mu.Lock()
		defer mu.Unlock()
		fields := map[string]any{}
		if ev.Task != "" {
			fields["task"] = ev.Task
		}
		if ev.Role != "" {
			fields["role"] = ev.Role
		}
		switch ev.Event {
		case "play_start":
			sawPlay = true
			spec.log("play started", map[string]any{"play": ev.Play})
		case "task_start":
			lastTask = ev.Task
			if ev.Handler {
				fields["handler"] = true
			}
			spec.log("task started", fields)
		case "ok":
			fields["changed"] = ev.Result["changed"] == true
			if m, ok := ev.Result["msg"]; ok {
				fields["msg"] = cut(fmt.Sprint(m), 300)
			}
			spec.log("task ok", fields)
		case "skipped":
			spec.log("task skipped", fields)
		case "retry":
			fields["attempt"], fields["retries"] = ev.Attempt, ev.Retries
			spec.log("task retrying", fields)
		case "failed", "unreachable":
			msg := failureMessage(ev.Result)
			fields["msg"] = cut(msg, 300)
			te := &TaskError{Host: ev.Host, Task: ev.Task, Role: ev.Role, Message: cut(msg, summaryLimit), Unreachable: ev.Event == "unreachable"}
			if ev.Event == "unreachable" {
				unreach = te
				spec.log("host unreachable", fields)
			} else if ev.IgnoreErrors {
				fields["ignored"] = true
				spec.log("task failed (ignored)", fields)
			} else {
				failure = te
				spec.log("task failed", fields)
			}
		case "stats":
			stats = ev.Stats
		}
	}
	stdout := &eventWriter{handle: handle, raw: func(s string) { r.logger.Debug("ansible-playbook output", "line", cut(s, 2000)) }}
	stderr := &tailBuffer{n: 8 << 10, fn: func(s string) { r.logger.Debug("ansible-playbook stderr", "line", cut(s, 2000)) }}
	cmd.Stdout, cmd.Stderr = stdout, stderr

	spec.log("running playbook", map[string]any{"playbook": spec.playbook})
	if err := cmd.Start(); err != nil {
		return out, fmt.Errorf("start ansible-playbook: %w", err)
	}
	pgid := cmd.Process.Pid
	done := make(chan struct{})
	cancelled := make(chan struct{})
	go func() {
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		close(cancelled)
		r.logger.Info("cancelling ansible-playbook", "pgid", pgid)
		_ = syscall.Kill(-pgid, syscall.SIGINT)
		t := time.NewTimer(r.cfg.CancelGrace)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}()
	waitErr := cmd.Wait()
	close(done)
	wasCancelled := false
	select {
	case <-cancelled:
		wasCancelled = true
		// Whatever is left of the group (workers, ssh children) goes too.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	default:
	}
	rc := 0
	if cmd.ProcessState != nil {
		rc = cmd.ProcessState.ExitCode()
	}
	if waitErr != nil && cmd.ProcessState == nil {
		rc = -1
	}

	mu.Lock()
	defer mu.Unlock()
	name := spec.instance
	clean := stats != nil && len(stats) > 0
	for _, s := range stats {
		if s.Failures > 0 || s.Unreachable > 0 {
			clean = false
		}
	}
	if rc == 0 && clean {
		// Success is success, even when a cancellation arrived as the run was finishing.
		spec.log("playbook succeeded", map[string]any{"playbook": spec.playbook})
		return out, nil
	}
	if wasCancelled {
		// Recorded by us: ansible's own exit code (4 or 99, timing dependent) does not say it.
		out.failedTask = lastTask
		out.message = "cancelled"
		at := ""
		if lastTask != "" {
			at = fmt.Sprintf(" during task %q", lastTask)
		}
		return out, fmt.Errorf("provisioning %q cancelled%s (the machine may be half-provisioned; re-running is safe): %w", name, at, ctx.Err())
	}
	stderrText := strings.TrimSpace(stderr.String())
	switch {
	case unreach != nil:
		unreach.Instance = name
		out.failedTask, out.message = unreach.Task, unreach.Message
		if isHostKeyFailure(unreach.Message) {
			return out, &controlplane.PermanentError{Err: unreach}
		}
		return out, unreach
	case failure != nil:
		failure.Instance = name
		out.failedTask, out.message = failure.Task, failure.Message
		return out, failure
	case !sawPlay:
		msg := ansibleErrorText(stderrText)
		out.message = cut(msg, summaryLimit)
		return out, &controlplane.PermanentError{Err: &PlaybookError{Playbook: spec.playbook, ExitCode: rc, Message: out.message}}
	case stats == nil:
		msg := ansibleErrorText(stderrText)
		out.failedTask, out.message = lastTask, cut(msg, summaryLimit)
		return out, fmt.Errorf("provisioning %q: ansible-playbook stopped (exit code %d) without a result after task %q: %s", name, rc, lastTask, out.message)
	default:
		msg := ansibleErrorText(stderrText)
		out.message = cut(msg, summaryLimit)
		return out, fmt.Errorf("provisioning %q: ansible-playbook exited with code %d: %s", name, rc, out.message)
	}
}

// failureMessage builds a one-paragraph message from a failed result.
func failureMessage(res map[string]any) string {
	str := func(k string) string {
		v, ok := res[k]
		if !ok || v == nil {
			return ""
		}
		if s, ok := v.(string); ok {
			return strings.TrimSpace(s)
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	parts := []string{}
	msg := str("msg")
	if msg != "" {
		parts = append(parts, msg)
	}
	if im := str("item_msg"); im != "" {
		parts = append(parts, im)
	}
	if se := str("stderr"); se != "" && (msg == "" || strings.Contains(msg, "non-zero return code") || strings.Contains(msg, "MODULE FAILURE")) {
		parts = append(parts, se)
	} else if ms := str("module_stderr"); ms != "" && strings.Contains(msg, "MODULE FAILURE") {
		parts = append(parts, ms)
	}
	if len(parts) == 0 {
		if so := str("stdout"); so != "" {
			parts = append(parts, so)
		}
	}
	if rc := str("rc"); rc != "" && rc != "0" && msg == "non-zero return code" {
		parts[0] = "non-zero return code " + rc
	}
	if len(parts) == 0 {
		return "the task failed without a message"
	}
	return strings.Join(parts, ": ")
}

func isHostKeyFailure(msg string) bool {
	return strings.Contains(msg, "REMOTE HOST IDENTIFICATION HAS CHANGED") ||
		strings.Contains(msg, "Host key verification failed") ||
		strings.Contains(msg, "host key for") && strings.Contains(msg, "has changed")
}

// ansibleErrorText picks the useful part of ansible-playbook's stderr: from the first "ERROR!" on,
// else its last lines.
func ansibleErrorText(stderr string) string {
	if i := strings.Index(stderr, "ERROR!"); i >= 0 {
		return strings.TrimSpace(stderr[i:])
	}
	if i := strings.Index(stderr, "[ERROR]"); i >= 0 {
		return strings.TrimSpace(stderr[i:])
	}
	lines := strings.Split(stderr, "\n")
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	s := strings.TrimSpace(strings.Join(lines, "\n"))
	if s == "" {
		return "no error output"
	}
	return s
}

type runFiles struct {
	config, inventory, vars string
}

// stagePlaybooks returns the directory holding the playbooks: the user's own directory as it is, or
// the embedded tree copied under dir/pb.
func (r *Runner) stagePlaybooks(dir string) (string, error) {
	if r.cfg.PlaybookDir != "" {
		return filepath.Abs(r.cfg.PlaybookDir)
	}
	pb := filepath.Join(dir, "pb")
	err := fs.WalkDir(r.fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(pb, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(target, 0o700)
		}
		b, err := fs.ReadFile(r.fsys, p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o600)
	})
	if err != nil {
		return "", fmt.Errorf("provisioning: stage playbooks: %w", err)
	}
	return pb, nil
}

func writeRunFiles(dir, pbDir string, spec runSpec) (runFiles, error) {
	var f runFiles
	for _, d := range []string{"cp", "cb", "tmp", "home"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return f, err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "cb", "hydra_jsonl.py"), callbackPlugin, 0o600); err != nil {
		return f, err
	}
	key := filepath.Join(dir, "id")
	pem := append([]byte(nil), spec.key...)
	if len(pem) > 0 && pem[len(pem)-1] != '\n' {
		pem = append(pem, '\n') // OpenSSH rejects a key file without its final newline
	}
	if err := os.WriteFile(key, pem, 0o600); err != nil {
		return f, err
	}
	ep := spec.endpoint
	known := filepath.Join(dir, "known_hosts")
	// "host" for port 22, "[host]:port" otherwise: what ssh looks up.
	line := knownhosts.Line([]string{knownhosts.Normalize(net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port)))}, spec.hostKey)
	if err := os.WriteFile(known, []byte(line+"\n"), 0o600); err != nil {
		return f, err
	}
	sshArgs := strings.Join([]string{
		"-o", "UserKnownHostsFile=" + shellQuote(known),
		"-o", "GlobalKnownHostsFile=/dev/null",
		"-o", "StrictHostKeyChecking=yes",
		"-o", "HostKeyAlgorithms=" + strings.Join(hostKeyAlgorithms(spec.hostKey.Type()), ","),
		"-o", "CheckHostIP=no",
		"-o", "UpdateHostKeys=no",
		"-o", "IdentitiesOnly=yes",
		"-o", "IdentityAgent=none",
		"-o", "BatchMode=yes",
		"-o", "ServerAliveInterval=15",
		"-o", "ServerAliveCountMax=4",
	}, " ")
	inv := map[string]any{
		"all": map[string]any{
			"hosts": map[string]any{
				spec.hostName: map[string]any{
					"ansible_host":                 ep.Host,
					"ansible_port":                 ep.Port,
					"ansible_user":                 ep.User,
					"ansible_ssh_private_key_file": key,
					"ansible_ssh_common_args":      sshArgs,
				},
			},
			"vars": map[string]any{
				"ansible_python_interpreter": "auto_silent",
				"ansible_connection":         "ssh",
			},
		},
	}
	f.inventory = filepath.Join(dir, "inventory.json")
	if err := writeJSON(f.inventory, inv); err != nil {
		return f, err
	}
	f.vars = filepath.Join(dir, "vars.json")
	if err := writeJSON(f.vars, spec.vars); err != nil {
		return f, err
	}
	cfg := strings.Join([]string{
		"# written by hydra for one provisioning run",
		"[defaults]",
		"stdout_callback = hydra_jsonl",
		"callback_plugins = " + filepath.Join(dir, "cb"),
		"host_key_checking = True",
		"retry_files_enabled = False",
		"nocolor = True",
		"timeout = 30",
		"forks = 5",
		"interpreter_python = auto_silent",
		"local_tmp = " + filepath.Join(dir, "tmp"),
		"roles_path = " + filepath.Join(pbDir, "roles"),
		"[ssh_connection]",
		"pipelining = True",
		"usetty = False",
		"control_path_dir = " + filepath.Join(dir, "cp"),
		"ssh_args = -C -o ControlMaster=auto -o ControlPersist=60s",
		"",
	}, "\n")
	f.config = filepath.Join(dir, "ansible.cfg")
	return f, os.WriteFile(f.config, []byte(cfg), 0o600)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o600)
}

// closeMasters asks every ssh connection master left in the control directory to exit, so no
// connection outlives the run (and none can be reused by a later run without a host key check).
func closeMasters(cp string) {
	entries, err := os.ReadDir(cp)
	if err != nil || len(entries) == 0 {
		return
	}
	sshBin, err := exec.LookPath("ssh")
	if err != nil {
		return
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	for _, n := range names {
		sock := filepath.Join(cp, n)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cmd := exec.CommandContext(ctx, sshBin, "-o", "ControlPath="+sock, "-O", "exit", "hydra-mux")
		cmd.Env = ansibleBaseEnv()
		_ = cmd.Run()
		cancel()
	}
}
