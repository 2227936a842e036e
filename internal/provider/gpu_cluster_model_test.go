package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

func TestClusterSpecOf(t *testing.T) {
	for _, tc := range []struct {
		name         string
		allowSpot    bool
		interconnect types.String
		wantSpot     *bool
		wantIC       cloudprovider.Interconnect
	}{
		{"on-demand only, fabric by default", false, types.StringNull(), new(false), cloudprovider.InterconnectFabric},
		{"spot competes", true, types.StringValue("any"), nil, cloudprovider.InterconnectAny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := controlplane.OfferRequest{GPUType: "h100", GPUCount: 8, Kind: "vm", AllowSpot: tc.allowSpot, MaxPricePerHour: money.MustFromFloat(40)}
			spec := clusterSpecOf(req, "train", types.Int64Value(4), tc.interconnect)
			if spec.Name != "train" || spec.Nodes != 4 || spec.GPUCount != 8 || spec.MaxPricePerHour != req.MaxPricePerHour || spec.Interconnect != tc.wantIC ||
				(spec.Spot == nil) != (tc.wantSpot == nil) || (spec.Spot != nil && *spec.Spot != *tc.wantSpot) {
				t.Errorf("clusterSpecOf = %+v", spec)
			}
		})
	}
}

// A record written into the model and read back is the same record: what Read, Create and Update
// save is what the next plan hands the control plane.
func TestClusterRecordRoundTrip(t *testing.T) {
	ctx := context.Background()
	rec := controlplane.ClusterRecord{
		ID: "sbx-vm-train--k3j9x2ab", Name: "train", CloudClusterID: "sbxc-1", Cloud: "sandbox", Pool: "sandbox-vm-pool", Region: "sbx-eu-1",
		OfferID: "sandbox-vm-pool/sbx-eu-1/2xsbx.h100.1x/ondemand@4.98", Status: "ready", ProvisioningDigest: "d1",
		PricePerHour: money.MustFromFloat(4.98), Hostfile: "127.100.1.1 slots=1\n127.100.1.2 slots=1\n",
		NCCLEnv: map[string]string{"NCCL_IB_HCA": "mlx5"}, BusBandwidthGBps: 42.5,
		Nodes: []controlplane.ClusterNodeRecord{
			{ID: "n1", Name: "sbx-vm-train--k3j9x2ab-1", SSHHost: "127.0.0.1", SSHPort: 2201, SSHUser: "ubuntu", PrivateIP: "127.100.1.1", HostKey: "ssh-ed25519 A", Status: "ready", Health: "healthy"},
			{ID: "n2", Name: "sbx-vm-train--k3j9x2ab-2", SSHHost: "127.0.0.1", SSHPort: 2202, SSHUser: "ubuntu", PrivateIP: "127.100.1.2", Status: "provisioning"},
		},
	}
	var m gpuClusterModel
	m.Name = types.StringValue("train")
	var diags diag.Diagnostics
	m.setRecord(ctx, rec, false, &diags)
	got := m.record(ctx, &diags)
	if diags.HasError() {
		t.Fatal(diags)
	}
	if got.ID != rec.ID || got.CloudClusterID != rec.CloudClusterID || got.OfferID != rec.OfferID || got.PricePerHour != rec.PricePerHour ||
		got.Hostfile != rec.Hostfile || got.BusBandwidthGBps != rec.BusBandwidthGBps || got.NCCLEnv["NCCL_IB_HCA"] != "mlx5" ||
		len(got.Nodes) != 2 || got.Nodes[0] != rec.Nodes[0] || got.Nodes[1] != rec.Nodes[1] {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, rec)
	}
	// A node without a host key yet is null in state, not "".
	if hk := m.Node.Elements()[1].(types.Object).Attributes()["host_key"]; !hk.IsNull() {
		t.Errorf("node 2's host_key = %v, want null", hk)
	}
	// A planned price stays (Terraform forbids an apply to change it); the billed one comes with Read.
	m.PricePerHour = types.Float64Value(5.00)
	m.setRecord(ctx, rec, true, &diags)
	if m.PricePerHour.ValueFloat64() != 5.00 {
		t.Errorf("planned price replaced by %v", m.PricePerHour)
	}
}

func TestReplacedBecause(t *testing.T) {
	for why, want := range map[string]string{"health": "node", "": "status", "status": "status", "nodes": "nodes", "clouds": "clouds"} {
		if got := replacedBecause(why); got != want {
			t.Errorf("replacedBecause(%q) = %q, want %q", why, got, want)
		}
	}
}

func TestMinBusBandwidth(t *testing.T) {
	obj := func(f float64) types.Object {
		return types.ObjectValueMust(ncclCheckAttrTypes, map[string]attr.Value{"min_bus_bandwidth_gbps": types.Float64Value(f)})
	}
	for _, tc := range []struct {
		v    types.Object
		want float64
	}{{types.ObjectNull(ncclCheckAttrTypes), 0}, {types.ObjectUnknown(ncclCheckAttrTypes), 0}, {obj(150), 150}} {
		if got := minBusBandwidth(tc.v); got != tc.want {
			t.Errorf("minBusBandwidth(%v) = %v, want %v", tc.v, got, tc.want)
		}
	}
}
