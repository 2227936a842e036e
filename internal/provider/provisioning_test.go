package provider

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"gopkg.in/yaml.v3"

	"github.com/hydragpu/terraform-provider-hydra/internal/provision"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox/simhost"
	"github.com/hydragpu/terraform-provider-hydra/playbooks"
)

// requireProvisioningTools fails (never skips) when the real Ansible or sshd is missing: CI installs
// both, and a provisioning test that silently skipped would prove nothing. The first call checks
// ansible-playbook as the provider does (provision.CheckAnsible: it runs `ansible-playbook --version`,
// about a third of a CPU-second), before its test goes parallel: the provider served in this process
// finds it accepted, instead of every provisioning test starting at once running the same check.
func requireProvisioningTools(t *testing.T) {
	t.Helper()
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: set TF_ACC=1 (make test does)")
	}
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		t.Fatal("ansible-playbook is not installed (apt-get install ansible-core); the provisioning tests need it")
	}
	ansibleOnce.Do(func() { ansibleErr = provision.CheckAnsible("") })
	if ansibleErr != nil {
		t.Fatal(ansibleErr)
	}
	if _, err := simhost.FindSSHD(); err != nil {
		t.Fatal(err)
	}
}

var (
	ansibleOnce sync.Once
	ansibleErr  error
)

// copyPlaybooks copies a playbook tree into a fresh directory the test may change.
func copyPlaybooks(t *testing.T, src fs.FS) string {
	t.Helper()
	dst := t.TempDir()
	err := fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, p), 0o755)
		}
		data, err := fs.ReadFile(src, p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, p), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// smallMachinePlaybooks is a playbook directory of the real playbooks (the cluster check, the drain,
// the health probe's script) whose machine playbooks (bare-vm.yml, execlet.yml) are the acceptance
// tests' small one (testdata/playbooks): for a test about what hydra does around a machine's run, not
// about the run, at a fraction of a real run's cost.
func smallMachinePlaybooks(t *testing.T) string {
	t.Helper()
	dir := copyPlaybooks(t, playbooks.FS)
	for _, p := range []string{"bare-vm.yml", "execlet.yml"} {
		data, err := os.ReadFile(filepath.Join("testdata/playbooks", p))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// slimPlaybooks is a playbook directory of the real playbooks whose bare-vm.yml keeps only the roles
// named in keep, as the real one runs them (its order, its parameters): for a test about what these
// roles do on the machine (a volume mounted, the customer's key, the interruption watcher, the marker)
// without the cost of the driver layer, monitoring and health checks around them.
func slimPlaybooks(t *testing.T, keep ...string) string {
	t.Helper()
	dir := copyPlaybooks(t, playbooks.FS)
	path := filepath.Join(dir, "bare-vm.yml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var plays []map[string]any
	if err := yaml.Unmarshal(data, &plays); err != nil || len(plays) != 1 {
		t.Fatalf("bare-vm.yml is not one play (%d): %v", len(plays), err)
	}
	roles, _ := plays[0]["roles"].([]any)
	var kept []any
	found := map[string]bool{}
	for _, r := range roles {
		name, _ := r.(string)
		if m, ok := r.(map[string]any); ok {
			name, _ = m["role"].(string)
		}
		if slices.Contains(keep, name) {
			kept, found[name] = append(kept, r), true
		}
	}
	if len(found) != len(keep) {
		t.Fatalf("bare-vm.yml runs only %v of the roles %v", found, keep)
	}
	plays[0]["roles"] = kept
	if data, err = yaml.Marshal(plays); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// machineDir returns the simulated machine's directory of the only live instance.
func (s *testSandbox) machineDir() string {
	s.t.Helper()
	live := s.live()
	if len(live) != 1 {
		s.t.Fatalf("want one live instance, have %d", len(live))
	}
	return s.sb.MachineDir(live[0].ID)
}

// findFileContaining searches the machine's directory for a file holding want.
func findFileContaining(dir, want string) (string, bool) {
	var found string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || found != "" {
			return nil //nolint:nilerr // an unreadable entry is skipped: the search goes on
		}
		if data, err := os.ReadFile(p); err == nil && strings.Contains(string(data), want) {
			found = p
		}
		return nil
	})
	return found, found != ""
}

func TestAccGPUInstance_provisioned(t *testing.T) {
	requireProvisioningTools(t)
	s := newTestSandbox(t)
	// The playbooks after the change: bare-vm.yml with the roles the assertions below need (the
	// customer's key, the marker), so that the second run costs a fraction of the whole playbook's.
	changed := slimPlaybooks(t, "hydra_vars", "preflight", "marker", "vm_access")
	// A customer key whose comment holds a template, quotes, spaces and a command substitution: it must
	// reach the machine byte for byte, neither rendered nor run.
	tricky := `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGd9ZlDd2YbqH0h0C1Ipn8t8wP0hxB9oZt0bHqkDqJ6x {{ 7*7 }} "quoted" 'single' $(touch /tmp/hydra-acc-pwned)`
	base := s.provisionedConfig("") + testAccGPUInstanceConfig_basic("prov", "h100", "")
	withKey := s.provisionedConfig(changed) + testAccGPUInstanceConfig_basic("prov", "h100", fmt.Sprintf("  ssh_public_keys = [%q]", tricky))
	var firstDigest, firstReady string
	accTest(t, s.checkDestroyed, []resource.TestStep{
		{
			// Real ansible-playbook, real sshd: the embedded bare-vm playbook runs to ready.
			Config: base,
			ConfigStateChecks: []statecheck.StateCheck{
				stateKnown("status", "ready"),
				stateKnown("provisioning_attempts", int64(1)),
				stateKnown("provisioning_digest", like(`^sha256:[0-9a-f]{16}$`)),
				// The sandbox reports no host key: it was trusted on first contact and recorded.
				stateKnown("host_key", like(`^ssh-ed25519 `)),
				stateKnown("provisioning_error", knownvalue.Null()),
				// Its health, read as the health probe the whole playbook installed reports it.
				stateKnown("health", "healthy"),
			},
			Check: func(st *terraform.State) error {
				a := st.RootModule().Resources[resourceName].Primary.Attributes
				firstDigest, firstReady = a["provisioning_digest"], a["ready_at"]
				return nil
			},
			// Re-applying never re-runs a provisioning that succeeded: the plans after the apply, which
			// the testing framework checks after every apply, are empty.
		},
		// A playbook change (other playbooks) is an in-place update that provisions again (planned here;
		// the next step's apply runs it, with the changed variables).
		plannedOnly(nil, s.provisionedConfig(changed)+testAccGPUInstanceConfig_basic("prov", "h100", ""),
			resourceName, plancheck.ResourceActionUpdate, planUnknown("status")),
		{
			// Changed variables too; the machine is provisioned again in place, and they arrive
			// literally.
			Config: withKey,
			ConfigPlanChecks: preApply(
				plancheck.ExpectResourceAction(resourceName, plancheck.ResourceActionUpdate),
				planUnknown("status"),
			),
			ConfigStateChecks: []statecheck.StateCheck{
				stateKnown("status", "ready"),
			},
			Check: func(st *terraform.State) error {
				a := st.RootModule().Resources[resourceName].Primary.Attributes
				if a["provisioning_digest"] == firstDigest || a["ready_at"] == "" {
					return fmt.Errorf("digest %s (was %s), ready_at %s (was %s): provisioning did not run again", a["provisioning_digest"], firstDigest, a["ready_at"], firstReady)
				}
				if _, ok := findFileContaining(s.machineDir(), tricky); !ok {
					return fmt.Errorf("the customer key did not arrive literally in the machine's files")
				}
				if _, err := os.Stat("/tmp/hydra-acc-pwned"); err == nil {
					return fmt.Errorf("$(...) in a variable was executed")
				}
				return s.checkCreated(1)(st)
			},
		},
	})
}

// TestAccGPUInstance_provisioningRetries: a playbook that fails every attempt fails the create, naming
// the host, the task and its message, and keeps the billed machine in state, tainted; fixing the
// playbook's input replaces it (a plain input change would be an update in place), and the new machine,
// whose playbook fails once and passes the second time, is ready with two attempts recorded, its
// variable arriving literally.
func TestAccGPUInstance_provisioningRetries(t *testing.T) {
	requireProvisioningTools(t)
	s := newTestSandbox(t)
	failing := s.provisionedConfig("testdata/playbooks") + testAccGPUInstanceConfig_basic("doomed", "l4", "  provisioning_vars = { fail_times = 99 }\n  max_provisioning_attempts = 2")
	fixed := s.provisionedConfig("testdata/playbooks") + testAccGPUInstanceConfig_basic("doomed", "l4", `
  provisioning_vars = {
    fail_times = 1
    note       = "{{ 7*7 }} \"quotes\" and spaces $(id)"
  }
  max_provisioning_attempts = 2`)
	replaced := s.replacedReady(fixed)
	replaced.ConfigStateChecks = append(replaced.ConfigStateChecks, stateKnown("provisioning_attempts", int64(2)))
	replaced.Check = resource.ComposeTestCheckFunc(replaced.Check, func(*terraform.State) error {
		p, ok := findFileContaining(s.machineDir(), `{{ 7*7 }} "quotes" and spaces $(id)`)
		if !ok || filepath.Base(p) != "note" {
			return fmt.Errorf("the note variable did not arrive literally (found %q)", p)
		}
		return nil
	})
	accTest(t, s.checkDestroyed, []resource.TestStep{
		{
			Config:      failing,
			ExpectError: errorPattern("provisioning failed after 2 attempt(s)", "sbx-vm-doomed--", `Fail on purpose`, "planned failure on attempt 2"),
		},
		replaced,
	})
}

func TestAccGPUInstance_provisioningCancelled(t *testing.T) {
	requireProvisioningTools(t)
	s := newTestSandbox(t)
	cfg := s.provisionedConfig("testdata/playbooks") + testAccGPUInstanceConfig_basic("cancelled", "l4", "  provisioning_vars = { sleep_seconds = 120 }\n  timeouts = { create = \"12s\" }")
	accTest(t, s.checkDestroyed, []resource.TestStep{{
		// The create's deadline ends the run midway (the same path as Ctrl-C); the machine is kept.
		Config:      cfg,
		ExpectError: errorPattern("stopped when timeouts.create ran out", "kept in state"),
		Check:       s.checkLive(1),
	}})
}

// TestProvisioningUnsupported: provisioning is refused on Windows, where ansible-playbook cannot run,
// with a message that names both ways out; every Unix-like system hydra is built for may provision.
func TestProvisioningUnsupported(t *testing.T) {
	for _, goos := range []string{"linux", "darwin", "freebsd"} {
		if why := provisioningUnsupported(goos); why != "" {
			t.Errorf("provisioningUnsupported(%q) = %q, want \"\"", goos, why)
		}
	}
	why := provisioningUnsupported("windows")
	for _, want := range []string{"WSL", "enabled = false", "ansible-playbook"} {
		if !strings.Contains(why, want) {
			t.Errorf("the Windows reason does not mention %q: %q", want, why)
		}
	}
}

// Where Terraform runs without Ansible (or on Windows), what needs provisioning fails at plan and
// nothing else does: a provisioned machine is still refreshed with an empty plan, new or re-provisioned
// machines are refused before anything is created, and destroy works. Where Ansible runs, a machine
// whose host key changed is refused at once by the next provisioning run (its variables change), and
// keeps asking to be provisioned. One machine serves both, provisioned once by the acceptance tests'
// small playbook: which playbook ran is not what this test is about.
func TestAccGPUInstance_provisioningRefused(t *testing.T) {
	requireProvisioningTools(t)
	s := newTestSandbox(t)
	withAnsible := s.provisionedConfig("testdata/playbooks")
	without := strings.Replace(withAnsible, `    retry_delay = "1s"`, "    retry_delay = \"1s\"\n    ansible_playbook = \"/nonexistent/ansible-playbook\"", 1)
	if without == withAnsible {
		t.Fatal("could not set ansible_playbook in the provider block")
	}
	// The machine "here", with the note variable.
	here := func(provider, note string) string {
		return provider + testAccGPUInstanceConfig_basic("here", "l4", fmt.Sprintf("  provisioning_vars = { note = %q }", note))
	}
	accTest(t, s.checkDestroyed, []resource.TestStep{{
		Config: here(withAnsible, "first"),
		ConfigStateChecks: []statecheck.StateCheck{
			stateKnown("status", "ready"),
		},
	},
		// Refresh and plan of the provisioned machine work without Ansible.
		refreshedOnly(nil, here(without, "first"), planKnown("status", "ready")),
		{
			// A new machine would need provisioning: refused at plan.
			Config:      here(without, "first") + strings.Replace(testAccGPUInstanceConfig_basic("there", "l4", ""), `"test"`, `"other"`, 1),
			ExpectError: regexp.MustCompile(`(?s)ansible-playbook not found.*A new GPU instance needs provisioning`),
		}, {
			// So would re-provisioning the existing one (its variables change).
			Config:      here(without, "second"),
			ExpectError: regexp.MustCompile(`(?s)ansible-playbook not found.*"here".*needs provisioning`),
		}, {
			// With Ansible, the machine's host key changes: the provisioning run the changed variables
			// ask for must refuse it at once.
			PreConfig: func() {
				if err := simhost.RotateHostKey(s.machineDir()); err != nil {
					t.Fatal(err)
				}
			},
			Config:      here(withAnsible, "second"),
			ExpectError: errorPattern("host key"),
		}, {
			// Ansible never started: the machine's attempt counter still says one run. The machine
			// keeps asking to be provisioned (status error), with the same refusal until someone acts.
			PreConfig: func() {
				data, err := os.ReadFile(filepath.Join(s.machineDir(), "root", "attempts"))
				if err != nil || strings.TrimSpace(string(data)) != "1" {
					t.Errorf("attempt counter = %q, %v; want 1 (no run against the changed key)", data, err)
				}
			},
			Config:             here(withAnsible, "second"),
			PlanOnly:           true,
			ExpectNonEmptyPlan: true,
		}, {
			// Destroy works without Ansible: the machine, left out of the configuration, is deleted.
			// Nothing else was ever created: the refused plans created nothing.
			Config: without,
			Check:  resource.ComposeTestCheckFunc(s.checkLive(0), s.checkCreated(1)),
		},
	})
}
