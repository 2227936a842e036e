// Package provision is hydra's Ansible runner: it provisions a machine by running the real
// ansible-playbook over SSH with a pinned host key.
//
// One Provision call is one attempt (the control plane retries with backoff). It waits for SSH natively
// in Go, checking the host key (pinned, or trusted on first contact and returned), then runs the pool's
// playbook. Machines that become reachable within a short window of one another (Config.BatchWindow)
// share one ansible-playbook run, a host each (see batch.go); each still gets its own outcome. A run
// works from a private temporary directory holding the inventory (JSON), per host a known_hosts file
// with only that host's key and its variables (JSON, every string marked unsafe), the private key and
// an embedded callback plugin whose JSON lines are streamed as events. Connection reuse is confined to
// a per-run ControlPath directory whose masters are closed afterwards; cancelling one machine cuts its
// host off, cancelling every machine of a run stops its whole process group.
//
// Nothing of a run outlives it, even when the provider is killed hard: the run directory is named
// after the provider's pid, ansible-playbook dies with the provider (Pdeathsig on Linux), a guardian
// process removes the run at once, and SweepStale, called when a provider starts, removes whatever a
// dead provider left behind (see rundir.go).
//
// A successful run leaves a provisioning marker on the machine (the digest and playbook it ran), which
// ReadMarker reads back over SSH without Ansible.
package provision

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/crypto/ssh"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/playbooks"
)

//go:embed callback/hydra_jsonl.py
var callbackPlugin []byte

// strategyPlugin is the batch's strategy: Ansible's free strategy, except that the controller itself
// reports the tasks skipped by their condition and runs the tasks that run nothing on the machine, where
// Ansible would fork a worker for each (see hydra_free.py); on ansible-core 2.14 only, plain free on any
// other.
//
//go:embed strategy/hydra_free.py
var strategyPlugin []byte

// Defaults for Config fields left zero.
const (
	DefaultSSHWaitTimeout  = 10 * time.Minute
	DefaultSSHPollInterval = 2 * time.Second
	DefaultCancelGrace     = 10 * time.Second
)

// DefaultMarkerPath is where the playbooks record a successful run on the machine.
const DefaultMarkerPath = "/var/lib/hydra/provisioned.json"

// summaryLimit bounds ProvisionResult.Message.
const summaryLimit = 1024

// Config configures a Runner.
type Config struct {
	// Playbooks holds the playbooks and their roles (default: the embedded playbooks.FS).
	Playbooks fs.FS
	// PlaybookDir, when set, is a directory of the user's own playbooks used instead of Playbooks.
	PlaybookDir string
	// PrivateKey is the SSH private key (PEM) provisioning logs in with. Sensitive: it is only ever
	// written to a 0600 file inside the per-run directory, removed afterwards.
	PrivateKey []byte
	// AnsiblePlaybook is the ansible-playbook executable (default: looked up on PATH).
	AnsiblePlaybook string
	// Logger receives the run's events (default: a null logger).
	Logger hclog.Logger
	// SSHWaitTimeout bounds the wait for SSH to answer (default DefaultSSHWaitTimeout).
	SSHWaitTimeout time.Duration
	// SSHPollInterval is the pause between SSH probes (default DefaultSSHPollInterval).
	SSHPollInterval time.Duration
	// CancelGrace is how long a cancelled run has after SIGINT before SIGKILL (default DefaultCancelGrace).
	CancelGrace time.Duration
	// TempDir is where per-run directories are made (default: the system's, or /tmp when that path is
	// long, since ssh control sockets need short paths).
	TempDir string
	// MarkerPath is where the playbooks record a successful run on the machine (the provisioning
	// marker, see ReadMarker), passed to them as hydra_marker_path (default DefaultMarkerPath). On
	// hydra's sandbox machines it lies under the machine's own root directory.
	MarkerPath string
	// BatchWindow is how long a machine whose SSH answered waits for others to be provisioned by the
	// same ansible-playbook run (default DefaultBatchWindow; negative: no wait, a run per machine unless
	// machines arrive at the same instant). See batch.go.
	BatchWindow time.Duration
	// BatchMax is the most machines one ansible-playbook run provisions (default DefaultBatchMax).
	BatchMax int
	// GPUModels overrides, per GPU type, the regular expression (case-insensitive) the health checks
	// match against the GPU names nvidia-smi reports (see ExpectedGPUModel for the defaults).
	GPUModels map[string]string
}

// Runner provisions machines with ansible-playbook. It is safe for concurrent use.
type Runner struct {
	cfg    Config
	fsys   fs.FS
	logger hclog.Logger

	publicKey string

	mu      sync.Mutex
	ansible string // resolved ansible-playbook, once checked
	prepare sync.Once

	// batchMu guards forming: per playbook, the batch that machines still join (see batch.go).
	batchMu sync.Mutex
	forming map[batchKey]*batch

	// checkMode runs the playbooks with --check (nothing changes on the machine; tests).
	checkMode bool
}

// PublicKey returns the public half of the provisioning key as an authorized_keys line, for
// CreateRequest.SSHPublicKeys: clouds must install it for the login user.
func (r *Runner) PublicKey() string { return r.publicKey }

var (
	_ cloudprovider.Provisioner = (*Runner)(nil)
	_ cloudprovider.Preparer    = (*Runner)(nil)
)

// New returns a Runner. It checks the private key parses; whether ansible-playbook is installed is
// checked by CheckAnsible and again by every Provision.
func New(cfg Config) (*Runner, error) {
	if len(cfg.PrivateKey) == 0 {
		return nil, errors.New("provisioning needs an SSH private key")
	}
	if _, err := ssh.ParsePrivateKey(cfg.PrivateKey); err != nil {
		var missing *ssh.PassphraseMissingError
		if errors.As(err, &missing) {
			return nil, errors.New("the SSH private key for provisioning is protected by a passphrase; use a key without one")
		}
		return nil, errors.New("the SSH private key for provisioning could not be parsed (expected an OpenSSH or PEM private key)")
	}
	signer, _ := ssh.ParsePrivateKey(cfg.PrivateKey)
	r := &Runner{cfg: cfg, logger: cfg.Logger, publicKey: strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))}
	if r.logger == nil {
		r.logger = hclog.NewNullLogger()
	}
	switch {
	case cfg.PlaybookDir != "":
		fi, err := os.Stat(cfg.PlaybookDir)
		if err != nil {
			return nil, fmt.Errorf("playbook directory: %w", err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("playbook directory %s is not a directory", cfg.PlaybookDir)
		}
		r.fsys = os.DirFS(cfg.PlaybookDir)
	case cfg.Playbooks != nil:
		r.fsys = cfg.Playbooks
	default:
		r.fsys = playbooks.FS
	}
	if r.cfg.SSHWaitTimeout <= 0 {
		r.cfg.SSHWaitTimeout = DefaultSSHWaitTimeout
	}
	if r.cfg.SSHPollInterval <= 0 {
		r.cfg.SSHPollInterval = DefaultSSHPollInterval
	}
	if r.cfg.CancelGrace <= 0 {
		r.cfg.CancelGrace = DefaultCancelGrace
	}
	if r.cfg.BatchWindow == 0 {
		r.cfg.BatchWindow = DefaultBatchWindow
	}
	if r.cfg.BatchMax <= 0 {
		r.cfg.BatchMax = DefaultBatchMax
	}
	if r.cfg.MarkerPath == "" {
		r.cfg.MarkerPath = DefaultMarkerPath
	}
	if !path.IsAbs(r.cfg.MarkerPath) || path.Clean(r.cfg.MarkerPath) != r.cfg.MarkerPath || r.cfg.MarkerPath == "/" ||
		strings.ContainsAny(r.cfg.MarkerPath, "\x00\r\n") {
		return nil, fmt.Errorf("marker path %q is not a clean absolute file path", r.cfg.MarkerPath)
	}
	for typ, re := range cfg.GPUModels {
		if _, err := regexp.Compile("(?i)" + re); err != nil {
			return nil, fmt.Errorf("GPU model pattern for %q: %w", typ, err)
		}
	}
	return r, nil
}

// Prepare finds and checks ansible-playbook (it runs `ansible-playbook --version`, about half a second
// of CPU) in the background, once: the control plane calls it when a machine starts to come up, so the
// check overlaps with the boot and the first provisioning starts as soon as SSH answers. A Terraform
// run that provisions nothing (a plan, a refresh, a destroy) never pays for it.
func (r *Runner) Prepare() {
	r.prepare.Do(func() { go func() { _, _ = r.ansiblePath() }() })
}

// CheckAnsible verifies that ansible-playbook (path, or the one on PATH when path is empty) runs, and
// says how to install it when it does not.
func CheckAnsible(path string) error {
	_, err := resolveAnsible(path)
	return err
}

const installHint = "install Ansible on the machine running Terraform: `apt-get install ansible-core` (Debian/Ubuntu) or `pipx install ansible-core`"

func resolveAnsible(path string) (string, error) {
	if path == "" {
		p, err := exec.LookPath("ansible-playbook")
		if err != nil {
			return "", fmt.Errorf("ansible-playbook was not found on PATH; %s", installHint)
		}
		path = p
	}
	stamp, stampErr := stampOf(path)
	if _, ok := acceptedAnsible.Load(stamp); ok && stampErr == nil {
		return path, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Env = ansibleBaseEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("ansible-playbook was not found at %s; %s", path, installHint)
		}
		return "", fmt.Errorf("%s --version failed (%v): %s; %s", path, err, cut(strings.TrimSpace(string(out)), 400), installHint)
	}
	if !strings.Contains(string(out), "ansible-playbook") {
		return "", fmt.Errorf("%s does not look like ansible-playbook: %s", path, cut(strings.TrimSpace(string(out)), 200))
	}
	if m := coreVersion.FindStringSubmatch(string(out)); m != nil {
		major, _ := strconv.Atoi(m[1])
		minor, _ := strconv.Atoi(m[2])
		if major < 2 || major == 2 && minor < minAnsibleMinor {
			return "", fmt.Errorf("%s is ansible-core %s.%s; hydra needs 2.%d or newer (%s)", path, m[1], m[2], minAnsibleMinor, installHint)
		}
	}
	if stampErr == nil {
		acceptedAnsible.Store(stamp, true)
	}
	return path, nil
}

// acceptedAnsible holds the ansibleStamps of the binaries resolveAnsible accepted in this process:
// one that is the same file again is not run again; one replaced since (an upgrade) is.
var acceptedAnsible sync.Map

// ansibleStamp is a file as resolveAnsible last found it: its path, size and modification time.
type ansibleStamp struct {
	path string
	size int64
	mod  time.Time
}

func stampOf(path string) (ansibleStamp, error) {
	st, err := os.Stat(path)
	if err != nil {
		return ansibleStamp{}, err
	}
	return ansibleStamp{path: path, size: st.Size(), mod: st.ModTime()}, nil
}

// minAnsibleMinor is the oldest ansible-core 2.x the playbooks and the callback are tested with.
const minAnsibleMinor = 14

var coreVersion = regexp.MustCompile(`\[core (\d+)\.(\d+)`)

// ansiblePath resolves and checks ansible-playbook once per Runner (a failure is retried next time).
func (r *Runner) ansiblePath() (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ansible != "" {
		return r.ansible, nil
	}
	p, err := resolveAnsible(r.cfg.AnsiblePlaybook)
	if err != nil {
		return "", err
	}
	r.ansible = p
	return p, nil
}

// playbookName is the pool's playbook, or its kind's default.
func playbookName(pool inventory.Pool) string {
	if pool.Playbook != "" {
		return pool.Playbook
	}
	return inventory.DefaultPlaybook(pool.Kind)
}

// Digest identifies the playbook files and variables a pool's machines are provisioned with: sha256
// over every file of the playbook tree (sorted by path, so roles and files are covered) and the
// canonical JSON of vars, shown as "sha256:" and 16 hex digits.
func (r *Runner) Digest(pool inventory.Pool, vars map[string]any) (string, error) {
	name := playbookName(pool)
	if err := checkPlaybookName(name); err != nil {
		return "", err
	}
	if _, err := fs.Stat(r.fsys, name); err != nil {
		return "", fmt.Errorf("playbook %q of pool %q: %w", name, pool.Name, err)
	}
	h := sha256.New()
	_, _ = fmt.Fprintf(h, "playbook\x00%s\x00", name) // a hash.Hash's Write never fails
	err := fs.WalkDir(r.fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() && d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		b, err := fs.ReadFile(r.fsys, p)
		if err != nil {
			return err
		}
		_, _ = fmt.Fprintf(h, "file\x00%s\x00%d\x00", p, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("digest of the playbooks: %w", err)
	}
	canon, err := canonicalJSON(vars)
	if err != nil {
		return "", err
	}
	_, _ = fmt.Fprintf(h, "vars\x00%d\x00", len(canon))
	h.Write(canon)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))[:16], nil
}

func checkPlaybookName(name string) error {
	if name == "" || path.IsAbs(name) || strings.Contains(name, "\\") || !fs.ValidPath(name) ||
		!strings.HasSuffix(name, ".yml") && !strings.HasSuffix(name, ".yaml") {
		return &cloudprovider.PermanentError{Err: fmt.Errorf("invalid playbook name %q (a .yml file inside the playbook directory)", name)}
	}
	return nil
}

// Provision makes one provisioning attempt: wait for SSH with the host key checked, then run the
// pool's playbook. A host key mismatch or a malformed playbook is a *cloudprovider.PermanentError.
func (r *Runner) Provision(ctx context.Context, req cloudprovider.ProvisionRequest) (cloudprovider.ProvisionResult, error) {
	start := time.Now()
	res := cloudprovider.ProvisionResult{HostKey: strings.TrimSpace(req.HostKey)}
	finish := func(err error) (cloudprovider.ProvisionResult, error) {
		res.Duration = time.Since(start)
		return res, err
	}
	name := req.Instance.Name
	if req.Instance.SSH == nil || req.Instance.SSH.Host == "" {
		return finish(fmt.Errorf("instance %q has no SSH address yet", name))
	}
	ep := *req.Instance.SSH
	if ep.Port == 0 {
		ep.Port = 22
	}
	if ep.User == "" {
		ep.User = "root"
	}
	if err := validateEndpoint(ep); err != nil {
		return finish(&cloudprovider.PermanentError{Err: err})
	}
	pb := playbookName(req.Pool)
	if err := checkPlaybookName(pb); err != nil {
		return finish(err)
	}
	if _, err := fs.Stat(r.fsys, pb); err != nil {
		return finish(&cloudprovider.PermanentError{Err: fmt.Errorf("playbook %q of pool %q: %w", pb, req.Pool.Name, err)})
	}
	vars, err := r.playbookVars(req)
	if err != nil {
		return finish(&cloudprovider.PermanentError{Err: err})
	}

	ansible, err := r.ansiblePath()
	if err != nil {
		return finish(&cloudprovider.PermanentError{Err: err})
	}
	logf := func(msg string, fields map[string]any) {
		if req.Log != nil {
			req.Log(msg, fields)
		}
		args := make([]any, 0, 2*len(fields)+2)
		args = append(args, "instance", name)
		keys := make([]string, 0, len(fields))
		for k := range fields {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			args = append(args, k, fields[k])
		}
		if msg == "task skipped" {
			r.logger.Debug(msg, args...)
		} else {
			r.logger.Info(msg, args...)
		}
	}

	logf("waiting for SSH", map[string]any{"host": ep.Host, "port": ep.Port, "user": ep.User, "attempt": req.Attempt})
	key, jumpKey, err := r.waitSSH(ctx, ep, res.HostKey)
	if err != nil {
		return finish(err)
	}
	res.HostKey = strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key)))
	ready := map[string]any{"host_key_fingerprint": ssh.FingerprintSHA256(key)}
	if jumpKey != nil {
		res.JumpHostKey = strings.TrimSpace(string(ssh.MarshalAuthorizedKey(jumpKey)))
		ready["jump_host_key_fingerprint"] = ssh.FingerprintSHA256(jumpKey)
	}
	logf("SSH ready", ready)

	spec := runSpec{endpoint: ep, hostKey: key, vars: vars, hostName: inventoryHostName(name), instance: name, log: logf}
	if spec.jump, err = jumpEndpoint(ep); err != nil {
		return finish(&cloudprovider.PermanentError{Err: err})
	}
	spec.jumpKey = jumpKey
	b, m := r.join(ctx, batchKey{playbook: pb, checkMode: r.checkMode}, ansible, spec)
	out, err := b.wait(m)
	res.FailedTask, res.Message = out.failedTask, out.message
	return finish(err)
}

// playbookVars builds the variables file's content: the user's variables, then hydra's own (which win).
func (r *Runner) playbookVars(req cloudprovider.ProvisionRequest) (map[string]any, error) {
	vars := map[string]any{}
	if len(req.Vars) > 0 {
		norm, err := normalize(req.Vars)
		if err != nil {
			return nil, err
		}
		m, _ := norm.(map[string]any)
		for k, v := range m {
			if err := checkVarName(k); err != nil {
				return nil, err
			}
			vars[k] = v
		}
	}
	vars["hydra_instance_name"] = req.Instance.Name
	vars["hydra_kind"] = req.Pool.Kind
	vars["hydra_pool"] = req.Pool.Name
	vars["hydra_cloud"] = req.Instance.Cloud
	vars["hydra_gpu_type"] = req.GPUType
	vars["hydra_gpu_count"] = req.GPUCount
	vars["hydra_expected_gpu_model"] = r.ExpectedGPUModel(req.GPUType)
	// The cloud's interruption notice file, for the watcher ("": the cloud writes none).
	vars["hydra_interruption_signal_path"] = req.Signal.Path
	vars["hydra_interruption_signal_format"] = string(req.Signal.Format)
	// The machine's volumes, for the volume_mount role (replacing the digest's entry of the same name).
	if err := checkVolumesDigested(req.Vars, req.Volumes); err != nil {
		return nil, err
	}
	vars[cloudprovider.VolumesVar] = volumesVar(req.Volumes)
	// The provisioning marker: what a successful run records on the machine. The digest is the one the
	// control plane computed for this request (same pool, same variables).
	digest, err := r.Digest(req.Pool, req.Vars)
	if err != nil {
		return nil, err
	}
	vars["hydra_provisioning_digest"] = digest
	vars["hydra_playbook"] = playbookName(req.Pool)
	vars["hydra_marker_path"] = r.cfg.MarkerPath
	return markUnsafeMap(vars), nil
}

var varName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func checkVarName(k string) error {
	switch {
	case !varName.MatchString(k):
		return fmt.Errorf("variable name %q is not a valid Ansible variable name (letters, digits and underscores)", k)
	case strings.HasPrefix(strings.ToLower(k), "ansible_"):
		return fmt.Errorf("variable %q is not allowed: ansible_* variables could change how hydra connects (host key checks)", k)
	}
	return nil
}

// defaultGPUModels are the patterns matched (case-insensitively) against nvidia-smi's GPU names.
var defaultGPUModels = map[string]string{
	"h100":       `\bH100\b`,
	"h200":       `\bH200\b`,
	"a100-80gb":  `\bA100\b.*\b80GB\b`,
	"l40s":       `\bL40S\b`,
	"l4":         `\bL4\b`,
	"b200":       `\bB200\b`,
	"rtx6000ada": `\bRTX 6000 Ada\b`,
	"rtxpro6000": `\bRTX PRO 6000\b`,
}

// ExpectedGPUModel returns the regular expression (matched case-insensitively by the health checks
// against every GPU name nvidia-smi reports) for one of hydra's GPU types; "" when gpuType is empty.
func (r *Runner) ExpectedGPUModel(gpuType string) string {
	if gpuType == "" {
		return ""
	}
	if p, ok := r.cfg.GPUModels[gpuType]; ok {
		return p
	}
	if p, ok := defaultGPUModels[strings.ToLower(gpuType)]; ok {
		return p
	}
	return `\b` + regexp.QuoteMeta(strings.ToUpper(gpuType)) + `\b`
}

var (
	hostPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.\-:]*$`)
	userPattern = regexp.MustCompile(`^[a-z_][a-z0-9_.\-]*\$?$`)
	hostName    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.\-]*$`)
)

func validateEndpoint(ep cloudprovider.SSHEndpoint) error {
	if !hostPattern.MatchString(ep.Host) || len(ep.Host) > 253 {
		return fmt.Errorf("SSH host %q is not an IP address or host name", ep.Host)
	}
	if !userPattern.MatchString(ep.User) || len(ep.User) > 64 {
		return fmt.Errorf("SSH user %q is not a valid user name", ep.User)
	}
	if ep.Port < 1 || ep.Port > 65535 {
		return fmt.Errorf("SSH port %d is out of range", ep.Port)
	}
	return nil
}

func inventoryHostName(name string) string {
	if hostName.MatchString(name) && len(name) <= 128 {
		return name
	}
	return "instance"
}

// normalize turns any JSON-encodable value into plain JSON types (map[string]any, []any, string,
// json.Number, bool, nil).
func normalize(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("variables cannot be encoded as JSON: %w", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	if err := checkKeys(out); err != nil {
		return nil, err
	}
	return out, nil
}

// checkKeys rejects map keys Ansible would render as templates (keys cannot be marked unsafe).
func checkKeys(v any) error {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if strings.Contains(k, "{{") || strings.Contains(k, "{%") || strings.Contains(k, "{#") {
				return fmt.Errorf("variable key %q holds template markers, which are not allowed in keys", k)
			}
			if err := checkKeys(e); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range t {
			if err := checkKeys(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// markUnsafe wraps every string (recursively through lists and maps) as {"__ansible_unsafe": s}, so
// Ansible never renders it as a template.
func markUnsafe(v any) any {
	switch t := v.(type) {
	case string:
		return map[string]any{"__ansible_unsafe": t}
	case map[string]any:
		return markUnsafeMap(t)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = markUnsafe(e)
		}
		return out
	default:
		return v
	}
}

// markUnsafeMap marks every string in m, as markUnsafe does.
func markUnsafeMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, e := range m {
		out[k] = markUnsafe(e)
	}
	return out
}

// canonicalJSON encodes vars with sorted keys and plain number forms.
func canonicalJSON(vars map[string]any) ([]byte, error) {
	if vars == nil {
		vars = map[string]any{}
	}
	norm, err := normalize(vars)
	if err != nil {
		return nil, err
	}
	return json.Marshal(norm)
}

// cut shortens s to at most n bytes on a UTF-8 boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = " …"
	end := n - len(mark)
	for end > 0 && (s[end]&0xC0) == 0x80 {
		end--
	}
	return s[:end] + mark
}

// ansibleBaseEnv is this process's environment without any ANSIBLE_* setting (which could switch host
// key checking off or load other plugins), ssh agents, or a non-UTF-8 locale.
func ansibleBaseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "ANSIBLE_"), k == "SSH_AUTH_SOCK", k == "SSH_AGENT_PID",
			k == "LC_ALL", k == "LANG", k == "PYTHONPATH", k == "PYTHONHOME", k == "PYTHONSTARTUP":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_ALL=C.UTF-8", "LANG=C.UTF-8", "PYTHONUNBUFFERED=1")
}
