package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// budgetSchema is the provider's max_total_price_per_hour.
func budgetSchema() schema.Float64Attribute {
	return schema.Float64Attribute{
		MarkdownDescription: "A budget for the whole configuration, in US dollars per hour: a plan whose GPU machines would " +
			"together cost more per hour fails at plan, before anything is created, naming the total, the budget and the " +
			"largest machines. The total counts every `hydra_gpu_instance` of this provider configuration that the plan " +
			"keeps (its billed `price_usd_per_hour` in state) or creates (its planned offer's price, or " +
			"`estimated_price_usd_per_hour` with `allow_fallback`), `count` and `for_each` instances included; a machine " +
			"being replaced counts once, at its new price. Instances whose price is not known at plan count nothing. " +
			"From 0.01 to 1000000 with at most six digits after the decimal point, like `max_price_per_hour`. Default: no budget.",
		Optional:   true,
		Validators: []validator.Float64{priceCap{summary: "Invalid budget", parse: controlplane.ParseBudget}},
	}
}

// budgetOf reads max_total_price_per_hour (0: no budget; values out of range were refused by the
// validator).
func budgetOf(v types.Float64) money.USD {
	if v.IsNull() || v.IsUnknown() {
		return 0
	}
	u, err := controlplane.ParseBudget(v.ValueFloat64())
	if err != nil {
		return 0
	}
	return u
}
