package provider

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	emumithril "github.com/hydragpu/terraform-provider-hydra/internal/emulator/mithril"
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

// TestAccGPUCluster_sharedVolumeKeepsData: a 2-node sandbox cluster with a shared_fs hydra_volume,
// provisioned with the real playbooks: a file written over SSH on node 1 is read on node 2 (one file
// system), and after the cluster is replaced (-replace) both new nodes read it back; imported by
// another state, the cluster keeps its volume (recorded in place). The cluster is placed in the
// volume's region (sbx-us-1), not the cheapest (sbx-eu-1). A changed mount path provisioned again in
// place is TestAccGPUInstance_volumeKeepsData's (the same digest) and TestVolumeMount's (the role).
func TestAccGPUCluster_sharedVolumeKeepsData(t *testing.T) {
	requireProvisioningTools(t)
	s := newTestSandbox(t)
	key := newCustomerKey(t)
	cfg := s.provisionedConfig("") + volumeConfig("shared", "shared_fs", "sandbox", "sbx-us-1") +
		clusterConfig("vols", "h100", 1, 2, fmt.Sprintf("  interconnect = \"any\"\n  ssh_public_keys = [%q]\n%s", key.line, volumesAt("/shared")))
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
	accTest(t, s.checkDestroyed, []resource.TestStep{
		{
			Config: cfg,
			ConfigPlanChecks: preApply(
				plancheck.ExpectResourceAction(clusterResource, plancheck.ResourceActionCreate),
				clusterPlanKnown("region", "sbx-us-1"),
			),
			ConfigStateChecks: []statecheck.StateCheck{clusterState("status", "ready"), clusterState("volumes", knownvalue.ListSizeExact(1))},
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
			Config:            cfg,
			Taint:             []string{clusterResource},
			ConfigPlanChecks:  preApply(plancheck.ExpectResourceAction(clusterResource, plancheck.ResourceActionDestroyBeforeCreate)),
			ConfigStateChecks: []statecheck.StateCheck{clusterState("status", "ready")},
			Check:             resource.ComposeTestCheckFunc(newNodes, readOnEvery, s.checkLive(2)),
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
			Config: s.provisionedConfig("") + volumeConfig("shared", "shared_fs", "sandbox", "sbx-us-1") +
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
	accTest(t, nil, []resource.TestStep{
		{
			Config:   cfg(`  volumes = [{ volume_id = "sandbox/sbx-eu-1/a", mount_path = "/a" }, { volume_id = "sandbox/sbx-us-1/b", mount_path = "/b" }]`),
			PlanOnly: true, ExpectError: errorPattern("Volumes in different places", "is in sandbox/sbx-us-1"),
		},
		{
			Config:   cfg("  clouds = [\"verda\"]\n" + `  volumes = [{ volume_id = "sandbox/sbx-eu-1/a", mount_path = "/a" }]`),
			PlanOnly: true, ExpectError: errorPattern("Volume outside the allowed clouds", `clouds allows only "verda"`),
		},
		{
			Config:   cfg(`  volumes = [{ volume_id = "sandbox/sbx-eu-1/a", mount_path = "/proc/a" }]`),
			PlanOnly: true, ExpectError: errorPattern("Invalid mount_path", "in /proc"),
		},
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
			volumes: func(c *testClouds) []emulatedVolume {
				var out []emulatedVolume
				for _, v := range c.verda.Volumes() {
					if !v.Trashed && strings.Contains(v.Name, "ckpt") {
						out = append(out, emulatedVolume{v.ID, v.InstanceIDs})
					}
				}
				return out
			},
			users: func(a map[string]string) []string { return []string{a["node.0.id"], a["node.1.id"]} }},
		{cloud: "mithril", region: "us-central1-a", gpuType: "h100", extra: "  spot = true\n",
			prepare: func(c *testClouds) {
				if _, err := c.mithril.SetAuction(emumithril.AuctionChange{Region: "us-central1-a", InstanceType: "h100-80gb.sxm.8x", Capacity: new(4)}); err != nil {
					c.t.Fatal(err)
				}
			},
			volumes: func(c *testClouds) []emulatedVolume {
				live := map[string]bool{}
				for _, b := range c.mithril.LiveBids() {
					live[b.FID] = true
				}
				var out []emulatedVolume
				for _, v := range c.mithril.Volumes() {
					if v.Deleted || !strings.Contains(v.Name, "ckpt") {
						continue
					}
					var users []string
					for _, b := range v.Bids {
						if live[b] {
							users = append(users, b)
						}
					}
					out = append(out, emulatedVolume{v.FID, users})
				}
				return out
			},
			users: func(a map[string]string) []string { return []string{a["cloud_cluster_id"]} }},
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
