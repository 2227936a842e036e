package provider

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"

	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox"
)

// serveForReattach serves the provider from the test binary the way `-debug` does and returns the
// TF_REATTACH_PROVIDERS value that points the real Terraform CLI at it.
func serveForReattach(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	reattach := make(chan *plugin.ReattachConfig, 1)
	closed := make(chan struct{})
	go func() {
		err := tf6server.Serve(Address, providerserver.NewProtocol6(New("test")()),
			tf6server.WithDebug(ctx, reattach, closed), tf6server.WithGoPluginLogger(hclog.NewNullLogger()))
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
	value, err := json.Marshal(map[string]any{Address: map[string]any{
		"Protocol": string(rc.Protocol), "ProtocolVersion": rc.ProtocolVersion, "Pid": rc.Pid, "Test": true,
		"Addr": map[string]string{"Network": rc.Addr.Network(), "String": rc.Addr.String()},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return string(value)
}

// TestAccGPUInstance_ctrlC interrupts a real `terraform apply` with SIGINT (Ctrl-C) while the machine
// boots. The billed machine must stay in state, tainted, and the next apply must replace it rather
// than leave a second machine beside it.
func TestAccGPUInstance_ctrlC(t *testing.T) {
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: set TF_ACC=1 (make test does)")
	}
	t.Parallel()
	testAccPreCheck(t)
	tf := os.Getenv("TF_ACC_TERRAFORM_PATH")
	s := newTestSandbox(t)
	work := t.TempDir()
	config := s.providerConfig("") + `
terraform {
  required_providers {
    hydra = { source = "hydragpu/hydra" }
  }
}
` + testAccGPUInstanceConfig_basic("ctrlc", "l4", "")
	if err := os.WriteFile(filepath.Join(work, "main.tf"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "TF_REATTACH_PROVIDERS="+serveForReattach(t), "CHECKPOINT_DISABLE=1",
		"TF_CLI_CONFIG_FILE=/dev/null", "TF_IN_AUTOMATION=1")
	run := func(args ...string) (string, error) {
		cmd := exec.Command(tf, args...)
		cmd.Dir, cmd.Env = work, env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	// The machine boots for a minute; Ctrl-C arrives once it exists at the cloud.
	s.setFaults(sandbox.Faults{BootTime: "60s"})
	apply := exec.Command(tf, "apply", "-auto-approve", "-no-color")
	apply.Dir, apply.Env = work, env
	var out strings.Builder
	apply.Stdout, apply.Stderr = &out, &out
	if err := apply.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for len(s.live()) == 0 {
		if time.Now().After(deadline) {
			_ = apply.Process.Kill()
			t.Fatalf("no machine was created:\n%s", out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	if err := apply.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := apply.Wait()
	t.Logf("terraform exited %v after SIGINT in %s", err, time.Since(start).Round(time.Millisecond))
	if err == nil || !strings.Contains(out.String(), "Interrupt received") {
		t.Fatalf("terraform did not stop on Ctrl-C (err %v):\n%s", err, out.String())
	}
	if !errorPattern("to run (last status pending): context canceled", "kept in state (tainted)").MatchString(out.String()) {
		t.Errorf("the interrupted create should report the cancellation:\n%s", out.String())
	}

	// The billed machine is in state, tainted: never forgotten.
	show, err := run("state", "show", "-no-color", "hydra_gpu_instance.test")
	if err != nil || !strings.Contains(show, "(tainted)") || !strings.Contains(show, "sbx-vm-ctrlc") {
		t.Fatalf("after Ctrl-C the machine must be in state, tainted (err %v):\n%s", err, show)
	}
	if n := len(s.live()); n != 1 {
		t.Fatalf("%d machines at the cloud after Ctrl-C, want 1", n)
	}

	// The next apply replaces it: still exactly one machine at the cloud.
	s.setFaults(sandbox.Faults{})
	if o, err := run("apply", "-auto-approve", "-no-color"); err != nil {
		t.Fatalf("second apply: %v\n%s", err, o)
	}
	if live, created := len(s.live()), s.created(); live != 1 || created != 2 {
		t.Fatalf("after the second apply: %d live, %d created; want 1 live, 2 created", live, created)
	}
	show, _ = run("state", "show", "-no-color", "hydra_gpu_instance.test")
	if strings.Contains(show, "(tainted)") || !strings.Contains(show, `status                   = "ready"`) {
		t.Fatalf("the replacement is not ready:\n%s", show)
	}
	if o, err := run("destroy", "-auto-approve", "-no-color"); err != nil {
		t.Fatalf("destroy: %v\n%s", err, o)
	}
	if err := s.checkDestroyed(nil); err != nil {
		t.Fatal(err)
	}
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

// TestAccGPUInstance_ctrlCDuringProvisioning interrupts `terraform apply` while Ansible runs: the run
// is stopped with its whole process group, nothing is left running, and the machine stays in state.
func TestAccGPUInstance_ctrlCDuringProvisioning(t *testing.T) {
	requireProvisioningTools(t)
	testAccPreCheck(t)
	t.Parallel()
	tf := os.Getenv("TF_ACC_TERRAFORM_PATH")
	s := newTestSandbox(t)
	playbooks, err := filepath.Abs("testdata/playbooks")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	config := s.provisionedConfig(playbooks) + `
terraform {
  required_providers {
    hydra = { source = "hydragpu/hydra" }
  }
}
` + testAccGPUInstanceConfig_basic("ctrlc-prov", "l4", "  provisioning_vars = { sleep_seconds = 300 }")
	if err := os.WriteFile(filepath.Join(work, "main.tf"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "TF_REATTACH_PROVIDERS="+serveForReattach(t), "CHECKPOINT_DISABLE=1",
		"TF_CLI_CONFIG_FILE=/dev/null", "TF_IN_AUTOMATION=1")
	apply := exec.Command(tf, "apply", "-auto-approve", "-no-color")
	apply.Dir, apply.Env = work, env
	var out strings.Builder
	apply.Stdout, apply.Stderr = &out, &out
	if err := apply.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the playbook is running on the machine (its attempt counter exists), then Ctrl-C.
	deadline := time.Now().Add(120 * time.Second)
	for {
		if live := s.live(); len(live) == 1 {
			if _, err := os.Stat(filepath.Join(s.sb.MachineDir(live[0].ID), "root", "attempts")); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			_ = apply.Process.Kill()
			t.Fatalf("provisioning never started:\n%s", out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(time.Second)
	if err := apply.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := apply.Wait(); err == nil {
		t.Fatalf("apply succeeded despite Ctrl-C:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "Interrupt received") || !errorPattern("provisioning", "canceled").MatchString(out.String()) {
		t.Errorf("the interrupted provisioning should report the cancellation:\n%s", out.String())
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
	cmd := exec.Command(tf, "state", "show", "-no-color", "hydra_gpu_instance.test")
	cmd.Dir, cmd.Env = work, env
	show, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(show), "(tainted)") {
		t.Fatalf("the machine must be in state, tainted (err %v):\n%s", err, show)
	}
	destroy := exec.Command(tf, "destroy", "-auto-approve", "-no-color")
	destroy.Dir, destroy.Env = work, env
	if o, err := destroy.CombinedOutput(); err != nil {
		t.Fatalf("destroy: %v\n%s", err, o)
	}
	if err := s.checkDestroyed(nil); err != nil {
		t.Fatal(err)
	}
}
