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
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/osproc"
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

// runSpec is one machine's part of a batch.
type runSpec struct {
	endpoint cloudprovider.SSHEndpoint
	hostKey  ssh.PublicKey
	// jump and jumpKey are the endpoint's jump host (defaults applied) and its pinned key; nil: none.
	jump     *cloudprovider.SSHEndpoint
	jumpKey  ssh.PublicKey
	vars     map[string]any
	hostName string
	instance string
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

// shellQuote quotes one argument for a POSIX shell (and the shlex splitting Ansible applies to ssh
// arguments).
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') && !strings.ContainsRune("/._-=:,+@", r)
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

// buildCommand returns the ansible-playbook command of a batch: the run's inventory and configuration
// (every host's variables are loaded by the batch playbook), an environment free of the caller's
// ANSIBLE_* settings, and its own process group.
func buildCommand(ansible string, checkMode bool, dir *runDir) *exec.Cmd {
	args := []string{"-i", dir.files.inventory}
	if checkMode {
		// --diff: the modules say what they would change (the events carry the paths, never content).
		args = append(args, "--check", "--diff")
	}
	cmd := exec.Command(ansible, append(args, dir.files.playbook)...)
	cmd.Dir = dir.path
	cmd.Env = append(ansibleBaseEnv(),
		"ANSIBLE_CONFIG="+dir.files.config,
		"ANSIBLE_HOME="+filepath.Join(dir.path, "home"),
		"ANSIBLE_LOCAL_TEMP="+filepath.Join(dir.path, "tmp"),
		"ANSIBLE_SSH_CONTROL_PATH_DIR="+dir.cp,
		"ANSIBLE_STDOUT_CALLBACK=hydra_jsonl",
		"ANSIBLE_CALLBACK_PLUGINS="+filepath.Join(dir.path, "cb"),
		// The callback compiles each template once per run (see hydra_jsonl.py), kept here.
		"HYDRA_TEMPLATE_CACHE="+filepath.Join(dir.path, "jinja"),
		"ANSIBLE_HOST_KEY_CHECKING=True",
		"ANSIBLE_PIPELINING=True",
		"ANSIBLE_RETRY_FILES_ENABLED=False",
		"ANSIBLE_NOCOLOR=1",
		"ANSIBLE_FORCE_COLOR=0",
	)
	// ansible-playbook leads its own process group, so cancellation stops it with every worker and ssh
	// client it forked, and (on Linux) the kernel SIGKILLs it when the provider dies, however it dies;
	// elsewhere the run's guardian stops the group. This package never uses runtime.LockOSThread.
	cmd.SysProcAttr = osproc.NewGroupDyingWith(osproc.Kill)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// execute starts cmd and waits for it. When ctx ends first, the process group gets SIGINT, then
// SIGKILL after the cancel grace, and whatever is left of the group goes when the leader has exited.
// started receives the process group as soon as it exists. It returns the exit code (-1 when the
// process was killed by a signal) and whether the run was cancelled; err is set only when the command
// could not start.
func (r *Runner) execute(ctx context.Context, cmd *exec.Cmd, started func(pgid int)) (rc int, cancelled bool, err error) {
	if err := cmd.Start(); err != nil {
		return 0, false, fmt.Errorf("start ansible-playbook: %w", err)
	}
	pgid := cmd.Process.Pid
	if started != nil {
		started(pgid)
	}
	done := make(chan struct{})
	cancelling := make(chan struct{})
	go func() {
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		close(cancelling)
		r.logger.Info("cancelling ansible-playbook", "pgid", pgid)
		_ = osproc.SignalGroup(pgid, osproc.Interrupt)
		t := time.NewTimer(r.cfg.CancelGrace)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			_ = osproc.SignalGroup(pgid, osproc.Kill)
		}
	}()
	waitErr := cmd.Wait()
	close(done)
	select {
	case <-cancelling:
		cancelled = true
		// Whatever is left of the group (workers, ssh children) goes too.
		_ = osproc.SignalGroup(pgid, osproc.Kill)
	default:
	}
	if cmd.ProcessState != nil {
		rc = cmd.ProcessState.ExitCode()
	}
	if waitErr != nil && cmd.ProcessState == nil {
		rc = -1
	}
	return rc, cancelled, nil
}

// eventLog follows a run's events: it logs them and keeps what the outcome is decided from.
type eventLog struct {
	log func(string, map[string]any)

	mu sync.Mutex
	f  runEvents
}

// runEvents is what a run's events said.
type runEvents struct {
	// SawPlay is set once a play started (so the playbook itself was accepted).
	SawPlay bool
	// LastTask is the last task started.
	LastTask string
	// Failure is the last failed task whose error was not ignored; Unreachable the last unreachable host.
	Failure, Unreachable *TaskError
	// Stats is the final recap, nil when the run ended without one.
	Stats map[string]hostStats
}

func (l *eventLog) handle(ev event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fields := map[string]any{}
	if ev.Task != "" {
		fields["task"] = ev.Task
	}
	if ev.Role != "" {
		fields["role"] = ev.Role
	}
	switch ev.Event {
	case "play_start":
		l.f.SawPlay = true
		l.log("play started", map[string]any{"play": ev.Play})
	case "task_start":
		l.f.LastTask = ev.Task
		if ev.Handler {
			fields["handler"] = true
		}
		l.log("task started", fields)
	case "ok":
		fields["changed"] = ev.Result["changed"] == true
		if m, ok := ev.Result["msg"]; ok {
			fields["msg"] = cut(fmt.Sprint(m), 300)
		}
		if d, ok := ev.Result["diff"]; ok {
			fields["diff"] = d
		}
		l.log("task ok", fields)
	case "skipped":
		l.log("task skipped", fields)
	case "retry":
		fields["attempt"], fields["retries"] = ev.Attempt, ev.Retries
		l.log("task retrying", fields)
	case "failed", "unreachable":
		msg := failureMessage(ev.Result)
		fields["msg"] = cut(msg, 300)
		te := &TaskError{Host: ev.Host, Task: ev.Task, Role: ev.Role, Message: cut(msg, summaryLimit), Unreachable: ev.Event == "unreachable"}
		if ev.Event == "unreachable" {
			l.f.Unreachable = te
			l.log("host unreachable", fields)
		} else if ev.IgnoreErrors {
			fields["ignored"] = true
			l.log("task failed (ignored)", fields)
		} else {
			l.f.Failure = te
			l.log("task failed", fields)
		}
	case "stats":
		l.f.Stats = ev.Stats
	}
}

func (l *eventLog) facts() runEvents {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f
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
	// A task that failed inside Ansible's own machinery says what went wrong only in its exception (a
	// traceback: its last line is the type and message): that line, or the type alone when the message
	// already says the rest (ansible-core 2.19's "Task failed: <message>").
	if exc := exceptionLine(str("exception")); exc != "" && !strings.Contains(msg, exc) {
		typ, text := splitException(exc)
		switch {
		case typ == "":
			if msg == "" { // not a traceback ("(traceback unavailable)"), yet all there is
				parts = append(parts, exc)
			}
		case text != "" && strings.Contains(msg, text):
			parts[0] = msg + " (" + typ + ")"
		default:
			parts = append(parts, exc)
		}
	}
	if item := itemFailure(str); item != "" {
		parts = append(parts, item)
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

// exceptionLine is the line of a Python traceback that gives the exception's type and message: of a
// chain of exceptions ("The above exception was the direct cause ...", as ansible-core 2.19's
// AnsibleTaskError wraps the error), the first, the cause. Text that is no traceback is given whole.
func exceptionLine(traceback string) string {
	traceback = strings.TrimSpace(traceback)
	for _, line := range strings.Split(traceback, "\n") {
		if line == "" || line[0] == ' ' || line[0] == '\t' || strings.HasPrefix(line, "Traceback ") {
			continue
		}
		if typ, _ := splitException(strings.TrimSpace(line)); typ != "" {
			return strings.TrimSpace(line)
		}
	}
	lines := strings.Split(traceback, "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// exceptionType matches a Python exception's (qualified) type name.
var exceptionType = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.]*$`)

// splitException splits an exception line into its type and message ("TypeError", "x" of
// "TypeError: x"); the type is "" when the line is not an exception's.
func splitException(line string) (typ, text string) {
	typ, text, _ = strings.Cut(line, ": ")
	if !exceptionType.MatchString(typ) {
		return "", line
	}
	return typ, text
}

// itemFailure is what the failed item of a loop said ("" when the task was no loop): its label, its
// message (with its exit code) and what its command printed on stderr, so that a loop's failure reads
// more than "One or more items failed".
func itemFailure(str func(string) string) string {
	msg, stderr := str("item_msg"), str("item_stderr")
	if stderr == "" && strings.Contains(msg, "MODULE FAILURE") {
		stderr = str("item_module_stderr")
	}
	if msg == "" && stderr == "" {
		return ""
	}
	if rc := str("item_rc"); rc != "" && rc != "0" && msg == "non-zero return code" {
		msg += " " + rc
	}
	text := msg
	if stderr != "" && stderr != msg {
		if text != "" {
			text += ": "
		}
		text += stderr
	}
	if label := str("item"); label != "" {
		text = "item " + label + ": " + text
	}
	return text
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
	config, inventory, playbook string
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

// controlPersist is how long an idle ssh master waits for the next task. The run closes its masters
// itself when it ends (closeMasters), so this only bounds a master whose run could not: short, yet
// longer than the pause between two tasks.
const controlPersist = "15s"

// batchPlayName names the batch playbook's first play, which loads each host's variables.
const batchPlayName = "hydra: load each machine's variables"

// batchDoneTask names the batch playbook's last task: a host that runs it reached the end of the
// pool's playbook (hosts that failed or were lost are out of later plays, and so is every host that
// a playbook stopped on another host's failure).
const batchDoneTask = "hydra: the machine reached the end of the playbook"

// batchPlaybook is the playbook a batch runs: a first play (on the controller only, no connection)
// loads each host's own variables file, then the pool's playbook is imported, then a last play (on
// the controller only) notes which hosts reached the end. Variables loaded by include_vars stay with
// the host for the rest of the run, above the playbook's vars_files, play and role variables (as
// extra variables were when every machine had its own run).
const batchPlaybook = `# written by hydra for one provisioning batch
- name: "` + batchPlayName + `"
  hosts: all
  gather_facts: false
  tasks:
    - name: Load this machine's variables
      ansible.builtin.include_vars:
        file: "{{ hydra_batch_vars_file }}"
- import_playbook: %s
- name: "hydra: note the machines that reached the end"
  hosts: all
  gather_facts: false
  tasks:
    - name: "` + batchDoneTask + `"
      ansible.builtin.set_fact:
        hydra_batch_done: true
`

// pinnedSSHOptions are the ssh options of every connection a run makes: the host key checked strictly
// against knownHosts only (key's type asked for), the given key file alone, no agent, no prompt.
func pinnedSSHOptions(knownHosts string, key ssh.PublicKey) []string {
	return []string{
		"-o", "UserKnownHostsFile=" + shellQuote(knownHosts),
		"-o", "GlobalKnownHostsFile=/dev/null",
		"-o", "StrictHostKeyChecking=yes",
		"-o", "HostKeyAlgorithms=" + strings.Join(hostKeyAlgorithms(key.Type()), ","),
		"-o", "CheckHostIP=no",
		"-o", "UpdateHostKeys=no",
		"-o", "IdentitiesOnly=yes",
		"-o", "IdentityAgent=none",
		"-o", "BatchMode=yes",
		"-o", "ServerAliveInterval=15",
		"-o", "ServerAliveCountMax=4",
	}
}

// proxyOption is the ssh option that reaches a machine through its jump host (none without one): a
// ProxyCommand running `ssh -W %h:%p` to the jump host with the same private key and known_hosts file
// and the same strict checking of the jump's pinned key (ProxyJump would not carry these options to
// the jump's connection). The option is one word for Ansible's shlex split of ansible_ssh_common_args.
// It must not contain "ControlPath": Ansible's ssh plugin takes any argument that does for a control
// path of its own and then sets none, and every task would log in anew through the jump host (two SSH
// handshakes a task) instead of using the machine's control socket; the proxy's ssh is kept off any
// socket with -S none.
func proxyOption(spec runSpec, keyFile, knownHosts string) []string {
	j := spec.jump
	if j == nil {
		return nil
	}
	args := append([]string{"ssh", "-F", "/dev/null", "-i", shellQuote(keyFile)}, pinnedSSHOptions(knownHosts, spec.jumpKey)...)
	args = append(args, "-o", "ControlMaster=no", "-S", "none", "-p", strconv.Itoa(j.Port), "-l", shellQuote(j.User), shellQuote(j.Host))
	// ssh expands %-tokens in a ProxyCommand: a literal % is %%; %h:%p is the machine's address.
	cmd := strings.ReplaceAll(strings.Join(args, " "), "%", "%%") + " -W %h:%p"
	return []string{"-o", shellQuote("ProxyCommand=" + cmd)}
}

// writeRunFiles writes a batch's files into dir: the callback, the private key, per host a
// known_hosts file holding only that host's pinned key and a variables file, the inventory (each host
// with its own known_hosts and ssh control socket), the batch playbook and ansible.cfg.
func writeRunFiles(dir, pbDir string, key []byte, playbook string, hosts []*member) (runFiles, error) {
	var f runFiles
	for _, d := range []string{"cp", "cb", "strategy", "tmp", "home", "hosts"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return f, err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "cb", "hydra_jsonl.py"), callbackPlugin, 0o600); err != nil {
		return f, err
	}
	if err := os.WriteFile(filepath.Join(dir, "strategy", "hydra_free.py"), strategyPlugin, 0o600); err != nil {
		return f, err
	}
	keyFile := filepath.Join(dir, "id")
	pem := append([]byte(nil), key...)
	if len(pem) > 0 && pem[len(pem)-1] != '\n' {
		pem = append(pem, '\n') // OpenSSH rejects a key file without its final newline
	}
	if err := os.WriteFile(keyFile, pem, 0o600); err != nil {
		return f, err
	}
	invHosts := map[string]any{}
	for i, m := range hosts {
		ep := m.spec.endpoint
		m.knownHosts = filepath.Join(dir, "hosts", strconv.Itoa(i)+".known_hosts")
		m.controlPath = filepath.Join(dir, "cp", strconv.Itoa(i))
		// "host" for port 22, "[host]:port" otherwise: what ssh looks up.
		lines := knownhosts.Line([]string{knownhosts.Normalize(net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port)))}, m.spec.hostKey) + "\n"
		if j := m.spec.jump; j != nil {
			// The jump host's pinned key in the same file: the proxy's ssh checks it there.
			lines += knownhosts.Line([]string{knownhosts.Normalize(net.JoinHostPort(j.Host, strconv.Itoa(j.Port)))}, m.spec.jumpKey) + "\n"
		}
		if err := os.WriteFile(m.knownHosts, []byte(lines), 0o600); err != nil {
			return f, err
		}
		varsFile := filepath.Join(dir, "hosts", strconv.Itoa(i)+".vars.json")
		if err := writeJSON(varsFile, m.spec.vars); err != nil {
			return f, err
		}
		sshArgs := strings.Join(append(pinnedSSHOptions(m.knownHosts, m.spec.hostKey), proxyOption(m.spec, keyFile, m.knownHosts)...), " ")
		invHosts[m.host] = map[string]any{
			"ansible_host":                 ep.Host,
			"ansible_port":                 ep.Port,
			"ansible_user":                 ep.User,
			"ansible_ssh_private_key_file": keyFile,
			"ansible_ssh_common_args":      sshArgs,
			// One control socket per host, so that one host can be cut off alone (cutOff).
			"ansible_control_path":  m.controlPath,
			"hydra_batch_vars_file": varsFile,
		}
	}
	inv := map[string]any{
		"all": map[string]any{
			"hosts": invHosts,
			"vars": map[string]any{
				// The machine's own Python 3, which the first task (preflight) installs where it is
				// missing; Ansible's discovery would cost every run another command or two on the
				// machine, and could pick another python3.X without the system's Python libraries.
				"ansible_python_interpreter": "/usr/bin/python3",
				"ansible_connection":         "ssh",
			},
		},
	}
	f.inventory = filepath.Join(dir, "inventory.json")
	if err := writeJSON(f.inventory, inv); err != nil {
		return f, err
	}
	f.playbook = filepath.Join(dir, "batch.yml")
	target, err := json.Marshal(filepath.Join(pbDir, filepath.FromSlash(playbook)))
	if err != nil {
		return f, err
	}
	if err := os.WriteFile(f.playbook, []byte(fmt.Sprintf(batchPlaybook, target)), 0o600); err != nil {
		return f, err
	}
	cfg := strings.Join([]string{
		"# written by hydra for one provisioning batch",
		"[defaults]",
		"stdout_callback = hydra_jsonl",
		"callback_plugins = " + filepath.Join(dir, "cb"),
		"host_key_checking = True",
		"retry_files_enabled = False",
		"nocolor = True",
		"timeout = 30",
		// Every host of the batch has a worker of its own, and goes through the playbook at its own
		// pace (the free strategy): no machine waits at each task for the slowest of the batch, and the
		// controller keeps both the runner's cores busy instead of stopping at each task's end.
		"forks = " + strconv.Itoa(max(len(hosts), 1)),
		// hydra_free is the free strategy, except that a task skipped by its condition or one that
		// runs nothing on the machine (set_fact, assert, ...) costs no worker: the controller does
		// it itself (see hydra_free.py); on ansible-core 2.14 only, the free strategy on any other.
		"strategy_plugins = " + filepath.Join(dir, "strategy"),
		"strategy = hydra_free",
		// ansible-core 2.19 and later keep a failed task's traceback (its exception's type) only when
		// asked; hydra's messages name the exception (failureMessage). Earlier versions ignore it.
		"display_traceback = error",
		// hydra's own inventory and playbook directories have no host_vars or group_vars: the plugin
		// that looks for them would search the disk again for every task and host.
		"vars_plugins_enabled = ",
		"interpreter_python = /usr/bin/python3",
		// How often the controller checks on its workers: Ansible's default (1 ms) keeps a core
		// busy polling while a batch waits on its machines; 10 ms costs a task at most that much.
		"internal_poll_interval = 0.01",
		"local_tmp = " + filepath.Join(dir, "tmp"),
		"roles_path = " + filepath.Join(pbDir, "roles"),
		"[ssh_connection]",
		"pipelining = True",
		"usetty = False",
		"control_path_dir = " + filepath.Join(dir, "cp"),
		// No compression (-C): module payloads are small, and zlib would cost CPU on the runner and
		// the machine for every task.
		"ssh_args = -o ControlMaster=auto -o ControlPersist=" + controlPersist,
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
