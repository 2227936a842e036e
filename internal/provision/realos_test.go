//go:build linux

package provision

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/realos"
	"github.com/hydragpu/terraform-provider-hydra/internal/sshhost"
)

// The real-OS tests run hydra's playbooks, through this package's Runner (the real ansible-playbook,
// the host key pinned), against a real Debian 12 system container (internal/realos): real apt against
// Debian's mirror, real systemd units, real Debian packages. Only the GPU layer is simulated; each test
// logs realos.Substitutions, the steps a container cannot do and what stands in for them.
//
// They need root, systemd-nspawn and debootstrap. Where those cannot exist they skip, saying so,
// unless HYDRA_REALOS_REQUIRED=1 (make test and CI set it), where a missing tool fails them.

// realOSFixture is a booted real-OS machine and a Runner logging in to it.
type realOSFixture struct {
	m      *realos.Machine
	runner *Runner
}

func newRealOS(t *testing.T, systemd bool, gpu sshhost.Spec) realOSFixture {
	t.Helper()
	if err := realos.Available(); err != nil {
		if os.Getenv("HYDRA_REALOS_REQUIRED") == "1" {
			t.Fatalf("the real-OS test cannot run here, and HYDRA_REALOS_REQUIRED=1: %v", err)
		}
		t.Skipf("no real-OS machine here: %v", err)
	}
	requireTools(t)
	ctx := context.Background()
	started := time.Now()
	img, err := realos.EnsureImage(ctx, t.Logf)
	if err != nil {
		t.Fatalf("real-OS image: %v", err)
	}
	t.Logf("real-OS image %s ready in %s (%s)", img.Key[:12], time.Since(started).Round(time.Millisecond), img.Root)
	for _, s := range realos.Substitutions {
		t.Logf("substituted: %s -> %s (why: %s)", s.Step, s.Instead, s.Why)
	}
	key, pub := clientKey(t)
	m, err := realos.Boot(ctx, img, key, realos.Options{Systemd: systemd, AuthorizedKey: pub, GPU: gpu, Logf: t.Logf})
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
	cfg := Config{PrivateKey: key, TempDir: shortTemp(t), SSHWaitTimeout: 30 * time.Second, SSHPollInterval: 200 * time.Millisecond}
	if os.Getenv("HYDRA_TEST_ANSIBLE_LOG") != "" {
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Debug, Output: os.Stderr})
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return realOSFixture{m: m, runner: r}
}

func (f realOSFixture) request(kind, gpuType string, count int, vars map[string]any, rec *logRecorder) controlplane.ProvisionRequest {
	name := "realos-" + kind
	return controlplane.ProvisionRequest{
		Instance: controlplane.Instance{
			ID: "i-realos", Name: name, Cloud: "sandbox", GPUType: gpuType, GPUCount: count,
			Status: controlplane.StatusRunning,
			SSH:    &controlplane.SSHEndpoint{Host: "127.0.0.1", Port: f.m.Port, User: "root"},
		},
		Pool:     inventory.Pool{Name: name + "-pool", Cloud: "sandbox", Kind: kind},
		GPUType:  gpuType,
		GPUCount: count,
		HostKey:  f.m.HostKey,
		Vars:     vars,
		Attempt:  1,
		Log:      rec.log,
	}
}

// provisionTwice provisions the machine to ready, then again, and checks the second run changed
// nothing (every task's changed flag, from the JSON-lines callback's events).
func (f realOSFixture) provisionTwice(t *testing.T, kind string, count int, vars map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	for run := 1; run <= 2; run++ {
		rec := &logRecorder{}
		var changed []string
		rec.hook = func(msg string, fields map[string]any) {
			if msg == "task ok" && fields["changed"] == true {
				changed = append(changed, fmt.Sprintf("%v: %v", fields["role"], fields["task"]))
			}
		}
		started := time.Now()
		res, err := f.runner.Provision(ctx, f.request(kind, "h100", count, vars, rec))
		t.Logf("run %d of %s on the real OS: %s, %d task(s) changed", run, inventory.DefaultPlaybook(kind), time.Since(started).Round(time.Second), len(changed))
		if err != nil {
			t.Fatalf("run %d: %v (failed task %q: %s)\nlog:\n%s", run, err, res.FailedTask, res.Message, rec)
		}
		if res.HostKey != f.m.HostKey {
			t.Errorf("run %d used host key %q, pinned %q", run, res.HostKey, f.m.HostKey)
		}
		if run == 1 && len(changed) == 0 {
			t.Errorf("the first run changed nothing on a fresh machine\nlog:\n%s", rec)
		}
		if run == 2 && len(changed) > 0 {
			sort.Strings(changed)
			t.Errorf("the second run changed %d task(s), want none:\n  %s", len(changed), strings.Join(changed, "\n  "))
		}
	}
	marker, _, err := f.runner.ReadMarker(ctx, controlplane.SSHEndpoint{Host: "127.0.0.1", Port: f.m.Port, User: "root"}, f.m.HostKey)
	if err != nil {
		t.Fatalf("the machine has no usable marker after reaching ready: %v", err)
	}
	if marker.Playbook != inventory.DefaultPlaybook(kind) || marker.Machine == nil || marker.Machine.Driver != realos.DriverVersion {
		t.Errorf("marker %+v (machine %+v): want playbook %s and driver %s", marker, marker.Machine, inventory.DefaultPlaybook(kind), realos.DriverVersion)
	}
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

// checkNodeExporter checks the real node_exporter, installed by apt from Debian, answers on loopback
// only.
func (f realOSFixture) checkNodeExporter(t *testing.T, unit bool) {
	t.Helper()
	if st := f.run(t, "dpkg-query -W -f '${db:Status-Abbrev}${Version}' prometheus-node-exporter"); !strings.HasPrefix(st, "ii") {
		t.Errorf("prometheus-node-exporter is not installed from Debian: %q", st)
	}
	if unit {
		if st := f.run(t, "systemctl is-active prometheus-node-exporter.service || true"); st != "active" {
			t.Errorf("prometheus-node-exporter.service is %q, want active", st)
		}
	}
	listen := f.run(t, "ss -Hltn 'sport = :9100' | awk '{print $4}'")
	if listen != "127.0.0.1:9100" {
		t.Errorf("node_exporter listens on %q, want only 127.0.0.1:9100", listen)
	}
	resp, err := http.Get("http://127.0.0.1:9100/metrics")
	if err != nil {
		t.Fatalf("node_exporter: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "node_exporter_build_info") {
		t.Errorf("node_exporter answers HTTP %d without node_exporter_build_info (not Debian's node_exporter?)", resp.StatusCode)
	}
}

func tailString(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// gpuSpec is the simulated GPU layer of the real-OS machines: two H100s without NVSwitches (see
// realos.Substitutions for why no NVSwitch).
func gpuSpec() sshhost.Spec {
	no := false
	return sshhost.Spec{GPUModel: sshhost.NVIDIAName("h100"), GPUCount: 2, NVSwitch: &no}
}

// TestRealOS_BareVM: bare-vm.yml reaches ready on a real Debian 12 booted with systemd, installs
// Debian's node_exporter with apt and runs it as a unit on loopback; a second run changes nothing.
func TestRealOS_BareVM(t *testing.T) {
	f := newRealOS(t, true, gpuSpec())
	f.provisionTwice(t, inventory.KindVM, 2, nil)
	f.checkNodeExporter(t, true)
	if st := f.run(t, "systemctl is-active nvidia-dcgm.service hydra-dcgm-exporter.service || true"); st != "active\nactive" {
		t.Errorf("DCGM and dcgm-exporter units: %q, want both active", st)
	}
	if st := f.run(t, "systemctl is-system-running || true"); st != "running" {
		failed, _ := f.m.Run(context.Background(), "systemctl --failed --no-legend --no-pager")
		t.Errorf("the machine is %q after provisioning, want running; failed units:\n%s", st, failed)
	}
}

// TestRealOS_Execlet: execlet.yml reaches ready on the same real OS (the agent downloaded with
// get_url and checked against its SHA-256, run as a unit); a second run changes nothing.
func TestRealOS_Execlet(t *testing.T) {
	f := newRealOS(t, true, gpuSpec())
	agent, err := os.ReadFile(f.m.Root + realos.GPULayerDir + "/root/usr/local/bin/hydra-execlet")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(agent)
	vars := map[string]any{
		"hydra_execlet_url":    "file://" + realos.GPULayerDir + "/root/usr/local/bin/hydra-execlet",
		"hydra_execlet_sha256": hex.EncodeToString(sum[:]),
	}
	f.provisionTwice(t, inventory.KindExeclet, 2, vars)
	f.checkNodeExporter(t, true)
	if st := f.run(t, "systemctl is-active hydra-execlet.service || true"); st != "active" {
		t.Errorf("hydra-execlet.service is %q, want active", st)
	}
}

// TestRealOS_Pod: the same tree run without systemd (sshd is the container's only service, as in a
// pod) reaches ready with bare-vm.yml: the exporters run as processes, nothing calls systemctl; a
// second run changes nothing.
func TestRealOS_Pod(t *testing.T) {
	f := newRealOS(t, false, gpuSpec())
	if f.run(t, "test -d /run/systemd/system && echo systemd || echo none") != "none" {
		t.Fatal("the pod runs systemd")
	}
	f.provisionTwice(t, inventory.KindVM, 2, nil)
	f.checkNodeExporter(t, false)
}
