package provider

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

var _ resource.ResourceWithUpgradeState = (*gpuInstanceResource)(nil)

// renamedInV1 are the attributes version 1 of the schema renamed, old name to new.
var renamedInV1 = map[string]string{
	"price_per_hour":           "price_usd_per_hour",
	"estimated_price_per_hour": "estimated_price_usd_per_hour",
}

// UpgradeState moves state written by earlier versions to the current schema. Version 0 states (any
// set of attributes: the schema grew without a version bump before) are read as raw JSON, so that no
// attribute an earlier build wrote can fail the upgrade; the prices are renamed, and the estimate is
// kept only where allow_fallback chose the offer at apply (otherwise it repeated the price).
func (r *gpuInstanceResource) UpgradeState(context.Context) map[int64]resource.StateUpgrader {
	return map[int64]resource.StateUpgrader{
		0: {StateUpgrader: upgradeFromV0},
	}
}

func upgradeFromV0(ctx context.Context, req resource.UpgradeStateRequest, resp *resource.UpgradeStateResponse) {
	if req.RawState == nil {
		resp.Diagnostics.AddError("Upgrading hydra_gpu_instance state", "no state to upgrade")
		return
	}
	out, err := upgradeV0JSON(req.RawState.JSON)
	if err != nil {
		resp.Diagnostics.AddError("Upgrading hydra_gpu_instance state", fmt.Sprintf("reading version 0 state: %v", err))
		return
	}
	resp.DynamicValue = &tfprotov6.DynamicValue{JSON: out}
}

// upgradeV0JSON renames version 0's attributes in a state's JSON.
func upgradeV0JSON(in []byte) ([]byte, error) {
	var attrs map[string]json.RawMessage
	if err := json.Unmarshal(in, &attrs); err != nil {
		return nil, err
	}
	for old, now := range renamedInV1 {
		if v, ok := attrs[old]; ok {
			if _, exists := attrs[now]; !exists {
				attrs[now] = v
			}
			delete(attrs, old)
		}
	}
	if _, ok := attrs["replace_when_unhealthy"]; !ok {
		attrs["replace_when_unhealthy"] = json.RawMessage("false")
	}
	var fallback bool
	_ = json.Unmarshal(attrs["allow_fallback"], &fallback)
	if !fallback {
		attrs["estimated_price_usd_per_hour"] = json.RawMessage("null")
	}
	return json.Marshal(attrs)
}
