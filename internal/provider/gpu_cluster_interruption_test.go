package provider

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"

	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox"
)

// hookRan waits up to a minute for the hook's line on the machine under root and returns it split
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
	}, {
		PreConfig: func() {
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
		},
		Config:             cfg,
		PlanOnly:           true,
		ExpectNonEmptyPlan: true,
		ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
			plancheck.ExpectResourceAction(clusterResource, plancheck.ResourceActionDestroyBeforeCreate),
		}},
	}})
}
