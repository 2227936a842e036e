package controlplane

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

func fleetOffers() []cloudprovider.Offer {
	a := cloudprovider.Offer{ID: "one-left", Cloud: "verda", Region: "FIN-01", InstanceType: "1H100", PricePerHour: usd(2), Available: 1}
	b := cloudprovider.Offer{ID: "two-left", Cloud: "upcloud", Region: "fi-hel2", InstanceType: "GPU-1xH100", PricePerHour: usd(2.5), Available: 2}
	c := cloudprovider.Offer{ID: "unlimited", Cloud: "sandbox", Region: "sbx-eu-1", InstanceType: "sbx.h100.1x", PricePerHour: usd(3), Available: -1}
	return []cloudprovider.Offer{a, b, c}
}

// Instances planned together share the stock by name, whatever order Terraform plans them in.
func TestFleetSharesStockByName(t *testing.T) {
	for _, order := range [][]string{{"a", "b", "c", "d"}, {"d", "c", "b", "a"}, {"c", "a", "d", "b"}} {
		t.Run(strings.Join(order, ""), func(t *testing.T) {
			f := NewFleet(100 * time.Millisecond)
			got := map[string]FleetChoice{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			for i, name := range order {
				wg.Add(1)
				go func() {
					defer wg.Done()
					time.Sleep(time.Duration(i) * 10 * time.Millisecond) // arrive in this order
					c, ok, err := f.Choose(context.Background(), name, fleetOffers())
					if err != nil || !ok {
						t.Errorf("%s: ok %v, err %v", name, ok, err)
					}
					mu.Lock()
					got[name] = c
					mu.Unlock()
				}()
			}
			wg.Wait()
			want := map[string]string{"a": "one-left", "b": "two-left", "c": "two-left", "d": "unlimited"}
			for name, id := range want {
				if got[name].Offer.ID != id {
					t.Errorf("%s got %s, want %s", name, got[name].Offer.ID, id)
				}
			}
			if p := got["b"].Passed; len(p) != 1 || p[0].Offer.ID != "one-left" || fmt.Sprint(p[0].TakenBy) != "[a]" {
				t.Errorf("b passed %+v, want one-left taken by a", p)
			}
			if p := got["d"].Passed; len(p) != 2 || fmt.Sprint(p[1].TakenBy) != "[b c]" {
				t.Errorf("d passed %+v, want two-left taken by b and c", p)
			}
			// Asking again gives the same answer without waiting.
			if again, _, _ := f.Choose(context.Background(), "c", fleetOffers()); again.Offer.ID != "two-left" {
				t.Errorf("c asked again got %s", again.Offer.ID)
			}
		})
	}
}

// An instance that joins after a round was served takes what is left; when nothing is left it is told so.
func TestFleetLateJoinerAndNothingLeft(t *testing.T) {
	f := NewFleet(time.Millisecond)
	only := []cloudprovider.Offer{{ID: "one-left", Cloud: "verda", Region: "FIN-01", InstanceType: "1H100", PricePerHour: usd(2), Available: 1}}
	if c, ok, err := f.Choose(context.Background(), "b", only); !ok || err != nil || c.Offer.ID != "one-left" {
		t.Fatalf("first: %+v %v %v", c, ok, err)
	}
	c, ok, err := f.Choose(context.Background(), "a", only)
	if ok || err != nil || len(c.Passed) != 1 || c.Passed[0].TakenBy[0] != "b" {
		t.Fatalf("late joiner: %+v ok %v err %v; want nothing left, taken by b", c, ok, err)
	}
}

// Offers without a stock limit never wait.
func TestFleetUnlimitedDoesNotWait(t *testing.T) {
	f := NewFleet(time.Hour)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if c, ok, _ := f.Choose(context.Background(), "x", fleetOffers()[2:]); !ok || c.Offer.ID != "unlimited" {
			t.Errorf("got %+v", c)
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("an unlimited offer waited for the fleet")
	}
}

// A cancelled plan stops waiting.
func TestFleetCancelled(t *testing.T) {
	f := NewFleet(time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := f.Choose(ctx, "x", fleetOffers()); err == nil {
		t.Fatal("a cancelled Choose returned no error")
	}
}
