package provision

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox/simhost"
)

// requireTools skips the test when the real tools are missing (CI installs them).
func requireTools(t *testing.T) {
	t.Helper()
	var missing []string
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		missing = append(missing, "ansible-playbook (apt-get install ansible-core)")
	}
	if _, err := simhost.FindSSHD(); err != nil {
		missing = append(missing, "sshd (apt-get install openssh-server)")
	}
	if _, err := exec.LookPath("ssh"); err != nil {
		missing = append(missing, "ssh (apt-get install openssh-client)")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		missing = append(missing, "python3")
	}
	if len(missing) > 0 {
		msg := "SKIPPING: this test needs " + strings.Join(missing, ", ")
		fmt.Fprintln(os.Stderr, msg)
		t.Skip(msg)
	}
}

func clientKey(t *testing.T) (pemBytes []byte, authorized string) {
	t.Helper()
	pemBytes, authorized, err := simhost.NewKeyPair("hydra-test")
	if err != nil {
		t.Fatal(err)
	}
	return pemBytes, authorized
}

// shortTemp is a short directory (ssh control sockets need short paths), removed after the test.
func shortTemp(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/tmp", "hpt") //nolint:usetesting // t.TempDir's path holds the test's name: too long for ssh control sockets
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) }) // best-effort, as the test is over
	return d
}

// markedPlaybook is a test's cut-down pool playbook, file (its hydra_playbook), whose one play (name)
// runs roles in bare-vm.yml's frame: hydra's variables and the preflight first, the marker invalidated
// before roles and recorded after them, as root where hydra_become says.
func markedPlaybook(name, file string, roles ...string) string {
	return "- name: " + name + `
  hosts: all
  gather_facts: false
  become: "{{ hydra_become | bool }}"
  vars:
    hydra_playbook: ` + file + `
  roles:
    - hydra_vars
    - preflight
    - role: marker
      hydra_marker_step: invalidate
    - ` + strings.Join(roles, "\n    - ") + `
    - role: marker
      hydra_marker_step: record
`
}

type fixture struct {
	runner  *Runner
	ep      simhost.Endpoint
	tmpBase string
}

// startMachine starts a sandbox machine of spec in a directory of the test's, stopped when the test ends.
func startMachine(t *testing.T, spec simhost.Spec) simhost.Endpoint {
	t.Helper()
	dir := t.TempDir()
	ep, err := simhost.Ensure(dir, spec)
	if err != nil {
		t.Fatalf("simhost.Ensure: %v", err)
	}
	t.Cleanup(func() {
		if err := simhost.Stop(dir); err != nil {
			t.Errorf("simhost.Stop: %v", err)
		}
	})
	return ep
}

func newFixture(t *testing.T, spec simhost.Spec, cfg Config) fixture {
	t.Helper()
	requireTools(t)
	key, pub := clientKey(t)
	spec.AuthorizedKeys = append(spec.AuthorizedKeys, pub)
	ep := startMachine(t, spec)
	cfg.PrivateKey = key
	cfg.TempDir = shortTemp(t)
	if os.Getenv("HYDRA_TEST_ANSIBLE_LOG") != "" {
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Debug, Output: os.Stderr})
	}
	if cfg.SSHWaitTimeout == 0 {
		cfg.SSHWaitTimeout = 30 * time.Second
	}
	cfg.SSHPollInterval = 200 * time.Millisecond
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return fixture{runner: r, ep: ep, tmpBase: cfg.TempDir}
}

type logRecorder struct {
	mu    sync.Mutex
	lines []string
	hook  func(msg string, fields map[string]any)
}

func (l *logRecorder) log(msg string, fields map[string]any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf("%s %s %v", time.Now().Format("05.000"), msg, fields))
	hook := l.hook
	l.mu.Unlock()
	if hook != nil {
		hook(msg, fields)
	}
}

func (l *logRecorder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func (f fixture) request(kind, gpuType string, count int, hostKey string, vars map[string]any, rec *logRecorder) cloudprovider.ProvisionRequest {
	return cloudprovider.ProvisionRequest{
		Instance: cloudprovider.Instance{
			ID: "i-1", Name: "sandbox-" + kind + "-test", Cloud: "sandbox", GPUType: gpuType, GPUCount: count,
			Status: cloudprovider.StatusRunning,
			SSH:    &cloudprovider.SSHEndpoint{Host: f.ep.Host, Port: f.ep.Port, User: f.ep.User},
		},
		Pool:     inventory.Pool{Name: "sandbox-" + kind + "-pool", Cloud: "sandbox", Kind: kind},
		GPUType:  gpuType,
		GPUCount: count,
		HostKey:  hostKey,
		Vars:     vars,
		Attempt:  1,
		Log:      rec.log,
	}
}

func assertEmptyDir(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("per-run temporary directory left behind in %s: %v", dir, entries)
	}
}

// processesMentioning lists live processes whose command line contains s.
func processesMentioning(s string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(b, []byte(s)) {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "stat"))
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			continue // a zombie waiting for its parent is gone already
		}
		out = append(out, strings.ReplaceAll(string(b), "\x00", " "))
	}
	return out
}

// checkMarker reads the machine's provisioning marker (the host key pinned) and checks it records this
// run: the digest the control plane computes for the same pool and variables, and the playbook.
func checkMarker(t *testing.T, f fixture, kind string, vars map[string]any, hostKey string, since time.Time) Marker {
	t.Helper()
	req := f.request(kind, "", 0, hostKey, vars, &logRecorder{})
	m, seen, err := f.runner.ReadMarker(context.Background(), *req.Instance.SSH, hostKey)
	if err != nil {
		t.Fatalf("ReadMarker: %v", err)
	}
	if seen != hostKey {
		t.Errorf("ReadMarker saw host key %q, pinned %q", seen, hostKey)
	}
	digest, err := f.runner.Digest(req.Pool, vars)
	if err != nil {
		t.Fatal(err)
	}
	if m.Digest != digest || m.Playbook != inventory.DefaultPlaybook(kind) {
		t.Errorf("marker %+v, want digest %s and playbook %s", m, digest, inventory.DefaultPlaybook(kind))
	}
	if m.ProvisionedAt.Before(since.Truncate(time.Second)) || m.ProvisionedAt.After(time.Now()) || m.ProvisionedAt.Location() != time.UTC {
		t.Errorf("marker provisioned_at %v is not between %v and now (UTC)", m.ProvisionedAt, since)
	}
	b, err := os.ReadFile(filepath.Join(f.ep.Root, filepath.FromSlash(DefaultMarkerPath)))
	if err != nil {
		t.Fatalf("marker not under the machine's root: %v", err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil || len(raw) != 4 || raw["machine"] == nil {
		t.Errorf("marker file: %s (%v)", b, err)
	}
	if m.Machine == nil || m.Machine.Driver != simhost.DefaultDriverVersion {
		t.Errorf("marker's machine record: %+v", m.Machine)
	}
	return m
}

// nastyValue must reach the machine byte for byte: no Jinja rendering, no shell, no key=value parsing.
const nastyValue = `{{ 7*7 }} "double" 'single' spaces  and $(touch /tmp/hydra-pwned) ; {% raw %} x=y ansible_become=true`

// readyCheck is what one kind's playbook must leave on a machine it brought to ready, beyond the marker
// and an unchanged second run; TestAnsibleCoreMatrix applies it with its first distribution's ansible-core.
type readyCheck struct {
	// vars are the run's variables (merged over the matrix's own).
	vars map[string]any
	// prepare breaks the fresh machine before the first run; false when it could not.
	prepare func(t *testing.T, ep simhost.Endpoint) bool
	// check runs after each run (the first and the unchanged second).
	check func(t *testing.T, ep simhost.Endpoint)
}

// readyNastyKey is a customer key whose comment is nastyValue.
const readyNastyKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl " + nastyValue

// readyChecks are the readyCheck of each kind: a VM gets variables that must arrive literally and its
// exporters on loopback only; an execlet whose loaded kernel module is not the installed driver is
// rebooted (simulated) instead of failing the same way on every retry, and gets its configuration.
var readyChecks = map[string]readyCheck{
	inventory.KindVM: {
		vars: map[string]any{"customer_ssh_keys": []any{readyNastyKey}, "labels": map[string]any{"team": nastyValue}},
		check: func(t *testing.T, ep simhost.Endpoint) {
			u, err := user.Lookup(ep.User)
			if err != nil {
				t.Error(err)
				return
			}
			b, err := os.ReadFile(filepath.Join(ep.Root, u.HomeDir, ".ssh", "authorized_keys"))
			if err != nil {
				t.Errorf("customer keys not written: %v", err)
				return
			}
			if !strings.Contains(string(b), "\n"+readyNastyKey+"\n") {
				t.Errorf("customer key did not arrive literally; authorized_keys:\n%s", b)
			}
			if strings.Contains(string(b), "49") {
				t.Errorf("a template was rendered: %s", b)
			}
			if _, err := os.Stat("/tmp/hydra-pwned"); err == nil {
				t.Errorf("a command substitution ran")
			}
			// The exporters' units were started listening on loopback only (what the systemctl
			// stand-in recorded of their command lines).
			checkRecorded(t, filepath.Join(ep.Dir, "run", "units", "prometheus-node-exporter.service.exec"),
				fmt.Sprintf("--web.listen-address=127.0.0.1:%d", ep.NodeExporterPort))
			checkRecorded(t, filepath.Join(ep.Dir, "run", "units", "hydra-dcgm-exporter.service.exec"),
				fmt.Sprintf("--address=127.0.0.1:%d", ep.DCGMExporterPort))
		},
	},
	inventory.KindExeclet: {
		prepare: func(t *testing.T, ep simhost.Endpoint) bool {
			if err := simhost.SetLoadedDriver(ep.Dir, "565.57.01"); err != nil {
				t.Error(err)
				return false
			}
			return true
		},
		check: func(t *testing.T, ep simhost.Endpoint) {
			if b, err := os.ReadFile(filepath.Join(ep.Dir, "run", "reboots.log")); err != nil || !strings.Contains(string(b), "shutdown -r") {
				t.Errorf("the loaded-module mismatch did not reboot the machine: %q, %v", b, err)
			}
			if v, _ := os.ReadFile(filepath.Join(ep.Root, "sys", "module", "nvidia", "version")); strings.TrimSpace(string(v)) != simhost.DefaultDriverVersion {
				t.Errorf("after the reboot the loaded module is %q", v)
			}
			b, err := os.ReadFile(filepath.Join(ep.Root, "etc", "hydra", "execlet.json"))
			if err != nil {
				t.Errorf("execlet configuration not written: %v", err)
				return
			}
			var cfg map[string]any
			if err := json.Unmarshal(b, &cfg); err != nil {
				t.Error(err)
				return
			}
			// gpu_count is a number; the smoke test image is the one for the driver's CUDA (12.8), pinned by digest.
			if cfg["instance"] != "sandbox-execlet-test" || cfg["gpu_type"] != "l40s" || cfg["gpu_count"] != float64(2) ||
				cfg["cuda_image"] != "nvidia/cuda:12.8.1-base-ubuntu24.04@sha256:133c78a0575303be34164d0b90137a042172bdf60696af01a3c424ab402d86e2" {
				t.Errorf("execlet configuration: %s", b)
			}
			if _, err := os.Stat(filepath.Join(ep.Root, "etc", "systemd", "system", "hydra-execlet.service")); err != nil {
				t.Errorf("execlet unit: %v", err)
			}
		},
	},
}

// checkReadyRun checks a first run that reached ready: the machine's host key trusted, no failure
// summary, the events of a run, and Fabric Manager on an 8-GPU (NVSwitch) machine.
func checkReadyRun(t *testing.T, kind string, count int, ep simhost.Endpoint, res cloudprovider.ProvisionResult, rec *logRecorder) {
	if res.HostKey != ep.HostKey {
		t.Errorf("%s: trusted host key %q, machine has %q", kind, res.HostKey, ep.HostKey)
	}
	if res.FailedTask != "" || res.Message != "" {
		t.Errorf("%s: successful run has a failure summary: %+v", kind, res)
	}
	for _, want := range []string{"task started", "Check the promised GPUs", "playbook succeeded"} {
		if !strings.Contains(rec.String(), want) {
			t.Errorf("%s: events lack %q:\n%s", kind, want, rec)
		}
	}
	if count == 8 && !regexp.MustCompile(`task ok .*Run Fabric Manager`).MatchString(rec.String()) {
		t.Errorf("an 8-GPU NVSwitch machine did not get Fabric Manager:\n%s", rec)
	}
}

// sshUnreachable matches ssh's reasons for a machine it cannot reach.
var sshUnreachable = regexp.MustCompile(`Connection refused|Connection closed by remote host|Connection reset by peer`)

func TestUnreachableHostIsNamed(t *testing.T) {
	t.Parallel()
	f := newFixture(t, simhost.Spec{GPUModel: "NVIDIA L4", GPUCount: 1}, Config{})
	rec := &logRecorder{}
	rec.hook = func(msg string, _ map[string]any) {
		if msg == "running playbook" { // SSH answered; now the machine goes away
			if err := simhost.Stop(f.ep.Dir); err != nil {
				t.Error(err)
			}
		}
	}
	res, err := f.runner.Provision(context.Background(), f.request(inventory.KindVM, "l4", 1, "", nil, rec))
	var te *TaskError
	if !errors.As(err, &te) || !te.Unreachable {
		t.Fatalf("want an unreachable *TaskError, got %v\nlog:\n%s", err, rec)
	}
	t.Logf("error: %v", err)
	var perm *cloudprovider.PermanentError
	if errors.As(err, &perm) {
		t.Errorf("an unreachable host must stay retryable: %v", err)
	}
	// ssh's reason: refused once the machine's sshd is gone; closed (or reset) when the port was taken
	// again meanwhile by a process of another test, as on a busy runner.
	if te.Host != "sandbox-vm-test" || !sshUnreachable.MatchString(err.Error()) || res.FailedTask == "" {
		t.Errorf("error %v, result %+v", err, res)
	}
	assertEmptyDir(t, f.tmpBase)
}

func TestChangedHostKeyIsRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, simhost.Spec{GPUModel: "NVIDIA L4", GPUCount: 1}, Config{SSHWaitTimeout: 10 * time.Minute})
	pinned := f.ep.HostKey
	if err := simhost.RotateHostKey(f.ep.Dir); err != nil {
		t.Fatal(err)
	}
	rec := &logRecorder{}
	_, err := f.runner.Provision(context.Background(), f.request(inventory.KindVM, "l4", 1, pinned, nil, rec))
	var perm *cloudprovider.PermanentError
	var mm *HostKeyMismatchError
	if !errors.As(err, &perm) || !errors.As(err, &mm) {
		t.Fatalf("want a permanent host key mismatch, got %v", err)
	}
	t.Logf("error: %v", err)
	if strings.Contains(rec.String(), "running playbook") || strings.Contains(rec.String(), "task started") {
		t.Errorf("ansible ran despite the mismatch:\n%s", rec)
	}
	assertEmptyDir(t, f.tmpBase)
}

// TestRefusedKeyIsNamed: a machine whose authorized_keys lacks hydra's key (made with provisioning off,
// or outside hydra) fails after one SSH wait with a permanent error (no more waits in this apply) that
// says so and names the line to add, and Ansible never starts.
func TestRefusedKeyIsNamed(t *testing.T) {
	t.Parallel()
	f := newFixture(t, simhost.Spec{GPUModel: "NVIDIA L4", GPUCount: 1}, Config{})
	other, otherPub := clientKey(t)
	r, err := New(Config{PrivateKey: other, TempDir: f.tmpBase, SSHWaitTimeout: 2 * time.Second, SSHPollInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rec := &logRecorder{}
	f.runner = r
	_, err = r.Provision(context.Background(), f.request(inventory.KindVM, "l4", 1, "", nil, rec))
	if err == nil {
		t.Fatal("provisioned a machine that does not accept the runner's key")
	}
	t.Logf("error: %v", err)
	for _, want := range []string{"refused hydra's provisioning key", "authorized_keys of " + f.ep.User, strings.TrimSpace(otherPub)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	var perm *cloudprovider.PermanentError
	if !errors.As(err, &perm) {
		t.Errorf("a key refused for the whole SSH wait must not be waited for again: %v", err)
	}
	if strings.Contains(rec.String(), "running playbook") {
		t.Errorf("ansible ran without SSH:\n%s", rec)
	}
	assertEmptyDir(t, f.tmpBase)
}

func TestBrokenPlaybookIsPermanent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bare-vm.yml"), []byte("- name: broken\n  hosts: all\n  tasks: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, simhost.Spec{GPUModel: "NVIDIA L4", GPUCount: 1}, Config{PlaybookDir: dir})
	rec := &logRecorder{}
	res, err := f.runner.Provision(context.Background(), f.request(inventory.KindVM, "l4", 1, "", nil, rec))
	var perm *cloudprovider.PermanentError
	var pe *PlaybookError
	if !errors.As(err, &perm) || !errors.As(err, &pe) {
		t.Fatalf("want a permanent playbook error, got %v", err)
	}
	t.Logf("error: %v", err)
	if !strings.Contains(err.Error(), "YAML") && !strings.Contains(err.Error(), "Syntax") {
		t.Errorf("error does not point at the YAML: %v", err)
	}
	if res.Message == "" {
		t.Errorf("no summary")
	}
	assertEmptyDir(t, f.tmpBase)
}

// checkRecorded checks that a file the stand-ins recorded holds want (and no listen address on every
// interface).
func checkRecorded(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("not recorded: %v", err)
		return
	}
	if !strings.Contains(string(b), want) || regexp.MustCompile(`(=|\s)(0\.0\.0\.0)?:[0-9]+`).Match(b) {
		t.Errorf("%s: %q, want %q (loopback)", filepath.Base(path), b, want)
	}
}

func writeMarker(t *testing.T, ep simhost.Endpoint, content string) {
	t.Helper()
	p := filepath.Join(ep.Root, filepath.FromSlash(DefaultMarkerPath))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReadMarker covers what provisioning runs do not: a machine without a marker, an unusable one,
// and the host key checks. (TestAnsibleCoreMatrix reads the marker runs write.)
func TestReadMarker(t *testing.T) {
	t.Parallel()
	f := newFixture(t, simhost.Spec{GPUModel: "NVIDIA L4", GPUCount: 1}, Config{})
	ep := cloudprovider.SSHEndpoint{Host: f.ep.Host, Port: f.ep.Port, User: f.ep.User}
	ctx := context.Background()

	// A fresh machine, trusted on first use: no marker, and the key it presented.
	_, seen, err := f.runner.ReadMarker(ctx, ep, "")
	var nm *NoMarkerError
	if !errors.Is(err, ErrNoMarker) || !errors.As(err, &nm) || nm.Reason != "" || nm.Path != DefaultMarkerPath {
		t.Fatalf("want no marker, got %v", err)
	}
	t.Logf("error: %v", err)
	if seen != f.ep.HostKey {
		t.Errorf("seen host key %q, machine has %q", seen, f.ep.HostKey)
	}

	writeMarker(t, f.ep, "{not json")
	if _, _, err := f.runner.ReadMarker(ctx, ep, f.ep.HostKey); !errors.Is(err, ErrNoMarker) || !strings.Contains(err.Error(), "unusable") {
		t.Errorf("a corrupt marker: %v", err)
	}

	writeMarker(t, f.ep, `{"digest": "sha256:0123456789abcdef", "playbook": "execlet.yml", "provisioned_at": "2026-01-02T03:04:05Z"}`)
	m, seen, err := f.runner.ReadMarker(ctx, ep, f.ep.HostKey)
	want := Marker{Digest: "sha256:0123456789abcdef", Playbook: "execlet.yml", ProvisionedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	if err != nil || m.Digest != want.Digest || m.Playbook != want.Playbook || !m.ProvisionedAt.Equal(want.ProvisionedAt) || seen != f.ep.HostKey {
		t.Errorf("ReadMarker = %+v, %q, %v; want %+v", m, seen, err, want)
	}

	// Another key pinned: refused, and no key handed back.
	_, other := clientKey(t)
	_, seen, err = f.runner.ReadMarker(ctx, ep, other)
	var mm *HostKeyMismatchError
	var perm *cloudprovider.PermanentError
	if !errors.As(err, &mm) || !errors.As(err, &perm) || seen != "" {
		t.Errorf("want a permanent host key mismatch, got %q, %v", seen, err)
	}

	// A machine that refuses the runner's key (imported from outside hydra, or made with provisioning
	// off): not ErrNoMarker, and the error names the line to add.
	otherKey, otherPub := clientKey(t)
	stranger, err := New(Config{PrivateKey: otherKey, TempDir: f.tmpBase})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := stranger.ReadMarker(ctx, ep, f.ep.HostKey); err == nil || errors.Is(err, ErrNoMarker) ||
		!strings.Contains(err.Error(), "refuses hydra's provisioning key") || !strings.Contains(err.Error(), otherPub+" hydra-provisioning") {
		t.Errorf("a refused key: %v", err)
	}

	// A machine that does not answer: an error within the bound, not ErrNoMarker.
	if err := simhost.Stop(f.ep.Dir); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, _, err := f.runner.ReadMarker(ctx, ep, f.ep.HostKey); err == nil || errors.Is(err, ErrNoMarker) {
		t.Errorf("a stopped machine: %v", err)
	} else if time.Since(start) > MarkerReadTimeout {
		t.Errorf("ReadMarker took %v", time.Since(start))
	}
}

// TestResolveAnsibleRunsOncePerBinary: an ansible-playbook accepted once is not run again for its
// version while it is the same file; a replaced one, or one refused, is checked again.
func TestResolveAnsibleRunsOncePerBinary(t *testing.T) {
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	bin := filepath.Join(dir, "ansible-playbook")
	write := func(core string, mod time.Time) {
		t.Helper()
		script := "#!/bin/sh\necho run >> " + runs + "\necho 'ansible-playbook [core " + core + "]'\n"
		if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(bin, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	count := func() int {
		b, _ := os.ReadFile(runs)
		return strings.Count(string(b), "run")
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	write("2.13.0", t0)
	for i := 1; i <= 2; i++ {
		if _, err := resolveAnsible(bin); err == nil || count() != i {
			t.Fatalf("refused 2.13 (try %d): err %v, runs %d, want an error and %d runs", i, err, count(), i)
		}
	}
	write("2.16.3", t0.Add(time.Minute))
	for range 3 {
		if got, err := resolveAnsible(bin); err != nil || got != bin {
			t.Fatalf("2.16.3: %q %v", got, err)
		}
	}
	if count() != 3 {
		t.Errorf("runs after three resolves of one accepted binary: %d, want 3 (2 refused + 1)", count())
	}
	write("2.12.0", t0.Add(2*time.Minute))
	if _, err := resolveAnsible(bin); err == nil || count() != 4 {
		t.Errorf("a replaced binary (2.12): err %v, runs %d, want an error and 4 runs", err, count())
	}
}
