package controlplane

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// fakeBackend is an in-memory cloud for control-plane unit tests.
type fakeBackend struct {
	cloud    string
	offers   []cloudprovider.Offer
	offerErr error
	delay    time.Duration
	calls    atomic.Int32

	mu        sync.Mutex
	instances map[string]cloudprovider.Instance
	createErr []error // returned by successive creates (then success)
	created   int
}

func (f *fakeBackend) Cloud() string { return f.cloud }

func (f *fakeBackend) Offers(ctx context.Context) ([]cloudprovider.Offer, error) {
	f.calls.Add(1)
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return append([]cloudprovider.Offer(nil), f.offers...), f.offerErr
}

func (f *fakeBackend) Create(_ context.Context, req cloudprovider.CreateRequest) (cloudprovider.Instance, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.createErr) > 0 {
		err := f.createErr[0]
		f.createErr = f.createErr[1:]
		if cloudprovider.KindOf(err) != cloudprovider.ErrOther {
			return cloudprovider.Instance{}, err
		}
		// A lost answer: the machine exists all the same.
		f.store(req)
		return cloudprovider.Instance{}, err
	}
	return f.store(req), nil
}

func (f *fakeBackend) store(req cloudprovider.CreateRequest) cloudprovider.Instance {
	if f.instances == nil {
		f.instances = map[string]cloudprovider.Instance{}
	}
	f.created++
	inst := cloudprovider.Instance{ID: fmt.Sprintf("%s-%d", f.cloud, f.created), Name: req.Name, Cloud: f.cloud, Region: req.Offer.Region,
		InstanceType: req.Offer.InstanceType, Status: cloudprovider.StatusRunning, SSH: &cloudprovider.SSHEndpoint{Host: "127.0.0.1", Port: 22, User: "root"},
		CreatedAt: time.Now()}
	for _, o := range f.offers {
		if o.Region == req.Offer.Region && o.InstanceType == req.Offer.InstanceType && o.Spot == req.Offer.Spot {
			inst.PricePerHour = o.PricePerHour // billed at its price now, as a cloud does
		}
	}
	f.instances[inst.ID] = inst
	return inst
}

func (f *fakeBackend) Get(_ context.Context, id string) (cloudprovider.Instance, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if inst, ok := f.instances[id]; ok {
		return inst, nil
	}
	return cloudprovider.Instance{}, cloudprovider.Errorf(cloudprovider.ErrNotFound, f.cloud, "get", "no %s", id)
}

func (f *fakeBackend) List(_ context.Context, prefix string) ([]cloudprovider.Instance, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fakeNamed(f.instances, prefix, func(inst cloudprovider.Instance) string { return inst.Name }), nil
}

func (f *fakeBackend) Delete(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fakeDelete(f.instances, f.cloud, "delete", id)
}

// fakeNamed is the values of an in-memory cloud's m whose names start with prefix, as a cloud lists.
func fakeNamed[V any](m map[string]V, prefix string, name func(V) string) []V {
	var out []V
	for _, v := range m {
		if strings.HasPrefix(name(v), prefix) {
			out = append(out, v)
		}
	}
	return out
}

// fakeDelete deletes id from an in-memory cloud's m: ErrNotFound when m has none.
func fakeDelete[V any](m map[string]V, cloud, op, id string) error {
	if _, ok := m[id]; !ok {
		return cloudprovider.Errorf(cloudprovider.ErrNotFound, cloud, op, "no %s", id)
	}
	delete(m, id)
	return nil
}

func testInventory(t *testing.T) *inventory.Inventory {
	t.Helper()
	inv, err := inventory.Default()
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

func offer(region, it string, count int, price float64) cloudprovider.Offer {
	return cloudprovider.Offer{Region: region, InstanceType: it, GPUType: "h100", GPUCount: count, PricePerHour: usd(price), Available: -1}
}

func TestRank(t *testing.T) {
	offers := []cloudprovider.Offer{
		{ID: "d", Cloud: "verda", Pool: "verda-vm-pool", Region: "FIN-01", PricePerHour: usd(2.00)},
		{ID: "c", Cloud: "primeintellect", Pool: "primeintellect-vm-pool", Region: "us", PricePerHour: usd(2.00), ResaleOf: "verda"},
		{ID: "b", Cloud: "upcloud", Pool: "upcloud-vm-pool", Region: "fi-hel2", PricePerHour: usd(1.99)},
		{ID: "a", Cloud: "atlas", Pool: "atlas-vm-pool", Region: "x", PricePerHour: usd(2.00000001)},
		{ID: "f", Cloud: "atlas", Pool: "atlas-vm-pool", Region: "0", PricePerHour: usd(2.00005)},
		{ID: "e", Cloud: "atlas", Pool: "atlas-vm-pool", Region: "a", PricePerHour: usd(2.00)},
	}
	Rank(offers)
	var got []string
	for _, o := range offers {
		got = append(got, o.ID)
	}
	// 1.99 first; then at $2.00 direct offers before the resale, by cloud then region (2.00000001 is
	// $2.00 to the micro-dollar); $2.00005 is dearer, however small the difference, and ranks last.
	if want := "b e a d c f"; strings.Join(got, " ") != want {
		t.Errorf("Rank order = %v, want %s", got, want)
	}

	// An offer whose stock could not be read never beats one with known stock, however cheap.
	offers = []cloudprovider.Offer{
		{ID: "cheap-unknown", Cloud: "upcloud", PricePerHour: usd(0.50), StockUnknown: true},
		{ID: "dear-known", Cloud: "verda", PricePerHour: usd(3.00)},
		{ID: "mid-unknown", Cloud: "upcloud", PricePerHour: usd(1.00), StockUnknown: true},
	}
	Rank(offers)
	if got := offers[0].ID + " " + offers[1].ID + " " + offers[2].ID; got != "dear-known cheap-unknown mid-unknown" {
		t.Errorf("Rank with unknown stock = %s", got)
	}
}

func TestOfferIDRoundTrip(t *testing.T) {
	cases := []cloudprovider.Offer{
		{Pool: "verda-vm-pool", Region: "FIN-01", InstanceType: "1H100.80S.30V", PricePerHour: usd(2.49)},
		{Pool: "primeintellect-vm-pool", Region: "US-KS-2", InstanceType: "NVIDIA H100 80GB HBM3", PricePerHour: usd(0.0415), Spot: true},
		{Pool: "upcloud-vm-pool", Region: "fi-hel2", InstanceType: "GPU-8xCPU-64GB-1xL40S", PricePerHour: usd(2)},
		{Pool: "p", Region: "r", InstanceType: "a/b/c", PricePerHour: usd(12.3)},
	}
	for _, o := range cases {
		id := OfferID(o)
		p, err := ParseOfferID(id)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if p.Pool != o.Pool || p.Region != o.Region || p.InstanceType != o.InstanceType || p.Spot != o.Spot || p.PricePerHour != o.PricePerHour {
			t.Errorf("round trip of %+v through %q gave %+v", o, id, p)
		}
	}
	if got := OfferID(cases[2]); got != "upcloud-vm-pool/fi-hel2/GPU-8xCPU-64GB-1xL40S/ondemand@2.00" {
		t.Errorf("OfferID = %q", got)
	}
	for _, bad := range []string{"", "pool", "pool/region", "pool/region/it", "pool/region/it/ondemand", "pool/region/it/cheap@1", "pool/region/it/spot@x", "pool//it/spot@1"} {
		if _, err := ParseOfferID(bad); err == nil {
			t.Errorf("ParseOfferID(%q) accepted a malformed ID", bad)
		}
	}
}

func TestOfferIDKeepsTheExactPrice(t *testing.T) {
	for in, want := range map[float64]string{2.49: "2.49", 2: "2.00", 0.0415: "0.0415", 0.70005: "0.70005", 2.00005: "2.00005", 1.5: "1.50"} {
		id := OfferID(cloudprovider.Offer{Pool: "p", Region: "r", InstanceType: "t", PricePerHour: usd(in)})
		if got := id[strings.IndexByte(id, '@')+1:]; got != want {
			t.Errorf("OfferID price of %v = %q, want %q", in, got, want)
		}
	}
}

func TestRouting(t *testing.T) {
	inv := testInventory(t)
	verda := &fakeBackend{cloud: "verda"}
	sb := &fakeBackend{cloud: "sandbox"}
	cp := New(inv, []cloudprovider.InstanceManagerBackend{verda, sb}, Options{})
	cases := map[string]string{
		"verda-vm-trainer": "verda-vm-pool",
		"sbx-vm-a":         "sandbox-vm-pool",
		"sbx-ex-a":         "sandbox-execlet-pool",
	}
	for name, pool := range cases {
		p, err := cp.manager.Route(name)
		if err != nil || p.Pool.Name != pool {
			t.Errorf("Route(%q) = %v, %v; want %s", name, p, err, pool)
		}
	}
	// Pools of unconfigured clouds are not routable, and the error lists what is.
	_, err := cp.manager.Route("upcloud-vm-x")
	if err == nil || !strings.Contains(err.Error(), `"sbx-vm-" (sandbox-vm-pool)`) {
		t.Errorf("Route of an unconfigured pool: %v", err)
	}
	// Calls reach the right backend.
	if _, err := cp.manager.Create(context.Background(), cloudprovider.CreateRequest{Name: "verda-vm-x", Offer: offer("FIN-01", "1H100", 1, 2)}); err != nil {
		t.Fatal(err)
	}
	if verda.created != 1 || sb.created != 0 {
		t.Errorf("create went to the wrong cloud: verda %d sandbox %d", verda.created, sb.created)
	}
	inst, err := cp.manager.Get(context.Background(), InstanceRef{Name: "verda-vm-x"})
	if err != nil || inst.Cloud != "verda" {
		t.Errorf("Get by name = %+v, %v", inst, err)
	}
}

func TestOffersRankAcrossCloudsAndExplain(t *testing.T) {
	inv := testInventory(t)
	verda := &fakeBackend{cloud: "verda", offers: []cloudprovider.Offer{offer("FIN-01", "1H100", 1, 2.49), offer("FIN-01", "8H100", 8, 19)}}
	atlas := &fakeBackend{cloud: "atlas", offers: []cloudprovider.Offer{offer("atl-1", "h100.1", 1, 1.20)}}
	up := &fakeBackend{cloud: "upcloud", offers: []cloudprovider.Offer{offer("fi-hel2", "GPU-1xH100", 1, 3.10)}}
	pi := &fakeBackend{cloud: "primeintellect", offerErr: errors.New("HTTP 503")}
	cp := New(inv, []cloudprovider.InstanceManagerBackend{verda, atlas, up, pi}, Options{})

	res, err := cp.Offers(context.Background(), OfferRequest{GPUType: "h100", GPUCount: 1, Kind: "vm", MaxPricePerHour: usd(3)}, false)
	if err != nil {
		t.Fatal(err)
	}
	best, _ := res.Cheapest()
	if best.Cloud != "atlas" || best.ID != "atlas-vm-pool/atl-1/h100.1/ondemand@1.20" {
		t.Errorf("cheapest = %+v", best)
	}
	if len(res.Offers) != 2 {
		t.Errorf("eligible offers = %d, want 2 (atlas, verda): %+v", len(res.Offers), res.Offers)
	}
	explain := res.Explain()
	for _, want := range []string{"primeintellect: HTTP 503", "upcloud: cheapest matching offer costs $3.10/h (GPU-1xH100 in fi-hel2), above max_price_per_hour $3.00/h"} {
		if !strings.Contains(explain, want) {
			t.Errorf("Explain() lacks %q:\n%s", want, explain)
		}
	}

	// Asked again: the same answer from the per-process cache, one request per cloud.
	if _, err := cp.Offers(context.Background(), OfferRequest{GPUType: "h100", GPUCount: 8, Kind: "vm"}, false); err != nil {
		t.Fatal(err)
	}
	for _, b := range []*fakeBackend{verda, atlas, up, pi} {
		if n := b.calls.Load(); n != 1 {
			t.Errorf("%s was asked %d times, want 1", b.cloud, n)
		}
	}
}

func TestOffersConcurrentAskersShareOneRequest(t *testing.T) {
	inv := testInventory(t)
	slow := &fakeBackend{cloud: "verda", delay: 50 * time.Millisecond, offers: []cloudprovider.Offer{offer("FIN-01", "1H100", 1, 2.49)}}
	cp := New(inv, []cloudprovider.InstanceManagerBackend{slow}, Options{})
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := cp.Offers(context.Background(), OfferRequest{GPUType: "h100", GPUCount: 1, Kind: "vm"}, false); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := slow.calls.Load(); n != 1 {
		t.Errorf("50 concurrent askers sent %d requests, want 1", n)
	}
	if got := cp.OfferRequests()["verda"]; got != 1 {
		t.Errorf("OfferRequests = %d", got)
	}
}

func TestOffersSlowCloudIsBoundedAndNamed(t *testing.T) {
	inv := testInventory(t)
	slow := &fakeBackend{cloud: "upcloud", delay: time.Minute}
	fast := &fakeBackend{cloud: "verda", offers: []cloudprovider.Offer{offer("FIN-01", "1H100", 1, 2.49)}}
	cp := New(inv, []cloudprovider.InstanceManagerBackend{slow, fast}, Options{OfferTimeout: 100 * time.Millisecond})
	start := time.Now()
	res, err := cp.Offers(context.Background(), OfferRequest{GPUType: "h100", GPUCount: 1, Kind: "vm"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed > 30*time.Second {
		t.Fatalf("a slow cloud stalled the query for %s", elapsed)
	}
	if best, ok := res.Cheapest(); !ok || best.Cloud != "verda" {
		t.Errorf("the fast cloud must still answer: %+v", res)
	}
	if !strings.Contains(res.Explain(), "upcloud: timed out after 100ms waiting for offers") {
		t.Errorf("the slow cloud must be named: %s", res.Explain())
	}
}

func TestOffersFiltersAndReasons(t *testing.T) {
	inv := testInventory(t)
	sp := offer("FIN-01", "1H100", 1, 1.0)
	sp.Spot = true
	none := offer("FIN-02", "1H100", 1, 2.0)
	none.Available = 0
	verda := &fakeBackend{cloud: "verda", offers: []cloudprovider.Offer{sp, none, offer("FIN-01", "2H100", 2, 5)}}
	cp := New(inv, []cloudprovider.InstanceManagerBackend{verda}, Options{})
	cases := []struct {
		req  OfferRequest
		want string
	}{
		{OfferRequest{GPUType: "h100", GPUCount: 1, Kind: "vm"}, "verda: only spot capacity for 1x h100 (set spot = true to allow it)"},
		{OfferRequest{GPUType: "h100", GPUCount: 4, Kind: "vm"}, "verda: no h100 offer with 4 GPUs (offered counts: 1, 2)"},
		{OfferRequest{GPUType: "h100", GPUCount: 1, Kind: "vm", Regions: []string{"FIN-03"}}, `verda: no 1x h100 offer in regions "FIN-03" (it offers 1x h100 in "FIN-01", "FIN-02")`},
		{OfferRequest{GPUType: "h200", GPUCount: 1, Kind: "vm"}, "verda: no h200 offers right now"},
	}
	for _, tc := range cases {
		res, err := cp.Offers(context.Background(), tc.req, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Offers) != 0 || !strings.Contains(res.Explain(), tc.want) {
			t.Errorf("%+v: offers %v, explain %q; want %q", tc.req, res.Offers, res.Explain(), tc.want)
		}
	}
	res, _ := cp.Offers(context.Background(), OfferRequest{GPUType: "h100", GPUCount: 1, Kind: "vm", AllowSpot: true}, false)
	if best, ok := res.Cheapest(); !ok || !best.Spot {
		t.Errorf("spot allowed: %+v", res)
	}
	// A region no catalog has is named as unknown, with the regions there are; a known one is not.
	res, _ = cp.Offers(context.Background(), OfferRequest{GPUType: "h100", GPUCount: 1, Kind: "vm", Regions: []string{"FIN-02"}}, false)
	if len(res.UnknownRegions) != 0 {
		t.Errorf("known region named unknown: %v", res.UnknownRegions)
	}
	res, _ = cp.Offers(context.Background(), OfferRequest{GPUType: "h100", GPUCount: 1, Kind: "vm", Regions: []string{"mars-1"}}, false)
	if !slices.Equal(res.UnknownRegions, []string{"mars-1"}) || !slices.Equal(res.KnownRegions, []string{"FIN-01", "FIN-02"}) {
		t.Errorf("unknown regions %v, known %v; want [mars-1], [FIN-01 FIN-02]", res.UnknownRegions, res.KnownRegions)
	}
}

func TestValidate(t *testing.T) {
	inv := testInventory(t)
	cp := New(inv, []cloudprovider.InstanceManagerBackend{&fakeBackend{cloud: "upcloud"}}, Options{})
	cases := []struct {
		req   OfferRequest
		field string
		want  string
	}{
		{OfferRequest{GPUType: "h10", GPUCount: 1, Kind: "vm"}, "gpu_type", `did you mean "h100"`},
		{OfferRequest{GPUType: "h100", GPUCount: 9, Kind: "vm"}, "gpu_count", "at most 8 h100 GPUs per instance"},
		{OfferRequest{GPUType: "h100", GPUCount: 1, Kind: "execlet"}, "kind", `no configured pool serves kind "execlet"`},
		{OfferRequest{GPUType: "h200", GPUCount: 1, Kind: "vm"}, "gpu_type", `no configured vm pool offers h200`},
		{OfferRequest{GPUType: "h100", GPUCount: 1, Kind: "vm", Clouds: []string{"aws"}}, "clouds", `unknown cloud "aws"`},
	}
	for _, tc := range cases {
		err := cp.Validate(tc.req)
		var re *RequestError
		if !errors.As(err, &re) || re.Field != tc.field || !strings.Contains(re.Msg, tc.want) {
			t.Errorf("Validate(%+v) = %v; want field %s containing %q", tc.req, err, tc.field, tc.want)
		}
	}
	var uc *UnconfiguredError
	err := cp.Validate(OfferRequest{GPUType: "h100", GPUCount: 1, Kind: "vm", Clouds: []string{"verda"}})
	if !errors.As(err, &uc) || uc.Cloud != "verda" || !slices.Equal(uc.Configured, []string{"upcloud"}) {
		t.Errorf("Validate(clouds = [verda]) = %#v; want an UnconfiguredError for verda, upcloud configured", err)
	}
}

func TestLaunchAdoptsAndFallsBack(t *testing.T) {
	inv := testInventory(t)
	ctx := context.Background()
	o1 := cloudprovider.Offer{ID: "verda-vm-pool/FIN-01/1H100/ondemand@2.00", Cloud: "verda", Pool: "verda-vm-pool", Region: "FIN-01", InstanceType: "1H100", PricePerHour: usd(2)}
	o2 := cloudprovider.Offer{ID: "verda-vm-pool/FIN-02/1H100/ondemand@2.10", Cloud: "verda", Pool: "verda-vm-pool", Region: "FIN-02", InstanceType: "1H100", PricePerHour: usd(2.1)}
	// journaled is a control plane over b with a journal of its own.
	journaled := func(t *testing.T, b *fakeBackend) *ControlPlane {
		return New(inv, []cloudprovider.InstanceManagerBackend{b}, Options{Journal: Journal{Dir: t.TempDir()}})
	}
	// launched launches resource x from o1, failing the test on an error.
	launched := func(t *testing.T, cp *ControlPlane) Launched {
		t.Helper()
		l, err := cp.Launch(ctx, LaunchRequest{Name: "x", Offers: []cloudprovider.Offer{o1}})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}

	t.Run("capacity moves to the next offer", func(t *testing.T) {
		b := &fakeBackend{cloud: "verda", createErr: []error{cloudprovider.Errorf(cloudprovider.ErrCapacity, "verda", "create", "503 Not enough resources")}}
		cp := journaled(t, b)
		got, err := cp.Launch(ctx, LaunchRequest{Name: "x", Offers: []cloudprovider.Offer{o1, o2}})
		if err != nil || got.Offer.ID != o2.ID || got.Instance.Owner.Resource != "x" || got.Instance.Owner.Token == "" ||
			got.Instance.Name != "verda-vm-x--"+got.Instance.Owner.Token {
			t.Fatalf("Launch = %+v, %v", got, err)
		}
	})
	t.Run("one offer: capacity error says what to do", func(t *testing.T) {
		b := &fakeBackend{cloud: "verda", createErr: []error{cloudprovider.Errorf(cloudprovider.ErrCapacity, "verda", "create", "503")}}
		j := Journal{Dir: t.TempDir()}
		cp := New(inv, []cloudprovider.InstanceManagerBackend{b}, Options{Journal: j})
		_, err := cp.Launch(ctx, LaunchRequest{Name: "x", Offers: []cloudprovider.Offer{o1}})
		var soldOut *SoldOutError
		if !cloudprovider.IsCapacity(err) || !errors.As(err, &soldOut) || soldOut.OfferID != o1.ID {
			t.Fatalf("err = %v, want a capacity error naming the planned offer", err)
		}
		if _, ok, _ := j.Get("x"); ok {
			t.Error("a create that made nothing left a journal entry")
		}
	})
	t.Run("lost create answer is kept, not repeated", func(t *testing.T) {
		b := &fakeBackend{cloud: "verda", createErr: []error{cloudprovider.Errorf(cloudprovider.ErrOther, "verda", "create", "HTTP 502")}}
		cp := journaled(t, b)
		got, err := cp.Launch(ctx, LaunchRequest{Name: "x", Offers: []cloudprovider.Offer{o1, o2}})
		if err != nil || !got.Adopted || b.created != 1 {
			t.Fatalf("Launch = %+v, %v; created %d", got, err, b.created)
		}
	})
	t.Run("a create cut short is adopted by the next launch of the same resource", func(t *testing.T) {
		b := &fakeBackend{cloud: "verda"}
		j := Journal{Dir: t.TempDir()}
		cp := New(inv, []cloudprovider.InstanceManagerBackend{b}, Options{Journal: j})
		first := launched(t, cp)
		// The process died here: Settle never ran, the intent is still journaled.
		got, err := cp.Launch(ctx, LaunchRequest{Name: "x", Offers: []cloudprovider.Offer{o1}})
		if err != nil || !got.Adopted || got.Instance.ID != first.Instance.ID || b.created != 1 {
			t.Fatalf("second Launch = %+v, %v; created %d", got, err, b.created)
		}
		cp.Settle(ctx, "x", got.Instance)
		if _, ok, _ := j.Get("x"); ok {
			t.Error("Settle left the journal entry")
		}
		// Settled: a later create of the same name (another resource, or a replacement) buys its own.
		again, err := cp.Launch(ctx, LaunchRequest{Name: "x", Offers: []cloudprovider.Offer{o1}})
		if err != nil || again.Adopted || again.Instance.ID == first.Instance.ID || b.created != 2 {
			t.Fatalf("launch after settle = %+v, %v; created %d", again, err, b.created)
		}
	})
	t.Run("a leftover that no longer matches the plan is deleted, not adopted or duplicated", func(t *testing.T) {
		b := &fakeBackend{cloud: "verda"}
		cp := journaled(t, b)
		first := launched(t, cp)
		got, err := cp.Launch(ctx, LaunchRequest{Name: "x", Offers: []cloudprovider.Offer{o2}})
		if err != nil || got.Adopted || got.Offer.ID != o2.ID {
			t.Fatalf("Launch = %+v, %v", got, err)
		}
		if _, err := b.Get(ctx, first.Instance.ID); !cloudprovider.IsNotFound(err) {
			t.Errorf("the mismatched leftover %s still exists", first.Instance.ID)
		}
	})
	t.Run("a machine of the same name that no intent names is never touched", func(t *testing.T) {
		b := &fakeBackend{cloud: "verda"}
		theirs := launched(t, journaled(t, b))
		mine := journaled(t, b)
		got, err := mine.Launch(ctx, LaunchRequest{Name: "x", Offers: []cloudprovider.Offer{o2}})
		if err != nil || got.Adopted || got.Instance.ID == theirs.Instance.ID || b.created != 2 {
			t.Fatalf("Launch = %+v, %v; created %d", got, err, b.created)
		}
		if _, err := b.Get(ctx, theirs.Instance.ID); err != nil {
			t.Errorf("the other resource's machine was touched: %v", err)
		}
	})
}

// scriptedProvisioner fails the first n attempts.
type scriptedProvisioner struct {
	failures  int
	permanent bool
	attempts  int
}

func (p *scriptedProvisioner) Digest(inventory.Pool, map[string]any) (string, error) {
	return "d1", nil
}

func (p *scriptedProvisioner) Provision(_ context.Context, req cloudprovider.ProvisionRequest) (cloudprovider.ProvisionResult, error) {
	p.attempts++
	if p.attempts <= p.failures {
		err := errors.New("task failed")
		if p.permanent {
			err = &cloudprovider.PermanentError{Err: errors.New("host key mismatch")}
		}
		return cloudprovider.ProvisionResult{HostKey: "ssh-ed25519 AAAA", FailedTask: "check gpus", Message: "2 GPUs, want 8"}, err
	}
	return cloudprovider.ProvisionResult{HostKey: "ssh-ed25519 AAAA"}, nil
}

func TestProvisionRetries(t *testing.T) {
	inv := testInventory(t)
	inst := cloudprovider.Instance{Name: "sbx-vm-x"}
	cases := []struct {
		name         string
		prov         *scriptedProvisioner
		wantErr      bool
		wantAttempts int
	}{
		{"fails twice then passes", &scriptedProvisioner{failures: 2}, false, 3},
		{"always fails", &scriptedProvisioner{failures: 99}, true, 3},
		{"permanent error is not retried", &scriptedProvisioner{failures: 99, permanent: true}, true, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cp := New(inv, nil, Options{Provisioner: tc.prov, ProvisionBackoff: time.Millisecond})
			out, err := cp.Provision(context.Background(), inst, ProvisionSpec{}, nil)
			if (err != nil) != tc.wantErr || out.Attempts != tc.wantAttempts || tc.prov.attempts != tc.wantAttempts {
				t.Fatalf("err %v, attempts %d (provisioner saw %d), want err=%v attempts %d", err, out.Attempts, tc.prov.attempts, tc.wantErr, tc.wantAttempts)
			}
			if out.HostKey != "ssh-ed25519 AAAA" || out.Digest != "d1" {
				t.Errorf("record = %+v", out)
			}
			if tc.wantErr && out.FailedTask != "check gpus" {
				t.Errorf("the failed task must be kept: %+v", out)
			}
			if !tc.wantErr && out.ReadyAt.IsZero() {
				t.Error("ReadyAt not set")
			}
		})
	}
}

// usd is a test shorthand for an exact price.
func usd(f float64) money.USD { return money.MustFromFloat(f) }

// A GPU product the inventory cannot map is reported with the cloud's exact name, never ranked.
func TestOffersReportUnmapped(t *testing.T) {
	h100 := offer("FIN-01", "1H100", 1, 2.49)
	odd := cloudprovider.Offer{Region: "FIN-01", InstanceType: "1X9", CloudGPU: "NVIDIA X9 96GB", GPUCount: 1, PricePerHour: usd(0.5), Available: -1}
	odd2 := odd
	odd2.Region = "FIN-02"
	cp := New(testInventory(t), []cloudprovider.InstanceManagerBackend{&fakeBackend{cloud: "verda", offers: []cloudprovider.Offer{h100, odd, odd2}}}, Options{})
	res, err := cp.Offers(context.Background(), OfferRequest{GPUType: "h100", GPUCount: 1, Kind: "vm"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Unmapped["verda"]; len(got) != 1 || got[0] != "NVIDIA X9 96GB" {
		t.Errorf("Unmapped = %v, want verda's one unmapped name", res.Unmapped)
	}
	if len(res.Offers) != 1 || res.Offers[0].InstanceType != "1H100" {
		t.Errorf("an unmapped GPU was ranked: %+v", res.Offers)
	}
}

// A failed request's hint: the cheapest offer with each constraint relaxed, one at a time.
func TestClosest(t *testing.T) {
	eu := offer("FIN-01", "1H100", 1, 2.49)
	two := offer("FIN-01", "2H100", 2, 1.15)
	sp := offer("FIN-02", "1H100-spot", 1, 1.10)
	sp.Spot = true
	cp := New(testInventory(t), []cloudprovider.InstanceManagerBackend{&fakeBackend{cloud: "verda", offers: []cloudprovider.Offer{eu, two, sp}}}, Options{})
	names := func(req OfferRequest) []string {
		if res, _ := cp.Offers(context.Background(), req, false); len(res.Offers) != 0 {
			t.Fatalf("the request should fail: %+v", res.Offers)
		}
		var got []string
		for _, n := range cp.Closest(context.Background(), req) {
			got = append(got, n.String())
		}
		return got
	}
	// Only the cap is in the way of the on-demand offer; spot or two GPUs would fit under it.
	got := names(OfferRequest{GPUType: "h100", GPUCount: 1, Kind: "vm", MaxPricePerHour: usd(1.20)})
	want := []string{
		"without max_price_per_hour: verda-vm-pool/FIN-01/1H100/ondemand@2.49 at $2.49/h",
		"with spot = true: verda-vm-pool/FIN-02/1H100-spot/spot@1.10 at $1.10/h",
		"with gpu_count = 2: verda-vm-pool/FIN-01/2H100/ondemand@1.15 at $1.15/h",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Closest =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Two constraints in the way: no single relaxation helps, and the hint says nothing rather than mislead.
	if got := names(OfferRequest{GPUType: "h100", GPUCount: 1, Kind: "vm", Regions: []string{"FIN-09"}, MaxPricePerHour: usd(1)}); len(got) != 0 {
		t.Errorf("Closest = %q, want none", got)
	}
}
