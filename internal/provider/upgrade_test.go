package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// A version 0 state (as the previous release wrote it) upgrades to the current schema: the prices are
// renamed, the estimate that repeated the price is dropped, and nothing else changes.
func TestUpgradeStateFromV0(t *testing.T) {
	ctx := context.Background()
	var sresp resource.SchemaResponse
	(&gpuInstanceResource{}).Schema(ctx, resource.SchemaRequest{}, &sresp)
	typ := sresp.Schema.Type().TerraformType(ctx)
	for _, tc := range []struct {
		name, v0     string
		wantEstimate any
	}{
		{"pinned", `{"id":"sbx-vm-a--k3j9x2ab","name":"a","gpu_type":"h100","allow_fallback":false,"price_per_hour":2.49,"estimated_price_per_hour":2.49,"status":"ready"}`, nil},
		{"fallback", `{"id":"sbx-vm-b--k3j9x2ab","name":"b","gpu_type":"h100","allow_fallback":true,"price_per_hour":1.05,"estimated_price_per_hour":0.99,"status":"ready"}`, 0.99},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := upgradeV0JSON([]byte(tc.v0))
			if err != nil {
				t.Fatal(err)
			}
			v, err := tftypes.ValueFromJSONWithOpts(out, typ, tftypes.ValueFromJSONOpts{})
			if err != nil {
				t.Fatalf("the upgraded state does not fit the schema: %v\n%s", err, out)
			}
			var attrs map[string]tftypes.Value
			if err := v.As(&attrs); err != nil {
				t.Fatal(err)
			}
			if _, ok := attrs["price_per_hour"]; ok {
				t.Error("the old attribute survived")
			}
			got := attrs["price_usd_per_hour"]
			if got.IsNull() {
				t.Fatalf("price_usd_per_hour is null after the upgrade: %s", out)
			}
			est := attrs["estimated_price_usd_per_hour"]
			if (tc.wantEstimate == nil) != est.IsNull() {
				t.Errorf("estimated_price_usd_per_hour = %v, want %v", est, tc.wantEstimate)
			}
			var status string
			if err := attrs["status"].As(&status); err != nil || status != "ready" {
				t.Errorf("status = %q, %v", status, err)
			}
		})
	}
}
