package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	emumithril "github.com/hydragpu/terraform-provider-hydra/internal/emulator/mithril"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox"
)

// nodeAttrs are node i's connection attributes of the cluster in the state, named as a machine's.
func nodeAttrs(st *terraform.State, i int) (map[string]string, error) {
	a, err := attrs(st, clusterResource)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, k := range []string{"id", "name", "ssh_host", "ssh_port", "ssh_user", "host_key"} {
		out[k] = a[fmt.Sprintf("node.%d.%s", i, k)]
	}
	if out["ssh_host"] == "" {
		return nil, fmt.Errorf("node %d has no address: %v", i, out)
	}
	return out, nil
}

// TestAccGPUCluster_sharedVolumeKeepsData: a 2-node spot cluster of sandbox containers with a
// shared_fs hydra_volume and an interruption hook, provisioned with bare-vm.yml's volume, access,
// interruption and marker roles (slimPlaybooks), then the real cluster check: a file written over
// SSH on node 1 is read on node 2 (one file system). The sandbox preempts node 2 with a 10-minute
// notice: the watcher the playbooks installed on every node runs the hook on node 2 (the test prints
// how long after the notice) and not on node 1; the refresh shows `interruption` on node 2 and on the
// cluster (node 1 has none) and, with replace_when_preempted false, the plan changes nothing; by
// default the plan replaces the whole cluster under the same name, and both new nodes read the file
// back. A refresh shows the volume attached to both; imported by another state, the cluster keeps its
// volume (recorded in place). The cluster is placed in the volume's region (sbx-us-1), not the
// cheapest (sbx-eu-1). The nodes are containers without systemd, so the watcher runs as a process. A
// changed mount path provisioned again in place is TestAccGPUInstance_volumeKeepsData's (the same
// digest) and TestVolumeMount's (the role).
func TestAccGPUCluster_sharedVolumeKeepsData(t *testing.T) {
	requireProvisioningTools(t)
	s := newTestSandbox(t)
	dir := slimPlaybooks(t, append(volumeRoles, "interruption_watch")...)
	var catalog []sandbox.CatalogEntry
	for region, price := range map[string]float64{"sbx-eu-1": 0.22, "sbx-us-1": 0.24} {
		catalog = append(catalog, sandbox.CatalogEntry{Region: region, InstanceType: "sbx.l4.1x.container", GPU: "L4", GPUCount: 1,
			PricePerHour: price, Spot: true, Available: -1, Machine: "container",
			Hardware: sandbox.Hardware{FormFactor: "pcie", GPUMemoryGB: 24, VCPUs: 8, MemoryGB: 32}})
	}
	if err := s.sb.SetCatalog(catalog); err != nil {
		t.Fatal(err)
	}
	key := newCustomerKey(t)
	config := func(extra string) string {
		return s.provisionedConfig(dir) + volumeConfig("shared", "shared_fs", "sandbox", "sbx-us-1") + clusterConfig("vols", "l4", 1, 2, fmt.Sprintf(`  spot         = true
  interconnect = "any"
  ssh_public_keys = [%q]
  provisioning_vars = {
    interruption_hook = <<-EOT
      #!/bin/sh
      echo "hook $1 $2 $(date -u +%%s.%%N)"
    EOT
  }
%s%s`, key.line, volumesAt("/shared"), extra))
	}
	kept := config("  replace_when_preempted = false\n")
	cfg := config("")
	text := randomText(t)
	var nodes []string
	var clusterID string
	readOnEvery := func(st *terraform.State) error {
		for i := range 2 {
			a, err := nodeAttrs(st, i)
			if err != nil {
				return err
			}
			got, err := key.sshRun(a, `cat "$HYDRA_ROOT"/shared/proof`)
			if err != nil {
				return fmt.Errorf("node %d (%s): %w", i+1, a["name"], err)
			}
			if strings.TrimSpace(got) != text {
				return fmt.Errorf("node %d (%s) reads %q, want %q", i+1, a["name"], got, text)
			}
		}
		return nil
	}
	newNodes := func(st *terraform.State) error {
		for i := range 2 {
			a, err := nodeAttrs(st, i)
			if err != nil {
				return err
			}
			if slices.Contains(nodes, a["id"]) {
				return fmt.Errorf("node %s is not new (was %v)", a["id"], nodes)
			}
			nodes = append(nodes, a["id"])
		}
		return nil
	}
	nodeInterruption := func(i int, key string) tfjsonpath.Path {
		return tfjsonpath.New("node").AtSliceIndex(i).AtMapKey("interruption").AtMapKey(key)
	}
	sameID := statecheck.CompareValue(compare.ValuesSame())
	accTest(t, s.checkDestroyed, []resource.TestStep{
		{
			Config: kept,
			ConfigPlanChecks: preApply(
				plancheck.ExpectResourceAction(clusterResource, plancheck.ResourceActionCreate),
				clusterPlanKnown("region", "sbx-us-1"),
			),
			ConfigStateChecks: []statecheck.StateCheck{
				clusterState("status", "ready"),
				clusterState("volumes", knownvalue.ListSizeExact(1)),
				clusterState("offer_id", like(`/spot@`)),
				clusterState("replace_when_preempted", false),
				clusterState("interruption", knownvalue.Null()),
				statecheck.ExpectKnownValue(clusterResource, tfjsonpath.New("node").AtSliceIndex(1).AtMapKey("interruption"), knownvalue.Null()),
				sameID.AddStateValue(clusterResource, tfjsonpath.New("cloud_cluster_id")),
			},
			Check: resource.ComposeTestCheckFunc(newNodes, func(st *terraform.State) error {
				a, err := nodeAttrs(st, 0)
				if err != nil {
					return err
				}
				_, err = key.sshRun(a, fmt.Sprintf(`printf '%%s\n' %q > "$HYDRA_ROOT"/shared/proof && sync`, text))
				return err
			}, readOnEvery),
		},
		{
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
			Config:           kept,
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
		},
		{
			// replace_when_preempted by default: the plan replaces the whole cluster under the same name;
			// both new nodes read the file back.
			Config: cfg,
			ConfigPlanChecks: preApply(
				plancheck.ExpectResourceAction(clusterResource, plancheck.ResourceActionDestroyBeforeCreate),
				plancheck.ExpectKnownValue(clusterResource, tfjsonpath.New("name"), knownvalue.StringExact("vols")),
				plancheck.ExpectUnknownValue(clusterResource, tfjsonpath.New("interruption")),
				clusterPlanKnown("region", "sbx-us-1"),
			),
			ConfigStateChecks: []statecheck.StateCheck{clusterState("status", "ready"), clusterState("interruption", knownvalue.Null())},
			Check:             resource.ComposeTestCheckFunc(newNodes, readOnEvery, s.checkLive(2), s.checkCreated(4)),
		},
		{
			// A refresh reads which machines use the volume: the new nodes, both.
			RefreshState: true,
			Check: func(st *terraform.State) error {
				vol, err := attrs(st, testVolumeResource)
				if err != nil {
					return err
				}
				var want, got []string
				for i := range 2 {
					a, err := nodeAttrs(st, i)
					if err != nil {
						return err
					}
					want = append(want, a["name"])
					got = append(got, vol[fmt.Sprintf("attached_to.%d", i)])
				}
				slices.Sort(want)
				slices.Sort(got)
				if vol["attached_to.#"] != "2" || !slices.Equal(got, want) {
					return fmt.Errorf("the volume's attached_to is %s:%v, want %v", vol["attached_to.#"], got, want)
				}
				a, err := attrs(st, clusterResource)
				clusterID = a["cloud_cluster_id"]
				return err
			},
		},
		{
			// Out of the state, kept at the cloud, so that it can be imported.
			Config: s.provisionedConfig(dir) + volumeConfig("shared", "shared_fs", "sandbox", "sbx-us-1") +
				"removed {\n  from = hydra_gpu_cluster.test\n  lifecycle {\n    destroy = false\n  }\n}\n",
		},
		{
			ResourceName:       clusterResource,
			Config:             cfg,
			ImportState:        true,
			ImportStatePersist: true,
			ImportStateIdFunc:  func(*terraform.State) (string, error) { return "sandbox/" + clusterID, nil },
		},
		{
			// The imported cluster has no volumes in its state, but its nodes' provisioning digest (which
			// covers them) says it was provisioned with these: kept, the volumes recorded in place.
			Config:           cfg,
			ConfigPlanChecks: preApply(plancheck.ExpectResourceAction(clusterResource, plancheck.ResourceActionUpdate)),
			Check:            resource.ComposeTestCheckFunc(readOnEvery, s.checkCreated(4), s.checkLive(2)),
		},
	})
}

// TestAccGPUCluster_volumesInvalid: a cluster's volumes are validated as a machine's, through the real
// CLI, before any cloud is asked.
func TestAccGPUCluster_volumesInvalid(t *testing.T) {
	s := newTestSandbox(t)
	cfg := func(extra string) string { return s.providerConfig("") + clusterConfig("badvol", "h100", 1, 2, extra) }
	refusedPlans(t, []refusedPlan{
		{"two regions", cfg(`  volumes = [{ volume_id = "sandbox/sbx-eu-1/a", mount_path = "/a" }, { volume_id = "sandbox/sbx-us-1/b", mount_path = "/b" }]`),
			errorPattern("Volumes in different places", "is in sandbox/sbx-us-1")},
		{"outside clouds", cfg("  clouds = [\"verda\"]\n" + `  volumes = [{ volume_id = "sandbox/sbx-eu-1/a", mount_path = "/a" }]`),
			errorPattern("Volume outside the allowed clouds", `clouds allows only "verda"`)},
		{"system path", cfg(`  volumes = [{ volume_id = "sandbox/sbx-eu-1/a", mount_path = "/proc/a" }]`), errorPattern("Invalid mount_path", "in /proc")},
	})
	s.noneCreated(t, "an invalid volumes plan")
}

// TestAccGPUCluster_volumeEmulators: on each emulated cloud whose clusters take volumes, a cluster with
// a shared_fs hydra_volume is placed in the volume's region, every node gets the volume at the cloud
// (Verda lists each node as the volume's instance; Mithril the cluster's one bid), and its
// replacement (-replace) gets the same volume (provisioning off).
func TestAccGPUCluster_volumeEmulators(t *testing.T) {
	for _, tc := range []struct {
		cloud, region, gpuType, extra string
		prepare                       func(*testClouds)
		// volumes lists the cloud's volumes named for the test, not deleted, with their users.
		volumes func(*testClouds) []emulatedVolume
		// users are the cloud's ids that should use the volume: the nodes' or the cluster's.
		users func(a map[string]string) []string
	}{
		{cloud: "verda", region: "FIN-03", gpuType: "h200",
			volumes: func(c *testClouds) []emulatedVolume { return verdaVolumes(c, "ckpt") },
			users:   func(a map[string]string) []string { return []string{a["node.0.id"], a["node.1.id"]} }},
		{cloud: "mithril", region: "us-central1-a", gpuType: "h100", extra: "  spot = true\n",
			prepare: func(c *testClouds) {
				if _, err := c.mithril.SetAuction(emumithril.AuctionChange{Region: "us-central1-a", InstanceType: "h100-80gb.sxm.8x", Capacity: new(4)}); err != nil {
					c.t.Fatal(err)
				}
			},
			volumes: func(c *testClouds) []emulatedVolume { return mithrilVolumes(c, "ckpt") },
			users:   func(a map[string]string) []string { return []string{a["cloud_cluster_id"]} }},
	} {
		t.Run(tc.cloud, func(t *testing.T) {
			c := newTestClouds(t, nil)
			if tc.prepare != nil {
				tc.prepare(c)
			}
			cfg := c.providerConfig(t.TempDir(), tc.cloud) + volumeConfig("ckpt", "shared_fs", tc.cloud, tc.region) +
				clusterConfig("emuvol", tc.gpuType, 8, 2, fmt.Sprintf("  ssh_public_keys = [%q]\n  interconnect = \"any\"\n%s%s", testSSHKey, tc.extra, volumesAt("/ckpt")))
			var volumeID string
			var seen []string
			sameVolume := func(st *terraform.State) error {
				a, err := attrs(st, clusterResource)
				if err != nil {
					return err
				}
				vols := tc.volumes(c)
				if len(vols) != 1 {
					return fmt.Errorf("%s has %d volumes named for the test, want 1: %+v", tc.cloud, len(vols), vols)
				}
				if volumeID != "" && vols[0].id != volumeID {
					return fmt.Errorf("the replacement got volume %s, not %s", vols[0].id, volumeID)
				}
				volumeID = vols[0].id
				want := tc.users(a)
				for _, u := range want {
					if u == "" || slices.Contains(seen, u) {
						return fmt.Errorf("the cluster's ids %v are not all new (seen %v)", want, seen)
					}
				}
				seen = append(seen, want...)
				got := slices.Sorted(slices.Values(vols[0].users))
				if !slices.Equal(got, slices.Sorted(slices.Values(want))) {
					return fmt.Errorf("volume %s is used by %v at %s, want %v", volumeID, got, tc.cloud, want)
				}
				return nil
			}
			accTest(t, c.checkEmpty, []resource.TestStep{
				{
					Config: cfg,
					ConfigPlanChecks: preApply(
						clusterPlanKnown("cloud", tc.cloud),
						clusterPlanKnown("region", tc.region),
					),
					ConfigStateChecks: []statecheck.StateCheck{clusterState("status", "ready")},
					Check:             sameVolume,
				},
				{
					Config:           cfg,
					Taint:            []string{clusterResource},
					ConfigPlanChecks: preApply(plancheck.ExpectResourceAction(clusterResource, plancheck.ResourceActionDestroyBeforeCreate)),
					Check:            sameVolume,
				},
			})
		})
	}
}

// TestAccGPUCluster_blockVolume: every node would mount a block volume, which is on one machine at a
// time: the create fails saying so and leaves nothing (provisioning off).
func TestAccGPUCluster_blockVolume(t *testing.T) {
	s := newTestSandbox(t)
	cfg := s.providerConfig("") + volumeConfig("blk", "block", "sandbox", "sbx-us-1") +
		clusterConfig("blockvol", "h100", 1, 2, "  interconnect = \"any\"\n"+volumesAt("/data"))
	accTest(t, s.checkDestroyed, []resource.TestStep{{
		Config:      cfg,
		ExpectError: errorPattern("creating GPU cluster (blockvol)", "block volume sbx-vm-blk--", "not 2 nodes", "shared_fs"),
	}})
	s.noneCreated(t, "a cluster with a block volume")
}
