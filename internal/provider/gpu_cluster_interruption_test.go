package provider

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox"
)

// spotClusterConfig is a provisioned 2-node spot cluster of sandbox containers (on any interconnect)
// with an interruption hook that prints its arguments and when it ran.
func spotClusterConfig(s *testSandbox, extra string) string {
	return s.provisionedConfig("") + clusterConfig("spotc", "l4", 1, 2, `  spot         = true
  interconnect = "any"
  provisioning_vars = {
    interruption_hook = <<-EOT
      #!/bin/sh
      echo "hook $1 $2 $(date -u +%s.%N)"
    EOT
  }
`+extra)
}

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

// TestAccGPUCluster_preemption: the sandbox preempts node 2 of a provisioned spot cluster with a
// 10-minute notice; the watcher the playbooks installed on every node runs the hook on node 2 (the test
// prints how long after the notice) and not on node 1; the refresh shows `interruption` on node 2 and
// on the cluster (node 1 has none) and, with replace_when_preempted false, the plan changes nothing; by
// default the plan replaces the whole cluster under the same name. The nodes are containers without systemd, so the watcher runs as a process.
func TestAccGPUCluster_preemption(t *testing.T) {
	requireProvisioningTools(t)
	s := newTestSandbox(t)
	if err := s.sb.SetCatalog([]sandbox.CatalogEntry{{Region: "sbx-eu-1", InstanceType: "sbx.l4.1x.container", GPU: "L4", GPUCount: 1,
		PricePerHour: 0.22, Spot: true, Available: -1, Machine: "container",
		Hardware: sandbox.Hardware{FormFactor: "pcie", GPUMemoryGB: 24, VCPUs: 8, MemoryGB: 32}}}); err != nil {
		t.Fatal(err)
	}
	nodeInterruption := func(i int, key string) tfjsonpath.Path {
		return tfjsonpath.New("node").AtSliceIndex(i).AtMapKey("interruption").AtMapKey(key)
	}
	sameID := statecheck.CompareValue(compare.ValuesSame())
	accTest(t, s.checkDestroyed, []resource.TestStep{{
		Config: spotClusterConfig(s, "  replace_when_preempted = false\n"),
		ConfigStateChecks: []statecheck.StateCheck{
			clusterState("status", "ready"),
			clusterState("offer_id", like(`/spot@`)),
			clusterState("replace_when_preempted", false),
			clusterState("interruption", knownvalue.Null()),
			statecheck.ExpectKnownValue(clusterResource, tfjsonpath.New("node").AtSliceIndex(1).AtMapKey("interruption"), knownvalue.Null()),
			sameID.AddStateValue(clusterResource, tfjsonpath.New("cloud_cluster_id")),
		},
	}, {
		PreConfig: func() {
			id := s.nodeID(t, "-2")
			noticed := time.Now()
			if err := s.sb.Preempt(id, 10*time.Minute); err != nil {
				t.Fatal(err)
			}
			f := hookRan(filepath.Join(s.sb.MachineDir(id), "root"), time.Minute)
			if len(f) != 4 || f[0] != "hook" {
				b, _ := os.ReadFile(filepath.Join(s.sb.MachineDir(id), "root", "var/lib/hydra/interruption/log"))
				t.Fatalf("the hook did not run on node 2: %q; watcher log:\n%s", f, b)
			}
			left, _ := strconv.Atoi(f[1])
			ran, _ := strconv.ParseFloat(f[3], 64)
			if left <= 0 || left > 600 {
				t.Errorf("the hook's arguments: %q", f)
			}
			t.Logf("notice to hook on a cluster node: %.2fs (the hook was told %ds left, ending %s)", ran-float64(noticed.UnixNano())/1e9, left, f[2])
			if f := hookRan(filepath.Join(s.sb.MachineDir(s.nodeID(t, "-1")), "root"), 0); len(f) != 0 {
				t.Errorf("the hook ran on node 1, which got no notice: %q", f)
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
			sameID.AddStateValue(clusterResource, tfjsonpath.New("cloud_cluster_id")),
		},
		Check: s.checkCreated(2),
	}, {
		// replace_when_preempted by default: the plan replaces the whole cluster under the same name (the
		// replacement itself is what TestAccGPUCluster_provisioned's replace_when_unhealthy applies).
		Config:             spotClusterConfig(s, ""),
		PlanOnly:           true,
		ExpectNonEmptyPlan: true,
		ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
			plancheck.ExpectResourceAction(clusterResource, plancheck.ResourceActionDestroyBeforeCreate),
			plancheck.ExpectKnownValue(clusterResource, tfjsonpath.New("name"), knownvalue.StringExact("spotc")),
			plancheck.ExpectUnknownValue(clusterResource, tfjsonpath.New("interruption")),
		}},
	}})
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
