package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// interruptionTypes are the attributes of `interruption`.
var interruptionTypes = map[string]attr.Type{"notice_at": types.StringType, "ends_at": types.StringType, "reason": types.StringType}

// interruptionSchema is the computed `interruption` attribute.
func interruptionSchema() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		MarkdownDescription: "The cloud's interruption of this spot machine, as the last refresh read it; null when there is none " +
			"(a notice the cloud took back clears it). `notice_at`: when the cloud gave notice (RFC 3339, UTC), or when hydra first " +
			"saw it where the cloud does not say; `ends_at`: when the cloud stops the machine, null where the cloud does not say; " +
			"`reason`: the cloud's word and what it means. See the Spot capacity guide.",
		Computed:      true,
		PlanModifiers: []planmodifier.Object{objectplanmodifier.UseStateForUnknown()},
		Attributes: map[string]schema.Attribute{
			"notice_at": schema.StringAttribute{Computed: true, MarkdownDescription: "When the cloud gave notice (RFC 3339, UTC)."},
			"ends_at":   schema.StringAttribute{Computed: true, MarkdownDescription: "When the cloud stops the machine (RFC 3339, UTC); null where it does not say."},
			"reason":    schema.StringAttribute{Computed: true, MarkdownDescription: "The cloud's word for the interruption and what it means."},
		},
	}
}

// replaceWhenPreemptedSchema is the `replace_when_preempted` attribute.
func replaceWhenPreemptedSchema() schema.BoolAttribute {
	return schema.BoolAttribute{
		MarkdownDescription: "Replace a machine its cloud interrupted or gave notice of interrupting (see `interruption`): the plan " +
			"replaces it under the same name and says why. Default `true`. `false`: the plan shows the interruption and changes " +
			"nothing (`terraform apply -replace` it yourself).",
		Optional: true,
		Computed: true,
		Default:  booldefault.StaticBool(true),
	}
}

// interruptionValue is the attribute's value for an interruption (null for none).
func interruptionValue(it *cloudprovider.Interruption) types.Object {
	if it == nil {
		return types.ObjectNull(interruptionTypes)
	}
	return types.ObjectValueMust(interruptionTypes, map[string]attr.Value{
		"notice_at": timeOrNull(it.NoticeAt), "ends_at": timeOrNull(it.EndsAt), "reason": stringOrNull(it.Reason),
	})
}

// interruptionOf reads the attribute back (nil when null or unknown).
func interruptionOf(v types.Object) *cloudprovider.Interruption {
	if v.IsNull() || v.IsUnknown() {
		return nil
	}
	a := v.Attributes()
	str := func(k string) types.String {
		s, _ := a[k].(types.String)
		return s
	}
	return &cloudprovider.Interruption{NoticeAt: timeOf(str("notice_at")), EndsAt: timeOf(str("ends_at")), Reason: str("reason").ValueString()}
}
