package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

const dataSourceName = "data.hydra_gpu_offer.test"

func TestAccGPUOfferDataSource_basic(t *testing.T) {
	s := newTestSandbox(t)
	accTest(t, nil, []resource.TestStep{{
		Config: s.providerConfig("") + `
data "hydra_gpu_offer" "test" {
  gpu_type  = "h100"
  gpu_count = 8
  spot      = true
}
`,
		ConfigStateChecks: []statecheck.StateCheck{
			statecheck.ExpectKnownValue(dataSourceName, tfjsonpath.New("id"), knownvalue.StringExact("sandbox-vm-pool/sbx-eu-1/sbx.h100.8x/ondemand@19.92")),
			statecheck.ExpectKnownValue(dataSourceName, tfjsonpath.New("price_usd_per_hour"), knownvalue.Float64Exact(19.92)),
			statecheck.ExpectKnownValue(dataSourceName, tfjsonpath.New("is_spot"), knownvalue.Bool(false)),
			// Three regions, cheapest first.
			statecheck.ExpectKnownValue(dataSourceName, tfjsonpath.New("offers"), knownvalue.ListSizeExact(3)),
			statecheck.ExpectKnownValue(dataSourceName, tfjsonpath.New("offers").AtSliceIndex(2).AtMapKey("region"), knownvalue.StringExact("sbx-ap-1")),
			statecheck.ExpectKnownValue(dataSourceName, tfjsonpath.New("rejections"), knownvalue.MapSizeExact(0)),
		},
	}})
}

func TestAccGPUOfferDataSource_spotAndLimits(t *testing.T) {
	s := newTestSandbox(t)
	accTest(t, nil, []resource.TestStep{
		{
			Config: s.providerConfig("") + `
data "hydra_gpu_offer" "test" {
  gpu_type = "l4"
  spot     = true
  regions  = ["sbx-us-1"]
}
`,
			ConfigStateChecks: []statecheck.StateCheck{
				// Spot L4 in sbx-us-1: 0.49 * 1.06 = 0.52, at 45% = $0.23/h.
				statecheck.ExpectKnownValue(dataSourceName, tfjsonpath.New("is_spot"), knownvalue.Bool(true)),
				statecheck.ExpectKnownValue(dataSourceName, tfjsonpath.New("id"), knownvalue.StringExact("sandbox-vm-pool/sbx-us-1/sbx.l4.1x/spot@0.23")),
			},
		},
		{
			Config: s.providerConfig("") + `
data "hydra_gpu_offer" "test" {
  gpu_type           = "b200"
  max_price_per_hour = 1
}
`,
			ExpectError: errorPattern("No GPU offer matches hydra_gpu_offer", "sandbox: cheapest matching offer costs $5.29/h"),
		},
	})
}

func TestAccGPUOfferDataSource_unavailableCloudNamed(t *testing.T) {
	s := newTestSandbox(t)
	s.setFaults(sandbox.Faults{Faults: simulation.Faults{ServerErrors: 100}})
	accTest(t, nil, []resource.TestStep{{
		Config:      s.providerConfig("") + "data \"hydra_gpu_offer\" \"test\" {\n  gpu_type = \"l4\"\n}\n",
		ExpectError: errorPattern("sandbox: listing offers: injected API error"),
	}})
}
