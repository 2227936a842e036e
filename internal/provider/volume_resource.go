package provider

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/hydragpu/terraform-provider-hydra/internal/clouds"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
)

// The resource maps hydra_volume's schema to the control plane's volume spec and record, one
// control-plane call per Terraform operation: PlanVolume (plan), CreateVolume, RefreshVolume or
// ImportVolume (read), DeleteVolume.

var _ hydraResource = (*volumeResource)(nil)

// defaultVolumeTimeout bounds a volume's create and delete.
const defaultVolumeTimeout = 10 * time.Minute

// NewVolumeResource is the hydra_volume resource.
func NewVolumeResource() resource.Resource {
	return &volumeResource{resourceBase{base{typeName: "volume"}}}
}

type volumeResource struct{ resourceBase }

// volumeWalkName is a volume's name in the walk (its id), apart from machines and clusters.
func volumeWalkName(id string) string { return "volume:" + id }

// ValidateConfig counts the volume's id in the walk, so that two volumes of one id fail at plan.
func (r *volumeResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m volumeModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if r.data == nil || resp.Diagnostics.HasError() || m.Name.IsUnknown() || m.Cloud.IsUnknown() || m.Region.IsUnknown() {
		return
	}
	r.data.walk.validated(volumeWalkName(controlplane.VolumeID(m.Cloud.ValueString(), m.Region.ValueString(), m.Name.ValueString())))
}

func (r *volumeResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if r.data == nil || req.Plan.Raw.IsNull() || r.data.command == commandDestroys {
		return // not configured yet; a destroy; or a destroy's refresh, whose plan is thrown away
	}
	ctx, done := operation(ctx)
	defer done()
	plan, ok := get[volumeModel](ctx, req.Plan, &resp.Diagnostics)
	if !ok {
		return
	}
	spec, known := plan.spec()
	if !req.State.Raw.IsNull() {
		// A volume is kept, or replaced: Terraform then plans the new volume as a create (no state),
		// which checks it. Here only the warning that the data goes with the old one.
		if state, ok := get[volumeModel](ctx, req.State, &resp.Diagnostics); ok {
			warnReplaced(&resp.Diagnostics, state, plan)
		}
		return
	}
	if !plan.Name.IsUnknown() && !plan.Cloud.IsUnknown() && !plan.Region.IsUnknown() {
		plan.ID = types.StringValue(controlplane.VolumeID(spec.Cloud, spec.Region, spec.Name))
		if r.data.walk.sharedName(volumeWalkName(plan.ID.ValueString())) {
			resp.Diagnostics.AddAttributeError(path.Root("name"), "Two volumes share one id",
				fmt.Sprintf("More than one hydra_volume in this configuration is named %q in %s/%s: they would be one volume at the "+
					"cloud, and destroying either would delete the other's data. Give each its own name (with count or for_each, "+
					"include count.index or each.key in it).", spec.Name, spec.Cloud, spec.Region))
			return
		}
	}
	if !known {
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
		return // checked once the inputs are known
	}
	if err := r.data.cp.PlanVolume(ctx, spec); err != nil {
		addVolumePlanError(&resp.Diagnostics, spec, err)
		return
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// warnReplaced warns when the plan replaces the volume (an attribute that requires replacement
// changes): its data is deleted with it.
func warnReplaced(diags *diag.Diagnostics, state, plan volumeModel) {
	if resized(state.SizeGB, plan.SizeGB) {
		diags.AddAttributeWarning(path.Root("size_gb"), fmt.Sprintf("Volume %s will be replaced, not resized", state.ID.ValueString()),
			fmt.Sprintf("size_gb changes from %d to %s: hydra does not resize volumes, so this apply deletes the volume with its data "+
				"(or fails, deleting nothing, while a machine uses it) and creates an empty one. To keep the data, set size_gb back "+
				"to %d, or create another hydra_volume and copy the data across; lifecycle { prevent_destroy = true } guards a volume "+
				"against any replacement.", state.SizeGB.ValueInt64(), plan.SizeGB.String(), state.SizeGB.ValueInt64()))
		return
	}
	var changed []string
	for _, a := range []struct {
		name        string
		state, plan types.String
	}{{"name", state.Name, plan.Name}, {"type", state.Type, plan.Type}, {"cloud", state.Cloud, plan.Cloud}, {"region", state.Region, plan.Region}} {
		if !a.plan.IsUnknown() && !a.state.Equal(a.plan) {
			changed = append(changed, a.name)
		}
	}
	if len(changed) == 0 {
		return
	}
	diags.AddWarning(fmt.Sprintf("Volume %s will be replaced", state.ID.ValueString()),
		fmt.Sprintf("%s changes: a volume never moves or changes, so this apply deletes the volume with its data (or fails, "+
			"deleting nothing, while a machine uses it) and creates an empty one. To keep the data, change it back, or create "+
			"another hydra_volume and copy the data across; lifecycle { prevent_destroy = true } guards a volume against any "+
			"replacement.", strings.Join(changed, ", ")))
}

// resized reports whether a volume's size changes (a size the state does not hold, as an import from
// a cloud that states none leaves it, is only recorded: see replaceIfSized).
func resized(state, plan types.Int64) bool {
	return !state.IsNull() && !plan.IsUnknown() && !state.Equal(plan)
}

// addVolumePlanError reports PlanVolume's refusal on the attribute it concerns.
func addVolumePlanError(diags *diag.Diagnostics, spec controlplane.VolumeSpec, err error) {
	var re *controlplane.RequestError
	var uc *controlplane.UnconfiguredError
	summary := fmt.Sprintf("No %s volumes for hydra_volume %s", spec.Type, spec.Name)
	switch {
	case errors.As(err, &uc):
		detail := fmt.Sprintf("cloud is %q, which this provider configuration does not set up.", uc.Cloud)
		if d := clouds.ByName(uc.Cloud); d != nil {
			detail += fmt.Sprintf(" To keep volumes at %s, %s.", d.Title, d.HowToConfigure())
		}
		detail += fmt.Sprintf(" Configured now: %s.", quoteAll(uc.Configured))
		diags.AddAttributeError(path.Root("cloud"), "Cloud not configured", detail)
	case errors.As(err, &re) && (re.Field == "size_gb" || re.Field == "name"):
		diags.AddAttributeError(path.Root(re.Field), fmt.Sprintf("Invalid hydra_volume %s", spec.Name), re.Msg)
	case errors.As(err, &re):
		field := re.Field
		if !slices.Contains([]string{"type", "cloud", "region"}, field) {
			field = "type"
		}
		diags.AddAttributeError(path.Root(field), summary, re.Msg+
			"\n\ndata \"hydra_gpu_offer\" with volume_type lists the clouds and regions that have a volume type.")
	default:
		// The cloud could not say which volumes it has (the plan cannot check the volume now).
		diags.AddError(fmt.Sprintf("Cannot check hydra_volume %s", spec.Name), err.Error())
	}
}

func (r *volumeResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	plan, ok := get[volumeModel](ctx, req.Plan, &resp.Diagnostics)
	if !ok {
		return
	}
	ctx, end := start(ctx, plan.Timeouts.Create, defaultVolumeTimeout, &resp.Diagnostics)
	defer end()
	summary := fmt.Sprintf("creating volume (%s)", plan.Name.ValueString())
	spec, _ := plan.spec()
	rec, err := r.data.cp.CreateVolume(ctx, spec)
	if err != nil {
		resp.Diagnostics.AddError(summary, timedOut(ctx, err, "create", plan.Timeouts.Create, defaultVolumeTimeout).Error())
		return
	}
	m := plan
	m.setRecord(rec, &resp.Diagnostics)
	// The size stays as configured, and the id as planned when the plan knew it (Terraform forbids an
	// apply to change a known planned value): a record that says otherwise is logged.
	m.SizeGB = sizeKept(plan.SizeGB, rec.SizeGB)
	if !plan.ID.IsUnknown() {
		m.ID = plan.ID
		if rec.ID != plan.ID.ValueString() {
			tflog.Warn(hydraLog(), "volume created under another id than planned", map[string]any{"planned": plan.ID.ValueString(), "record": rec.ID})
		}
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
	tflog.Info(hydraLog(), "volume created", map[string]any{"id": rec.ID, "cloud_volume_id": rec.CloudVolumeID})
}

// sizeKept is the size the state keeps after a create: the configured one (Terraform forbids an
// apply to change a planned value); a cloud that states another is logged.
func sizeKept(planned types.Int64, stated int) types.Int64 {
	if stated > 0 && !planned.IsNull() && planned.ValueInt64() != int64(stated) {
		tflog.Warn(hydraLog(), "the cloud states another volume size than configured", map[string]any{"configured": planned.ValueInt64(), "stated": stated})
	}
	return planned
}

func (r *volumeResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	ctx, done := operation(ctx)
	defer done()
	m, ok := get[volumeModel](ctx, req.State, &resp.Diagnostics)
	if !ok {
		return
	}
	id := m.ID.ValueString()
	if m.CloudVolumeID.IsNull() {
		// Import (ImportState put `<cloud>/<cloud volume id>` in id): everything the cloud tells.
		rec, ok := importedRecord(ctx, volumeImportID, id, r.data.cp.ImportVolume, &resp.Diagnostics)
		if !ok {
			return
		}
		m.SizeGB = types.Int64Null()
		m.setRecord(rec, &resp.Diagnostics)
		m.Timeouts = nullCreateDeleteTimeouts()
		resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
		return
	}
	rec := m.record(ctx, &resp.Diagnostics)
	found, err := r.data.cp.RefreshVolume(ctx, &rec)
	if !keptAfterRefresh(ctx, resp, found, err, "volume", m.Name.ValueString(), id, "creates it again (empty)") {
		return
	}
	m.setRecord(rec, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// Update only saves what changes without an action at the cloud (timeouts): every other input replaces
// the volume.
func (r *volumeResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	plan, ok := get[volumeModel](ctx, req.Plan, &resp.Diagnostics)
	if !ok {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *volumeResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	state, ok := get[volumeModel](ctx, req.State, &resp.Diagnostics)
	if !ok {
		return
	}
	ctx, end := start(ctx, state.Timeouts.Delete, defaultVolumeTimeout, &resp.Diagnostics)
	defer end()
	rec := state.record(ctx, &resp.Diagnostics)
	if err := r.data.cp.DeleteVolume(ctx, rec); err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("deleting volume (%s)", state.Name.ValueString()),
			timedOut(ctx, err, "delete", state.Timeouts.Delete, defaultVolumeTimeout).Error())
	}
}

// ImportState takes `<cloud>/<cloud volume id>`; Read imports it.
func (r *volumeResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	volumeImportID.importState(ctx, req, resp)
}

var volumeImportID = cloudImportID{
	thing:     "volume",
	own:       "cloud volume id",
	slashHint: " (hydra_volume's id, <cloud>/<region>/<name>, is not what import takes)",
	accepted: "a volume is imported as <cloud>/<cloud volume id>: the cloud's name and the cloud's own id of the volume " +
		"(hydra_volume's cloud_volume_id), for example `terraform import hydra_volume.data " + clouds.Names()[0] + "/<volume id>`",
}
