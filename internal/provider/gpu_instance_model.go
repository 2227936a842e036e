package provider

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
)

// gpuInstanceModel is hydra_gpu_instance's schema as Go values.
type gpuInstanceModel struct {
	resourceModel
	FormFactor              types.String  `tfsdk:"form_factor"`
	AllowFallback           types.Bool    `tfsdk:"allow_fallback"`
	Health                  types.String  `tfsdk:"health"`
	HealthCheckedAt         types.String  `tfsdk:"health_checked_at"`
	HealthReason            types.String  `tfsdk:"health_reason"`
	MaxProvisioningAttempts types.Int64   `tfsdk:"max_provisioning_attempts"`
	CloudInstanceID         types.String  `tfsdk:"cloud_instance_id"`
	InstanceType            types.String  `tfsdk:"instance_type"`
	EstimatedPricePerHour   types.Float64 `tfsdk:"estimated_price_usd_per_hour"`
	IsSpot                  types.Bool    `tfsdk:"is_spot"`
	hardwareModel
	OfferDetails         types.Map    `tfsdk:"offer_details"`
	CloudStatus          types.String `tfsdk:"cloud_status"`
	ReadyAt              types.String `tfsdk:"ready_at"`
	CreatedAt            types.String `tfsdk:"created_at"`
	ProvisioningAttempts types.Int64  `tfsdk:"provisioning_attempts"`
	HostKey              types.String `tfsdk:"host_key"`
	SSHHost              types.String `tfsdk:"ssh_host"`
	SSHPort              types.Int64  `tfsdk:"ssh_port"`
	SSHUser              types.String `tfsdk:"ssh_user"`
}

// resourceModel is what hydra_gpu_instance's and hydra_gpu_cluster's models share: requestAttributes
// as Go values, and the id, offer, price, status, volumes, replacement policy, interruption,
// provisioning error and timeouts both have.
type resourceModel struct {
	ID   types.String `tfsdk:"id"`
	Name types.String `tfsdk:"name"`
	shapeModel
	BidTimeout           types.String   `tfsdk:"bid_timeout"`
	ReplaceWhenUnhealthy types.Bool     `tfsdk:"replace_when_unhealthy"`
	ReplaceWhenPreempted types.Bool     `tfsdk:"replace_when_preempted"`
	Volumes              types.List     `tfsdk:"volumes"`
	Interruption         types.Object   `tfsdk:"interruption"`
	ProvisioningError    types.String   `tfsdk:"provisioning_error"`
	DrainTimeout         types.String   `tfsdk:"drain_timeout"`
	SSHPublicKeys        types.List     `tfsdk:"ssh_public_keys"`
	ProvisioningVars     types.Dynamic  `tfsdk:"provisioning_vars"`
	Cloud                types.String   `tfsdk:"cloud"`
	Pool                 types.String   `tfsdk:"pool"`
	Region               types.String   `tfsdk:"region"`
	OtherClouds          types.Map      `tfsdk:"other_clouds"`
	ProvisioningDigest   types.String   `tfsdk:"provisioning_digest"`
	OfferID              types.String   `tfsdk:"offer_id"`
	PricePerHour         types.Float64  `tfsdk:"price_usd_per_hour"`
	Status               types.String   `tfsdk:"status"`
	Timeouts             timeouts.Value `tfsdk:"timeouts"`
}

// vars collects the variables handed to the playbook (provisioningVars).
func (m *resourceModel) vars(ctx context.Context) (map[string]any, bool, diag.Diagnostics) {
	return provisioningVars(ctx, m.ProvisioningVars, m.SSHPublicKeys)
}

// installedKeys are the SSH keys the machine or cluster is created with: the provider's own (keys)
// first, then ssh_public_keys.
func (m *resourceModel) installedKeys(ctx context.Context, keys []string) ([]string, diag.Diagnostics) {
	own, _, diags := stringsOf(ctx, m.SSHPublicKeys)
	return append(append([]string{}, keys...), own...), diags
}

// record is the control plane's record of the machine, read from the model (null and unknown read
// as none).
func (m *gpuInstanceModel) record() controlplane.Record {
	rec := controlplane.Record{
		Name: m.ID.ValueString(), ID: m.CloudInstanceID.ValueString(),
		Status: cloudprovider.Status(m.Status.ValueString()), CloudStatus: m.CloudStatus.ValueString(),
		HostKey: m.HostKey.ValueString(), ReadyAt: timeOf(m.ReadyAt), CreatedAt: timeOf(m.CreatedAt),
		ProvisioningAttempts: int(m.ProvisioningAttempts.ValueInt64()), ProvisioningError: m.ProvisioningError.ValueString(),
		ProvisioningDigest: m.ProvisioningDigest.ValueString(),
		Health:             controlplane.Health{Status: m.Health.ValueString(), CheckedAt: timeOf(m.HealthCheckedAt), Reason: m.HealthReason.ValueString()},
		PricePerHour:       usdOf(m.PricePerHour),
		Interruption:       interruptionOf(m.Interruption),
	}
	if !m.SSHHost.IsNull() && !m.SSHHost.IsUnknown() {
		rec.SSH = &cloudprovider.SSHEndpoint{Host: m.SSHHost.ValueString(), Port: int(m.SSHPort.ValueInt64()), User: m.SSHUser.ValueString()}
	}
	return rec
}

// setRecord writes the control plane's record of the machine into the model (none as null).
func (m *gpuInstanceModel) setRecord(rec controlplane.Record) {
	m.ID, m.CloudInstanceID = types.StringValue(rec.Name), types.StringValue(rec.ID)
	m.Status, m.CloudStatus = types.StringValue(string(rec.Status)), types.StringValue(rec.CloudStatus)
	m.HostKey, m.ReadyAt, m.CreatedAt = stringOrNull(rec.HostKey), timeOrNull(rec.ReadyAt), timeOrNull(rec.CreatedAt)
	m.ProvisioningAttempts = types.Int64Value(int64(rec.ProvisioningAttempts))
	m.ProvisioningError, m.ProvisioningDigest = stringOrNull(rec.ProvisioningError), stringOrNull(rec.ProvisioningDigest)
	m.Health, m.HealthCheckedAt, m.HealthReason = stringOrNull(rec.Health.Status), timeOrNull(rec.Health.CheckedAt), stringOrNull(rec.Health.Reason)
	if rec.PricePerHour > 0 {
		m.PricePerHour = usdValue(rec.PricePerHour) // what the cloud bills
	}
	m.Interruption = interruptionValue(rec.Interruption)
	if m.ReplaceWhenPreempted.IsNull() {
		m.ReplaceWhenPreempted = types.BoolValue(true) // a state from before the attribute: its default
	}
	m.SSHHost, m.SSHPort, m.SSHUser = types.StringNull(), types.Int64Null(), types.StringNull()
	if rec.SSH != nil {
		m.SSHHost, m.SSHPort, m.SSHUser = types.StringValue(rec.SSH.Host), types.Int64Value(int64(rec.SSH.Port)), types.StringValue(rec.SSH.User)
	}
}

// setImported fills every attribute an imported machine can tell.
func (m *gpuInstanceModel) setImported(imp controlplane.Imported) {
	inst := imp.Instance
	m.Name, m.GPUType, m.GPUCount = types.StringValue(imp.Resource), types.StringValue(inst.GPUType), types.Int64Value(int64(inst.GPUCount))
	m.Kind, m.Spot, m.IsSpot = types.StringValue(imp.Pool.Kind), types.BoolValue(inst.Spot), types.BoolValue(inst.Spot)
	m.AllowFallback, m.ReplaceWhenUnhealthy, m.ReplaceWhenPreempted = types.BoolValue(false), types.BoolValue(false), types.BoolValue(true)
	m.OfferID, m.Cloud, m.Pool = types.StringValue(imp.OfferID), types.StringValue(imp.Pool.Cloud), types.StringValue(imp.Pool.Name)
	m.Region, m.InstanceType = types.StringValue(inst.Region), types.StringValue(inst.InstanceType)
	m.PricePerHour, m.EstimatedPricePerHour = usdValue(inst.PricePerHour), types.Float64Null()
	m.setHardware(inst.Hardware)
	m.OtherClouds, m.OfferDetails = types.MapNull(types.StringType), types.MapNull(types.StringType)
	m.Timeouts = nullTimeouts()
	m.setRecord(imp.Record)
}

// setOfferFields shows the offer an ID names, with its pool's cloud.
func setOfferFields(m *gpuInstanceModel, cloud string, p controlplane.ParsedOfferID) {
	m.Cloud, m.Pool, m.Region = types.StringValue(cloud), types.StringValue(p.Pool), types.StringValue(p.Region)
	m.InstanceType, m.PricePerHour, m.IsSpot = types.StringValue(p.InstanceType), usdValue(p.PricePerHour), types.BoolValue(p.Spot)
}

// offerRequest is the request with what the resource adds: its volumes, and whether the machine would
// be created without any SSH key (no ssh_public_keys and provisioning off), which some clouds refuse.
func (r *gpuInstanceResource) offerRequest(ctx context.Context, m *gpuInstanceModel) (controlplane.OfferRequest, bool, diag.Diagnostics) {
	req, ok, diags := (&offerRequestModel{shapeModel: m.shapeModel, FormFactor: m.FormFactor}).request(ctx)
	volumes, volumesKnown := controlPlaneVolumes(m.Volumes)
	req.Volumes, ok = volumes, ok && volumesKnown
	if m.SSHPublicKeys.IsUnknown() {
		return req, false, diags
	}
	keys, _, d := stringsOf(ctx, m.SSHPublicKeys)
	diags.Append(d...)
	req.WithoutSSHKey = len(keys) == 0 && len(r.data.sshPublicKeys) == 0
	return req, ok, diags
}

// offerRequestModel is the request attributes hydra_gpu_instance and hydra_gpu_offer share.
type offerRequestModel struct {
	shapeModel
	FormFactor types.String `tfsdk:"form_factor"`
}

// shapeModel is what every request names: the GPUs, the kind, the market, where and at what price.
type shapeModel struct {
	GPUType         types.String  `tfsdk:"gpu_type"`
	GPUCount        types.Int64   `tfsdk:"gpu_count"`
	Kind            types.String  `tfsdk:"kind"`
	Spot            types.Bool    `tfsdk:"spot"`
	Clouds          types.Set     `tfsdk:"clouds"`
	Regions         types.Set     `tfsdk:"regions"`
	MaxPricePerHour types.Float64 `tfsdk:"max_price_per_hour"`
}

// hardwareModel is what a cloud says of a machine, as hydra_gpu_instance and hydra_gpu_offer show it.
type hardwareModel struct {
	GPUFormFactor types.String `tfsdk:"gpu_form_factor"`
	GPUMemoryGB   types.Int64  `tfsdk:"gpu_memory_gb"`
	VCPUs         types.Int64  `tfsdk:"vcpus"`
	MemoryGB      types.Int64  `tfsdk:"memory_gb"`
}

// setHardware shows what a cloud said of a machine; what it did not say is null.
func (m *hardwareModel) setHardware(h cloudprovider.Hardware) {
	m.GPUFormFactor = stringOrNull(h.FormFactor)
	m.GPUMemoryGB = intOrNull(h.GPUMemoryGB)
	m.VCPUs = intOrNull(h.VCPUs)
	m.MemoryGB = intOrNull(h.MemoryGB)
}

// request builds the control plane's request (gpu_count 1 and kind vm when null); ok is false while
// inputs are unknown.
func (m *offerRequestModel) request(ctx context.Context) (controlplane.OfferRequest, bool, diag.Diagnostics) {
	var diags diag.Diagnostics
	for _, v := range []attr.Value{m.GPUType, m.GPUCount, m.Kind, m.Spot, m.Clouds, m.Regions, m.MaxPricePerHour, m.FormFactor} {
		if v.IsUnknown() {
			return controlplane.OfferRequest{}, false, diags
		}
	}
	clouds, ok1, d1 := stringsOf(ctx, m.Clouds)
	regions, ok2, d2 := stringsOf(ctx, m.Regions)
	diags.Append(d1...)
	diags.Append(d2...)
	sort.Strings(clouds)
	sort.Strings(regions)
	req := controlplane.OfferRequest{
		GPUType: m.GPUType.ValueString(), GPUCount: 1, Kind: inventory.KindVM,
		AllowSpot: m.Spot.ValueBool(), Clouds: clouds, Regions: regions, MaxPricePerHour: capOf(m.MaxPricePerHour),
		FormFactor: m.FormFactor.ValueString(),
	}
	if !m.GPUCount.IsNull() {
		req.GPUCount = int(m.GPUCount.ValueInt64())
	}
	if !m.Kind.IsNull() {
		req.Kind = m.Kind.ValueString()
	}
	return req, ok1 && ok2, diags
}

// provisioningVars collects the variables handed to the playbook from provisioning_vars (given) and
// ssh_public_keys (keys); ok is false while any is unknown.
func provisioningVars(ctx context.Context, given types.Dynamic, keys types.List) (map[string]any, bool, diag.Diagnostics) {
	var diags diag.Diagnostics
	vars := map[string]any{}
	if !given.IsNull() {
		v, ok, err := dynamicToGo(given)
		if err != nil {
			diags.AddAttributeError(path.Root("provisioning_vars"), "Invalid provisioning_vars", err.Error())
			return nil, false, diags
		}
		if !ok {
			return nil, false, diags
		}
		if v != nil {
			mv, isMap := v.(map[string]any)
			if !isMap {
				diags.AddAttributeError(path.Root("provisioning_vars"), "Invalid provisioning_vars",
					fmt.Sprintf("provisioning_vars must be a map or object of variable names to values, got %T", v))
				return nil, false, diags
			}
			for k, val := range mv {
				vars[k] = val
			}
		}
	}
	lines, ok, d := stringsOf(ctx, keys)
	diags.Append(d...)
	if !ok {
		return nil, false, diags
	}
	if lines == nil {
		lines = []string{}
	}
	vars["customer_ssh_keys"] = lines
	return vars, true, diags
}

// stringMap converts a Go map into a known map value (empty, never null).
func stringMap(ctx context.Context, m map[string]string, diags *diag.Diagnostics) types.Map {
	if m == nil {
		m = map[string]string{}
	}
	v, d := types.MapValueFrom(ctx, types.StringType, m)
	diags.Append(d...)
	return v
}

func stringOrNull(s string) types.String {
	if s == "" {
		return types.StringNull()
	}
	return types.StringValue(s)
}

// timeOrNull is a time as RFC 3339 in UTC, null for the zero time.
func timeOrNull(t time.Time) types.String {
	if t.IsZero() {
		return types.StringNull()
	}
	return types.StringValue(t.UTC().Format(time.RFC3339))
}

// timeOf reads an RFC 3339 time attribute (the zero time when null, unknown or unreadable).
func timeOf(v types.String) time.Time {
	t, err := time.Parse(time.RFC3339, v.ValueString())
	if err != nil {
		return time.Time{}
	}
	return t
}
