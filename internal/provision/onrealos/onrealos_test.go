//go:build linux

package onrealos

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/provision"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox/simhost"
	"github.com/hydragpu/terraform-provider-hydra/internal/testsupport/realos"
)

// The real-OS tests run hydra's playbooks, through internal/provision's Runner (the real ansible-playbook,
// the host key pinned), against a real Debian 12 system container (internal/testsupport/realos): real apt against
// Debian's mirror, real systemd units, real Debian packages. Only the GPU layer is simulated; each test
// logs realos.Substitutions, the steps a container cannot do and what stands in for them.
//
// They need root, systemd-nspawn and debootstrap. Where those cannot exist they skip, saying so,
// unless HYDRA_REALOS_REQUIRED=1 (make test and CI set it), where a missing tool fails them.

// realOSTimeNeeded is what one real-OS case may need (a cold image build, two runs beside the other
// cases).
const realOSTimeNeeded = 15 * time.Minute

// realOSFixture is a booted real-OS machine and a provision.Runner logging in to it.
type realOSFixture struct {
	m      *realos.Machine
	runner *provision.Runner
	os     realos.OS
	// volumes are the machine's volumes, passed with every request (volumesOnRealOS).
	volumes []cloudprovider.Attachment
	// pauses are when each run of provisionRuns had paused the automatic upgrades.
	pauses *pauseTimes
}

// pauseTimes are when provisioning runs had paused the machine's automatic upgrades: the end of
// preflight's first task, which pauses them (playbooks/roles/preflight/files/waits.py).
type pauseTimes struct {
	mu sync.Mutex
	at []time.Time
}

func (p *pauseTimes) add(at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.at = append(p.at, at)
}

func (p *pauseTimes) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.at)
}

// since is the first pause recorded after the first n, or zero.
func (p *pauseTimes) since(n int) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.at) > n {
		return p.at[n]
	}
	return time.Time{}
}

func newRealOS(t *testing.T, systemd bool, gpu simhost.Spec) realOSFixture {
	t.Helper()
	return newRealOSWith(t, realos.Options{Systemd: systemd, GPU: gpu})
}

func newRealOSWith(t *testing.T, opts realos.Options) realOSFixture {
	t.Helper()
	return newRealOSOn(t, realos.Debian12, false, opts)
}

// newRealOSOn boots a machine of o's image (plain: without the stand-in packages, no NVIDIA driver),
// provisioned by a Runner of its own.
func newRealOSOn(t *testing.T, o realos.OS, plain bool, opts realos.Options) realOSFixture {
	t.Helper()
	fl, err := newFleet(t, 1)
	if err != nil {
		t.Fatal(err)
	}
	return newRealOSIn(t, fl, o, plain, opts)
}

// fleet is a provisioning key and a provision.Runner logging in with it, for machines provisioned side
// by side as a control plane's fleet is: the Runner's runs of one playbook that start together are one
// ansible-playbook run, a host each (internal/provision's batches), each machine still getting its own
// outcome, events, variables and pinned host key.
type fleet struct {
	key    []byte
	pub    string
	runner *provision.Runner
}

// fleetWait is how long a run of a fleet's machine waits for the others' runs of the same playbook
// (provision.Config.BatchWindow): they run the same steps, but one may be a step behind.
const fleetWait = 30 * time.Second

// newFleet makes a fleet of n machines whose files live as long as t. A run starts once every machine
// of the fleet asked for a run of its playbook (provision.Config.BatchMax), or fleetWait after the first.
func newFleet(t *testing.T, n int) (*fleet, error) {
	key, pub, err := simhost.NewKeyPair("hydra-realos-test")
	if err != nil {
		return nil, err
	}
	// ssh's control sockets need a short path: t.TempDir's holds the test's name.
	tmp, err := os.MkdirTemp("/tmp", "hro") //nolint:usetesting // t.TempDir's path is too long for ssh control sockets
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = os.RemoveAll(tmp) }) // best-effort, as the test is over
	cfg := provision.Config{PrivateKey: key, TempDir: tmp, SSHWaitTimeout: 30 * time.Second, SSHPollInterval: 200 * time.Millisecond,
		BatchWindow: fleetWait, BatchMax: max(n, 1)}
	if os.Getenv("HYDRA_TEST_ANSIBLE_LOG") != "" {
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Debug, Output: os.Stderr})
	}
	r, err := provision.New(cfg)
	if err != nil {
		return nil, err
	}
	return &fleet{key: key, pub: pub, runner: r}, nil
}

// newRealOSIn boots a machine of o's image (plain: without the stand-in packages, no NVIDIA driver)
// that fl's key logs in to and fl's Runner provisions.
func newRealOSIn(t *testing.T, fl *fleet, o realos.OS, plain bool, opts realos.Options) realOSFixture {
	t.Helper()
	if err := realos.Available(); err != nil {
		if os.Getenv("HYDRA_REALOS_REQUIRED") == "1" {
			t.Fatalf("the real-OS test cannot run here, and HYDRA_REALOS_REQUIRED=1: %v", err)
		}
		t.Skipf("no real-OS machine here: %v", err)
	}
	for _, tool := range []string{"ansible-playbook", "ssh"} {
		if _, err := exec.LookPath(tool); err != nil {
			msg := fmt.Sprintf("the real-OS tests provision with %s: %v (apt-get install ansible-core openssh-client; tools/install-deps.sh does)", tool, err)
			if os.Getenv("HYDRA_REALOS_REQUIRED") == "1" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	// A real-OS case takes minutes: under go test's default 10-minute timeout a whole-package run
	// could not finish. Where they are not required, cases skip
	// when less than realOSTimeNeeded is left (make test and CI require them, with a 40-minute timeout).
	if dl, ok := t.Deadline(); ok && time.Until(dl) < realOSTimeNeeded && os.Getenv("HYDRA_REALOS_REQUIRED") != "1" {
		t.Skipf("less than %s left before go test's -timeout: run the real-OS tests with -timeout 40m (make realos) or HYDRA_REALOS_REQUIRED=1", realOSTimeNeeded)
	}
	ctx := context.Background()
	started := time.Now()
	img, err := realos.EnsureImageOf(ctx, o, plain, t.Logf)
	if err != nil {
		t.Fatalf("real-OS image: %v", err)
	}
	t.Logf("real-OS image %s of %s ready in %s (%s)", img.Key[:12], o.Name, time.Since(started).Round(time.Millisecond), img.Root)
	t.Cleanup(func() {
		t.Logf("%s: %s from the image's check to the end of its cleanup", t.Name(), time.Since(started).Round(time.Second))
	})
	for _, s := range realos.SubstitutionsOf(o, plain) {
		t.Logf("substituted: %s -> %s (why: %s)", s.Step, s.Instead, s.Why)
	}
	opts.AuthorizedKey, opts.Logf = fl.pub, t.Logf
	// The playbooks' apt (and a Prepare's) finds apt's caches built, once per image, not per machine.
	opts.ImagePrepare = append(slices.Clip(opts.ImagePrepare), realos.AptCaches)
	m, err := realos.Boot(ctx, img, fl.key, opts)
	if err != nil {
		t.Fatalf("real-OS machine: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(m.BootLog); err == nil {
				t.Logf("console of %s:\n%s", m.Name, tailString(string(b), 4000))
			}
		}
		if err := m.Stop(); err != nil {
			t.Errorf("stopping the real-OS machine: %v", err)
		}
	})
	return realOSFixture{m: m, runner: fl.runner, os: o, pauses: &pauseTimes{}}
}

func (f realOSFixture) request(kind, gpuType string, count int, vars map[string]any, rec *runLog) cloudprovider.ProvisionRequest {
	name := "realos-" + kind
	return cloudprovider.ProvisionRequest{
		Instance: cloudprovider.Instance{
			ID: "i-realos", Name: name, Cloud: "sandbox", GPUType: gpuType, GPUCount: count,
			Status: cloudprovider.StatusRunning,
			SSH:    &cloudprovider.SSHEndpoint{Host: "127.0.0.1", Port: f.m.Port, User: "root"},
		},
		Pool:     inventory.Pool{Name: name + "-pool", Cloud: "sandbox", Kind: kind},
		GPUType:  gpuType,
		GPUCount: count,
		HostKey:  f.m.HostKey,
		Vars:     withVolumes(vars, f.volumes),
		Volumes:  f.volumes,
		Attempt:  1,
		Log:      rec.log,
	}
}

// provisionTwice provisions the machine to ready, then again, and checks the second run changed
// nothing (every task's changed flag, from the JSON-lines callback's events).
func (f realOSFixture) provisionTwice(t *testing.T, kind string, count int, vars map[string]any) provision.Marker {
	t.Helper()
	marker, _ := f.provisionRuns(t, kind, count, vars, 2)
	return marker
}

// provisionRuns provisions the machine to ready runs times, checks the first run changed something
// and every later one nothing, and returns the marker read after the last and the tasks the first
// run changed ("role: task").
func (f realOSFixture) provisionRuns(t *testing.T, kind string, count int, vars map[string]any, runs int) (provision.Marker, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	var first []string
	for run := 1; run <= runs; run++ {
		rec := &runLog{}
		started := time.Now()
		stopWatch := func() []string { return nil }
		if vars["hydra_exporter_listen"] != "private" {
			stopWatch = watchExposure(t, f.m)
		}
		res, err := f.runner.Provision(ctx, f.request(kind, "h100", count, vars, rec))
		paused, changed, batch := rec.summary()
		if !paused.IsZero() {
			f.pauses.add(paused)
		}
		if exposed := stopWatch(); len(exposed) > 0 {
			t.Errorf("run %d: an exporter listened beyond loopback during the run: %s", run, strings.Join(exposed, ", "))
		}
		t.Logf("run %d of %s on the real OS (an ansible-playbook run of %d machine(s)): %s, %d task(s) changed", run, inventory.DefaultPlaybook(kind), batch, time.Since(started).Round(time.Second), len(changed))
		if err != nil {
			t.Fatalf("run %d: %v (failed task %q: %s)\nlog:\n%s", run, err, res.FailedTask, res.Message, rec)
		}
		if res.HostKey != f.m.HostKey {
			t.Errorf("run %d used host key %q, pinned %q", run, res.HostKey, f.m.HostKey)
		}
		if run == 1 && len(changed) == 0 {
			t.Errorf("the first run changed nothing on a fresh machine\nlog:\n%s", rec)
		}
		if run == 1 {
			first = changed
			t.Logf("run 1 changed:\n  %s", strings.Join(changed, "\n  "))
		}
		if run > 1 && len(changed) > 0 {
			sort.Strings(changed)
			t.Errorf("run %d changed %d task(s), want none:\n  %s", run, len(changed), strings.Join(changed, "\n  "))
		}
	}
	markerStarted := time.Now()
	defer func() { t.Logf("marker read in %s", time.Since(markerStarted).Round(time.Millisecond)) }()
	marker, _, err := f.runner.ReadMarker(ctx, cloudprovider.SSHEndpoint{Host: "127.0.0.1", Port: f.m.Port, User: "root"}, f.m.HostKey)
	if err != nil {
		t.Fatalf("the machine has no usable marker after reaching ready: %v", err)
	}
	if marker.Playbook != inventory.DefaultPlaybook(kind) || marker.Machine == nil || marker.Machine.Driver != realos.DriverVersion {
		t.Fatalf("marker %+v (machine %+v): want playbook %s and driver %s", marker, marker.Machine, inventory.DefaultPlaybook(kind), realos.DriverVersion)
	}
	return marker, first
}

// run runs a command on the machine and fails the test when it fails.
func (f realOSFixture) run(t *testing.T, command string) string {
	t.Helper()
	out, err := f.m.Run(context.Background(), command)
	if err != nil {
		t.Fatalf("%s on the real OS: %v: %s", command, err, out)
	}
	return strings.TrimSpace(out)
}

// checkExporter checks an exporter answers on loopback only, with a metric only the real one (or,
// for dcgm-exporter, the stand-in) has.
func (f realOSFixture) checkExporter(t *testing.T, port int, metric string) {
	t.Helper()
	listen := f.run(t, fmt.Sprintf("ss -Hltn 'sport = :%d' | awk '{print $4}'", port))
	if want := fmt.Sprintf("127.0.0.1:%d", port); listen != want {
		t.Errorf("port %d: listening on %q, want only %s", port, listen, want)
	}
	resp, err := f.m.HTTPClient().Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		t.Fatalf("exporter on %d: %v", port, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), metric) {
		t.Errorf("the exporter on %d answers HTTP %d without %s", port, resp.StatusCode, metric)
	}
}

// checkDebianPackage checks a package is installed (dpkg says so: "ii", or "hi" when held) and returns
// its version.
func (f realOSFixture) checkDebianPackage(t *testing.T, name string) string {
	t.Helper()
	st := f.run(t, "dpkg-query -W -f '${db:Status-Abbrev}${Version}' "+name)
	if len(st) < 2 || st[1] != 'i' {
		t.Errorf("%s is not installed: %q", name, st)
		return ""
	}
	return strings.TrimSpace(st[2:])
}

// watchExposure watches, until the returned function is called, for a listening TCP socket on an
// exporter's port (9100, 9400) bound to any address but loopback, in the machine's network namespace:
// an exporter reachable from outside, even for a moment. It samples the kernel's table of listening
// sockets every 10 ms (sock_diag, realos.Machine.ListeningSampler: one socket in the machine's
// namespace for the whole watch), so it can miss a very short exposure but never reports a false one.
func watchExposure(t *testing.T, m *realos.Machine) func() []string {
	t.Helper()
	sample, stopSampler, err := m.ListeningSampler()
	if err == nil {
		_, err = sample()
	}
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	found := map[string]bool{}
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		defer stopSampler()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			ls, _ := sample()
			for _, l := range ls {
				if (l.Port() == 9100 || l.Port() == 9400) && !l.Addr().IsLoopback() {
					found[l.String()] = true
				}
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() []string {
		close(done)
		<-finished
		var out []string
		for k := range found {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
}

// runLog keeps a provisioning run's log lines (the Runner's events), the tasks that reported a change
// and how many machines its ansible-playbook run provisioned.
type runLog struct {
	mu      sync.Mutex
	lines   []string
	changed []string
	batch   int
	// paused is when preflight's first task, which pauses the automatic upgrades, ended.
	paused time.Time
}

func (l *runLog) log(msg string, fields map[string]any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf("%s %s %v", time.Now().Format("05.000"), msg, fields))
	if n, ok := fields["batch"].(int); ok && msg == "running playbook" {
		l.batch = n
	}
	if msg == "task ok" && fields["changed"] == true {
		l.changed = append(l.changed, fmt.Sprintf("%v: %v", fields["role"], fields["task"]))
	}
	if msg == "task ok" && fields["role"] == "preflight" && strings.HasSuffix(fmt.Sprint(fields["task"]), "Look at what the machine has") && l.paused.IsZero() {
		l.paused = time.Now()
	}
}

// summary is what the run's log says of it: when preflight paused the upgrades (zero: never), the
// tasks that changed something, and how many machines the ansible-playbook run provisioned.
func (l *runLog) summary() (paused time.Time, changed []string, batch int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.paused, append([]string(nil), l.changed...), l.batch
}

func (l *runLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func tailString(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// gpuSpec is the simulated GPU layer of the real-OS machines: two H100s without NVSwitches (see
// realos.Substitutions for why no NVSwitch).
func gpuSpec() simhost.Spec {
	no := false
	return simhost.Spec{GPUModel: simhost.NVIDIAName("h100"), GPUCount: 2, NVSwitch: &no}
}

// onEachOS runs test on a machine of each OS the clouds boot (realos.OSes: Debian 12, Ubuntu 22.04
// and 24.04), booted with opts; HYDRA_REALOS_OSES (names, comma-separated) runs only those. The
// machines run side by side as one fleet, started together (subtests run at once on goroutines of the
// test's own, so that go test's -parallel cannot hold one back): their runs of a playbook that start
// together are one ansible-playbook run. Those of the OSes in alone have a Runner each.
func onEachOS(t *testing.T, opts realos.Options, alone []realos.OS, test func(t *testing.T, f realOSFixture)) {
	oses := realos.OSes()
	if only := os.Getenv("HYDRA_REALOS_OSES"); only != "" {
		byName := map[string]realos.OS{}
		for _, o := range oses {
			byName[o.Name] = o
		}
		oses = nil
		for _, n := range strings.Split(only, ",") {
			o, ok := byName[strings.TrimSpace(n)]
			if !ok {
				t.Fatalf("HYDRA_REALOS_OSES names %q, not one of debian-12, ubuntu-22.04, ubuntu-24.04", n)
			}
			oses = append(oses, o)
		}
	}
	isAlone := func(o realos.OS) bool {
		return slices.ContainsFunc(alone, func(a realos.OS) bool { return a.Name == o.Name })
	}
	// The shared fleet is made for as many machines as run (go test's -run may leave some out), once
	// every subtest is known to run or not.
	var decided, done sync.WaitGroup
	decided.Add(len(oses))
	done.Add(len(oses))
	var together atomic.Int32
	var shared *fleet
	var sharedErr error
	ready := make(chan struct{})
	for _, o := range oses {
		go func() {
			defer done.Done()
			ran := false
			t.Run(o.Name, func(t *testing.T) {
				ran = true
				if !isAlone(o) {
					together.Add(1)
				}
				decided.Done()
				<-ready
				fl, err := shared, sharedErr
				if isAlone(o) {
					fl, err = newFleet(t, 1)
				}
				if err != nil {
					t.Fatal(err)
				}
				test(t, newRealOSIn(t, fl, o, false, opts))
			})
			if !ran {
				decided.Done()
			}
		}()
	}
	decided.Wait()
	shared, sharedErr = newFleet(t, int(together.Load()))
	close(ready)
	done.Wait()
}

// TestRealOS_BareVMAndExeclet: on each real OS booted with systemd, bare-vm.yml reaches ready, keeps the
// image's driver (another branch than the one asked for: never a second driver on top), installs the
// distribution's node_exporter with apt and runs it as a unit on loopback, DCGM and dcgm-exporter as
// units, and mounts the machine's volumes. Then execlet.yml reaches ready on the same machine (the agent
// downloaded with get_url and checked against its SHA-256, run as a unit), its first run changing
// nothing but the execlet role's tasks and the marker, and a second run of it nothing at all. The two
// playbooks share every role but vm_access and execlet: one machine per OS runs both, instead of a
// machine each whose first runs did the same apt work, and execlet.yml's first run is the second run
// of every shared role (the same volumes; vm_access, files only, runs twice in TestRealOS_Pod). On
// Debian 12 the machine also has an automatic upgrade that holds the dpkg lock when the first run
// begins, and the agent gets secret arguments (checkUpgradesPausedAndSecretsHidden).
func TestRealOS_BareVMAndExeclet(t *testing.T) {
	t.Parallel()
	// Debian 12's runs are timed against its automatic upgrade (checkUpgradesPausedAndSecretsHidden): a
	// Runner of its own, so that no run of another machine's keeps it in a batch after its play ended.
	onEachOS(t, realos.Options{Systemd: true, GPU: gpuSpec()}, []realos.OS{realos.Debian12}, func(t *testing.T, f realOSFixture) {
		f.volumes = prepareVolumes(t, f)
		upgrades := f.os.Name == realos.Debian12.Name
		if upgrades {
			f.startUpgradeLock(t)
		}
		bareVM := testBareVM(t, f)
		execlet := testExeclet(t, f, upgrades)
		if upgrades {
			f.checkUpgradesPausedAndSecretsHidden(t, bareVM, execlet)
		}
	})
}

// runSpan is when back-to-back provisioning runs started and ended (Unix seconds), and how many.
type runSpan struct {
	started, ended int64
	runs           int
}

// spanSince is the span of the runs f made since it had n pauses: from the first one's pause of the
// automatic upgrades (before it they run as they would without hydra, for as long as a loaded runner
// takes to reach the pause) to now.
func (f realOSFixture) spanSince(t *testing.T, n, runs int) runSpan {
	t.Helper()
	at := f.pauses.since(n)
	if at.IsZero() {
		t.Fatalf("no run of the %d said when it paused the automatic upgrades (preflight's \"Look at what the machine has\")", runs)
	}
	return runSpan{started: at.Unix(), ended: time.Now().Unix(), runs: runs}
}

// testBareVM provisions bare-vm.yml once on f (its volumes prepared), checks what it made and returns
// when the run was.
func testBareVM(t *testing.T, f realOSFixture) runSpan {
	// Asking for Ubuntu's 580 branch: the image's driver (570) works, so it is kept, and nothing is
	// installed on top of it.
	before := f.run(t, nvidiaPackages)
	n := f.pauses.count()
	marker, _ := f.provisionRuns(t, inventory.KindVM, 2, map[string]any{"hydra_nvidia_driver_source": "ubuntu", "hydra_nvidia_driver_branch": "580"}, 1)
	span := f.spanSince(t, n, 1)
	checkVolumes(t, f)
	f.noInstall(t, before)
	t.Logf("prometheus-node-exporter %s installed by the playbooks with apt", f.checkDebianPackage(t, "prometheus-node-exporter"))
	want := provision.MarkerExporters{Address: "127.0.0.1", NodeExporter: "systemd", DCGMExporter: "systemd"}
	if marker.Machine.Exporters != want || !marker.Machine.Systemd {
		t.Errorf("marker's machine %+v: want systemd and exporters %+v", marker.Machine, want)
	}
	if st := f.run(t, "systemctl is-active prometheus-node-exporter.service nvidia-dcgm.service hydra-dcgm-exporter.service || true"); st != "active\nactive\nactive" {
		t.Errorf("node_exporter, DCGM and dcgm-exporter units: %q, want all active", st)
	}
	f.checkExporter(t, 9100, "node_exporter_build_info")
	f.checkExporter(t, 9400, "DCGM_FI_DEV_GPU_TEMP")
	if st := f.run(t, "systemctl is-system-running || true"); st != "running" {
		failed, _ := f.m.Run(context.Background(), "systemctl --failed --no-legend --no-pager")
		t.Errorf("the machine is %q after provisioning, want running; failed units:\n%s", st, failed)
	}
	return span
}

// testExeclet provisions execlet.yml twice on f, provisioned with bare-vm.yml (the first run changes
// only the execlet role's tasks and the marker; with secret, the agent's arguments carry
// execletSecret), checks the agent and node_exporter run as units, and returns when the runs were.
func testExeclet(t *testing.T, f realOSFixture, secret bool) runSpan {
	agent, err := os.ReadFile(f.m.Root + realos.GPULayerDir + "/root/usr/local/bin/hydra-execlet")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(agent)
	vars := map[string]any{
		"hydra_execlet_url":    "file://" + realos.GPULayerDir + "/root/usr/local/bin/hydra-execlet",
		"hydra_execlet_sha256": hex.EncodeToString(sum[:]),
	}
	if secret {
		vars["hydra_execlet_args"] = "--token " + execletSecret + " --verbose"
	}
	n := f.pauses.count()
	_, first := f.provisionRuns(t, inventory.KindExeclet, 2, vars, 2)
	span := f.spanSince(t, n, 2)
	var execlet int
	for _, task := range first {
		switch {
		case strings.HasPrefix(task, "execlet: "):
			execlet++
		case !strings.HasPrefix(task, "marker: "):
			t.Errorf("execlet.yml's first run after bare-vm.yml changed %q: a role bare-vm.yml ran did not stay as it left it", task)
		}
	}
	if execlet == 0 {
		t.Errorf("execlet.yml's first run changed no task of the execlet role: %q", first)
	}
	f.checkDebianPackage(t, "prometheus-node-exporter")
	if st := f.run(t, "systemctl is-active hydra-execlet.service prometheus-node-exporter.service || true"); st != "active\nactive" {
		t.Errorf("hydra-execlet and node_exporter units: %q, want both active", st)
	}
	f.checkExporter(t, 9100, "node_exporter_build_info")
	return span
}

// TestRealOS_Pod: each OS's tree run without systemd (sshd is the container's only service, as in a
// pod whose image has the distribution's node_exporter: nodeExporterInImage) reaches ready with
// bare-vm.yml: the exporters the image has run as processes on loopback, DCGM's host engine is
// started, nothing needs systemctl; a bind volume is mounted from fstab without systemd; a second run
// changes nothing.
func TestRealOS_Pod(t *testing.T) {
	t.Parallel()
	onEachOS(t, realos.Options{GPU: gpuSpec(), ImagePrepare: []string{nodeExporterInImage}}, nil, testPod)
}

// nodeExporterInImage installs the distribution's node_exporter into a machine's image with apt (once:
// realos.Options.ImagePrepare), as an image that has it.
const nodeExporterInImage = "apt-get -q update >/dev/null && apt-get install -y -q --no-install-recommends prometheus-node-exporter >/dev/null && apt-get clean"

func testPod(t *testing.T, f realOSFixture) {
	if f.run(t, "test -d /run/systemd/system && echo systemd || echo none") != "none" {
		t.Fatal("the pod runs systemd")
	}
	if out, _ := f.m.Run(context.Background(), "ss -Hltn 'sport = :9100'"); strings.TrimSpace(out) != "" {
		t.Fatalf("node_exporter started on its own in the pod: %s", out)
	}
	f.volumes = prepareBindVolume(t, f)
	marker := f.provisionTwice(t, inventory.KindVM, 2, nil)
	checkBindVolume(t, f)
	want := provision.MarkerExporters{Address: "127.0.0.1", NodeExporter: "process", DCGMExporter: "process"}
	if marker.Machine.Exporters != want || marker.Machine.Systemd {
		t.Errorf("marker's machine %+v: want no systemd and exporters %+v", marker.Machine, want)
	}
	f.checkExporter(t, 9100, "node_exporter_build_info")
	f.checkExporter(t, 9400, "DCGM_FI_DEV_GPU_TEMP")
	if out := f.run(t, "ps -eo args | grep -c '^/usr/bin/prometheus-node-exporter --web.listen-address=127.0.0.1:9100' || true"); out != "1" {
		t.Errorf("the distribution's node_exporter runs %s time(s) as a process, want once", out)
	}
}

// TestRealOS_ExporterFirewall: exporters on the machine's private address with allowed sources get
// hydra's nftables rules, loaded by their unit, in a network namespace of the machine's own (never the
// host's), once hydra_exporter_firewall_in_container says the container's network is its own (refused,
// naming it, before): an allowed source reaches node_exporter, another is dropped, the host sees nothing. The
// machine's image has Debian's node_exporter (nodeExporterInImage), whose packaged unit starts it on
// every interface of that network, as such an image does until hydra configures it; a second run
// changes nothing.
func TestRealOS_ExporterFirewall(t *testing.T) {
	t.Parallel()
	f := newRealOSWith(t, realos.Options{Systemd: true, GPU: gpuSpec(), ImagePrepare: []string{nodeExporterInImage}})
	// The machine's private interface, and a peer in a second namespace of the machine's own with an
	// allowed source (10.89.0.3, in 10.89.0.0/30) and one that is not (10.89.0.9).
	peer := f.run(t, `set -e
ip link add hydra0 type veth peer name hydra1
ip addr add 10.89.0.2/24 dev hydra0
ip link set hydra0 up
nohup unshare -n sleep infinity >/dev/null 2>&1 </dev/null &
pid=$!
until [ "$(readlink /proc/$pid/ns/net)" != "$(readlink /proc/self/ns/net)" ]; do sleep 0.05; done
ip link set hydra1 netns $pid
nsenter -t $pid -n sh -c 'ip addr add 10.89.0.3/24 dev hydra1 && ip addr add 10.89.0.9/24 dev hydra1 && ip link set hydra1 up && ip link set lo up'
echo $pid`)
	// A container loads hydra's firewall only when told its network is its own (it may be its host's):
	// first refused, naming the variable; then allowed.
	vars := map[string]any{"hydra_exporter_listen": "private", "hydra_exporter_allowed_sources": []string{"10.89.0.0/30"}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	rec := &runLog{}
	res, err := f.runner.Provision(ctx, f.request(inventory.KindVM, "h100", 2, vars, rec))
	var te *provision.TaskError
	if !errors.As(err, &te) || !strings.Contains(res.Message, "hydra_exporter_firewall_in_container") {
		t.Fatalf("a container's exporters on a private address without hydra_exporter_firewall_in_container: want a refusal naming it, got %v\nlog:\n%s", err, rec)
	}
	t.Logf("refused as it should be, at %q: %s", te.Task, res.Message)
	if out, _ := f.m.Run(ctx, "nft list tables"); strings.Contains(out, "hydra_exporters") {
		t.Errorf("nftables rules were loaded although refused:\n%s", out)
	}
	vars["hydra_exporter_firewall_in_container"] = true
	marker := f.provisionTwice(t, inventory.KindVM, 2, vars)
	if marker.Machine.Exporters.Address != "10.89.0.2" {
		t.Errorf("exporters' address %q, want the private 10.89.0.2", marker.Machine.Exporters.Address)
	}
	rules := f.run(t, "nft list table inet hydra_exporters")
	for _, want := range []string{"ip saddr 10.89.0.0/30 accept", "tcp dport { 9100, 9400 } drop"} {
		if !strings.Contains(rules, want) {
			t.Errorf("hydra's nftables table lacks %q:\n%s", want, rules)
		}
	}
	if st := f.run(t, "systemctl is-active hydra-exporter-firewall.service prometheus-node-exporter.service || true"); st != "active\nactive" {
		t.Errorf("the firewall and node_exporter units: %q, want both active", st)
	}
	if listen := f.run(t, "ss -Hltn 'sport = :9100' | awk '{print $4}'"); listen != "10.89.0.2:9100" {
		t.Errorf("node_exporter listens on %q, want only 10.89.0.2:9100", listen)
	}
	probe := func(source string) string {
		return f.run(t, "nsenter -t "+peer+` -n python3 -c 'import socket, sys
s = socket.socket(); s.bind((sys.argv[1], 0)); s.settimeout(3)
try:
    s.connect(("10.89.0.2", 9100)); s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
    print("open" if b"node_exporter_build_info" in s.makefile("rb").read() else "no metrics")
except socket.timeout:
    print("dropped")
except OSError as e:
    print("error %s" % e)' `+source)
	}
	if got := probe("10.89.0.3"); got != "open" {
		t.Errorf("an allowed source (10.89.0.3) reaching node_exporter: %s, want open", got)
	}
	if got := probe("10.89.0.9"); got != "dropped" {
		t.Errorf("a source not allowed (10.89.0.9) reaching node_exporter: %s, want dropped", got)
	}
	// The host's network saw none of it.
	if c, err := net.DialTimeout("tcp", "127.0.0.1:9100", time.Second); err == nil {
		_ = c.Close()
		t.Error("something listens on the host's 127.0.0.1:9100: the machine's network was not its own")
	}
	if out, err := exec.Command("nft", "list", "tables").CombinedOutput(); err == nil && strings.Contains(string(out), "hydra_exporters") {
		t.Errorf("the host's nftables has hydra's table:\n%s", out)
	}
}
