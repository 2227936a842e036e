package provider

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox"
)

// spotConfig is one spot machine, provisioning off.
func spotConfig(s *testSandbox, extra string) string {
	return s.instanceConfig("spot", "l4", "  spot = true\n"+extra)
}

// A spot machine preempted with notice: the refresh shows interruption and, with
// replace_when_preempted false, the plan changes nothing; by default the next plan replaces the
// machine under the same name, and the new one has no interruption (provisioning off). What the
// notice does on the machine, the watcher the playbooks install running the interruption hook, is
// TestAccGPUCluster_sharedVolumeKeepsData's (on a cluster node: the same role, the same notice file).
func TestAccGPUInstance_preemption(t *testing.T) {
	s := newTestSandbox(t)
	interruption := func(key string, want knownvalue.Check) plancheck.PlanCheck {
		return plancheck.ExpectKnownValue(resourceName, tfjsonpath.New("interruption").AtMapKey(key), want)
	}
	accTest(t, s.checkDestroyed, []resource.TestStep{{
		Config: spotConfig(s, "  replace_when_preempted = false\n"),
		ConfigStateChecks: []statecheck.StateCheck{
			stateKnown("status", "ready"),
			stateKnown("is_spot", true),
			statecheck.ExpectKnownValue(resourceName, tfjsonpath.New("interruption"), knownvalue.Null()),
		},
	},
		refreshedOnly(func() {
			live := s.live()
			if len(live) != 1 {
				t.Fatalf("live machines: %+v", live)
			}
			if err := s.sb.Preempt(live[0].ID, 10*time.Minute); err != nil {
				t.Fatal(err)
			}
		}, spotConfig(s, "  replace_when_preempted = false\n"),
			interruption("reason", like(`preempted the spot machine`)),
			interruption("notice_at", like(`^\d{4}-\d\d-\d\dT`)),
			interruption("ends_at", like(`^\d{4}-\d\d-\d\dT`)),
			worldCheck(s.checkCreated(1)),
		), {
			// replace_when_preempted by default: replaced under the same name.
			Config: spotConfig(s, ""),
			ConfigPlanChecks: preApply(
				plancheck.ExpectResourceAction(resourceName, plancheck.ResourceActionDestroyBeforeCreate),
				planKnown("name", "spot"),
			),
			ConfigStateChecks: []statecheck.StateCheck{
				stateKnown("status", "ready"),
				statecheck.ExpectKnownValue(resourceName, tfjsonpath.New("interruption"), knownvalue.Null()),
			},
			Check: resource.ComposeTestCheckFunc(s.checkLive(1), s.checkCreated(2)),
		}})
}

// checkHook waits (up to a minute) for the interruption hook's line on the sandbox machine id, noticed
// at noticed, and checks its arguments: the seconds left (of a notice of at most 10 minutes) and the
// end time (RFC 3339, UTC); it logs how long after the notice the hook ran.
func (s *testSandbox) checkHook(t *testing.T, id string, noticed time.Time) {
	t.Helper()
	root := filepath.Join(s.sb.MachineDir(id), "root")
	f := hookRan(root, time.Minute)
	if len(f) != 4 || f[0] != "hook" {
		b, _ := os.ReadFile(filepath.Join(root, "var/lib/hydra/interruption/log"))
		t.Fatalf("the hook did not run on %s: %q; watcher log:\n%s", id, f, b)
	}
	left, _ := strconv.Atoi(f[1])
	ran, _ := strconv.ParseFloat(f[3], 64)
	if left <= 0 || left > 600 || !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`).MatchString(f[2]) {
		t.Errorf("the hook's arguments: %q", f)
	}
	t.Logf("notice to hook: %.2fs (the hook was told %ds left, ending %s)", ran-float64(noticed.UnixNano())/1e9, left, f[2])
}

// hookRan waits up to wait for the hook's line on the machine under root and returns it split
// into its fields ("hook", seconds left, end time, when it ran); nil when it did not run.
func hookRan(root string, wait time.Duration) []string {
	hookLog := filepath.Join(root, "var/lib/hydra/interruption/hook.log")
	for deadline := time.Now().Add(wait); ; time.Sleep(50 * time.Millisecond) {
		b, _ := os.ReadFile(hookLog)
		if f := strings.Fields(string(b)); len(f) > 0 || time.Now().After(deadline) {
			return f
		}
	}
}

// TestAccGPUCluster_preemptFault rehearses a preemption as a user's CI does, without Go: after apply,
// faults.json names node 2 of the spot cluster under `preempt`; the next plan's refresh fires it and
// the plan replaces the whole cluster.
func TestAccGPUCluster_preemptFault(t *testing.T) {
	s := newTestSandbox(t)
	cfg := s.providerConfig("") + clusterConfig("rehearse", "h100", 1, 2, "  spot = true\n")
	accTest(t, s.checkDestroyed, []resource.TestStep{{
		Config:            cfg,
		ConfigStateChecks: []statecheck.StateCheck{clusterState("status", "ready"), clusterState("interruption", knownvalue.Null())},
	}, plannedOnly(func() {
		var node string
		for _, r := range s.live() {
			if strings.HasSuffix(r.Name, "-2") {
				node = r.Name
			}
		}
		faults := `{"preempt": [{"name": "` + node + `", "notice": "10m"}]}`
		if err := os.WriteFile(filepath.Join(s.sb.Dir(), sandbox.FaultsFile), []byte(faults), 0o644); err != nil {
			t.Fatal(err)
		}
	}, cfg, clusterResource, plancheck.ResourceActionDestroyBeforeCreate)})
}
