package sandbox

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// TestInjectedErrorsAreRetriedLikeACloud: one injected server error no longer fails a read (a refresh
// goes on), a persistent one still does once restclient's retries have run out; every call is retried,
// and a rate limit is waited out.
func TestInjectedErrorsAreRetriedLikeACloud(t *testing.T) {
	ctx := context.Background()
	calls := []struct {
		name string
		call func(b *Backend, id string, o cloudprovider.Offer) error
	}{
		{"Get", func(b *Backend, id string, _ cloudprovider.Offer) error { _, err := b.Get(ctx, id); return err }},
		{"List", func(b *Backend, _ string, _ cloudprovider.Offer) error { _, err := b.List(ctx, "sbx-"); return err }},
		{"Offers", func(b *Backend, _ string, _ cloudprovider.Offer) error { _, err := b.Offers(ctx); return err }},
		{"ConfirmOwnership", func(b *Backend, id string, _ cloudprovider.Offer) error { return b.ConfirmOwnership(ctx, id) }},
		{"Delete", func(b *Backend, id string, _ cloudprovider.Offer) error { return b.Delete(ctx, id) }},
		{"Create", func(b *Backend, _ string, o cloudprovider.Offer) error {
			_, err := b.Create(ctx, cloudprovider.CreateRequest{Name: "sbx-vm-new", Offer: o})
			return err
		}},
	}
	faults := []struct {
		name      string
		faults    simulation.Faults
		wantErr   string // "" : the call succeeds
		wantFault simulation.Faults
	}{
		{"one server error", simulation.Faults{ServerErrors: 1}, "", simulation.Faults{}},
		{"a persistent server error", simulation.Faults{ServerErrors: 100},
			fmt.Sprintf("injected API error (HTTP 503), %d attempts", attempts), simulation.Faults{ServerErrors: 100 - attempts}},
		{"two rate limits", simulation.Faults{RateLimited: 2, RetryAfterSeconds: 1}, "", simulation.Faults{RetryAfterSeconds: 1}},
		{"a persistent rate limit", simulation.Faults{RateLimited: 100, RetryAfterSeconds: 1},
			fmt.Sprintf("injected rate limit (HTTP 429), %d attempts", attempts), simulation.Faults{RateLimited: 100 - attempts, RetryAfterSeconds: 1}},
	}
	for _, c := range calls {
		for _, f := range faults {
			t.Run(c.name+"/"+f.name, func(t *testing.T) {
				t.Parallel()
				b := newBackend(t, t.TempDir(), time.Hour)
				o := offerFor(t, b, "l4", 1)
				inst, err := b.Create(ctx, cloudprovider.CreateRequest{Name: "sbx-vm-a", Offer: o})
				if err != nil {
					t.Fatal(err)
				}
				if err := b.SetFaults(f.faults); err != nil {
					t.Fatal(err)
				}
				err = c.call(b, inst.ID, o)
				switch {
				case f.wantErr == "" && err != nil:
					t.Fatalf("%s through %s: %v", c.name, f.name, err)
				case f.wantErr != "" && (cloudprovider.KindOf(err) != cloudprovider.ErrOther || err == nil || !strings.Contains(err.Error(), f.wantErr)):
					t.Fatalf("%s through %s: %v, want an unclassified error %q", c.name, f.name, err, f.wantErr)
				}
				if left, _ := b.Faults(); left != f.wantFault {
					t.Errorf("faults left %+v, want %+v", left, f.wantFault)
				}
			})
		}
	}
}

// TestRetriesUseRestclientsDefaults: without Config.Tuning a retry waits restclient's first backoff
// (its default RetryWaitMin, give or take a quarter).
func TestRetriesUseRestclientsDefaults(t *testing.T) {
	b := newBackendWith(t, Config{Dir: t.TempDir(), BootTime: time.Hour})
	if err := b.SetFaults(simulation.Faults{ServerErrors: 1}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := b.List(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	lo, hi := restclient.DefaultRetryWaitMin*3/4, restclient.DefaultRetryWaitMin*5/4+time.Second
	if took := time.Since(start); took < lo || took > hi {
		t.Fatalf("one retry took %v, want about %v", took, restclient.DefaultRetryWaitMin)
	}
}

// TestUnmappedGPUsAreOffered: a catalog GPU the inventory does not map is offered with GPUType "" and
// its catalog name as CloudGPU; mapped offers carry their catalog name too.
func TestUnmappedGPUsAreOffered(t *testing.T) {
	b := newBackend(t, t.TempDir(), time.Second)
	c, err := b.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	c = append(c,
		CatalogEntry{Region: "sbx-eu-1", InstanceType: "sbx.mi300x.1x", GPU: "MI300X", GPUCount: 1, PricePerHour: 2.5, Available: -1},
		CatalogEntry{Region: "sbx-eu-1", InstanceType: "sbx.cpu", GPU: "", GPUCount: 0, PricePerHour: 0.1, Available: -1},
		CatalogEntry{Region: "sbx-eu-1", InstanceType: "sbx.h100.16x", GPU: "H100", GPUCount: 16, PricePerHour: 40, Available: -1})
	if err := b.SetCatalog(c); err != nil {
		t.Fatal(err)
	}
	offers, err := b.Offers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	unmapped := 0
	for _, o := range offers {
		switch {
		case o.CloudGPU == "":
			t.Errorf("offer %s without CloudGPU", o.InstanceType)
		case o.InstanceType == "sbx.cpu", o.InstanceType == "sbx.h100.16x":
			t.Errorf("offer %s should be left out", o.InstanceType)
		case o.GPUType == "":
			unmapped++
			if o.CloudGPU != "MI300X" || o.InstanceType != "sbx.mi300x.1x" || o.GPUCount != 1 || o.PricePerHour <= 0 {
				t.Errorf("unmapped offer %+v", o)
			}
		case o.InstanceType == "sbx.h100.1x" && o.CloudGPU != "H100":
			t.Errorf("mapped offer %s carries CloudGPU %q", o.InstanceType, o.CloudGPU)
		}
	}
	if unmapped != 1 {
		t.Fatalf("%d unmapped offers, want the MI300X once", unmapped)
	}
}
