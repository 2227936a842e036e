package provider

import (
	"cmp"
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
)

// gpuClusterModel is hydra_gpu_cluster's schema as Go values.
type gpuClusterModel struct {
	resourceModel
	Nodes          types.Int64   `tfsdk:"nodes"`
	Interconnect   types.String  `tfsdk:"interconnect"`
	NCCLCheck      types.Object  `tfsdk:"nccl_check"`
	CloudClusterID types.String  `tfsdk:"cloud_cluster_id"`
	Node           types.List    `tfsdk:"node"`
	Hostfile       types.String  `tfsdk:"hostfile"`
	NCCLEnv        types.Map     `tfsdk:"nccl_env"`
	BusBandwidth   types.Float64 `tfsdk:"nccl_bus_bandwidth_gbps"`
}

// spec is the control plane's request for the cluster; ok is false while inputs are unknown. keys
// are the provider's own SSH keys, installed before the configuration's.
func (m *gpuClusterModel) spec(ctx context.Context, keys []string) (controlplane.ClusterSpec, bool, diag.Diagnostics) {
	req, ok, diags := (&offerRequestModel{shapeModel: m.shapeModel, FormFactor: types.StringNull()}).request(ctx)
	vars, varsKnown, d := m.vars(ctx)
	diags.Append(d...)
	installed, d := m.installedKeys(ctx, keys)
	diags.Append(d...)
	spec := clusterSpecOf(req, m.Name.ValueString(), m.Nodes, m.Interconnect)
	spec.SSHPublicKeys, spec.ProvisioningVars = installed, vars
	spec.MinBusBandwidthGBps, spec.BidTimeout = minBusBandwidth(m.NCCLCheck), bidTimeout(m.BidTimeout)
	volumes, volumesKnown := controlPlaneVolumes(m.Volumes)
	spec.Volumes = volumes
	known := ok && varsKnown && volumesKnown && !m.Name.IsUnknown() && !m.Nodes.IsUnknown() && !m.Interconnect.IsUnknown() && !m.NCCLCheck.IsUnknown()
	return spec, known, diags
}

// clusterSpecOf is the cluster request of a machine request for each node, with nodes and
// interconnect (fabric when null). spot as for a machine: false asks on-demand only, true lets spot
// compete.
func clusterSpecOf(req controlplane.OfferRequest, name string, nodes types.Int64, interconnect types.String) controlplane.ClusterSpec {
	spec := controlplane.ClusterSpec{
		Name: name, GPUType: req.GPUType, Kind: req.Kind, GPUCount: req.GPUCount, Nodes: int(nodes.ValueInt64()),
		Clouds: req.Clouds, Regions: req.Regions, MaxPricePerHour: req.MaxPricePerHour,
		Interconnect: cloudprovider.Interconnect(interconnect.ValueString()),
	}
	if spec.Interconnect == "" {
		spec.Interconnect = cloudprovider.InterconnectFabric
	}
	if !req.AllowSpot {
		spec.Spot = new(bool)
	}
	return spec
}

// minBusBandwidth reads nccl_check's floor (0: no NCCL check).
func minBusBandwidth(v types.Object) float64 {
	if v.IsNull() || v.IsUnknown() {
		return 0
	}
	f, ok := v.Attributes()["min_bus_bandwidth_gbps"].(types.Float64)
	if !ok {
		return 0
	}
	return f.ValueFloat64()
}

// setPlan shows the plan's choice.
func (m *gpuClusterModel) setPlan(ctx context.Context, p controlplane.ClusterPlan, diags *diag.Diagnostics) {
	m.Cloud, m.Pool, m.Region = types.StringValue(p.Cloud), types.StringValue(p.Pool), types.StringValue(p.Region)
	m.OfferID, m.PricePerHour = types.StringValue(p.OfferID), usdValue(p.PricePerHour)
	m.OtherClouds = stringMap(ctx, p.OtherClouds, diags)
}

// record is the control plane's record of the cluster, read from the model (null and unknown read
// as none).
func (m *gpuClusterModel) record(ctx context.Context, diags *diag.Diagnostics) controlplane.ClusterRecord {
	rec := controlplane.ClusterRecord{
		ID: m.ID.ValueString(), Name: m.Name.ValueString(), CloudClusterID: m.CloudClusterID.ValueString(),
		Cloud: m.Cloud.ValueString(), Pool: m.Pool.ValueString(), Region: m.Region.ValueString(), OfferID: m.OfferID.ValueString(),
		Status: m.Status.ValueString(), ProvisioningDigest: m.ProvisioningDigest.ValueString(),
		PricePerHour: usdOf(m.PricePerHour), Hostfile: m.Hostfile.ValueString(), BusBandwidthGBps: m.BusBandwidth.ValueFloat64(),
		GPUType: m.GPUType.ValueString(), GPUCount: int(m.GPUCount.ValueInt64()), Interconnect: cloudprovider.Interconnect(m.Interconnect.ValueString()),
		ProvisioningError: m.ProvisioningError.ValueString(), Interruption: interruptionOf(m.Interruption),
	}
	if !m.NCCLEnv.IsNull() && !m.NCCLEnv.IsUnknown() {
		diags.Append(m.NCCLEnv.ElementsAs(ctx, &rec.NCCLEnv, false)...)
	}
	if !m.Node.IsNull() && !m.Node.IsUnknown() {
		for _, e := range m.Node.Elements() {
			o, ok := e.(types.Object)
			if !ok {
				continue
			}
			a := o.Attributes()
			s := func(k string) string { v, _ := a[k].(types.String); return v.ValueString() }
			port, _ := a["ssh_port"].(types.Int64)
			n := controlplane.ClusterNodeRecord{ID: s("id"), Name: s("name"), SSHHost: s("ssh_host"),
				SSHUser: s("ssh_user"), PrivateIP: s("private_ip"), HostKey: s("host_key"), Status: s("status"), Health: s("health"),
				SSHPort: int(port.ValueInt64())}
			if it, ok := a["interruption"].(types.Object); ok {
				n.Interruption = interruptionOf(it)
			}
			if s("ssh_jump_host") != "" {
				jumpPort, _ := a["ssh_jump_port"].(types.Int64)
				n.SSHJump = &cloudprovider.SSHEndpoint{Host: s("ssh_jump_host"), Port: int(jumpPort.ValueInt64()), User: s("ssh_jump_user"),
					HostKey: s("ssh_jump_host_key")}
			}
			rec.Nodes = append(rec.Nodes, n)
		}
	}
	return rec
}

// setRecord writes the control plane's record of the cluster into the model (none as null). A price
// the plan knows stays (Terraform forbids an apply to change a known planned value) unless keepPrice
// is false.
func (m *gpuClusterModel) setRecord(ctx context.Context, rec controlplane.ClusterRecord, keepPrice bool, diags *diag.Diagnostics) {
	m.ID, m.CloudClusterID = types.StringValue(rec.ID), stringOrNull(rec.CloudClusterID)
	m.Status, m.ProvisioningDigest = types.StringValue(rec.Status), stringOrNull(rec.ProvisioningDigest)
	m.ProvisioningError = stringOrNull(rec.ProvisioningError)
	if rec.Cloud != "" {
		m.Cloud, m.Pool, m.Region, m.OfferID = types.StringValue(rec.Cloud), types.StringValue(rec.Pool), types.StringValue(rec.Region), stringOrNull(rec.OfferID)
	}
	if rec.PricePerHour > 0 && (!keepPrice || m.PricePerHour.IsNull() || m.PricePerHour.IsUnknown()) {
		m.PricePerHour = usdValue(rec.PricePerHour)
	}
	m.Hostfile, m.NCCLEnv = types.StringValue(rec.Hostfile), stringMap(ctx, rec.NCCLEnv, diags)
	m.BusBandwidth = types.Float64Null()
	if rec.BusBandwidthGBps > 0 {
		m.BusBandwidth = types.Float64Value(rec.BusBandwidthGBps)
	}
	elems := make([]attr.Value, 0, len(rec.Nodes))
	for _, n := range rec.Nodes {
		jump := &cloudprovider.SSHEndpoint{}
		if n.SSHJump != nil {
			jump = n.SSHJump
		}
		obj, d := types.ObjectValue(clusterNodeAttrTypes, map[string]attr.Value{
			"id": stringOrNull(n.ID), "name": stringOrNull(n.Name), "ssh_host": stringOrNull(n.SSHHost), "ssh_port": portOrNull(n.SSHPort),
			"ssh_user": stringOrNull(n.SSHUser), "private_ip": stringOrNull(n.PrivateIP), "host_key": stringOrNull(n.HostKey),
			"status": stringOrNull(n.Status), "health": stringOrNull(n.Health),
			"ssh_jump_host": stringOrNull(jump.Host), "ssh_jump_port": portOrNull(jump.Port), "ssh_jump_user": stringOrNull(jump.User),
			"ssh_jump_host_key": stringOrNull(jump.HostKey), "interruption": interruptionValue(n.Interruption),
		})
		diags.Append(d...)
		elems = append(elems, obj)
	}
	list, d := types.ListValue(types.ObjectType{AttrTypes: clusterNodeAttrTypes}, elems)
	diags.Append(d...)
	m.Node = list
	m.Interruption = interruptionValue(rec.Interruption)
	if m.ReplaceWhenPreempted.IsNull() || m.ReplaceWhenPreempted.IsUnknown() {
		m.ReplaceWhenPreempted = types.BoolValue(true) // a state from before the attribute: its default
	}
}

// setImported fills every attribute an imported cluster can tell (the request as the record shows
// it; what the cloud cannot say keeps its default).
func (m *gpuClusterModel) setImported(ctx context.Context, rec controlplane.ClusterRecord, diags *diag.Diagnostics) {
	m.Name, m.Nodes = types.StringValue(rec.Name), types.Int64Value(int64(len(rec.Nodes)))
	if parsed, err := controlplane.ParseOfferID(rec.OfferID); err == nil {
		m.Spot = types.BoolValue(parsed.Spot)
	}
	m.OtherClouds, m.ReplaceWhenUnhealthy = types.MapNull(types.StringType), types.BoolValue(false)
	m.GPUType, m.GPUCount = types.StringValue(rec.GPUType), types.Int64Value(int64(rec.GPUCount))
	// Where the record does not say, the default: PlanClusterChange still replaces a cluster it finds
	// without the fabric asked for.
	m.Interconnect = types.StringValue(string(cmp.Or(rec.Interconnect, cloudprovider.InterconnectFabric)))
	m.Timeouts = nullTimeouts()
	m.setRecord(ctx, rec, false, diags)
}

// portOrNull is a port, or null for none (0).
func portOrNull(port int) types.Int64 {
	if port <= 0 {
		return types.Int64Null()
	}
	return types.Int64Value(int64(port))
}
