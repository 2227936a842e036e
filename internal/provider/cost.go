package provider

import (
	"time"

	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/clouds"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// costTotals adds up hydra_gpu_instances' cost figures.
type costTotals struct{ perHour, accrued money.USD }

// add counts one listed machine and returns its accrued_usd (null when its price or creation time is
// not known).
func (c *costTotals) add(mc controlplane.Machine, now time.Time) types.Float64 {
	inst := mc.Instance
	if inst.Status == cloudprovider.StatusTerminated {
		return types.Float64Value(0)
	}
	c.perHour += inst.PricePerHour
	if inst.PricePerHour <= 0 || inst.CreatedAt.IsZero() {
		return types.Float64Null()
	}
	a := mc.Facts.Accrued(inst.PricePerHour, inst.CreatedAt, now)
	c.accrued += a
	return usdValue(a)
}

func accruedSchema() schema.Float64Attribute {
	return schema.Float64Attribute{MarkdownDescription: "What the machine has cost so far, in US dollars (null when the cloud " +
		"reports no price or creation time). Hours since `created_at` times the billed price, rounded up to the " +
		"cloud's documented billing granularity: " + clouds.BillingMarkdown() + " An estimate from the listed price: the cloud's " +
		"invoice (taxes, storage, credits, start-up time a cloud does not bill) is the record.", Computed: true}
}

func totalPerHourSchema() schema.Float64Attribute {
	return schema.Float64Attribute{MarkdownDescription: "What the listed machines cost together, in US dollars per hour " +
		"(the sum of their `price_usd_per_hour`). Compare it with a budget in a `check` block (a warning in every plan and " +
		"apply) or a `lifecycle { postcondition }` of this data source (an error that stops the run).", Computed: true}
}

func totalAccruedSchema() schema.Float64Attribute {
	return schema.Float64Attribute{MarkdownDescription: "What the listed machines have cost so far together, in US dollars " +
		"(the sum of their `accrued_usd`).", Computed: true}
}
