package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

// hydra_gpu_instances lists the sandbox's volumes with the machines using each: a volume no machine
// uses, then the same volume with a machine created with it.
func TestAccGPUInstances_volumes(t *testing.T) {
	s := newTestSandbox(t)
	cfg := s.providerConfig("") + testVolumeConfig("listed", "block", 7, "sandbox", "sbx-eu-1") + `
data "hydra_gpu_instances" "all" {
  depends_on = [hydra_volume.test]
}
`
	const ds = "data.hydra_gpu_instances.all"
	row := func(attr string) tfjsonpath.Path { return tfjsonpath.New("volumes").AtSliceIndex(0).AtMapKey(attr) }
	var vol string
	accTest(t, s.checkNoVolumes, []resource.TestStep{{
		Config: cfg,
		ConfigStateChecks: []statecheck.StateCheck{
			statecheck.ExpectKnownValue(ds, tfjsonpath.New("volumes"), knownvalue.ListSizeExact(1)),
			statecheck.ExpectKnownValue(ds, row("id"), knownvalue.StringExact("sandbox/sbx-eu-1/listed")),
			statecheck.ExpectKnownValue(ds, row("name"), knownvalue.StringExact("listed")),
			statecheck.ExpectKnownValue(ds, row("cloud"), knownvalue.StringExact("sandbox")),
			statecheck.ExpectKnownValue(ds, row("region"), knownvalue.StringExact("sbx-eu-1")),
			statecheck.ExpectKnownValue(ds, row("type"), knownvalue.StringExact("block")),
			statecheck.ExpectKnownValue(ds, row("size_gb"), knownvalue.Int64Exact(7)),
			statecheck.ExpectKnownValue(ds, row("cloud_name"), like(`^sbx-vm-listed--[a-z2-7]{8}$`)),
			statecheck.ExpectKnownValue(ds, row("used_by"), knownvalue.ListExact([]knownvalue.Check{})),
			statecheck.ExpectKnownValue(ds, row("price_usd_per_month"), knownvalue.Null()),
			statecheck.ExpectKnownValue(ds, tfjsonpath.New("orphan_volumes"), knownvalue.ListExact([]knownvalue.Check{})),
		},
		Check: func(st *terraform.State) error { vol = stateVolumeID(st); return nil },
	}, {
		PreConfig: func() { s.createWithVolume(t, "reader", "sbx-eu-1", vol, "/data") },
		Config:    cfg,
		ConfigStateChecks: []statecheck.StateCheck{
			statecheck.ExpectKnownValue(ds, row("used_by"), knownvalue.ListExact([]knownvalue.Check{like(`^sbx-vm-reader--[a-z2-7]{8}$`)})),
		},
	}, {
		// The machine made outside Terraform goes, so the test's destroy can delete the volume.
		PreConfig: func() {
			for _, r := range s.live() {
				if err := s.sb.Delete(t.Context(), r.ID); err != nil {
					t.Fatal(err)
				}
			}
		},
		Config: cfg,
	}})
}
