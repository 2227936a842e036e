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
// system), and after the cluster is replaced (-replace) both new nodes read it back; a changed mount
// path provisions the nodes again in place. The cluster is placed in the volume's region (sbx-us-1),
// not the cheapest (sbx-eu-1).
func TestAccGPUCluster_sharedVolumeKeepsData(t *testing.T) {
	requireProvisioningTools(t)
	s := newTestSandbox(t)
	key := newCustomerKey(t)
	config := func(mount string) string {
		return s.provisionedConfig("") + volumeConfig("shared", "shared_fs", "sandbox", "sbx-us-1") +
			clusterConfig("vols", "h100", 1, 2, fmt.Sprintf("  interconnect = \"any\"\n  ssh_public_keys = [%q]\n%s", key.line, volumesAt(mount)))
	}
	cfg := config("/shared")
	text := randomText(t)
	var nodes []string
	readAt := func(mount string) resource.TestCheckFunc {
		return func(st *terraform.State) error {
			for i := range 2 {
				a, err := nodeAttrs(st, i)
				if err != nil {
					return err
				}
				got, err := key.sshRun(a, fmt.Sprintf(`cat "$HYDRA_ROOT"%s/proof`, mount))
				if err != nil {
					return fmt.Errorf("node %d (%s): %w", i+1, a["name"], err)
				}
				if strings.TrimSpace(got) != text {
					return fmt.Errorf("node %d (%s) reads %q, want %q", i+1, a["name"], got, text)
				}
			}
			return nil
		}
	}
	readOnEvery := readAt("/shared")
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
			// Only the mount path changes: every node provisioned again in place, the data at the new path.
			Config:            config("/mnt/shared"),
			ConfigPlanChecks:  preApply(plancheck.ExpectResourceAction(clusterResource, plancheck.ResourceActionUpdate)),
			ConfigStateChecks: []statecheck.StateCheck{clusterState("status", "ready")},
			Check:             resource.ComposeTestCheckFunc(readAt("/mnt/shared"), s.checkCreated(4)),
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
