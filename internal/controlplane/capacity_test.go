package controlplane

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// A remembered capacity miss makes PlanNew skip the offer, with a notice naming it, why and until
// when; after capacity_memory it is chosen again; capacity_memory 0 remembers nothing; when every
// offer is remembered the plan is refused with the way out.
func TestPlanNewSkipsRememberedCapacity(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	cheap := "verda-vm-pool/FIN-01/1H100/ondemand@2.49"
	dear := "verda-vm-pool/FIN-02/1H100/ondemand@2.99"
	miss := func(id string, at time.Time) CapacityMiss {
		return CapacityMiss{OfferID: id, Cloud: "verda", Reason: "verda: no capacity", At: at}
	}
	cases := []struct {
		name      string
		memory    time.Duration
		now       time.Time
		misses    []CapacityMiss
		wantOffer string
		wantIn    []string // in the skip notice ("" offer: in the refusal)
	}{
		{name: "remembered: the next cheapest, and why", memory: 30 * time.Minute, now: t0.Add(10 * time.Minute),
			misses: []CapacityMiss{miss(cheap, t0)}, wantOffer: dear,
			wantIn: []string{cheap, "at 2026-12-01T12:00:00Z", "verda: no capacity", "skipped until 2026-12-01T12:30:00Z", "capacity_memory (30m0s)"}},
		{name: "a miss at another price of the same offer", memory: 30 * time.Minute, now: t0,
			misses: []CapacityMiss{miss("verda-vm-pool/FIN-01/1H100/ondemand@2.10", t0)}, wantOffer: dear, wantIn: []string{cheap}},
		{name: "expired", memory: 30 * time.Minute, now: t0.Add(31 * time.Minute), misses: []CapacityMiss{miss(cheap, t0)}, wantOffer: cheap},
		{name: "memory off", memory: 0, now: t0, misses: []CapacityMiss{miss(cheap, t0)}, wantOffer: cheap},
		{name: "every offer remembered: refused", memory: time.Hour, now: t0,
			misses: []CapacityMiss{miss(cheap, t0), miss(dear, t0)}, wantIn: []string{"No GPU offer left", cheap, dear, "capacity_memory = \"0\""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cp, _ := planCloud(t)
			cp.opts.CapacityMemory = tc.memory
			cp.opts.Now = func() time.Time { return tc.now }
			cp.RememberCapacity(tc.misses)
			p, err := cp.PlanNew(context.Background(), NewPlanRequest{Name: "a", Request: h100Request()})
			if tc.wantOffer == "" {
				if err == nil {
					t.Fatalf("planned %s, want a refusal", p.OfferID)
				}
				for _, w := range tc.wantIn {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("refusal lacks %q: %v", w, err)
					}
				}
				return
			}
			if err != nil || p.OfferID != tc.wantOffer {
				t.Fatalf("planned %q (%v), want %q", p.OfferID, err, tc.wantOffer)
			}
			var notice string
			for _, n := range p.Notices {
				if n.Summary == "Skipping offers that recently ran out of capacity" {
					notice = n.Detail
				}
			}
			if (notice != "") != (len(tc.wantIn) > 0) {
				t.Fatalf("skip notice %q, want one: %v", notice, len(tc.wantIn) > 0)
			}
			for _, w := range tc.wantIn {
				if !strings.Contains(notice, w) {
					t.Errorf("notice lacks %q: %s", w, notice)
				}
			}
			if len(tc.wantIn) > 0 && (p.NewQuote == nil || len(p.NewQuote.Skipped) == 0) {
				t.Errorf("the quote must record the skipped offers: %+v", p.NewQuote)
			}
		})
	}
}

// Launch tells its caller of every offer that failed for lack of capacity, and of nothing else.
func TestLaunchReportsNoCapacity(t *testing.T) {
	inv := testInventory(t)
	ctx := context.Background()
	o1 := cloudprovider.Offer{ID: "verda-vm-pool/FIN-01/1H100/ondemand@2.00", Cloud: "verda", Pool: "verda-vm-pool", Region: "FIN-01", InstanceType: "1H100", PricePerHour: usd(2)}
	o2 := cloudprovider.Offer{ID: "verda-vm-pool/FIN-02/1H100/ondemand@2.10", Cloud: "verda", Pool: "verda-vm-pool", Region: "FIN-02", InstanceType: "1H100", PricePerHour: usd(2.1)}
	cases := []struct {
		name      string
		errs      []error
		offers    []cloudprovider.Offer
		wantMiss  []string
		wantError bool
	}{
		{name: "the first runs out, the second is bought", errs: []error{cloudprovider.Errorf(cloudprovider.ErrCapacity, "verda", "create", "503 Not enough resources")},
			offers: []cloudprovider.Offer{o1, o2}, wantMiss: []string{o1.ID}},
		{name: "both run out", errs: []error{cloudprovider.Errorf(cloudprovider.ErrCapacity, "verda", "create", "503"), cloudprovider.Errorf(cloudprovider.ErrCapacity, "verda", "create", "503")},
			offers: []cloudprovider.Offer{o1, o2}, wantMiss: []string{o1.ID, o2.ID}, wantError: true},
		{name: "a lost answer is no capacity miss", errs: []error{cloudprovider.Errorf(cloudprovider.ErrOther, "verda", "create", "HTTP 502")}, offers: []cloudprovider.Offer{o1}},
		{name: "a refusal is no capacity miss", errs: []error{cloudprovider.Errorf(cloudprovider.ErrAuth, "verda", "create", "401")}, offers: []cloudprovider.Offer{o1}, wantError: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &fakeBackend{cloud: "verda", createErr: tc.errs}
			cp := New(inv, []cloudprovider.InstanceManagerBackend{b}, Options{Journal: Journal{Dir: t.TempDir()}})
			var got []string
			_, err := cp.Launch(ctx, LaunchRequest{Name: "x", Offers: tc.offers, NoCapacity: func(o cloudprovider.Offer, why string) {
				if why == "" {
					t.Error("a miss without a reason")
				}
				got = append(got, o.ID)
			}})
			if (err != nil) != tc.wantError {
				t.Fatalf("err = %v, want error %v", err, tc.wantError)
			}
			if strings.Join(got, ",") != strings.Join(tc.wantMiss, ",") {
				t.Errorf("misses %v, want %v", got, tc.wantMiss)
			}
		})
	}
}

// A re-plan that reuses a quote does not call the offers the quote skipped (capacity memory) cheaper
// offers missed: the apply-time re-plan runs in a process that has not read the memory.
func TestStaleQuoteIgnoresSkippedOffers(t *testing.T) {
	cheap := "verda-vm-pool/FIN-01/1H100/ondemand@2.49"
	for _, skipped := range [][]string{nil, {cheap}} {
		cp, _ := planCloud(t)
		q := &Quote{OfferID: "verda-vm-pool/FIN-02/1H100/ondemand@2.99", Estimate: usd(2.99), Expires: time.Now().Add(time.Hour), Skipped: skipped}
		p, err := cp.PlanNew(context.Background(), NewPlanRequest{Name: "a", Request: h100Request(), Quote: q, QuotePath: "/q/a.json"})
		if err != nil {
			t.Fatal(err)
		}
		warned := len(p.Notices) > 0 && strings.Contains(p.Notices[0].Detail, "a cheaper offer exists now")
		if warned != (skipped == nil) {
			t.Errorf("skipped %v: warned of a cheaper offer %v (%+v)", skipped, warned, p.Notices)
		}
	}
}

// auctionBackend is a fakeBackend whose creates in the losing regions are bids that never win.
type auctionBackend struct {
	*fakeBackend
	losing map[string]bool
}

func (a auctionBackend) Create(ctx context.Context, req cloudprovider.CreateRequest) (cloudprovider.Instance, error) {
	inst, err := a.fakeBackend.Create(ctx, req)
	if err != nil || !a.losing[req.Offer.Region] {
		return inst, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	inst.AwaitingAllocation, inst.Status, inst.SSH = true, cloudprovider.StatusPending, nil
	a.instances[inst.ID] = inst
	return inst, nil
}

// A bid that cannot win within bid_timeout is a capacity miss too: cancelled, reported, and the next
// offer bought.
func TestLaunchReportsLostAuction(t *testing.T) {
	o1 := cloudprovider.Offer{ID: "verda-vm-pool/FIN-01/1H100/spot@2.00", Cloud: "verda", Pool: "verda-vm-pool", Region: "FIN-01", InstanceType: "1H100", Spot: true, PricePerHour: usd(2)}
	o2 := cloudprovider.Offer{ID: "verda-vm-pool/FIN-02/1H100/spot@2.10", Cloud: "verda", Pool: "verda-vm-pool", Region: "FIN-02", InstanceType: "1H100", Spot: true, PricePerHour: usd(2.1)}
	b := auctionBackend{fakeBackend: &fakeBackend{cloud: "verda"}, losing: map[string]bool{"FIN-01": true}}
	opts := fast
	opts.Journal = Journal{Dir: t.TempDir()}
	cp := New(testInventory(t), []cloudprovider.InstanceManagerBackend{b}, opts)
	var misses []string
	got, err := cp.Launch(context.Background(), LaunchRequest{Name: "x", Offers: []cloudprovider.Offer{o1, o2}, BidTimeout: 50 * time.Millisecond,
		NoCapacity: func(o cloudprovider.Offer, why string) { misses = append(misses, o.ID+": "+why) }})
	if err != nil || got.Offer.ID != o2.ID {
		t.Fatalf("Launch = %+v, %v; want the second offer", got.Offer, err)
	}
	if len(misses) != 1 || !strings.HasPrefix(misses[0], o1.ID+": its auction could not be won") {
		t.Errorf("misses %q, want the lost auction of %s", misses, o1.ID)
	}
	if n := len(b.instances); n != 1 {
		t.Errorf("%d instances at the cloud, want the won one only (the lost bid cancelled)", n)
	}
}
