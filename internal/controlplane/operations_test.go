package controlplane

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// Create is a whole create in one call: it launches at the price the cloud asks (never above the
// plan's), records the billed price, says when the quote is spent, and leaves a capacity record when
// nothing could be created; Delete deletes, and deletes nothing for a record without a machine.
func TestCreateAndDelete(t *testing.T) {
	ctx := context.Background()
	newCP := func(t *testing.T, createErr ...error) (*ControlPlane, *fakeBackend) {
		cp, b := planCloud(t)
		b.createErr = createErr
		cp.opts.Journal = Journal{Dir: t.TempDir()}
		cp.opts.CapacityMemory = 30 * time.Minute
		return cp, b
	}
	// planCloud's backend holds one machine already ("taken"): created counts from 1.
	create := func(cp *ControlPlane, offerID string) (Created, []Record, error) {
		var saved []Record
		c, err := cp.Create(ctx, CreateRequest{Name: "x", Request: h100Request(), OfferID: offerID}, func(r Record) { saved = append(saved, r) })
		return c, saved, err
	}

	t.Run("the price dropped after the plan: billed at the cloud's price", func(t *testing.T) {
		cp, b := newCP(t)
		c, saved, err := create(cp, "verda-vm-pool/FIN-01/1H100/ondemand@2.60")
		if err != nil || !c.ForgetQuote || c.Capacity != nil || len(saved) == 0 || b.created != 2 {
			t.Fatalf("Create = %+v, %v; saved %d, created %d", c, err, len(saved), b.created)
		}
		if c.Record.PricePerHour != usd(2.49) || saved[0].PricePerHour != usd(2.49) || c.Record.Status != cloudprovider.StatusReady {
			t.Errorf("record %+v; want ready, billed $2.49/h", c.Record)
		}
		if why := BilledPrice(usd(2.60), c.Record.PricePerHour); !strings.Contains(why, "$2.60/h") || !strings.Contains(why, "$2.49/h") {
			t.Errorf("BilledPrice = %q, want both prices", why)
		}
		if err := cp.Delete(ctx, DeleteRequest{Record: c.Record}); err != nil || len(b.instances) != 1 { // planCloud's "taken" stays
			t.Errorf("Delete = %v; %d machines left, want 1", err, len(b.instances))
		}
	})
	t.Run("the price rose: refused, the quote forgotten, nothing created", func(t *testing.T) {
		cp, b := newCP(t)
		c, saved, err := create(cp, "verda-vm-pool/FIN-01/1H100/ondemand@2.00")
		var rose *PriceRoseError
		if !errors.As(err, &rose) || !c.ForgetQuote || len(saved) != 0 || b.created != 1 {
			t.Fatalf("Create = %+v, %v; saved %d, created %d", c, err, len(saved), b.created)
		}
	})
	t.Run("sold out: the quote forgotten, the offer remembered", func(t *testing.T) {
		cp, b := newCP(t, cloudprovider.Errorf(cloudprovider.ErrCapacity, "verda", "create", "503 Not enough resources"))
		c, _, err := create(cp, "verda-vm-pool/FIN-01/1H100/ondemand@2.49")
		var soldOut *SoldOutError
		if !errors.As(err, &soldOut) || !c.ForgetQuote || c.Capacity == nil || len(c.Capacity.Misses) != 1 || b.created != 1 {
			t.Fatalf("Create = %+v, %v", c, err)
		}
		if c.Capacity.Memory != 30*time.Minute || !c.Capacity.Until.Equal(c.Capacity.Misses[0].At.Add(30*time.Minute)) {
			t.Errorf("capacity record %+v, want the misses kept for capacity_memory", c.Capacity)
		}
	})
	t.Run("a record without a machine deletes nothing", func(t *testing.T) {
		cp, b := newCP(t)
		if err := cp.Delete(ctx, DeleteRequest{Record: Record{Name: "verda-vm-x--abcdefgh"}}); err != nil || len(b.instances) != 1 {
			t.Errorf("Delete = %v; %d machines left, want 1", err, len(b.instances))
		}
	})
}
