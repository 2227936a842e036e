package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// A count that takes the configuration over max_total_price_per_hour fails at plan and creates
// nothing; the error names the total, the budget and the largest machines. Within the budget the same
// configuration applies; the machines in state count at the next plan, so growing the count beyond
// the budget fails again.
func TestAccGPUInstance_budget(t *testing.T) {
	s := newTestSandbox(t)
	fleet := func(n int) string {
		return `
resource "hydra_gpu_instance" "fleet" {
  count    = ` + string(rune('0'+n)) + `
  name     = "budget-${count.index}"
  gpu_type = "h100"
}
`
	}
	// h100 costs $2.49/h in sbx-eu-1: three are $7.47/h.
	accTest(t, s.checkDestroyed, []resource.TestStep{
		{
			Config: s.providerConfig("  max_total_price_per_hour = 5") + fleet(3),
			ExpectError: errorPattern("Over the budget of max_total_price_per_hour", "$7.47/h", "max_total_price_per_hour of $5.00/h",
				"The largest:", "budget-", "$2.49/h"),
			Check: s.checkCreated(0),
		},
		{
			PreConfig: func() { s.noneCreated(t, "the plan over budget") },
			Config:    s.providerConfig("  max_total_price_per_hour = 5") + fleet(2),
			Check:     resource.ComposeTestCheckFunc(s.checkLive(2), s.checkCreated(2)),
		},
		{
			// Two machines in state plus one more: over again, and nothing more is created.
			Config:      s.providerConfig("  max_total_price_per_hour = 5") + fleet(3),
			ExpectError: errorPattern("Over the budget of max_total_price_per_hour", "$7.47/h", "in state"),
		},
		{
			Config: s.providerConfig("  max_total_price_per_hour = 5") + fleet(2),
			Check:  resource.ComposeTestCheckFunc(s.checkLive(2), s.checkCreated(2)),
		},
	})
}

// max_total_price_per_hour is validated like max_price_per_hour, under its own name.
func TestAccProvider_budgetValidated(t *testing.T) {
	s := newTestSandbox(t)
	accTest(t, nil, []resource.TestStep{{
		Config:      s.providerConfig("  max_total_price_per_hour = 0.001") + fleetOf1,
		ExpectError: errorPattern("Invalid budget", "max_total_price_per_hour is 0.001; expected US dollars per hour from 0.01 to 1000000"),
	}, {
		Config:      s.providerConfig("  max_total_price_per_hour = 2.0000001") + fleetOf1,
		ExpectError: errorPattern("max_total_price_per_hour is 2.0000001, which has more than six digits"),
	}})
}

const fleetOf1 = `
resource "hydra_gpu_instance" "one" {
  name     = "budget-one"
  gpu_type = "h100"
}
`
