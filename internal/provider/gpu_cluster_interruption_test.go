package provider

import (
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

// spotClusterConfig is a 2-node spot cluster on the sandbox's fabric (sbx-eu-1's spot sbx.h100.1x).
func spotClusterConfig(s *testSandbox, extra string) string {
	return s.providerConfig("") + clusterConfig("spotc", "h100", 1, 2, "  spot = true\n"+extra)
}

// TestAccGPUCluster_preemption: the sandbox preempts node 2 of a spot cluster with a 10-minute notice;
// the refresh shows `interruption` on that node and on the cluster (node 1 has none) and, with
// replace_when_preempted false, the plan changes nothing; by default the next plan replaces the whole
// cluster under the same name, and the new one has no interruption.
func TestAccGPUCluster_preemption(t *testing.T) {
	s := newTestSandbox(t)
	nodeInterruption := func(i int, key string) tfjsonpath.Path {
		return tfjsonpath.New("node").AtSliceIndex(i).AtMapKey("interruption").AtMapKey(key)
	}
	sameID := statecheck.CompareValue(compare.ValuesSame())
	differentID := statecheck.CompareValue(compare.ValuesDiffer())
	accTest(t, s.checkDestroyed, []resource.TestStep{{
		Config: spotClusterConfig(s, "  replace_when_preempted = false\n"),
		ConfigStateChecks: []statecheck.StateCheck{
			clusterState("status", "ready"),
			clusterState("offer_id", like(`/spot@`)),
			clusterState("replace_when_preempted", false),
			clusterState("interruption", knownvalue.Null()),
			statecheck.ExpectKnownValue(clusterResource, tfjsonpath.New("node").AtSliceIndex(1).AtMapKey("interruption"), knownvalue.Null()),
			sameID.AddStateValue(clusterResource, tfjsonpath.New("id")),
			differentID.AddStateValue(clusterResource, tfjsonpath.New("cloud_cluster_id")),
		},
	}, {
		PreConfig: func() {
			if err := s.sb.Preempt(s.nodeID(t, "-2"), 10*time.Minute); err != nil {
				t.Fatal(err)
			}
		},
		Config:           spotClusterConfig(s, "  replace_when_preempted = false\n"),
		ConfigPlanChecks: preApply(plancheck.ExpectEmptyPlan()),
		ConfigStateChecks: []statecheck.StateCheck{
			statecheck.ExpectKnownValue(clusterResource, tfjsonpath.New("interruption").AtMapKey("reason"), like(`preempted the spot machine`)),
			statecheck.ExpectKnownValue(clusterResource, tfjsonpath.New("interruption").AtMapKey("notice_at"), like(`^\d{4}-\d\d-\d\dT`)),
			statecheck.ExpectKnownValue(clusterResource, tfjsonpath.New("interruption").AtMapKey("ends_at"), like(`^\d{4}-\d\d-\d\dT`)),
			statecheck.ExpectKnownValue(clusterResource, nodeInterruption(1, "notice_at"), like(`^\d{4}-\d\d-\d\dT`)),
			statecheck.ExpectKnownValue(clusterResource, tfjsonpath.New("node").AtSliceIndex(0).AtMapKey("interruption"), knownvalue.Null()),
			sameID.AddStateValue(clusterResource, tfjsonpath.New("id")),
		},
		Check: s.checkCreated(2),
	}, {
		// replace_when_preempted by default: the whole cluster is replaced under the same name.
		Config: spotClusterConfig(s, ""),
		ConfigPlanChecks: preApply(
			plancheck.ExpectResourceAction(clusterResource, plancheck.ResourceActionDestroyBeforeCreate),
			clusterPlanKnown("name", "spotc"),
		),
		ConfigStateChecks: []statecheck.StateCheck{
			clusterState("status", "ready"),
			clusterState("replace_when_preempted", true),
			clusterState("interruption", knownvalue.Null()),
			statecheck.ExpectKnownValue(clusterResource, tfjsonpath.New("node").AtSliceIndex(1).AtMapKey("interruption"), knownvalue.Null()),
			differentID.AddStateValue(clusterResource, tfjsonpath.New("cloud_cluster_id")),
		},
		Check: resource.ComposeTestCheckFunc(s.checkLive(2), s.checkCreated(4)),
	}})
}
