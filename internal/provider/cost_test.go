package provider

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	fwresource "github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
)

// After a short apply, hydra_gpu_instances shows each machine's created_at (the same as the
// resource's), its billed price and what it has cost since, and the totals; the accrued figures lie
// between the price times the time since the resource's created_at (at least one started second) and
// the price times the time since the test began. A check block over the budget warns, and does not
// fail the apply.
func TestAccGPUInstancesDataSource_cost(t *testing.T) {
	s := newTestSandbox(t)
	began := time.Now()
	machines := s.providerConfig("") + instanceResource("a", "cost-a", "h100", "") + instanceResource("b", "cost-b", "l40s", "")
	withData := machines + `
data "hydra_gpu_instances" "all" {
  depends_on = [hydra_gpu_instance.a, hydra_gpu_instance.b]
}
check "gpu_budget" {
  assert {
    condition     = data.hydra_gpu_instances.all.total_usd_per_hour <= 1
    error_message = "over budget: ${data.hydra_gpu_instances.all.total_usd_per_hour}"
  }
}
`
	figures := func(st *terraform.State) error {
		read := time.Now()
		ds := st.RootModule().Resources["data.hydra_gpu_instances.all"].Primary.Attributes
		created := map[string]string{}
		for _, r := range []string{"a", "b"} {
			a := st.RootModule().Resources["hydra_gpu_instance."+r].Primary.Attributes
			if a["created_at"] == "" {
				return fmt.Errorf("hydra_gpu_instance.%s has no created_at", r)
			}
			created[a["id"]] = a["created_at"]
		}
		n, _ := strconv.Atoi(ds["instances.#"])
		if n != 2 {
			return fmt.Errorf("instances.# = %d, want 2", n)
		}
		var sumPrice, sumAccrued float64
		for i := 0; i < n; i++ {
			k := fmt.Sprintf("instances.%d.", i)
			id := ds[k+"id"]
			if ds[k+"created_at"] != created[id] {
				return fmt.Errorf("%s: data source created_at %q, resource %q", id, ds[k+"created_at"], created[id])
			}
			if _, err := time.Parse(time.RFC3339, created[id]); err != nil {
				return err
			}
			price, _ := strconv.ParseFloat(ds[k+"price_usd_per_hour"], 64)
			accrued, err := strconv.ParseFloat(ds[k+"accrued_usd"], 64)
			if err != nil {
				return fmt.Errorf("%s: accrued_usd %q", id, ds[k+"accrued_usd"])
			}
			// Created before the read: at least one started second is billed, and at most the time
			// since the test began (plus the second created_at's rounding may add).
			lo := price * time.Second.Hours()
			hi := price*(read.Sub(began).Hours()+time.Second.Hours()) + 1e-6
			if accrued < lo-1e-6 || accrued > hi {
				return fmt.Errorf("%s: accrued_usd %v not within [%v, %v] at $%v/h", id, accrued, lo, hi, price)
			}
			sumPrice += price
			sumAccrued += accrued
		}
		total, _ := strconv.ParseFloat(ds["total_usd_per_hour"], 64)
		if fmt.Sprintf("%.6f", total) != fmt.Sprintf("%.6f", sumPrice) || fmt.Sprintf("%.6f", total) != "3.480000" {
			return fmt.Errorf("total_usd_per_hour %v, want %v (2.49 + 0.99)", total, sumPrice)
		}
		ta, _ := strconv.ParseFloat(ds["total_accrued_usd"], 64)
		if fmt.Sprintf("%.6f", ta) != fmt.Sprintf("%.6f", sumAccrued) {
			return fmt.Errorf("total_accrued_usd %v, want the sum %v", ta, sumAccrued)
		}
		return nil
	}
	accTest(t, s.checkDestroyed, []resource.TestStep{
		{Config: machines},
		{Config: withData, Check: figures},
	})
}

// created_at was added to schema version 1 without a version bump: a version 1 state written before
// it reads under the current schema, created_at null (the next refresh fills it from the cloud).
func TestCreatedAtNeedsNoStateUpgrade(t *testing.T) {
	ctx := context.Background()
	var sresp fwresource.SchemaResponse
	(&gpuInstanceResource{}).Schema(ctx, fwresource.SchemaRequest{}, &sresp)
	if sresp.Schema.Version != 1 {
		t.Fatalf("schema version %d: check whether created_at now needs an upgrader", sresp.Schema.Version)
	}
	v1 := `{"id":"sbx-vm-a--k3j9x2ab","name":"a","gpu_type":"h100","price_usd_per_hour":2.49,"status":"ready","ready_at":"2026-12-01T10:00:00Z"}`
	v, err := tftypes.ValueFromJSONWithOpts([]byte(v1), sresp.Schema.Type().TerraformType(ctx), tftypes.ValueFromJSONOpts{})
	if err != nil {
		t.Fatalf("a version 1 state without created_at does not read: %v", err)
	}
	var attrs map[string]tftypes.Value
	if err := v.As(&attrs); err != nil {
		t.Fatal(err)
	}
	if c, ok := attrs["created_at"]; !ok || !c.IsNull() {
		t.Errorf("created_at = %v (present %v), want null", c, ok)
	}
}
