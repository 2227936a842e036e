package provider

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"

	"regexp"

	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox"
)

// serveForReattach serves the provider from the test binary the way `-debug` does and returns the
// TF_REATTACH_PROVIDERS value that points the real CLI at it (keyed by the CLI's own address of
// hydragpu/hydra, testProviderAddress). Its SDK log goes where the testing framework's in-process
// providers' does (TF_LOG and TF_LOG_PATH, TF_ACC_LOG_PATH; none set: nowhere), not every request's
// trace to stderr.
func serveForReattach(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	reattach := make(chan *plugin.ReattachConfig, 1)
	closed := make(chan struct{})
	go func() {
		err := tf6server.Serve(Address, providerserver.NewProtocol6(New("test")()),
			tf6server.WithDebug(ctx, reattach, closed), tf6server.WithGoPluginLogger(hclog.NewNullLogger()),
			tf6server.WithLoggingSink(t))
		if err != nil {
			t.Errorf("serving the provider: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-closed
	})
	var rc *plugin.ReattachConfig
	select {
	case rc = <-reattach:
	case <-time.After(30 * time.Second):
		t.Fatal("the provider did not start")
	}
	value, err := json.Marshal(map[string]any{testProviderAddress(): map[string]any{
		"Protocol": string(rc.Protocol), "ProtocolVersion": rc.ProtocolVersion, "Pid": rc.Pid, "Test": true,
		"Addr": map[string]string{"Network": rc.Addr.Network(), "String": rc.Addr.String()},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return string(value)
}

// applyUntilCreated starts `terraform apply` with machines that boot for boot and returns once one exists
// at the cloud (within a minute), with the apply and its output so far; later machines boot at the
// sandbox's default pace.
func (d *cliDir) applyUntilCreated(s *testSandbox, boot string) (*exec.Cmd, *strings.Builder) {
	d.t.Helper()
	s.setFaults(sandbox.Faults{BootTime: boot})
	out := &strings.Builder{}
	cmd := d.start(out, "apply", "-auto-approve")
	deadline := time.Now().Add(60 * time.Second)
	for len(s.live()) == 0 {
		if time.Now().After(deadline) {
			d.t.Fatalf("no machine was created:\n%s", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.setFaults(sandbox.Faults{})
	return cmd, out
}

// TestAccGPUInstance_ctrlC interrupts a real `terraform apply` with SIGINT (Ctrl-C) while the machine
// boots. One Ctrl-C costs nothing: the billed machine stays in state in a resumable status, not
// tainted, and the next apply resumes it in place instead of buying another.
func TestAccGPUInstance_ctrlC(t *testing.T) {
	s, d := cliTest(t, newCLIDirReattach)
	d.writeInstance(s, "ctrlc", "l4", "")

	// The machine boots for 15 s; Ctrl-C arrives once it exists at the cloud.
	apply, out := d.applyUntilCreated(s, "15s")
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	if err := apply.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := apply.Wait()
	t.Logf("terraform exited (%v) %s after SIGINT", err, time.Since(start).Round(time.Millisecond))
	if !strings.Contains(out.String(), "Interrupt received") || !errorPattern("interrupted", "kept in state", "not tainted").MatchString(out.String()) {
		t.Fatalf("the interrupted create should say the machine is kept, resumable:\n%s", out.String())
	}

	show := d.mustRun("state", "show", "hydra_gpu_instance.test")
	if strings.Contains(show, "(tainted)") || !statusIs("pending").MatchString(show) {
		t.Fatalf("after Ctrl-C the machine must be in state, pending and not tainted:\n%s", show)
	}
	plan := d.mustRun("plan")
	if !strings.Contains(plan, "1 to change, 0 to destroy") {
		t.Fatalf("the next plan must resume the machine in place:\n%s", plan)
	}
	d.resumeToReady(s)
}

// orphanedRunProcesses lists processes (ansible-playbook, ssh) whose command line points into a
// provisioning run directory that no longer exists: the run ended, its processes did not.
func orphanedRunProcesses() []string {
	var orphans []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		data, err := os.ReadFile(p)
		if err != nil || len(data) == 0 {
			continue
		}
		cmdline := strings.ReplaceAll(string(data), "\x00", " ")
		if !strings.Contains(cmdline, "ansible") && !strings.Contains(cmdline, "ssh") {
			continue
		}
		for _, field := range strings.Fields(strings.NewReplacer("=", " ", ",", " ", "'", " ", `"`, " ").Replace(cmdline)) {
			i := strings.Index(field, "/hydra-")
			if i < 0 || !strings.HasPrefix(field, "/") {
				continue
			}
			rest := field[i+1:]
			j := strings.IndexByte(rest, '/')
			if j < 0 {
				continue
			}
			runDir := field[:i+1+j]
			if _, err := os.Stat(runDir); os.IsNotExist(err) {
				orphans = append(orphans, filepath.Dir(p)+": "+cmdline)
				break
			}
		}
	}
	return orphans
}

// TestAccGPUInstance_ctrlCResumes interrupts `terraform apply` once while Ansible runs: the run is
// stopped with its whole process group, nothing is left running, the machine stays in state as
// "provisioning" (not tainted), and the next apply resumes it: one machine created in total, ready.
func TestAccGPUInstance_ctrlCResumes(t *testing.T) {
	requireProvisioningTools(t)
	t.Parallel()
	s := newTestSandbox(t)
	playbooks, err := filepath.Abs("testdata/playbooks")
	if err != nil {
		t.Fatal(err)
	}
	d := newCLIDirReattach(t, "")
	d.write(s.provisionedConfig(playbooks) + testAccGPUInstanceConfig_basic("ctrlc-prov", "l4", "  provisioning_vars = { sleep_seconds = 300 }"))
	var out strings.Builder
	apply := d.start(&out, "apply", "-auto-approve")
	// Wait until the playbook is running on the machine (its attempt counter exists), then Ctrl-C.
	deadline := time.Now().Add(120 * time.Second)
	for {
		if live := s.live(); len(live) == 1 {
			if _, err := os.Stat(filepath.Join(s.sb.MachineDir(live[0].ID), "root", "attempts")); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("provisioning never started:\n%s", out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(time.Second)
	if err := apply.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	_ = apply.Wait()
	if !strings.Contains(out.String(), "Interrupt received") || !errorPattern("interrupted", "kept in state", "not tainted").MatchString(out.String()) {
		t.Errorf("the interrupted provisioning should say the machine is kept, resumable:\n%s", out.String())
	}
	// The run's process group is gone (the runner allows a grace period before SIGKILL).
	var orphans []string
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		if orphans = orphanedRunProcesses(); len(orphans) == 0 {
			break
		}
	}
	if len(orphans) > 0 {
		t.Errorf("processes of the cancelled run are still alive:\n%s", strings.Join(orphans, "\n"))
	}
	show := d.mustRun("state", "show", "hydra_gpu_instance.test")
	if strings.Contains(show, "(tainted)") || !statusIs("provisioning").MatchString(show) {
		t.Fatalf("the machine must be in state, provisioning and not tainted:\n%s\napply said:\n%s", show, out.String())
	}

	// The next apply resumes provisioning in place (a quick playbook this time).
	d.write(s.provisionedConfig(playbooks) + testAccGPUInstanceConfig_basic("ctrlc-prov", "l4", "  provisioning_vars = { sleep_seconds = 0 }"))
	// The plan says why the machine is updated in place (a warning), not silently.
	if plan := d.mustRun("plan"); !errorPattern("Warning: GPU instance will be resumed", "was left provisioning by an interrupted apply", "resumes it in place").MatchString(plan) {
		t.Errorf("the plan must say why the machine is resumed:\n%s", plan)
	}
	d.resumeToReady(s)
}

// statusReady matches `status = "ready"` in `terraform state show` output, however the attributes are
// aligned.
var statusReady = statusIs("ready")

// statusIs matches `status = "<s>"` in `terraform state show` output, however it is aligned.
func statusIs(s string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^\s*status\s+= "` + regexp.QuoteMeta(s) + `"$`)
}

// resumeToReady runs the apply that resumes an interrupted one: the one machine created is ready, and
// no other was bought; then everything is destroyed.
func (d *cliDir) resumeToReady(s *testSandbox) {
	d.t.Helper()
	d.mustRun("apply", "-auto-approve")
	if live, created := len(s.live()), s.created(); live != 1 || created != 1 {
		d.t.Fatalf("after the resuming apply: %d live, %d created; want 1 and 1", live, created)
	}
	if show := d.mustRun("state", "show", "hydra_gpu_instance.test"); !statusReady.MatchString(show) {
		d.t.Fatalf("the resumed machine is not ready:\n%s", show)
	}
	d.destroyAll(s)
}
