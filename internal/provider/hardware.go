package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func intOrNull(v int) types.Int64 {
	if v <= 0 {
		return types.Int64Null()
	}
	return types.Int64Value(int64(v))
}

// replaceIfFormFactorDiffers replaces a machine whose GPUs have another form factor than the one now
// required. A machine whose form factor is unknown is kept (nothing says it differs).
func replaceIfFormFactorDiffers(ctx context.Context, req planmodifier.StringRequest, resp *stringplanmodifier.RequiresReplaceIfFuncResponse) {
	if req.State.Raw.IsNull() || req.PlanValue.IsNull() || req.PlanValue.IsUnknown() {
		return
	}
	var has types.String
	resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root("gpu_form_factor"), &has)...)
	resp.RequiresReplace = !has.IsNull() && !has.IsUnknown() && has.ValueString() != req.PlanValue.ValueString()
}

// defaultBidTimeout is how long apply waits for an auction bid to win when bid_timeout is not set.
const defaultBidTimeout = 15 * time.Minute

// bidTimeout reads bid_timeout (validated already).
func bidTimeout(v types.String) time.Duration {
	if v.IsNull() || v.IsUnknown() {
		return defaultBidTimeout
	}
	d, err := time.ParseDuration(v.ValueString())
	if err != nil || d <= 0 {
		return defaultBidTimeout
	}
	return d
}

// durationBetween accepts Go durations from min to max.
func durationBetween(minD, maxD time.Duration) validator.String { return boundedDuration{minD, maxD} }

type boundedDuration struct{ min, max time.Duration }

func (v boundedDuration) Description(context.Context) string {
	return fmt.Sprintf("a duration such as \"10m\" or \"90s\", from %s to %s", v.min, v.max)
}

func (v boundedDuration) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v boundedDuration) ValidateString(ctx context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	d, err := time.ParseDuration(req.ConfigValue.ValueString())
	if err != nil || d < v.min || d > v.max {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid duration",
			fmt.Sprintf("%s is %q; expected %s.", req.Path, req.ConfigValue.ValueString(), v.Description(ctx)))
	}
}
