package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
)

// capacityMemorySchema is the provider's capacity_memory.
func capacityMemorySchema() schema.StringAttribute {
	return schema.StringAttribute{
		MarkdownDescription: "How long an offer whose create failed for lack of capacity is skipped by the following plans, " +
			"as a Go duration (`\"30m\"`); `\"0\"` turns the memory off. Default `\"30m\"`.",
		Optional:   true,
		Validators: []validator.String{durationValidator{}},
	}
}
