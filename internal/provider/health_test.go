package provider

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox/simhost"
)

func healthConfig(s *testSandbox, playbookDir, extra string) string {
	return s.provisionedConfig(playbookDir) + testAccGPUInstanceConfig_basic("health", "l4", extra)
}

// Every refresh reads a ready machine's health. A fault injected into it shows in the next refresh:
// unhealthy, with the reason; the plan changes nothing until replace_when_unhealthy asks for a
// replacement (planned only: applying a replacement is what every other replace test does, and it
// would provision a second machine). A machine whose health cannot be read (sshd down, or its
// provisioning record gone) is "unknown", never "unhealthy": even with replace_when_unhealthy, nothing
// is replaced. The machine runs bare-vm.yml's health checks and marker without the driver layer and
// monitoring (slimPlaybooks); TestAccGPUInstance_provisioned reads the health of a machine the whole
// playbook provisioned.
func TestAccGPUInstance_health(t *testing.T) {
	requireProvisioningTools(t)
	s := newTestSandbox(t)
	dir := slimPlaybooks(t, "hydra_vars", "preflight", "marker", "gpu_check", "health")
	replacing := healthConfig(s, dir, "  replace_when_unhealthy = true")
	accTest(t, s.checkDestroyed, []resource.TestStep{{
		Config: healthConfig(s, dir, ""),
		ConfigStateChecks: []statecheck.StateCheck{
			stateKnown("status", "ready"),
			stateKnown("health", "healthy"),
		},
	},
		// A fatal Xid (the GPU fell off the bus) after ready: the refresh reads it, the plan is empty.
		refreshedOnly(func() {
			if err := simhost.SetFault(s.machineDir(), simhost.FaultXid, "0 79"); err != nil {
				t.Fatal(err)
			}
		}, healthConfig(s, dir, ""),
			planKnown("health", "unhealthy"),
			planKnown("health_reason", like(`(?i)xid`)),
		),
		// Asked to, the plan replaces it.
		plannedOnly(nil, replacing, resourceName, plancheck.ResourceActionDestroyBeforeCreate),
		{
			// Healthy again, the same change is an update in place.
			PreConfig: func() {
				if err := simhost.ClearFaults(s.machineDir()); err != nil {
					t.Fatal(err)
				}
			},
			Config:           replacing,
			ConfigPlanChecks: preApply(plancheck.ExpectResourceAction(resourceName, plancheck.ResourceActionUpdate)),
			ConfigStateChecks: []statecheck.StateCheck{
				stateKnown("health", "healthy"),
				stateKnown("status", "ready"),
			},
			Check: resource.ComposeTestCheckFunc(s.checkLive(1), s.checkCreated(1)),
		},
		// Its sshd is down (as when its network or sshd died): the refresh cannot reach it.
		refreshedOnly(func() {
			if err := simhost.SetFault(s.machineDir(), simhost.FaultSSHDown, "1"); err != nil {
				t.Fatal(err)
			}
		}, replacing,
			planKnown("status", "ready"),
			planKnown("health", "unknown"),
			planKnown("health_reason", like(`(?i)connection refused`)),
			worldCheck(s.checkCreated(1)),
		),
		// Reachable again, but its provisioning record is gone (as on a machine reinstalled behind
		// hydra's back): its health cannot be read either.
		refreshedOnly(func() {
			if err := simhost.ClearFaults(s.machineDir()); err != nil {
				t.Fatal(err)
			}
			marker, ok := findFileContaining(filepath.Join(s.machineDir(), "root"), `"digest"`)
			if !ok {
				t.Fatal("no provisioning marker on the machine")
			}
			if err := os.Remove(marker); err != nil {
				t.Fatal(err)
			}
		}, replacing,
			planKnown("health", "unknown"),
			planKnown("health_reason", like(`marker`)),
			worldCheck(s.checkCreated(1)),
		),
	})
}

// execletConfig is one execlet with provisioning on, from playbookDir.
func execletConfig(s *testSandbox, playbookDir, name, extra string) string {
	return s.provisionedConfig(playbookDir) + testAccGPUInstanceConfig_basic(name, "l4", "  kind = \"execlet\"\n"+extra)
}

// jobs is the execlet agent's running work on a sandbox machine, and its drain flag.
func jobPaths(machineDir string) (jobsDir, flag string) {
	root := filepath.Join(machineDir, "root")
	return filepath.Join(root, "var/lib/hydra/execlet/jobs"), filepath.Join(root, "var/lib/hydra/execlet/draining")
}

// startJob puts one running job on the machine; the returned watcher ends it once the machine is
// draining (after about a second), and reports whether it saw the drain flag.
func startJob(t *testing.T, machineDir string, endOnDrain bool) *atomic.Bool {
	t.Helper()
	jobsDir, flag := jobPaths(machineDir)
	if err := os.MkdirAll(jobsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(jobsDir, "job-1"), []byte("training\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var sawDrain atomic.Bool
	go func() {
		for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if _, err := os.Stat(flag); err == nil {
				sawDrain.Store(true)
				if endOnDrain {
					time.Sleep(time.Second)
					_ = os.Remove(filepath.Join(jobsDir, "job-1"))
				}
				return
			}
		}
	}()
	return &sawDrain
}

// checkDrainedThenDestroyed is a CheckDestroy: the execlet *drained watches (startJob's watcher) was
// asked to drain, and s.checkDestroyed passes.
func (s *testSandbox) checkDrainedThenDestroyed(t *testing.T, drained **atomic.Bool) resource.TestCheckFunc {
	return func(st *terraform.State) error {
		if *drained == nil || !(*drained).Load() {
			t.Error("the execlet was deleted without being asked to drain")
		}
		return s.checkDestroyed(st)
	}
}

// Replacing or destroying an execlet drains it first: it stops taking work, and the delete waits for
// the running job. The replacement drains the old machine (its job ends on the drain) before deleting
// it; the final destroy drains the new one, whose job never ends: a drain that does not finish within
// drain_timeout never blocks the destroy, which goes ahead once the drain has asked and the time is up.
// The drain is the real drain.yml; the execlets run the acceptance tests' small playbook (the test
// plays the agent's jobs itself, so the real execlet playbook would add nothing but its cost).
func TestAccGPUInstance_drainBeforeDelete(t *testing.T) {
	requireProvisioningTools(t)
	s := newTestSandbox(t)
	dir := smallMachinePlaybooks(t)
	var oldDrained, newDrained *atomic.Bool
	accTest(t, s.checkDrainedThenDestroyed(t, &newDrained), []resource.TestStep{{
		Config: execletConfig(s, dir, "old", `  drain_timeout = "2m"`),
		Check: func(*terraform.State) error {
			oldDrained = startJob(t, s.machineDir(), true)
			return nil
		},
	}, {
		// 25s: time for the drain to ask the agent to stop (a probe and one write) on a loaded machine.
		Config:           execletConfig(s, dir, "new", `  drain_timeout = "25s"`),
		ConfigPlanChecks: preApply(plancheck.ExpectResourceAction(resourceName, plancheck.ResourceActionDestroyBeforeCreate)),
		Check: func(*terraform.State) error {
			if !oldDrained.Load() {
				t.Error("the replaced execlet was deleted without being drained")
			}
			newDrained = startJob(t, s.machineDir(), false)
			return s.checkCreated(2)(nil)
		},
	}})
}
