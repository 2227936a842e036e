package provider

import (
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
)

// offer_details keeps what a buyer weighs and leaves out what repeats the plan or only the cloud needs.
func TestShownDetails(t *testing.T) {
	o := controlplane.Offer{Region: "US-KS-2", InstanceType: "H100_80GB.SXM5.1x", CloudGPU: "H100_80GB", Details: map[string]string{
		"cloud_id": "abc", "auction_fid": "auc_1", "region": "US-KS-2", "gpu_type": "H100_80GB", "provider": "hyperstack",
		"security": "secure_cloud", "disk_price_per_hour": "0.0001", "empty": "",
	}}
	got := controlplane.ShownDetails(o)
	want := map[string]string{"provider": "hyperstack", "security": "secure_cloud", "disk_price_per_hour": "0.0001"}
	if len(got) != len(want) {
		t.Fatalf("ShownDetails = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("ShownDetails[%q] = %q, want %q", k, got[k], v)
		}
	}
}
