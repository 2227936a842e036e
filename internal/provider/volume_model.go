package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
)

// volumeModel is hydra_volume's schema as Go values.
type volumeModel struct {
	ID            types.String   `tfsdk:"id"`
	Name          types.String   `tfsdk:"name"`
	Type          types.String   `tfsdk:"type"`
	SizeGB        types.Int64    `tfsdk:"size_gb"`
	Cloud         types.String   `tfsdk:"cloud"`
	Region        types.String   `tfsdk:"region"`
	CloudVolumeID types.String   `tfsdk:"cloud_volume_id"`
	CloudName     types.String   `tfsdk:"cloud_name"`
	AttachedTo    types.List     `tfsdk:"attached_to"`
	PricePerMonth types.Float64  `tfsdk:"price_usd_per_month"`
	Timeouts      timeouts.Value `tfsdk:"timeouts"`
}

// spec is the control plane's request for the volume; known is false while an input is unknown.
func (m *volumeModel) spec() (spec controlplane.VolumeSpec, known bool) {
	spec = controlplane.VolumeSpec{Name: m.Name.ValueString(), Type: cloudprovider.VolumeType(m.Type.ValueString()),
		SizeGB: int(m.SizeGB.ValueInt64()), Cloud: m.Cloud.ValueString(), Region: m.Region.ValueString()}
	known = !m.Name.IsUnknown() && !m.Type.IsUnknown() && !m.SizeGB.IsUnknown() && !m.Cloud.IsUnknown() && !m.Region.IsUnknown()
	return spec, known
}

// record is the control plane's record of the volume, read from the model (null and unknown read as
// none).
func (m *volumeModel) record(ctx context.Context, diags *diag.Diagnostics) controlplane.VolumeRecord {
	rec := controlplane.VolumeRecord{ID: m.ID.ValueString(), CloudVolumeID: m.CloudVolumeID.ValueString(), CloudName: m.CloudName.ValueString(),
		Name: m.Name.ValueString(), Cloud: m.Cloud.ValueString(), Region: m.Region.ValueString(),
		Type: cloudprovider.VolumeType(m.Type.ValueString()), SizeGB: int(m.SizeGB.ValueInt64()), PricePerMonth: usdOf(m.PricePerMonth)}
	if !m.AttachedTo.IsNull() && !m.AttachedTo.IsUnknown() {
		diags.Append(m.AttachedTo.ElementsAs(ctx, &rec.AttachedTo, false)...)
	}
	return rec
}

// setRecord writes the control plane's record into the model. A size the cloud does not state (0)
// keeps the configured one; a price it does not state is null.
func (m *volumeModel) setRecord(rec controlplane.VolumeRecord, diags *diag.Diagnostics) {
	m.ID, m.CloudVolumeID, m.CloudName = types.StringValue(rec.ID), stringOrNull(rec.CloudVolumeID), stringOrNull(rec.CloudName)
	if rec.Name != "" {
		m.Name = types.StringValue(rec.Name)
	}
	if rec.Cloud != "" {
		m.Cloud, m.Region = types.StringValue(rec.Cloud), types.StringValue(rec.Region)
	}
	if rec.Type != "" {
		m.Type = types.StringValue(string(rec.Type))
	}
	if rec.SizeGB > 0 {
		m.SizeGB = types.Int64Value(int64(rec.SizeGB))
	}
	m.PricePerMonth = types.Float64Null()
	if rec.PricePerMonth > 0 {
		m.PricePerMonth = usdValue(rec.PricePerMonth)
	}
	m.AttachedTo = machineNames(rec.AttachedTo, diags)
}

// machineNames is a list of machine names (an empty list for none).
func machineNames(names []string, diags *diag.Diagnostics) types.List {
	elems := make([]attr.Value, 0, len(names))
	for _, n := range names {
		elems = append(elems, types.StringValue(n))
	}
	list, d := types.ListValue(types.StringType, elems)
	diags.Append(d...)
	return list
}

// nullCreateDeleteTimeouts is an unset timeouts block of create and delete, as an import leaves it.
func nullCreateDeleteTimeouts() timeouts.Value {
	return timeouts.Value{Object: types.ObjectNull(map[string]attr.Type{"create": types.StringType, "delete": types.StringType})}
}
