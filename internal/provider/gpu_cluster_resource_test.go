package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	emumithril "github.com/hydragpu/terraform-provider-hydra/internal/emulator/mithril"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
	"github.com/hydragpu/terraform-provider-hydra/internal/osproc"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox/simhost"
)

const clusterResource = "hydra_gpu_cluster.test"

// testNodes is the node count of the clusters the tests rent.
const testNodes = 4

// clusterConfig is one hydra_gpu_cluster "test" of nodes nodes of gpuCount gpuType GPUs each.
func clusterConfig(name, gpuType string, gpuCount, nodes int, extra string) string {
	return fmt.Sprintf(`
resource "hydra_gpu_cluster" "test" {
  name      = %q
  gpu_type  = %q
  gpu_count = %d
  nodes     = %d
%s
}
`, name, gpuType, gpuCount, nodes, extra)
}

// planKnownOf is the plan check that res's attr is a known value (known(want)).
func planKnownOf(res string) func(attr string, want any) plancheck.PlanCheck {
	return func(attr string, want any) plancheck.PlanCheck {
		return plancheck.ExpectKnownValue(res, tfjsonpath.New(attr), known(want))
	}
}

// stateKnownOf is the state check of res's attr (known(want)).
func stateKnownOf(res string) func(attr string, want any) statecheck.StateCheck {
	return func(attr string, want any) statecheck.StateCheck {
		return statecheck.ExpectKnownValue(res, tfjsonpath.New(attr), known(want))
	}
}

var (
	// clusterPlanKnown checks that the plan shows the test cluster's attr as a known value.
	clusterPlanKnown = planKnownOf(clusterResource)
	// clusterState checks the test cluster's attr in the state.
	clusterState = stateKnownOf(clusterResource)
)

// hostfileOf matches a hostfile of nodes lines `<private ip> slots=<slots>`, node 1 first: the
// sandbox's private addresses are 127.100.<cluster>.<node>.
func hostfileOf(nodes, slots int) knownvalue.Check {
	var lines []string
	for i := 1; i <= nodes; i++ {
		lines = append(lines, fmt.Sprintf(`127\.100\.\d+\.%d slots=%d`, i, slots))
	}
	return like(`^` + strings.Join(lines, `\n`) + `\n?$`)
}

// readyCluster are the state checks of a ready cluster of nodes nodes with slots GPUs each.
func readyCluster(nodes, slots int) []statecheck.StateCheck {
	return []statecheck.StateCheck{
		clusterState("status", "ready"),
		clusterState("cloud_cluster_id", knownvalue.NotNull()),
		clusterState("node", knownvalue.ListSizeExact(nodes)),
		statecheck.ExpectKnownValue(clusterResource, tfjsonpath.New("node").AtSliceIndex(0).AtMapKey("status"), knownvalue.StringExact("ready")),
		statecheck.ExpectKnownValue(clusterResource, tfjsonpath.New("node").AtSliceIndex(nodes-1).AtMapKey("private_ip"), like(fmt.Sprintf(`^127\.100\.\d+\.%d$`, nodes))),
		clusterState("hostfile", hostfileOf(nodes, slots)),
		clusterState("nccl_env", knownvalue.NotNull()),
	}
}

// TestAccGPUCluster_basic rents 4 nodes on the sandbox's fabric: the plan shows the cloud, region and
// whole price as known values; apply takes every node to ready; the plan after is empty; the cluster
// is imported by `<cloud>/<cluster id>` as it was created, and a malformed ID is refused with what is
// accepted; destroy leaves no node.
func TestAccGPUCluster_basic(t *testing.T) {
	s := newTestSandbox(t)
	price := float64(249*testNodes) / 100
	cfg := s.providerConfig("") + clusterConfig("train", "h100", 1, testNodes, "")
	accTest(t, s.checkDestroyed, []resource.TestStep{{
		Config: cfg,
		ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
			plancheck.ExpectResourceAction(clusterResource, plancheck.ResourceActionCreate),
			clusterPlanKnown("cloud", "sandbox"),
			clusterPlanKnown("pool", "sandbox-vm-pool"),
			// The only region of the default catalog with a fabric; testNodes x $2.49/h.
			clusterPlanKnown("region", "sbx-eu-1"),
			clusterPlanKnown("price_usd_per_hour", price),
			clusterPlanKnown("offer_id", fmt.Sprintf("sandbox-vm-pool/sbx-eu-1/%dxsbx.h100.1x/ondemand@%s", testNodes, strconv.FormatFloat(price, 'f', 2, 64))),
			plancheck.ExpectUnknownValue(clusterResource, tfjsonpath.New("id")),
			plancheck.ExpectUnknownValue(clusterResource, tfjsonpath.New("hostfile")),
		}},
		ConfigStateChecks: append(readyCluster(testNodes, 1),
			clusterState("id", like(`^sbx-vm-train--[a-z2-7]{8}$`)),
			clusterState("price_usd_per_hour", price),
			clusterState("interconnect", "fabric"),
			statecheck.ExpectKnownValue(clusterResource, tfjsonpath.New("node").AtSliceIndex(2).AtMapKey("name"), like(`^sbx-vm-train--[a-z2-7]{8}-3$`)),
		),
		// The plans after the apply are empty: the testing framework checks it after every apply.
		Check: s.checkLive(testNodes),
	}, {
		ResourceName:  clusterResource,
		Config:        cfg,
		ImportState:   true,
		ImportStateId: "sbx-vm-imp",
		ExpectError:   errorPattern(`"sbx-vm-imp" is not <cloud>/<cluster id>`, "a cluster is imported as <cloud>/<cluster id>"),
	}, {
		ResourceName:  clusterResource,
		Config:        cfg,
		ImportState:   true,
		ImportStateId: "aws/c-1",
		ExpectError:   errorPattern(`starts with "aws", which is not a cloud hydra knows`),
	}, importedCluster(cfg)})
}

// TestAccGPUCluster_capacity orders a cluster the cloud cannot fill (its region runs out before the
// last node): apply fails saying so, nothing stays billed at the cloud, and the next plan skips that
// offer for capacity_memory (the failed create's record in state carries it): with no other region
// with a fabric, it says no offer is left.
func TestAccGPUCluster_capacity(t *testing.T) {
	s := newTestSandbox(t)
	cfg := s.providerConfig("") + clusterConfig("short", "h100", 1, testNodes, "")
	accTest(t, s.checkDestroyed, []resource.TestStep{{
		PreConfig:   func() { s.setFaults(sandbox.Faults{PartialClusters: 1}) },
		Config:      cfg,
		ExpectError: errorPattern("creating GPU cluster (short)", "cannot deliver every node", "nothing stays billed"),
	}, {
		// The cloud's state: no node is live, though nodes were started.
		PreConfig: func() {
			if n := len(s.live()); n != 0 {
				t.Errorf("%d nodes live at the cloud after the failed create; want 0", n)
			}
			if n := s.created(); n != testNodes-1 {
				t.Errorf("the failed create started %d nodes; want %d (the fault stops the last)", n, testNodes-1)
			}
		},
		Config:      cfg,
		ExpectError: errorPattern("No GPU cluster offer left for hydra_gpu_cluster short", "sbx-eu-1", "failed for lack of capacity", "capacity_memory"),
	}})
}

// importedCluster imports the test cluster as sandbox/<its cloud_cluster_id> and verifies it against
// the state, but for what an import cannot tell (timeouts, other_clouds, and ignore).
func importedCluster(cfg string, ignore ...string) resource.TestStep {
	return resource.TestStep{
		ResourceName: clusterResource,
		Config:       cfg,
		ImportState:  true,
		ImportStateIdFunc: func(st *terraform.State) (string, error) {
			return "sandbox/" + st.RootModule().Resources[clusterResource].Primary.Attributes["cloud_cluster_id"], nil
		},
		ImportStateVerify:       true,
		ImportStateVerifyIgnore: append([]string{"timeouts", "other_clouds"}, ignore...),
	}
}

// TestAccGPUCluster_importAny imports a cluster on no fabric (sbx-us-1 has none): it reads back as
// interconnect "any", as it was created (an import read "fabric" for every cluster before).
func TestAccGPUCluster_importAny(t *testing.T) {
	s := newTestSandbox(t)
	cfg := s.providerConfig("") + clusterConfig("spread", "h100", 1, 2, "  interconnect = \"any\"\n  regions = [\"sbx-us-1\"]")
	accTest(t, s.checkDestroyed, []resource.TestStep{{
		Config:            cfg,
		ConfigStateChecks: []statecheck.StateCheck{clusterState("status", "ready"), clusterState("region", "sbx-us-1")},
	},
		// interconnect is verified; regions is a constraint of the configuration the cloud cannot tell.
		importedCluster(cfg, "regions"),
	})
}

// TestAccGPUCluster_errorFromState plans a cluster whose state says it is in error, through the real
// CLI (the state edited as a failed update leaves it): with provisioning_error (a node failed
// provisioning) the plan provisions it again in place; without it (the cloud failed it) the plan
// replaces it.
func TestAccGPUCluster_errorFromState(t *testing.T) {
	s, d := cliTest(t, newCLIDirReattach)
	d.write(s.providerConfigIn(d.dir, "") + clusterConfig("failed", "h100", 1, 2, ""))
	d.mustRun("apply", "-auto-approve")
	for _, tc := range []struct {
		provisioningError any
		want              string
	}{
		{"node 2: nvidia-smi found 0 GPUs", "1 to change, 0 to destroy"},
		{nil, "1 to add, 0 to change, 1 to destroy"},
	} {
		editClusterState(t, d.dir, func(attrs map[string]any) {
			attrs["status"], attrs["provisioning_error"] = "error", tc.provisioningError
			if nodes, ok := attrs["node"].([]any); ok && len(nodes) == 2 {
				if n, ok := nodes[1].(map[string]any); ok {
					n["status"] = "error"
				}
			}
		})
		if plan := d.mustRun("plan"); !strings.Contains(plan, tc.want) {
			t.Errorf("provisioning_error %v: the plan does not say %q:\n%s", tc.provisioningError, tc.want, plan)
		}
	}
	d.destroyAll(s)
}

// editClusterState changes the attributes of the test cluster in the directory's local state.
func editClusterState(t *testing.T, dir string, edit func(attrs map[string]any)) {
	t.Helper()
	path := filepath.Join(dir, "terraform.tfstate")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	var resources []map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw["resources"], &resources); err != nil {
		t.Fatal(err)
	}
	edited := false
	for _, r := range resources {
		instances, _ := r["instances"].([]any)
		for _, in := range instances {
			if attrs, ok := in.(map[string]any)["attributes"].(map[string]any); ok && r["type"] == "hydra_gpu_cluster" {
				edit(attrs)
				edited = true
			}
		}
	}
	if !edited {
		t.Fatalf("no hydra_gpu_cluster in %s", path)
	}
	if raw["resources"], err = json.Marshal(resources); err != nil {
		t.Fatal(err)
	}
	if data, err = json.Marshal(raw); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestAccGPUCluster_planShowsOtherClouds plans a cluster with clouds that have no cluster API beside
// the sandbox: other_clouds says why each lost.
func TestAccGPUCluster_planShowsOtherClouds(t *testing.T) {
	c := newTestClouds(t, nil)
	s := newTestSandbox(t)
	provider := strings.Replace(c.providerConfig(t.TempDir(), "upcloud", "primeintellect"), "provider \"hydra\" {\n",
		fmt.Sprintf("provider \"hydra\" {\n  sandbox {\n    dir       = %q\n    boot_time = \"1s\"\n  }\n", s.sb.Dir()), 1)
	accTest(t, nil, []resource.TestStep{{
		Config:             provider + clusterConfig("others", "h100", 1, testNodes, fmt.Sprintf("  ssh_public_keys = [%q]", testSSHKey)),
		PlanOnly:           true,
		ExpectNonEmptyPlan: true,
		ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPreRefresh: []plancheck.PlanCheck{
			clusterPlanKnown("cloud", "sandbox"),
			clusterPlanKnown("other_clouds", knownvalue.MapPartial(map[string]knownvalue.Check{
				"upcloud":        like(`no cluster API`),
				"primeintellect": like(`no cluster API`),
			})),
		}},
	}})
	s.noneCreated(t, "a plan")
}

// nodeJumpChecks checks every node's jump host: with jump, each node is reached at its private
// address through one login node (root at port 22, as Verda's), whose key is not pinned yet
// (provisioning off); without, every ssh_jump_* is null.
func nodeJumpChecks(jump bool) []statecheck.StateCheck {
	at := func(i int, attr string) tfjsonpath.Path { return tfjsonpath.New("node").AtSliceIndex(i).AtMapKey(attr) }
	var checks []statecheck.StateCheck
	for i := range testNodes {
		want := map[string]knownvalue.Check{"ssh_jump_host": knownvalue.Null(), "ssh_jump_port": knownvalue.Null(),
			"ssh_jump_user": knownvalue.Null(), "ssh_jump_host_key": knownvalue.Null()}
		if jump {
			want["ssh_jump_host"], want["ssh_jump_port"], want["ssh_jump_user"] = like(`^\d+\.\d+\.\d+\.\d+$`), knownvalue.Int64Exact(22), knownvalue.StringExact("root")
			checks = append(checks,
				statecheck.CompareValuePairs(clusterResource, at(i, "ssh_host"), clusterResource, at(i, "private_ip"), compare.ValuesSame()),
				statecheck.CompareValuePairs(clusterResource, at(i, "ssh_jump_host"), clusterResource, at(0, "ssh_jump_host"), compare.ValuesSame()),
				statecheck.CompareValuePairs(clusterResource, at(i, "ssh_jump_host"), clusterResource, at(i, "ssh_host"), compare.ValuesDiffer()))
		}
		for attr, v := range want {
			checks = append(checks, statecheck.ExpectKnownValue(clusterResource, at(i, attr), v))
		}
	}
	return checks
}

// TestAccGPUCluster_emulators rents testNodes nodes on each cluster-capable emulated cloud
// (provisioning off), through its own cluster mechanism, and destroys them. Verda's nodes are
// reached through the cluster's login node (node's ssh_jump_*), the others' directly.
func TestAccGPUCluster_emulators(t *testing.T) {
	for _, tc := range []struct {
		cloud, gpuType, extra string
		prepare               func(*testClouds)
		jump                  bool
	}{
		{cloud: "atlas", gpuType: "h100"},
		// Verda's instant clusters are fixed types: its emulator's default 32H200 is 4 nodes of 8 H200.
		{cloud: "verda", gpuType: "h200", jump: true},
		// Mithril's cluster is one spot bid for N instances, on no promised fabric; its auction must be
		// able to allocate every node at once (two of its slots are held by other customers' bids).
		{cloud: "mithril", gpuType: "h100", extra: "  spot = true\n  interconnect = \"any\"", prepare: func(c *testClouds) {
			if _, err := c.mithril.SetAuction(emumithril.AuctionChange{Region: "us-central1-a", InstanceType: "h100-80gb.sxm.8x", Capacity: new(testNodes + 2)}); err != nil {
				c.t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.cloud, func(t *testing.T) {
			c := newTestClouds(t, nil)
			if tc.prepare != nil {
				tc.prepare(c)
			}
			cfg := c.providerConfig(t.TempDir(), tc.cloud) + clusterConfig("emu-"+tc.cloud, tc.gpuType, 8, testNodes,
				fmt.Sprintf("  ssh_public_keys = [%q]\n  clouds = [%q]\n%s", testSSHKey, tc.cloud, tc.extra))
			accTest(t, c.checkEmpty, []resource.TestStep{{
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					clusterPlanKnown("cloud", tc.cloud),
					clusterPlanKnown("price_usd_per_hour", knownvalue.NotNull()),
				}},
				ConfigStateChecks: append([]statecheck.StateCheck{
					clusterState("status", "ready"),
					clusterState("node", knownvalue.ListSizeExact(testNodes)),
					clusterState("hostfile", like(fmt.Sprintf(`^([^ \n]+ slots=8\n){%d}[^ \n]+ slots=8\n?$`, testNodes-1))),
				}, nodeJumpChecks(tc.jump)...),
			}})
		})
	}
}

// TestAccGPUCluster_mithrilBidTimeout orders a Mithril cluster whose bid does not win (the emulator
// outbids it on arrival): after bid_timeout the bid is cancelled, apply fails saying so, and no bid
// is left billing.
func TestAccGPUCluster_mithrilBidTimeout(t *testing.T) {
	c := newTestClouds(t, nil)
	if _, err := c.mithril.SetAuction(emumithril.AuctionChange{Region: "us-central1-a", InstanceType: "h100-80gb.sxm.8x", Capacity: new(testNodes + 2)}); err != nil {
		t.Fatal(err)
	}
	if err := c.mithril.SetOwnFaults(emumithril.OutbidOnArrival1()); err != nil {
		t.Fatal(err)
	}
	cfg := c.providerConfig(t.TempDir(), "mithril") + clusterConfig("lost", "h100", 8, testNodes,
		fmt.Sprintf("  ssh_public_keys = [%q]\n  spot = true\n  interconnect = \"any\"\n  bid_timeout = \"2s\"", testSSHKey))
	accTest(t, c.checkEmpty, []resource.TestStep{{
		Config:           cfg,
		ConfigPlanChecks: preApply(clusterPlanKnown("cloud", "mithril")),
		ExpectError:      errorPattern("creating GPU cluster (lost)", "the bid did not win within bid_timeout 2s and was cancelled; nothing is billed", "nothing stays billed"),
	}})
	if live := c.mithril.LiveBids(); len(live) != 0 || c.mithril.CreateCount() != 1 {
		t.Errorf("after the lost cluster bid: live bids %+v, %d placed (want the one, cancelled)", live, c.mithril.CreateCount())
	}
}

// TestAccGPUCluster_interruptedCreate interrupts a real `terraform apply` with SIGINT (Ctrl-C) while
// the nodes boot: the cluster stays in state, resumable and not tainted, and the next apply resumes
// it in place: 4 nodes ordered in all, ready.
func TestAccGPUCluster_interruptedCreate(t *testing.T) {
	s, d := cliTest(t, newCLIDirReattach)
	d.write(s.providerConfigIn(d.dir, "") + clusterConfig("ctrlc", "h100", 1, testNodes, ""))

	// The nodes boot for 15 s; Ctrl-C arrives once they exist at the cloud.
	apply, out := d.applyUntilCreated(s, "15s")
	time.Sleep(time.Second)
	if err := apply.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	_ = apply.Wait()
	if !errorPattern("interrupted", "kept in state", "not tainted").MatchString(out.String()) {
		t.Fatalf("the interrupted create should say the cluster is kept, resumable:\n%s", out.String())
	}
	show := d.mustRun("state", "show", clusterResource)
	if strings.Contains(show, "(tainted)") || statusReady.MatchString(show) {
		t.Fatalf("after Ctrl-C the cluster must be in state, not ready and not tainted:\n%s", show)
	}
	if plan := d.mustRun("plan"); !strings.Contains(plan, "1 to change, 0 to destroy") {
		t.Fatalf("the next plan must resume the cluster in place:\n%s", plan)
	}
	d.mustRun("apply", "-auto-approve")
	if live, created := len(s.live()), s.created(); live != testNodes || created != testNodes {
		t.Fatalf("after the resuming apply: %d nodes live, %d created; want %d and %d", live, created, testNodes, testNodes)
	}
	if show := d.mustRun("state", "show", clusterResource); !statusReady.MatchString(show) {
		t.Fatalf("the resumed cluster is not ready:\n%s", show)
	}
	d.destroyAll(s)
}

// TestGPUClusterImportID checks the import ID's form: `<cloud>/<cluster id>`.
func TestGPUClusterImportID(t *testing.T) {
	checkProblems(t, "clusterImportID.problem", clusterImportID.problem, map[string]string{
		"sandbox/sbx-c-1": "",
		"verda/8b1c":      "",
		"sandbox":         "is not <cloud>/<cluster id>",
		"/c-1":            "is not <cloud>/<cluster id>",
		"sandbox/":        "is not <cloud>/<cluster id>",
		"sandbox/a/b":     `has more than one "/"`,
		"aws/c-1":         `"aws", which is not a cloud hydra knows`,
	})
}

// provisionedCluster is a 2-node cluster with provisioning on (playbooks from playbookDir) and the
// NCCL check's floor.
func provisionedCluster(s *testSandbox, playbookDir string, floor float64, extra string) string {
	return s.provisionedConfig(playbookDir) + clusterConfig("prov", "h100", 1, 2,
		fmt.Sprintf("  nccl_check = { min_bus_bandwidth_gbps = %g }\n%s", floor, extra))
}

// TestAccGPUCluster_provisioned runs the real playbooks and the cluster check on sandbox nodes: an NCCL
// floor the fabric cannot reach fails the create (the cluster is kept, tainted, and replaced next;
// its nodes ran the acceptance tests' small playbook, the failing check being the real one either
// way); a reachable one makes it ready with every node healthy. A node found unhealthy later is named
// and changes nothing, until replace_when_unhealthy makes the plan replace the whole cluster (planned
// only: applying that replacement would build a third cluster to prove what the tainted one's
// replacement proved). The replacement's nodes run bare-vm.yml's health checks and marker without the
// driver layer and monitoring (slimPlaybooks), as TestAccGPUInstance_health's machine: the whole
// playbook's run is TestAccGPUInstance_provisioned's, and nothing in it differs for a cluster's node.
func TestAccGPUCluster_provisioned(t *testing.T) {
	requireProvisioningTools(t)
	s := newTestSandbox(t)
	nodes := slimPlaybooks(t, "hydra_vars", "preflight", "marker", "gpu_check", "health")
	healthy := []statecheck.StateCheck{
		clusterState("status", "ready"),
		clusterState("nccl_bus_bandwidth_gbps", knownvalue.NotNull()),
		statecheck.ExpectKnownValue(clusterResource, tfjsonpath.New("node").AtSliceIndex(0).AtMapKey("health"), knownvalue.StringExact("healthy")),
		statecheck.ExpectKnownValue(clusterResource, tfjsonpath.New("node").AtSliceIndex(1).AtMapKey("health"), knownvalue.StringExact("healthy")),
		statecheck.ExpectKnownValue(clusterResource, tfjsonpath.New("node").AtSliceIndex(1).AtMapKey("host_key"), like(`^ssh-`)),
	}
	accTest(t, s.checkDestroyed, []resource.TestStep{{
		// No recorded all-reduce reaches 100 TB/s.
		Config:      provisionedCluster(s, smallMachinePlaybooks(t), 100000, ""),
		ExpectError: errorPattern("creating GPU cluster (prov)", "bus bandwidth"),
	}, {
		Config:            provisionedCluster(s, nodes, 1, ""),
		ConfigPlanChecks:  preApply(plancheck.ExpectResourceAction(clusterResource, plancheck.ResourceActionDestroyBeforeCreate)),
		ConfigStateChecks: healthy,
		Check:             s.checkLive(2),
	},
		// A fatal Xid on node 2 after ready: the refresh reads it, the plan changes nothing.
		refreshedOnly(func() {
			if err := simhost.SetFault(s.sb.MachineDir(s.nodeID(t, "-2")), simhost.FaultXid, "0 79"); err != nil {
				t.Fatal(err)
			}
		}, provisionedCluster(s, nodes, 1, ""),
			plancheck.ExpectKnownValue(clusterResource, tfjsonpath.New("node").AtSliceIndex(1).AtMapKey("health"), knownvalue.StringExact("unhealthy")),
		),
		plannedOnly(nil, provisionedCluster(s, nodes, 1, "  replace_when_unhealthy = true"), clusterResource, plancheck.ResourceActionDestroyBeforeCreate),
	})
}

// nodeID is the sandbox id of the live node whose name ends with suffix.
func (s *testSandbox) nodeID(t *testing.T, suffix string) string {
	t.Helper()
	for _, r := range s.live() {
		if strings.HasSuffix(r.Name, suffix) {
			return r.ID
		}
	}
	t.Fatalf("no live node named *%s: %+v", suffix, s.live())
	return ""
}

// TestAccGPUCluster_dataSources asks hydra_gpu_offer for cluster offers, and lists the cluster's nodes
// with hydra_gpu_instances: each names its cluster, none is an orphan.
func TestAccGPUCluster_dataSources(t *testing.T) {
	s := newTestSandbox(t)
	price := float64(249*testNodes) / 100
	cfg := s.providerConfig("") + clusterConfig("listed", "h100", 1, testNodes, "") + fmt.Sprintf(`
data "hydra_gpu_offer" "cluster" {
  gpu_type = "h100"
  nodes    = %d
}

data "hydra_gpu_instances" "all" {
  depends_on = [hydra_gpu_cluster.test]
}
`, testNodes)
	offer, instances := "data.hydra_gpu_offer.cluster", "data.hydra_gpu_instances.all"
	checks := []statecheck.StateCheck{
		statecheck.ExpectKnownValue(offer, tfjsonpath.New("id"), knownvalue.StringExact(fmt.Sprintf("sandbox-vm-pool/sbx-eu-1/%dxsbx.h100.1x/ondemand@%s", testNodes, strconv.FormatFloat(price, 'f', 2, 64)))),
		statecheck.ExpectKnownValue(offer, tfjsonpath.New("price_usd_per_hour"), knownvalue.Float64Exact(price)),
		statecheck.ExpectKnownValue(offer, tfjsonpath.New("instance_type"), knownvalue.StringExact("sbx.h100.1x")),
		statecheck.ExpectKnownValue(offer, tfjsonpath.New("offers").AtSliceIndex(0).AtMapKey("nodes"), knownvalue.Int64Exact(testNodes)),
		statecheck.ExpectKnownValue(offer, tfjsonpath.New("offers").AtSliceIndex(0).AtMapKey("interconnect"), knownvalue.StringExact("fabric")),
		statecheck.ExpectKnownValue(instances, tfjsonpath.New("instances"), knownvalue.ListSizeExact(testNodes)),
		statecheck.ExpectKnownValue(instances, tfjsonpath.New("orphans"), knownvalue.ListSizeExact(0)),
	}
	for i := range testNodes {
		checks = append(checks, statecheck.CompareValuePairs(instances, tfjsonpath.New("instances").AtSliceIndex(i).AtMapKey("cluster"),
			clusterResource, tfjsonpath.New("cloud_cluster_id"), compare.ValuesSame()))
	}
	accTest(t, s.checkDestroyed, []resource.TestStep{{Config: cfg, ConfigStateChecks: checks}})
}

// TestAccGPUCluster_invalid refuses at plan what no cluster can be, naming the attribute, what is
// wrong and what is accepted; nothing is created.
func TestAccGPUCluster_invalid(t *testing.T) {
	s := newTestSandbox(t)
	p := s.providerConfig("")
	refusedPlans(t, []refusedPlan{
		{"one node", p + clusterConfig("bad", "h100", 1, 1, ""), errorPattern("Invalid number of nodes", "nodes is 1; a cluster has at least 2 nodes", "hydra_gpu_instance")},
		{"unknown interconnect", p + clusterConfig("bad", "h100", 1, 2, `  interconnect = "ib"`), errorPattern("interconnect", `"fabric"`, `"any"`, `got: "ib"`)},
		{"no bandwidth floor", p + clusterConfig("bad", "h100", 1, 2, "  nccl_check = { min_bus_bandwidth_gbps = 0 }"),
			errorPattern("Invalid bus bandwidth", "nccl_check.min_bus_bandwidth_gbps is 0; it must be more than 0", "leave nccl_check out")},
		{"more nodes than a region holds", p + clusterConfig("bad", "h100", 1, 9, ""), errorPattern("No GPU cluster offer matches hydra_gpu_cluster bad", "9 nodes of 1x h100", "sandbox:")},
		{"no fabric in the region", p + clusterConfig("bad", "h100", 1, 2, `  regions = ["sbx-us-1"]`), errorPattern("No GPU cluster offer matches", "sandbox: no fabric")},
		{"offer: interconnect without nodes", p + "data \"hydra_gpu_offer\" \"bad\" {\n  gpu_type = \"h100\"\n  interconnect = \"any\"\n}\n",
			errorPattern("interconnect without nodes", "set nodes (at least 2)")},
	})
	s.noneCreated(t, "invalid clusters")
}

// TestAccGPUCluster_createBeforeDestroy replaces a cluster (another node count) with
// create_before_destroy: the new cluster, under its own ownership token, is made before the old one
// is deleted, and only it is left.
func TestAccGPUCluster_createBeforeDestroy(t *testing.T) {
	s := newTestSandbox(t)
	cfg := func(nodes int) string {
		return s.providerConfig("") + clusterConfig("cbd", "h100", 1, nodes, "  lifecycle {\n    create_before_destroy = true\n  }")
	}
	var first string
	accTest(t, s.checkDestroyed, []resource.TestStep{{
		Config: cfg(2),
		Check: func(st *terraform.State) error {
			first = st.RootModule().Resources[clusterResource].Primary.ID
			return s.checkLive(2)(st)
		},
	}, {
		Config:           cfg(3),
		ConfigPlanChecks: preApply(plancheck.ExpectResourceAction(clusterResource, plancheck.ResourceActionCreateBeforeDestroy)),
		ConfigStateChecks: []statecheck.StateCheck{
			clusterState("status", "ready"),
			clusterState("id", like(`^sbx-vm-cbd--[a-z2-7]{8}$`)),
			clusterState("node", knownvalue.ListSizeExact(3)),
		},
		Check: func(st *terraform.State) error {
			if id := st.RootModule().Resources[clusterResource].Primary.ID; id == first {
				return fmt.Errorf("the replacement has the old cluster's id %s", id)
			}
			return resource.ComposeTestCheckFunc(s.checkLive(3), s.checkCreated(5))(st)
		},
	}})
}

// TestAccGPUCluster_savedPlanAfterPriceChange saves a plan, then the cloud's price moves: the apply
// shows what the plan showed (the quote pins it), instead of failing on an inconsistent final plan.
func TestAccGPUCluster_savedPlanAfterPriceChange(t *testing.T) {
	s := newTestSandbox(t)
	cfg := s.providerConfig("") + clusterConfig("moved", "h100", 1, 2, "")
	accTest(t, s.checkDestroyed, []resource.TestStep{{
		Config: cfg,
		ConfigPlanChecks: preApply(
			clusterPlanKnown("price_usd_per_hour", 4.98),
			// Between the saved plan and its apply the node price drops from $2.49 to $2.39.
			beforeApply(func() { s.setPrice("sbx-eu-1", "sbx.h100.1x", 2.39) }),
		),
		ConfigStateChecks: []statecheck.StateCheck{
			clusterState("status", "ready"),
			clusterState("price_usd_per_hour", 4.98),
			clusterState("offer_id", "sandbox-vm-pool/sbx-eu-1/2xsbx.h100.1x/ondemand@4.98"),
		},
	}})
}

// TestAccGPUCluster_killedProvider kills the provider (SIGKILL, as a CI job's timeout does) while the
// nodes boot, so nothing reaches the state: the next apply adopts the cluster that create left (its
// journal names it) instead of ordering another.
func TestAccGPUCluster_killedProvider(t *testing.T) {
	s, d := cliTest(t, newCLIDirBinary)
	d.write(s.providerConfigIn(d.dir, "") + clusterConfig("killed", "h100", 1, testNodes, ""))
	apply, out := d.applyUntilCreated(s, "20s")
	if err := osproc.SignalProcess(providerChild(t, apply.Process.Pid), osproc.Kill); err != nil {
		t.Fatal(err)
	}
	_ = apply.Wait()
	if !strings.Contains(out.String(), "Error") {
		t.Fatalf("terraform did not report the dead provider:\n%s", out.String())
	}
	applied := d.mustRun("apply", "-auto-approve")
	if live, created := len(s.live()), s.created(); live != testNodes || created != testNodes {
		t.Fatalf("after the next apply: %d nodes live, %d created; want the cluster adopted (%d and %d)\n%s", live, created, testNodes, testNodes, applied)
	}
	if show := d.mustRun("state", "show", clusterResource); !statusReady.MatchString(show) {
		t.Fatalf("the adopted cluster is not ready:\n%s", show)
	}
	d.destroyAll(s)
}

// TestAccGPUCluster_budget counts the whole cluster's price in the provider's max_total_price_per_hour,
// also when a later plan reuses the first plan's quote.
func TestAccGPUCluster_budget(t *testing.T) {
	s := newTestSandbox(t)
	cfg := func(budget float64) string {
		return s.providerConfig(fmt.Sprintf("  max_total_price_per_hour = %g", budget)) + clusterConfig("budget", "h100", 1, 2, "")
	}
	accTest(t, nil, []resource.TestStep{{
		// 2 x $2.49/h fits $5/h: the plan succeeds and keeps its quote.
		Config:             cfg(5),
		PlanOnly:           true,
		ExpectNonEmptyPlan: true,
	}, {
		Config:      cfg(4),
		PlanOnly:    true,
		ExpectError: errorPattern("max_total_price_per_hour", "$4.98/h"),
	}})
	s.noneCreated(t, "plans")
}

func TestClusterSpecOf(t *testing.T) {
	for _, tc := range []struct {
		name         string
		allowSpot    bool
		interconnect types.String
		wantSpot     *bool
		wantIC       cloudprovider.Interconnect
	}{
		{"on-demand only, fabric by default", false, types.StringNull(), new(false), cloudprovider.InterconnectFabric},
		{"spot competes", true, types.StringValue("any"), nil, cloudprovider.InterconnectAny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := controlplane.OfferRequest{GPUType: "h100", GPUCount: 8, Kind: "vm", AllowSpot: tc.allowSpot, MaxPricePerHour: money.MustFromFloat(40)}
			spec := clusterSpecOf(req, "train", types.Int64Value(4), tc.interconnect)
			if spec.Name != "train" || spec.Nodes != 4 || spec.GPUCount != 8 || spec.MaxPricePerHour != req.MaxPricePerHour || spec.Interconnect != tc.wantIC ||
				(spec.Spot == nil) != (tc.wantSpot == nil) || (spec.Spot != nil && *spec.Spot != *tc.wantSpot) {
				t.Errorf("clusterSpecOf = %+v", spec)
			}
		})
	}
}

// A record written into the model and read back is the same record: what Read, Create and Update
// save is what the next plan hands the control plane.
func TestClusterRecordRoundTrip(t *testing.T) {
	ctx := context.Background()
	rec := controlplane.ClusterRecord{
		ID: "sbx-vm-train--k3j9x2ab", Name: "train", CloudClusterID: "sbxc-1", Cloud: "sandbox", Pool: "sandbox-vm-pool", Region: "sbx-eu-1",
		OfferID: "sandbox-vm-pool/sbx-eu-1/2xsbx.h100.1x/ondemand@4.98", Status: "ready", ProvisioningDigest: "d1",
		PricePerHour: money.MustFromFloat(4.98), Hostfile: "127.100.1.1 slots=1\n127.100.1.2 slots=1\n",
		NCCLEnv: map[string]string{"NCCL_IB_HCA": "mlx5"}, BusBandwidthGBps: 42.5,
		GPUType: "h100", GPUCount: 1, Interconnect: cloudprovider.InterconnectFabric, ProvisioningError: "node 2: nvidia-smi found 0 GPUs",
		Nodes: []controlplane.ClusterNodeRecord{
			{ID: "n1", Name: "sbx-vm-train--k3j9x2ab-1", SSHHost: "127.0.0.1", SSHPort: 2201, SSHUser: "ubuntu", PrivateIP: "127.100.1.1", HostKey: "ssh-ed25519 A", Status: "ready", Health: "healthy"},
			{ID: "n2", Name: "sbx-vm-train--k3j9x2ab-2", SSHHost: "127.0.0.1", SSHPort: 2202, SSHUser: "ubuntu", PrivateIP: "127.100.1.2", Status: "provisioning"},
		},
	}
	m := clusterInState(rec)
	var diags diag.Diagnostics
	got := m.record(ctx, &diags)
	if diags.HasError() {
		t.Fatal(diags)
	}
	if got.ID != rec.ID || got.CloudClusterID != rec.CloudClusterID || got.OfferID != rec.OfferID || got.PricePerHour != rec.PricePerHour ||
		got.Hostfile != rec.Hostfile || got.BusBandwidthGBps != rec.BusBandwidthGBps || got.NCCLEnv["NCCL_IB_HCA"] != "mlx5" ||
		len(got.Nodes) != 2 || got.Nodes[0] != rec.Nodes[0] || got.Nodes[1] != rec.Nodes[1] ||
		got.GPUType != "h100" || got.GPUCount != 1 || got.Interconnect != cloudprovider.InterconnectFabric || got.ProvisioningError != rec.ProvisioningError {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, rec)
	}
	// A node without a host key yet is null in state, not "".
	if hk := m.Node.Elements()[1].(types.Object).Attributes()["host_key"]; !hk.IsNull() {
		t.Errorf("node 2's host_key = %v, want null", hk)
	}
	// A planned price stays (Terraform forbids an apply to change it); the billed one comes with Read.
	m.PricePerHour = types.Float64Value(5.00)
	m.setRecord(ctx, rec, true, &diags)
	if m.PricePerHour.ValueFloat64() != 5.00 {
		t.Errorf("planned price replaced by %v", m.PricePerHour)
	}
}

// clusterInState is the model a state holds after rec was saved for a configuration asking rec's
// shape (gpu_type, gpu_count and interconnect are inputs: the configuration gives them).
func clusterInState(rec controlplane.ClusterRecord) gpuClusterModel {
	var m gpuClusterModel
	m.Name, m.GPUType, m.GPUCount = types.StringValue(rec.Name), types.StringValue(rec.GPUType), types.Int64Value(int64(rec.GPUCount))
	m.Interconnect = types.StringValue(string(rec.Interconnect))
	var diags diag.Diagnostics
	m.setRecord(context.Background(), rec, false, &diags)
	return m
}

// What the state holds decides the next plan: a cluster whose node failed provisioning is provisioned
// again in place, one the cloud failed is replaced, and one without the fabric the configuration now
// asks for is replaced for its interconnect.
func TestClusterStateDecidesThePlan(t *testing.T) {
	inv, err := inventory.Default()
	if err != nil {
		t.Fatal(err)
	}
	cp := controlplane.New(inv, nil, controlplane.Options{})
	node := func(i int, status string) controlplane.ClusterNodeRecord {
		return controlplane.ClusterNodeRecord{ID: fmt.Sprint("n", i), Name: fmt.Sprintf("sbx-vm-train--k3j9x2ab-%d", i), Status: status}
	}
	base := controlplane.ClusterRecord{ID: "sbx-vm-train--k3j9x2ab", Name: "train", CloudClusterID: "sbxc-1", Cloud: "sandbox", Pool: "sandbox-vm-pool",
		Region: "sbx-eu-1", OfferID: "sandbox-vm-pool/sbx-eu-1/2xsbx.h100.1x/ondemand@4.98", Status: "error", GPUType: "h100", GPUCount: 1,
		Interconnect: cloudprovider.InterconnectFabric, Nodes: []controlplane.ClusterNodeRecord{node(1, "ready"), node(2, "error")}}
	for _, tc := range []struct {
		name   string
		change func(*controlplane.ClusterRecord)
		want   controlplane.Change
		field  string
	}{
		{"a node failed provisioning: provisioned again", func(r *controlplane.ClusterRecord) { r.ProvisioningError = "node 2: nvidia-smi found 0 GPUs" }, controlplane.Reprovision, ""},
		{"failed at the cloud: replaced", func(*controlplane.ClusterRecord) {}, controlplane.Replace, "status"},
		{"no fabric where one is asked: replaced", func(r *controlplane.ClusterRecord) {
			r.Status, r.Interconnect, r.Nodes = "ready", cloudprovider.InterconnectAny, []controlplane.ClusterNodeRecord{node(1, "ready"), node(2, "ready")}
		}, controlplane.Replace, "interconnect"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := base
			tc.change(&rec)
			m := clusterInState(rec)
			var diags diag.Diagnostics
			got := m.record(context.Background(), &diags)
			spec := controlplane.ClusterSpec{Name: "train", GPUType: "h100", GPUCount: 1, Nodes: 2, Kind: "vm", Interconnect: cloudprovider.InterconnectFabric}
			ch, err := cp.PlanClusterChange(spec, got)
			if err != nil || diags.HasError() || ch.Change != tc.want || ch.ReplaceBecause != tc.field {
				t.Errorf("PlanClusterChange of the state's record = %+v, %v, %v; want %v (%q)", ch, err, diags, tc.want, tc.field)
			}
		})
	}
}

func TestReplacedBecause(t *testing.T) {
	for why, want := range map[string]string{"health": "node", "": "status", "status": "status", "nodes": "nodes", "clouds": "clouds"} {
		if got := replacedBecause(why); got != want {
			t.Errorf("replacedBecause(%q) = %q, want %q", why, got, want)
		}
	}
}

func TestMinBusBandwidth(t *testing.T) {
	obj := func(f float64) types.Object {
		return types.ObjectValueMust(ncclCheckAttrTypes, map[string]attr.Value{"min_bus_bandwidth_gbps": types.Float64Value(f)})
	}
	for _, tc := range []struct {
		v    types.Object
		want float64
	}{{types.ObjectNull(ncclCheckAttrTypes), 0}, {types.ObjectUnknown(ncclCheckAttrTypes), 0}, {obj(150), 150}} {
		if got := minBusBandwidth(tc.v); got != tc.want {
			t.Errorf("minBusBandwidth(%v) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

// TestAccGPUCluster_savedPlanFreshRunner applies a saved plan with nothing of the planning runner's
// quote directory left, after the market moved: the plan file carries the cluster's quote, so the
// apply creates what the plan showed.
func TestAccGPUCluster_savedPlanFreshRunner(t *testing.T) {
	s, d := cliTest(t, newCLIDirBinary)
	d.write(s.providerConfigIn(d.dir, "") + clusterConfig("saved", "h100", 1, 2, ""))
	d.mustRun("plan", "-out=tfplan")
	if err := os.RemoveAll(filepath.Join(d.dir, "hydra")); err != nil {
		t.Fatal(err)
	}
	s.setPrice("sbx-eu-1", "sbx.h100.1x", 2.39)
	d.mustRun("apply", "tfplan")
	show := d.mustRun("state", "show", clusterResource)
	if !statusReady.MatchString(show) || !regexp.MustCompile(`(?m)^\s*price_usd_per_hour\s+= 4\.98$`).MatchString(show) {
		t.Fatalf("the saved plan's cluster (4.98/h) is not what was created:\n%s", show)
	}
	d.destroyAll(s)
}
