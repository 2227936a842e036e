package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/hydragpu/terraform-provider-hydra/internal/money"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox"
)

// setStock sets how many machines of one catalog entry (region/instance type, on-demand) the sandbox
// can start now (-1: no limit).
func (s *testSandbox) setStock(region, instanceType string, n int) {
	s.t.Helper()
	c, err := s.sb.Catalog()
	if err != nil {
		s.t.Fatal(err)
	}
	for i := range c {
		if c[i].Region == region && c[i].InstanceType == instanceType && !c[i].Spot {
			c[i].Available = n
		}
	}
	if err := s.sb.SetCatalog(c); err != nil {
		s.t.Fatal(err)
	}
}

// Prices are exact to the micro-dollar from the catalog to the plan: $0.70005 is neither shown as
// $0.70 nor treated as within a cap of $0.700049, and $0.70005 beats $0.70006.
func TestAccGPUInstance_moneyExact(t *testing.T) {
	s := newTestSandbox(t)
	s.setPrice("sbx-eu-1", "sbx.l4.1x", 0.70006)
	s.setPrice("sbx-us-1", "sbx.l4.1x", 0.70005)
	s.setPrice("sbx-ap-1", "sbx.l4.1x", 0.8)
	withCap := func(c string) string {
		return s.instanceConfig("exact", "l4", "  max_price_per_hour = "+c)
	}
	accTest(t, s.checkDestroyed, []resource.TestStep{{
		Config:      withCap("0.700049"),
		PlanOnly:    true,
		ExpectError: errorPattern("cheapest matching offer costs $0.70005/h", "above max_price_per_hour $0.700049/h", "Nothing was created"),
	}, {
		Config: withCap("0.70005"),
		ConfigPlanChecks: preApply(
			planKnown("region", "sbx-us-1"),
			planKnown("price_usd_per_hour", 0.70005),
			planKnown("offer_id", "sandbox-vm-pool/sbx-us-1/sbx.l4.1x/ondemand@0.70005"),
		),
		ConfigStateChecks: []statecheck.StateCheck{
			stateKnown("price_usd_per_hour", 0.70005),
			stateKnown("status", "ready"),
		},
	}})
}

// Every number max_price_per_hour accepts is a price hydra can hold exactly; the rest fail at validate,
// naming the attribute and what is accepted, before any cloud is asked.
func TestAccGPUInstance_maxPriceBounds(t *testing.T) {
	s := newTestSandbox(t)
	var plans []refusedPlan
	for _, tc := range []struct{ value, want string }{
		{"1e15", "max_price_per_hour is 1000000000000000; expected US dollars per hour from 0.01 to 1000000"},
		{"1000000.000001", "max_price_per_hour is 1000000.000001; expected US dollars per hour from 0.01 to 1000000"},
		{"0.001", "max_price_per_hour is 0.001; expected US dollars per hour from 0.01 to 1000000"},
		{"2.0000001", "max_price_per_hour is 2.0000001, which has more than six digits after the decimal point"},
	} {
		plans = append(plans, refusedPlan{tc.value, s.instanceConfig("bounds", "l4", "  max_price_per_hour = "+tc.value), errorPattern(tc.want)})
	}
	refusedPlans(t, plans)
	s.noneCreated(t, "refused caps")
}

// Instances planned in one run share the known stock: with one machine left in the cheapest region,
// the first instance by name takes it and the others are planned onto the next cheapest, in any run
// order, and the apply buys exactly that.
func TestAccGPUInstance_fleetSharesStock(t *testing.T) {
	s := newTestSandbox(t)
	s.setStock("sbx-eu-1", "sbx.h100.1x", 1)
	s.setStock("sbx-us-1", "sbx.h100.1x", 2)
	cfg := s.providerConfig("") + `
resource "hydra_gpu_instance" "fleet" {
  count    = 3
  name     = "fleet-${count.index}"
  gpu_type = "h100"
}
`
	region := func(i int) tfjsonpath.Path { return tfjsonpath.New("region") }
	addr := func(i int) string { return "hydra_gpu_instance.fleet[" + string(rune('0'+i)) + "]" }
	accTest(t, s.checkDestroyed, []resource.TestStep{{
		Config: cfg,
		ConfigPlanChecks: preApply(
			plancheck.ExpectKnownValue(addr(0), region(0), knownvalue.StringExact("sbx-eu-1")),
			plancheck.ExpectKnownValue(addr(1), region(1), knownvalue.StringExact("sbx-us-1")),
			plancheck.ExpectKnownValue(addr(2), region(2), knownvalue.StringExact("sbx-us-1")),
			plancheck.ExpectKnownValue(addr(2), tfjsonpath.New("price_usd_per_hour"), knownvalue.Float64Exact(2.64)),
		),
		ConfigStateChecks: []statecheck.StateCheck{
			statecheck.ExpectKnownValue(addr(0), tfjsonpath.New("status"), knownvalue.StringExact("ready")),
			statecheck.ExpectKnownValue(addr(1), tfjsonpath.New("region"), knownvalue.StringExact("sbx-us-1")),
			statecheck.ExpectKnownValue(addr(2), tfjsonpath.New("status"), knownvalue.StringExact("ready")),
		},
		Check: resource.ComposeTestCheckFunc(s.checkLive(3), s.checkCreated(3)),
	}})
}

// A sold-out offer is listed by the data source as not eligible, with its price, and never chosen.
func TestAccGPUOfferDataSource_soldOutListed(t *testing.T) {
	s := newTestSandbox(t)
	s.setStock("sbx-eu-1", "sbx.l40s.1x", 0)
	accTest(t, nil, []resource.TestStep{{
		Config: s.providerConfig("") + `
data "hydra_gpu_offer" "l40s" {
  gpu_type = "l40s"
}
`,
		ConfigStateChecks: []statecheck.StateCheck{
			statecheck.ExpectKnownValue("data.hydra_gpu_offer.l40s", tfjsonpath.New("region"), knownvalue.StringExact("sbx-us-1")),
			statecheck.ExpectKnownValue("data.hydra_gpu_offer.l40s", tfjsonpath.New("offers"), knownvalue.ListPartial(map[int]knownvalue.Check{
				// Two eligible regions first, then the sold-out one.
				2: knownvalue.ObjectPartial(map[string]knownvalue.Check{
					"region":             knownvalue.StringExact("sbx-eu-1"),
					"eligible":           knownvalue.Bool(false),
					"available":          knownvalue.Int64Exact(0),
					"price_usd_per_hour": knownvalue.Float64Exact(0.99),
					"ineligible_why":     like(`sold out`),
				}),
			})),
		},
	}})
}

// addEntry adds one catalog entry to the sandbox.
func (s *testSandbox) addEntry(e sandbox.CatalogEntry) {
	s.t.Helper()
	c, err := s.sb.Catalog()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := s.sb.SetCatalog(append(c, e)); err != nil {
		s.t.Fatal(err)
	}
}

// The hardware that matters is first-class: an "h100" PCIe card resold cheaper than the SXM machines
// wins only when the request allows it; form_factor = "sxm" keeps it out, and an offer_id pinning
// it on such a request fails at plan, naming both sides.
func TestAccGPUInstance_formFactor(t *testing.T) {
	s := newTestSandbox(t)
	s.addEntry(sandbox.CatalogEntry{Region: "sbx-us-1", InstanceType: "sbx.h100pcie.1x", GPU: "H100", GPUCount: 1, PricePerHour: 1.99,
		Available: -1, Hardware: sandbox.Hardware{FormFactor: "pcie", GPUMemoryGB: 80, VCPUs: 16, MemoryGB: 128}})
	withFF := func(extra string) string {
		return s.instanceConfig("socket", "h100", extra)
	}
	accTest(t, s.checkDestroyed, []resource.TestStep{{
		// Any form factor: the PCIe card is cheapest, and the plan says what it is.
		Config: withFF(""),
		ConfigPlanChecks: preApply(
			planKnown("instance_type", "sbx.h100pcie.1x"),
			planKnown("gpu_form_factor", "pcie"),
			planKnown("gpu_memory_gb", int64(80)),
			planKnown("vcpus", int64(16)),
			planKnown("memory_gb", int64(128)),
		),
		ConfigStateChecks: []statecheck.StateCheck{
			stateKnown("gpu_form_factor", "pcie"),
			stateKnown("vcpus", int64(16)),
		},
	}, {
		// Requiring SXM of the PCIe machine replaces it with the SXM machine at $2.49/h, and the state
		// keeps what the plan showed.
		Config: withFF(`  form_factor = "sxm"`),
		ConfigPlanChecks: preApply(
			plancheck.ExpectResourceAction(resourceName, plancheck.ResourceActionDestroyBeforeCreate),
			planKnown("instance_type", "sbx.h100.1x"),
			planKnown("gpu_form_factor", "sxm"),
			planKnown("price_usd_per_hour", 2.49),
		),
		ConfigStateChecks: []statecheck.StateCheck{
			stateKnown("gpu_form_factor", "sxm"),
			stateKnown("status", "ready"),
		},
	}, {
		// A pinned PCIe offer on an SXM request fails at plan, naming both sides.
		Config:      withFF("  form_factor = \"sxm\"\n  offer_id = \"sandbox-vm-pool/sbx-us-1/sbx.h100pcie.1x/ondemand@1.99\""),
		PlanOnly:    true,
		ExpectError: errorPattern(`its instance type sbx.h100pcie.1x has pcie, but the request's form_factor is "sxm"`),
	}})
}

// TestCapOf: the cap a request carries is the one ParseMaxPrice accepted; null and unknown are no cap,
// and a refused value never becomes a lower cap.
func TestCapOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    types.Float64
		want money.USD
	}{
		{"null", types.Float64Null(), 0},
		{"unknown", types.Float64Unknown(), 0},
		{"exact", types.Float64Value(2.000005), 2*money.Dollar + 5},
		{"below the bounds", types.Float64Value(0.001), money.Max},
		{"more than six digits", types.Float64Value(1.0000001), money.Max},
	} {
		if got := capOf(tc.v); got != tc.want {
			t.Errorf("%s: capOf(%v) = %s, want %s", tc.name, tc.v, got, tc.want)
		}
	}
}
