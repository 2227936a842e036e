package sandbox

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
)

func newBackend(t *testing.T, dir string, boot time.Duration) *Backend {
	t.Helper()
	inv, err := inventory.Default()
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(Config{Dir: dir, BootTime: boot, DeleteTime: time.Millisecond}, inv, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func offerFor(t *testing.T, b *Backend, gpuType string, count int) controlplane.Offer {
	t.Helper()
	offers, err := b.Offers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range offers {
		if o.GPUType == gpuType && o.GPUCount == count && !o.Spot && o.Region == "sbx-eu-1" {
			return o
		}
	}
	t.Fatalf("no %dx %s offer", count, gpuType)
	return controlplane.Offer{}
}

func TestLifecycleSharedAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	// Two handles on one directory stand for two provider processes (plan, then apply).
	a, b := newBackend(t, dir, 50*time.Millisecond), newBackend(t, dir, 50*time.Millisecond)
	o := offerFor(t, a, "h100", 1)
	if o.PricePerHour != 2.49 || o.InstanceType != "sbx.h100.1x" {
		t.Fatalf("default catalog changed: %+v", o)
	}
	inst, err := a.Create(ctx, controlplane.CreateRequest{Name: "sbx-vm-x", Offer: o})
	if err != nil || inst.Status != controlplane.StatusPending {
		t.Fatalf("Create = %+v, %v", inst, err)
	}
	if _, err := b.Create(ctx, controlplane.CreateRequest{Name: "sbx-vm-x", Offer: o}); err == nil {
		t.Fatal("a second instance with the same name was created")
	}
	time.Sleep(80 * time.Millisecond)
	got, err := b.Get(ctx, inst.ID)
	if err != nil || got.Status != controlplane.StatusRunning || got.SSH == nil {
		t.Fatalf("after boot: %+v, %v", got, err)
	}
	list, err := b.List(ctx, "sbx-vm-")
	if err != nil || len(list) != 1 || list[0].Name != "sbx-vm-x" {
		t.Fatalf("List = %+v, %v", list, err)
	}
	if err := b.Delete(ctx, inst.ID); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	if got, err := a.Get(ctx, inst.ID); err != nil || got.Status != controlplane.StatusTerminated {
		t.Fatalf("after delete: %+v, %v", got, err)
	}
	if err := a.Delete(ctx, inst.ID); !controlplane.IsNotFound(err) {
		t.Fatalf("second delete = %v, want not found", err)
	}
	if n, _ := a.CreatedCount(); n != 1 {
		t.Fatalf("created %d", n)
	}
	if st, _ := a.Stats(); st.OfferRequests != 1 {
		t.Fatalf("offer requests = %d, want 1", st.OfferRequests)
	}
}

func TestFaults(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		faults Faults
		check  func(t *testing.T, b *Backend, o controlplane.Offer)
	}{
		{"out of stock at create", Faults{OutOfStock: []string{"sbx-eu-1/sbx.l4.1x"}}, func(t *testing.T, b *Backend, o controlplane.Offer) {
			if _, err := b.Create(ctx, controlplane.CreateRequest{Name: "sbx-vm-a", Offer: o}); !controlplane.IsCapacity(err) {
				t.Fatalf("want a capacity error, got %v", err)
			}
		}},
		{"api errors are used up", Faults{APIErrors: 1}, func(t *testing.T, b *Backend, _ controlplane.Offer) {
			if _, err := b.List(ctx, ""); err == nil || !strings.Contains(err.Error(), "injected API error") {
				t.Fatalf("first call: %v", err)
			}
			if _, err := b.List(ctx, ""); err != nil {
				t.Fatalf("second call: %v", err)
			}
		}},
		{"boot failure", Faults{FailBoot: true, BootTime: "1ms"}, func(t *testing.T, b *Backend, o controlplane.Offer) {
			inst, err := b.Create(ctx, controlplane.CreateRequest{Name: "sbx-vm-a", Offer: o})
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(5 * time.Millisecond)
			got, _ := b.Get(ctx, inst.ID)
			if got.Status != controlplane.StatusError || got.Message == "" {
				t.Fatalf("want error status with a message, got %+v", got)
			}
		}},
		{"lost create response still creates", Faults{LoseCreateResponses: 1}, func(t *testing.T, b *Backend, o controlplane.Offer) {
			if _, err := b.Create(ctx, controlplane.CreateRequest{Name: "sbx-vm-a", Offer: o}); controlplane.KindOf(err) != controlplane.ErrOther {
				t.Fatalf("want an unclassified error, got %v", err)
			}
			if live, _ := b.Live(); len(live) != 1 {
				t.Fatalf("the machine must exist: %+v", live)
			}
		}},
		{"slow offers respect the context", Faults{OffersDelay: "1m"}, func(t *testing.T, b *Backend, _ controlplane.Offer) {
			c, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
			defer cancel()
			if _, err := b.Offers(c); err == nil {
				t.Fatal("Offers ignored the context")
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBackend(t, t.TempDir(), time.Second)
			o := offerFor(t, b, "l4", 1)
			if err := b.SetFaults(tc.faults); err != nil {
				t.Fatal(err)
			}
			tc.check(t, b, o)
		})
	}
}

func TestCatalogEdits(t *testing.T) {
	b := newBackend(t, t.TempDir(), time.Second)
	c, err := b.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	for i := range c {
		if c[i].GPU == "L4" && c[i].GPUCount == 1 && !c[i].Spot && c[i].Region == "sbx-eu-1" {
			c[i].PricePerHour, c[i].Available = 0.11, 1
		}
	}
	if err := b.SetCatalog(c); err != nil {
		t.Fatal(err)
	}
	o := offerFor(t, b, "l4", 1)
	if o.PricePerHour != 0.11 {
		t.Fatalf("price %v", o.PricePerHour)
	}
	ctx := context.Background()
	if _, err := b.Create(ctx, controlplane.CreateRequest{Name: "sbx-vm-a", Offer: o}); err != nil {
		t.Fatal(err)
	}
	// The last unit was taken.
	if _, err := b.Create(ctx, controlplane.CreateRequest{Name: "sbx-vm-b", Offer: o}); !controlplane.IsCapacity(err) {
		t.Fatalf("want capacity error, got %v", err)
	}
	if _, err := b.Create(ctx, controlplane.CreateRequest{Name: "sbx-vm-c", Offer: o, MaxPricePerHour: 0.05}); err == nil {
		t.Fatal("created above the max price")
	}
}
