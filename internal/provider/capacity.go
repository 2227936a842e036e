package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
)

// defaultCapacityMemory is capacity_memory's default. Karpenter forgets a failed offering after 3
// minutes because it retries within seconds, all day; a Terraform pipeline retries a run minutes to
// an hour apart, and GPU capacity that a cloud lists but cannot deliver rarely returns within
// minutes, so 3 minutes would have expired by the next run. 30 minutes covers a retried pipeline
// while a later scheduled run tries the offer again.
const defaultCapacityMemory = 30 * time.Minute

// capacityKey is the private-state key of a failed create's CapacityMisses.
const capacityKey = "capacity_misses"

// capacityMemorySchema is the provider's capacity_memory.
func capacityMemorySchema() schema.StringAttribute {
	return schema.StringAttribute{
		MarkdownDescription: "How long an offer whose create failed for lack of capacity (the cloud answered \"no capacity\", " +
			"or a bid could not win within `bid_timeout`) is skipped by the following plans of that resource, as a Go " +
			"duration; `\"0\"` turns the memory off. The plan warns which offers it skipped, why and until when. The memory is " +
			"kept in the Terraform state, where every run reads it (a CI runner that keeps nothing else has it): the failed " +
			"create leaves the resource in state with `status = \"error\"`, no cloud machine and nothing billed (tainted, so the " +
			"next plan replaces it; destroying it deletes nothing). The plan reads it while refreshing that resource, so " +
			"`-refresh=false` plans do not see it, and only that resource's plan is sure to skip the offer: other resources " +
			"of the configuration skip it only when Terraform plans them after that refresh (no order is promised). Default `\"30m\"` (Karpenter's 3 minutes suit a " +
			"controller retrying every few seconds; pipelines retry minutes to an hour apart).",
		Optional:   true,
		Validators: []validator.String{capacityMemoryValidator},
	}
}

// capacityRecord says whether the state is a failed create's capacity record: no cloud machine.
func capacityRecord(m *gpuInstanceModel) bool {
	return !m.CloudInstanceID.IsNull() && m.CloudInstanceID.ValueString() == "" && m.Status.ValueString() == string(cloudprovider.StatusError)
}

// privateGetter and privateSetter are the framework's private state, as requests and responses carry it.
type privateGetter interface {
	GetKey(ctx context.Context, key string) ([]byte, diag.Diagnostics)
}

type privateSetter interface {
	SetKey(ctx context.Context, key string, value []byte) diag.Diagnostics
}

// rememberCapacity hands the control plane the misses a failed create recorded in this resource's
// private state.
func (d *providerData) rememberCapacity(ctx context.Context, priv privateGetter) {
	if priv == nil {
		return
	}
	raw, _ := priv.GetKey(ctx, capacityKey)
	if len(raw) == 0 {
		return
	}
	var misses []controlplane.CapacityMiss
	if err := json.Unmarshal(raw, &misses); err != nil {
		return
	}
	d.cp.RememberCapacity(misses)
}

// saveCapacityMisses ends a create that failed for lack of capacity: the resource is saved with
// status "error" and no cloud machine or cluster (its cloud id attribute idAttr empty; Terraform
// taints it: the next plan replaces it, destroy deletes nothing), with the misses in its private state
// for the next plans. Nothing is billed. thing is "machine" or "cluster".
func saveCapacityMisses(ctx context.Context, plan tfsdk.Plan, state *tfsdk.State, priv privateSetter, rec controlplane.CapacityRecord, idAttr, thing string, diags *diag.Diagnostics) {
	raw, err := tftypes.Transform(plan.Raw, func(_ *tftypes.AttributePath, v tftypes.Value) (tftypes.Value, error) {
		if !v.IsKnown() {
			return tftypes.NewValue(v.Type(), nil), nil
		}
		return v, nil
	})
	if err != nil {
		return
	}
	state.Raw = raw
	marks := map[string]string{"id": "", idAttr: "", "status": string(cloudprovider.StatusError)}
	if thing == machineSubject.thing {
		marks["cloud_status"] = "no capacity"
	}
	for attr, v := range marks {
		diags.Append(state.SetAttribute(ctx, path.Root(attr), types.StringValue(v))...)
	}
	b, err := json.Marshal(rec.Misses)
	if err == nil {
		diags.Append(priv.SetKey(ctx, capacityKey, b)...)
	}
	var offers []string
	for _, m := range rec.Misses {
		offers = append(offers, m.OfferID)
	}
	diags.AddWarning("Offers without capacity remembered",
		fmt.Sprintf("No %[5]s was created and nothing is billed. The resource is kept in state with status \"error\" and no cloud "+
			"%[5]s, recording %[1]s, so that the next plans skip %s until %s (the provider's capacity_memory, %s) and choose "+
			"another offer. The next apply replaces it; destroying it deletes nothing.",
			strings.Join(offers, ", "), map[bool]string{true: "it", false: "them"}[len(offers) == 1], rec.Until.UTC().Format(time.RFC3339), rec.Memory, thing))
}

// capacityMemoryValidator accepts "0" (memory off) or a positive Go duration.
var capacityMemoryValidator = problemCheck{
	description: "must be \"0\" (off) or a Go duration such as \"30m\" or \"2h\"",
	summary:     "Invalid duration",
	problem: func(v string) string {
		if d, err := time.ParseDuration(v); err != nil || d < 0 {
			return fmt.Sprintf("%q is not \"0\" or a positive Go duration; use \"0\" to turn the memory off, or a number with a unit, "+
				"such as \"3m\", \"30m\" or \"2h\".", v)
		}
		return ""
	},
}
