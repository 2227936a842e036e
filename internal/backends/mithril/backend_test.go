package mithril

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/mithril"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
)

const testKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHydraTestKeyHydraTestKeyHydraTestKey0001 hydra@test"

func findOffer(t *testing.T, offers []cloudprovider.Offer, region, typ string) cloudprovider.Offer {
	t.Helper()
	o, ok := backendtest.FindOffer(offers, region, typ, true) // every Mithril offer is a spot bid
	if !ok {
		t.Fatalf("no offer %s %s in %+v", region, typ, offers)
	}
	return o
}

func TestOffers(t *testing.T) {
	e := newEnv(t, emu.Options{})
	offers := backendtest.Offers(t, e.backend)
	for _, o := range offers {
		if o.Cloud != CloudName || !o.Spot || o.ID != "" || o.Pool != "" || o.GPUCount <= 0 || o.PricePerHour <= 0 {
			t.Errorf("offer %+v", o)
		}
		// Every offer names the cloud's GPU: the instance type's name, exactly.
		if o.CloudGPU != o.InstanceType {
			t.Errorf("offer %s: CloudGPU %q", o.InstanceType, o.CloudGPU)
		}
		// Only the A10 is not hydra's; it is listed, not dropped.
		if (o.GPUType == "") != strings.HasPrefix(o.InstanceType, "a10-") {
			t.Errorf("offer %s: GPU type %q", o.InstanceType, o.GPUType)
		}
		if !strings.HasPrefix(o.Details[DetailInstanceTypeFID], "it_") || !strings.HasPrefix(o.Details[DetailAuctionFID], "auc_") {
			t.Errorf("details %+v", o.Details)
		}
	}
	// The unmapped A10 is listed at its last clearing price, with its hardware, and never priced as a
	// bid: no /v2/pricing/current signals, and PriceBids marks it ineligible and leaves the rest alone.
	a10 := findOffer(t, offers, "us-central5-a", "a10-24gb.pcie.1x")
	if a10.GPUType != "" || a10.CloudGPU != "a10-24gb.pcie.1x" || a10.GPUCount != 1 || a10.PricePerHour != usd("0.60") || a10.Ineligible != "" ||
		a10.Hardware != (cloudprovider.Hardware{FormFactor: "pcie", GPUMemoryGB: 24, VCPUs: 30, MemoryGB: 200}) || a10.Details[DetailSpotPrice] != "" {
		t.Errorf("unmapped A10: %+v", a10)
	}
	priced := e.backend.PriceBids([]cloudprovider.Offer{a10}, []cloudprovider.Offer{{Cloud: "verda", GPUCount: 1, PricePerHour: usd("0.50"), Spot: true, Available: -1}}, 0)[0]
	if want := `GPU not in the inventory: supported_gpus.yml maps no GPU type to Mithril's "a10-24gb.pcie.1x"`; priced.Ineligible != want ||
		priced.PricePerHour != a10.PricePerHour || priced.Details[DetailBidPrice] != "" || priced.Details[DetailUndercuts] != "" || len(priced.Details) != len(a10.Details) {
		t.Errorf("PriceBids on the unmapped A10: %+v", priced)
	}
	// Every name style maps: memory without a form factor, dots without a count, PCIe.
	for _, tc := range []struct {
		region, typ, gpu string
		count            int
		hw               cloudprovider.Hardware
	}{
		{"us-central1-a", "h100-80gb.sxm.8x", "h100", 8, cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 208, MemoryGB: 1800}},
		{"us-central5-a", "h100-80gb.sxm.1x", "h100", 1, cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 26, MemoryGB: 225}},
		{"us-central3-a", "h100.80gb.sxm", "h100", 8, cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 208, MemoryGB: 1800}},
		{"us-central1-a", "h100-80gb.pcie.8x", "h100", 8, cloudprovider.Hardware{FormFactor: "pcie", GPUMemoryGB: 80, VCPUs: 192, MemoryGB: 1500}},
		{"us-central1-a", "a100-80gb.sxm.1x", "a100-80gb", 1, cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 30, MemoryGB: 240}},
		{"us-central1-a", "a100-80gb.sxm.8x", "a100-80gb", 8, cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 240, MemoryGB: 1920}},
		{"us-central3-a", "h200-141gb.sxm.8x", "h200", 8, cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 141, VCPUs: 208, MemoryGB: 2000}},
		{"us-central3-a", "b200.8x", "b200", 8, cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 180, VCPUs: 224, MemoryGB: 2900}},
		{"us-central5-a", "b200-192gb.8x", "b200", 8, cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 192, VCPUs: 224, MemoryGB: 2900}},
	} {
		o := findOffer(t, offers, tc.region, tc.typ)
		if o.GPUType != tc.gpu || o.GPUCount != tc.count || o.Hardware != tc.hw {
			t.Errorf("%s %s: %s x%d %+v, want %s x%d %+v", tc.region, tc.typ, o.GPUType, o.GPUCount, o.Hardware, tc.gpu, tc.count, tc.hw)
		}
	}
	a := findOffer(t, offers, "us-central1-a", "h100-80gb.sxm.8x")
	b := findOffer(t, offers, "us-central1-b", "h100-80gb.sxm.8x")
	if a.Details[DetailInstanceTypeFID] == b.Details[DetailInstanceTypeFID] {
		t.Errorf("the region's own FID must be kept: %q", a.Details[DetailInstanceTypeFID])
	}
	// With capacity free, a bid at the lowest winning bid wins: Mithril's win price is $12.50.
	want := map[string]string{DetailLastClearing: "12.03", DetailSpotPrice: "12.03", DetailLowestAllocated: "12.50", DetailWinPrice: "12.50",
		DetailMinimumPrice: "8.00", DetailAvailableCapacity: "2"}
	for k, v := range want {
		if a.Details[k] != v {
			t.Errorf("%s = %q, want %q", k, a.Details[k], v)
		}
	}
	if a.GPUType != "h100" || a.GPUCount != 8 || a.PricePerHour != usd("12.03") || a.Available != 2 || a.Ineligible != "" {
		t.Errorf("offer a: %+v", a)
	}
	// An auction without capacity is listed, not dropped: ineligible, with both of its prices.
	const full = "auction has no capacity now (last clearing price $11.50/h, lowest winning bid $12.00/h)"
	if b.Available != 0 || b.Details[DetailAvailableCapacity] != "0" || b.Ineligible != full ||
		b.Details[DetailLastClearing] != "11.50" || b.Details[DetailLowestAllocated] != "12.00" || b.PricePerHour != usd("11.50") {
		t.Errorf("full auction: %+v", b)
	}
	if p := e.backend.PriceBids([]cloudprovider.Offer{b}, nil, 0)[0]; p.Ineligible != full {
		t.Errorf("PriceBids on the full auction: %q", p.Ineligible)
	}

	// GPU counts above the type's max_count are skipped; GPUs the inventory does not map are listed
	// unmapped.
	gpus := []byte("gpus:\n  h100:\n    max_count: 4\n    api_names:\n      mithril: h100-80gb.sxm\n")
	pools := []byte("pools:\n  - name: mithril-vm-pool\n    cloud: mithril\n    kind: vm\n    prefix: mithril-vm-\n")
	inv, err := inventory.Parse("g.yml", gpus, "p.yml", pools)
	if err != nil {
		t.Fatal(err)
	}
	small, err := New(Config{APIKey: emu.DefaultAPIKey, Project: emu.DefaultProject, BaseURL: e.srv.URL}, inv, nil)
	if err != nil {
		t.Fatal(err)
	}
	offers = backendtest.Offers(t, small)
	var mapped []string
	for _, o := range offers {
		if o.GPUType != "" {
			mapped = append(mapped, o.InstanceType)
		} else if o.CloudGPU != o.InstanceType {
			t.Errorf("max_count 4: unmapped offer without its name: %+v", o)
		}
	}
	if len(mapped) != 1 || mapped[0] != "h100-80gb.sxm.1x" || len(offers) != 8 {
		t.Errorf("max_count 4: mapped %v of %d offers, want [h100-80gb.sxm.1x] of 8", mapped, len(offers))
	}
}

// pricedOffer prices the region's offer against another cloud's comparable spot offer.
func pricedOffer(t *testing.T, e *env, region, typ string, otherPrice string) cloudprovider.Offer {
	t.Helper()
	offers := backendtest.Offers(t, e.backend)
	o := findOffer(t, offers, region, typ)
	priced := e.backend.PriceBids([]cloudprovider.Offer{o}, []cloudprovider.Offer{{Cloud: "verda", Region: "fin-01", GPUType: o.GPUType, GPUCount: o.GPUCount, PricePerHour: usd(otherPrice), Spot: true, Available: -1}}, 0)
	return priced[0]
}

func TestCreateGetDelete(t *testing.T) {
	e := newEnv(t, emu.Options{StopDuration: 10 * time.Second})
	ctx := t.Context()
	o := pricedOffer(t, e, "us-central1-a", "h100-80gb.sxm.8x", "14.00")
	// Required: max($12.03 + 10% = $13.24, $12.50 + $0.01, win $12.50, minimum $8.00) = $13.24; the bid is $13.99.
	if o.Ineligible != "" || o.PricePerHour != usd("13.99") || o.Details[DetailRequiredPrice] != "13.24" || o.Details[DetailLastClearing] != "12.03" {
		t.Fatalf("priced offer: %+v", o)
	}
	inst, err := e.backend.Create(ctx, cloudprovider.CreateRequest{Name: "mithril-vm-train", Offer: o, SSHPublicKeys: []string{testKey}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(inst.ID, "bid_") || inst.Name != "mithril-vm-train" || inst.Status != cloudprovider.StatusPending || inst.PricePerHour != usd("13.99") ||
		inst.GPUType != "h100" || inst.InstanceType != "h100-80gb.sxm.8x" || inst.Region != "us-central1-a" || !inst.Spot {
		t.Errorf("created: %+v", inst)
	}
	// The machine's hardware is its instance type's, from the catalog.
	hw := cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 208, MemoryGB: 1800}
	if inst.Hardware != hw || inst.GPUCount != 8 {
		t.Errorf("created: hardware %+v x%d, want %+v x8", inst.Hardware, inst.GPUCount, hw)
	}
	bids := e.emu.LiveBids()
	if len(bids) != 1 || bids[0].LimitCents != 1399 || bids[0].Name != "mithril-vm-train" {
		t.Fatalf("bids at the emulator: %+v", bids)
	}
	got, err := e.backend.Get(ctx, inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != cloudprovider.StatusPending || got.SSH != nil || !strings.HasPrefix(got.CloudStatus, "Allocated/STATUS_") || got.Hardware != hw {
		t.Errorf("booting: %+v", got)
	}
	e.clock.Advance(bootTime)
	got, err = e.backend.Get(ctx, inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != cloudprovider.StatusRunning || got.SSH == nil || !strings.HasPrefix(got.SSH.Host, "203.0.113.") || got.SSH.Port != 22 || got.SSH.User != "ubuntu" ||
		got.CloudStatus != "Allocated/STATUS_RUNNING" {
		t.Errorf("running: %+v ssh %+v", got, got.SSH)
	}

	// A second machine reuses the registered SSH key.
	inst2, err := e.backend.Create(ctx, cloudprovider.CreateRequest{Name: "mithril-vm-other", Offer: o, SSHPublicKeys: []string{testKey + " (same key, other comment)"}})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := e.client.SSHKeys(ctx, e.project)
	if err != nil || len(keys) != 1 {
		t.Errorf("ssh keys: %+v %v", keys, err)
	}
	b1, _ := e.client.GetBid(ctx, inst.ID)
	b2, _ := e.client.GetBid(ctx, inst2.ID)
	if len(b1.LaunchSpecification.SSHKeys) != 1 || b1.LaunchSpecification.SSHKeys[0] != keys[0].FID || b2.LaunchSpecification.SSHKeys[0] != keys[0].FID {
		t.Errorf("bids' keys: %v %v", b1.LaunchSpecification.SSHKeys, b2.LaunchSpecification.SSHKeys)
	}

	if err := e.backend.Delete(ctx, inst.ID); err != nil {
		t.Fatal(err)
	}
	got, err = e.backend.Get(ctx, inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != cloudprovider.StatusPending || got.CloudStatus != "Terminated/STATUS_STOPPING" {
		t.Errorf("stopping: %+v", got)
	}
	e.clock.Advance(10 * time.Second)
	got, err = e.backend.Get(ctx, inst.ID)
	if err != nil || got.Status != cloudprovider.StatusTerminated {
		t.Errorf("terminated: %+v %v", got, err)
	}
	if err := e.backend.Delete(ctx, inst.ID); err != nil {
		t.Errorf("second delete of a cancelled bid: %v, want nil", err)
	}
}

func TestCreateRefusesBadOffers(t *testing.T) {
	e := newEnv(t, emu.Options{})
	o := pricedOffer(t, e, "us-central1-a", "h100-80gb.sxm.8x", "13.00") // bid $12.99 < $13.24
	if o.Ineligible == "" {
		t.Fatal("expected ineligible")
	}
	if _, err := e.backend.Create(t.Context(), cloudprovider.CreateRequest{Name: "mithril-vm-x", Offer: o}); cloudprovider.KindOf(err) != cloudprovider.ErrInvalid {
		t.Errorf("ineligible offer: %v", err)
	}
	o = pricedOffer(t, e, "us-central1-a", "h100-80gb.sxm.8x", "14.00")
	// $13.99 above a $13.50 cap: a capacity error, as if the offer had sold out.
	if _, err := e.backend.Create(t.Context(), cloudprovider.CreateRequest{Name: "mithril-vm-x", Offer: o, MaxPricePerHour: usd("13.50")}); !cloudprovider.IsCapacity(err) || !strings.Contains(err.Error(), "$13.99/h") || !strings.Contains(err.Error(), "$13.50/h") {
		t.Errorf("above max price: %v", err)
	}
	mark := e.counter.mark()
	if _, err := e.backend.Create(t.Context(), cloudprovider.CreateRequest{Name: "mithril-vm-x", Offer: o, MaxPricePerHour: usd("13.989999")}); !cloudprovider.IsCapacity(err) {
		t.Errorf("a cap a fraction of a cent below the bid: %v", err)
	}
	if calls := e.counter.since(mark); len(calls) != 0 {
		t.Errorf("a bid above the cap called the API: %v", calls)
	}
	// An offer of a GPU the inventory does not map is never bid on, even with a price and no reason.
	offers := backendtest.Offers(t, e.backend)
	mark = e.counter.mark()
	a10 := findOffer(t, offers, "us-central5-a", "a10-24gb.pcie.1x")
	if _, err := e.backend.Create(t.Context(), cloudprovider.CreateRequest{Name: "mithril-vm-x", Offer: a10}); cloudprovider.KindOf(err) != cloudprovider.ErrInvalid || !strings.Contains(err.Error(), "GPU not in the inventory") {
		t.Errorf("unmapped offer: %v", err)
	}
	if calls := e.counter.since(mark); len(calls) != 0 {
		t.Errorf("an unmapped offer called the API: %v", calls)
	}
	if e.emu.CreateCount() != 0 {
		t.Errorf("bids were placed")
	}
}

func TestCreateResolvesFIDWithoutDetails(t *testing.T) {
	e := newEnv(t, emu.Options{})
	o := pricedOffer(t, e, "us-central1-b", "h100-80gb.sxm.8x", "20.00")
	delete(o.Details, DetailInstanceTypeFID)
	o.Ineligible = ""
	inst, err := e.backend.Create(t.Context(), cloudprovider.CreateRequest{Name: "mithril-vm-b", Offer: o})
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.client.GetBid(t.Context(), inst.ID)
	if err != nil || b.InstanceType != e.emu.InstanceTypeFID("us-central1-b", "h100-80gb.sxm.8x") || b.Region != "us-central1-b" {
		t.Errorf("bid %+v %v", b, err)
	}
}

func TestBidWaitsWhenAuctionFull(t *testing.T) {
	e := newEnv(t, emu.Options{})
	// us-central1-b is full (two market bids at $12.00 and $12.20); a bid at $12.10 does not win.
	o := pricedOffer(t, e, "us-central1-b", "h100-80gb.sxm.8x", "12.11")
	if !strings.Contains(o.Ineligible, "auction has no capacity now") {
		t.Errorf("expected ineligible for capacity: %q", o.Ineligible)
	}
	o.Ineligible = ""
	inst, err := e.backend.Create(t.Context(), cloudprovider.CreateRequest{Name: "mithril-vm-wait", Offer: o})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(bootTime)
	got, err := e.backend.Get(t.Context(), inst.ID)
	if err != nil || got.Status != cloudprovider.StatusPending || got.CloudStatus != "Open" {
		t.Errorf("open bid: %+v %v", got, err)
	}
}

func TestListByPrefix(t *testing.T) {
	e := newEnv(t, emu.Options{})
	ctx := t.Context()
	o := pricedOffer(t, e, "us-central1-a", "a100-80gb.sxm.1x", "2.00")
	if o.Ineligible != "" {
		t.Fatalf("offer %+v", o)
	}
	var ids []string
	for _, n := range []string{"mithril-vm-a", "mithril-vm-b", "other-c"} {
		inst, err := e.backend.Create(ctx, cloudprovider.CreateRequest{Name: n, Offer: o})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, inst.ID)
	}
	list, err := e.backend.List(ctx, "mithril-vm-")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Fatalf("list: %+v", list)
	}
	for _, in := range list {
		if !strings.HasPrefix(in.Name, "mithril-vm-") || in.Status != cloudprovider.StatusPending || in.GPUType != "a100-80gb" {
			t.Errorf("listed %+v", in)
		}
	}
	if err := e.backend.Delete(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	list, err = e.backend.List(ctx, "mithril-vm-")
	if err != nil || len(list) != 1 || list[0].ID != ids[1] {
		t.Errorf("after delete: %+v %v", list, err)
	}
}

func TestProjectResolution(t *testing.T) {
	e := newEnv(t, emu.Options{Projects: []string{"alpha", "beta"}})
	inv := backendtest.Inventory(t)
	for _, tt := range []struct {
		project string
		want    string
		ok      bool
	}{
		{"alpha", emu.ProjectFID("alpha"), true},
		{emu.ProjectFID("beta"), emu.ProjectFID("beta"), true},
		{"", "", false},
		{"gamma", "", false},
	} {
		b, err := New(Config{APIKey: emu.DefaultAPIKey, Project: tt.project, BaseURL: e.srv.URL}, inv, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.projectFID(t.Context())
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("project %q: %q %v", tt.project, got, err)
		}
		if err != nil && cloudprovider.KindOf(err) != cloudprovider.ErrInvalid {
			t.Errorf("project %q: kind %v", tt.project, cloudprovider.KindOf(err))
		}
	}
	neg := -1.0
	if _, err := New(Config{APIKey: "k", WinMarginPercent: &neg}, inv, nil); err == nil {
		t.Errorf("negative margin accepted")
	}
	b, _ := New(Config{APIKey: "k"}, inv, nil)
	if b.WinMarginPercent() != DefaultWinMarginPercent {
		t.Errorf("default margin %v", b.WinMarginPercent())
	}
}

// writes are the calls among calls that are not GETs.
func writes(calls []string) []string {
	var out []string
	for _, c := range calls {
		if !strings.HasPrefix(c, "GET ") {
			out = append(out, c)
		}
	}
	return out
}

func bidOf(t *testing.T, e *env, fid string) emu.BidInfo {
	t.Helper()
	for _, b := range e.emu.Bids() {
		if b.FID == fid {
			return b
		}
	}
	t.Fatalf("no bid %s at the emulator", fid)
	return emu.BidInfo{}
}

// A preempted machine is gone for good, but its bid is not: Get and List report an error (so the
// instance stays in state and is replaced) and change nothing at the cloud (no PATCH, no DELETE), even
// once Mithril allocates the open bid a replacement. Delete cancels the bid.
func TestPreemptedBid(t *testing.T) {
	for _, lookLate := range []bool{false, true} {
		name := map[bool]string{false: "seen while preempting", true: "seen after the preemption window, replacement allocated"}[lookLate]
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, emu.Options{PreemptionWindow: time.Minute})
			ctx := t.Context()
			pool := backendtest.Pool(t, CloudName)
			// a100-80gb.sxm.8x in us-central1-a: capacity 2, no other bids, last price $7.80.
			o := pricedOffer(t, e, "us-central1-a", "a100-80gb.sxm.8x", "9.00")
			if o.Ineligible != "" || o.PricePerHour != usd("8.99") {
				t.Fatalf("offer %+v", o)
			}
			inst, err := e.backend.Create(ctx, cloudprovider.CreateRequest{Name: "mithril-vm-pre--aaaaaaaa", Pool: pool, Offer: o})
			if err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(bootTime)
			if got, _ := e.backend.Get(ctx, inst.ID); got.Status != cloudprovider.StatusRunning {
				t.Fatalf("not running: %+v", got)
			}
			// Two newer, higher bids for two slots: ours is outbid.
			for _, p := range []int64{950, 1000} {
				if _, err := e.emu.AddMarketBid("us-central1-a", "a100-80gb.sxm.8x", p); err != nil {
					t.Fatal(err)
				}
			}
			if b := bidOf(t, e, inst.ID); b.Status != "Preempting" || b.InstanceStatuses[0] != "STATUS_PREEMPTING" {
				t.Fatalf("emulator: %+v", b)
			}
			if lookLate {
				e.clock.Advance(time.Minute)
				// Capacity comes back: Mithril allocates the open bid a new machine.
				if err := e.emu.SetCapacity("us-central1-a", "a100-80gb.sxm.8x", 5); err != nil {
					t.Fatal(err)
				}
				e.clock.Advance(bootTime)
				if b := bidOf(t, e, inst.ID); b.Status != "Allocated" || len(b.Instances) != 1 {
					t.Fatalf("replacement: %+v", b)
				}
			}
			mark := e.counter.mark()
			for range 2 {
				got, err := e.backend.Get(ctx, inst.ID)
				if err != nil {
					t.Fatal(err)
				}
				if got.Status != cloudprovider.StatusError || !strings.Contains(got.Message, "preempted") || !strings.Contains(got.Message, "bid is still open") || got.SSH != nil {
					t.Errorf("Get of a preempted bid: %+v", got)
				}
				list, err := e.backend.List(ctx, pool.Prefix)
				if err != nil {
					t.Fatal(err)
				}
				if len(list) != 1 || list[0].ID != inst.ID || list[0].Status != cloudprovider.StatusError {
					t.Errorf("List: %+v", list)
				}
			}
			if w := writes(e.counter.since(mark)); len(w) != 0 {
				t.Errorf("Get and List changed the cloud: %v", w)
			}
			if b := bidOf(t, e, inst.ID); b.Status == "Terminated" {
				t.Errorf("Get or List cancelled the bid")
			}

			// Replacing (or destroying) the errored instance deletes it: the bid is cancelled.
			if err := e.backend.Delete(ctx, inst.ID); err != nil {
				t.Fatal(err)
			}
			if b := bidOf(t, e, inst.ID); b.Status != "Terminated" {
				t.Errorf("Delete left the bid %s", b.Status)
			}
			if got, err := e.backend.Get(ctx, inst.ID); err != nil || got.Status != cloudprovider.StatusTerminated {
				t.Errorf("after Delete: %+v %v", got, err)
			}
		})
	}
}

// The emulator's preemption notice, as the backend reads it: a notice (bid Preempting, the instance
// STATUS_PREEMPTING) is an interruption ending at the instance's end_time; a bid that wins its capacity
// back within the window is running again with none; one whose window ends is preempted for good.
func TestPreemptionNotice(t *testing.T) {
	for _, winBack := range []bool{true, false} {
		name := "notice, then preempted"
		if winBack {
			name = "notice, then won back"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, emu.Options{})
			ctx := t.Context()
			inst := runningBid(t, e, "mithril-vm-spot--aaaaaaaa")
			if got, err := e.backend.Get(ctx, inst.ID); err != nil || got.Status != cloudprovider.StatusRunning || got.Interruption != nil {
				t.Fatalf("before the notice: %+v %v", got, err)
			}
			// The admin endpoint, as a test in another process would call it; the notice is Mithril's 5 minutes.
			post(t, e.srv.URL+emu.PreemptionsPath, emu.PreemptionChange{Bid: inst.ID, Action: "preempt"}, http.StatusOK)
			noticeAt := e.clock.Now()
			got, err := e.backend.Get(ctx, inst.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Interruption == nil || !got.Interruption.EndsAt.Equal(noticeAt.Add(5*time.Minute)) || !strings.Contains(got.Interruption.Reason, "STATUS_PREEMPTING") {
				t.Fatalf("during the notice: %+v (interruption %+v)", got, got.Interruption)
			}
			if got.Interruption.Ended(e.clock.Now()) {
				t.Error("the notice has ended at once")
			}
			e.clock.Advance(time.Minute)
			if winBack {
				post(t, e.srv.URL+emu.PreemptionsPath, emu.PreemptionChange{Bid: inst.ID, Action: "win_back"}, http.StatusOK)
				e.clock.Advance(5 * time.Minute)
				got, err = e.backend.Get(ctx, inst.ID)
				if err != nil || got.Status != cloudprovider.StatusRunning || got.Interruption != nil || got.SSH == nil {
					t.Fatalf("won back: %+v %v", got, err)
				}
				// Winning back a bid that is not preempting is refused.
				post(t, e.srv.URL+emu.PreemptionsPath, emu.PreemptionChange{Bid: inst.ID, Action: "win_back"}, http.StatusConflict)
				return
			}
			e.clock.Advance(5 * time.Minute)
			got, err = e.backend.Get(ctx, inst.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != cloudprovider.StatusError || got.Interruption == nil || !strings.Contains(got.Interruption.Reason, "STATUS_PREEMPTED") ||
				!got.Interruption.EndsAt.Equal(noticeAt.Add(5*time.Minute)) || !got.Interruption.Ended(e.clock.Now()) {
				t.Fatalf("after the window: %+v (interruption %+v)", got, got.Interruption)
			}
		})
	}
}

// A cluster is one bid for all its instances, so the emulator's preemption notice (the admin
// endpoint, Mithril's 5 minutes) reaches every node at once: each instance STATUS_PREEMPTING with the
// bid's end_time, each node's interruption ending then, the cluster in error; a bid that wins its
// capacity back runs every node again with none; one whose notice ends has no node left, and the
// cluster stays in error, preempted.
func TestClusterPreemptionNotice(t *testing.T) {
	for _, winBack := range []bool{true, false} {
		name := map[bool]string{true: "won back", false: "preempted"}[winBack]
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, emu.Options{})
			ctx := t.Context()
			c := spotCluster(t, e)
			e.clock.Advance(bootTime)
			if got, err := e.backend.GetCluster(ctx, c.ID); err != nil || got.Status != cloudprovider.StatusRunning || len(got.Nodes) != 3 {
				t.Fatalf("before the notice: %+v %v", got, err)
			}
			post(t, e.srv.URL+emu.PreemptionsPath, emu.PreemptionChange{Bid: c.ID, Action: "preempt"}, http.StatusOK)
			end := e.clock.Now().Add(5 * time.Minute)
			got, err := e.backend.GetCluster(ctx, c.ID)
			if err != nil || got.Status != cloudprovider.StatusError || len(got.Nodes) != 3 {
				t.Fatalf("during the notice: %+v %v", got, err)
			}
			for _, n := range got.Nodes {
				st, err := e.client.InstanceStatus(ctx, n.ID)
				if err != nil || st.Status != InstPreempting || st.EndTime == nil || !st.EndTime.Equal(end) {
					t.Errorf("instance %s: %+v %v", n.ID, st, err)
				}
				if n.Interruption == nil || !n.Interruption.EndsAt.Equal(end) || !strings.Contains(n.Interruption.Reason, InstPreempting) {
					t.Errorf("node %s: interruption %+v", n.Name, n.Interruption)
				}
			}
			e.clock.Advance(time.Minute)
			if winBack {
				post(t, e.srv.URL+emu.PreemptionsPath, emu.PreemptionChange{Bid: c.ID, Action: "win_back"}, http.StatusOK)
				got, err := e.backend.GetCluster(ctx, c.ID)
				if err != nil || got.Status != cloudprovider.StatusRunning || len(got.Nodes) != 3 {
					t.Fatalf("won back: %+v %v", got, err)
				}
				for _, n := range got.Nodes {
					if n.Interruption != nil || n.Status != cloudprovider.StatusRunning {
						t.Errorf("node %s won back: %+v (interruption %+v)", n.Name, n.Status, n.Interruption)
					}
				}
				return
			}
			e.clock.Advance(5 * time.Minute)
			got, err = e.backend.GetCluster(ctx, c.ID)
			if err != nil || got.Status != cloudprovider.StatusError || !strings.Contains(got.Message, "preempted") {
				t.Fatalf("after the notice: %+v %v", got, err)
			}
			for _, n := range got.Nodes {
				if n.Interruption == nil {
					t.Errorf("node %s after the notice without interruption", n.Name)
				}
			}
		})
	}
}

// A shortened notice, for tests that wait it out, and an unknown bid.
func TestPreemptionNoticeWindow(t *testing.T) {
	e := newEnv(t, emu.Options{})
	ctx := t.Context()
	inst := runningBid(t, e, "mithril-vm-short--aaaaaaaa")
	if err := e.emu.Preempt(inst.ID, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	got, err := e.backend.Get(ctx, inst.ID)
	if err != nil || got.Interruption == nil || !got.Interruption.EndsAt.Equal(e.clock.Now().Add(10*time.Second)) {
		t.Fatalf("short notice: %+v %v", got, err)
	}
	post(t, e.srv.URL+emu.PreemptionsPath, emu.PreemptionChange{Bid: "bid_nosuchbid00000000", Action: "preempt"}, http.StatusNotFound)
	post(t, e.srv.URL+emu.PreemptionsPath, emu.PreemptionChange{Bid: inst.ID, Action: "preempt"}, http.StatusConflict)
}

// runningBid is a one-instance bid of that name whose machine has booted.
func runningBid(t *testing.T, e *env, name string) cloudprovider.Instance {
	t.Helper()
	o := pricedOffer(t, e, "us-central1-a", "a100-80gb.sxm.1x", "2.00")
	inst, err := e.backend.Create(t.Context(), cloudprovider.CreateRequest{Name: name, Pool: backendtest.Pool(t, CloudName), Offer: o})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(bootTime)
	return inst
}

func post(t *testing.T, url string, body any, want int) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != want {
		t.Fatalf("POST %s: %d, want %d", url, resp.StatusCode, want)
	}
}

// Create's housekeeping cancels the earlier bids of the same resource whose machine is gone, and
// nothing else.
func TestCreateReapsGoneBidsOfTheResource(t *testing.T) {
	e := newEnv(t, emu.Options{PreemptionWindow: time.Minute})
	ctx := t.Context()
	pool := backendtest.Pool(t, CloudName)
	o := pricedOffer(t, e, "us-central1-a", "a100-80gb.sxm.1x", "2.00")
	if o.Ineligible != "" {
		t.Fatalf("offer %+v", o)
	}
	create := func(name string, o cloudprovider.Offer) string {
		t.Helper()
		inst, err := e.backend.Create(ctx, cloudprovider.CreateRequest{Name: name, Pool: pool, Offer: o})
		if err != nil {
			t.Fatal(err)
		}
		return inst.ID
	}
	old := create("mithril-vm-train--aaaaaaaa", o)
	legacy := create("mithril-vm-train", o)
	other := create("mithril-vm-other--aaaaaaaa", o)
	prefixed := create("mithril-vm-train-2--aaaaaaaa", o)
	if err := e.emu.SetOwnFaults(emu.OwnFaults{Preemptions: 4}); err != nil {
		t.Fatal(err)
	}
	for _, fid := range []string{old, legacy, other, prefixed} {
		if b := bidOf(t, e, fid); b.Status != "Preempting" {
			t.Fatalf("bid %s not preempted: %+v", fid, b)
		}
	}
	running := create("mithril-vm-train--cccccccc", o)
	cheap := o
	cheap.PricePerHour = usd("0.50") // below the auction's $0.60 minimum: the bid waits, Open, without a machine
	waiting := create("mithril-vm-train--dddddddd", cheap)
	e.clock.Advance(bootTime)

	fresh := create("mithril-vm-train--bbbbbbbb", o)
	want := map[string]string{old: "Terminated", legacy: "Terminated", other: "Preempting", prefixed: "Preempting",
		running: "Allocated", waiting: "Open", fresh: "Allocated"}
	for fid, status := range want {
		if b := bidOf(t, e, fid); b.Status != status {
			t.Errorf("bid %s (%s) is %s, want %s", b.Name, fid, b.Status, status)
		}
	}
}

// Mithril keeps only a name on a bid: the ownership record is the name, and there is nothing to confirm.
func TestOwnershipIsTheName(t *testing.T) {
	e := newEnv(t, emu.Options{})
	if _, ok := any(e.backend).(cloudprovider.OwnershipConfirmer); ok {
		t.Error("Mithril cannot record a confirmation; the backend must not claim to")
	}
	pool := backendtest.Pool(t, CloudName)
	o := pricedOffer(t, e, "us-central1-a", "a100-80gb.sxm.1x", "2.00")
	owner := cloudprovider.Ownership{Resource: "train", Token: cloudprovider.NewOwnerToken()}
	req := cloudprovider.CreateRequest{Name: cloudprovider.CloudName(pool, "train", owner.Token), Pool: pool, Offer: o, Owner: owner}
	inst, err := e.backend.Create(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if b := bidOf(t, e, inst.ID); b.Name != req.Name {
		t.Errorf("the bid is named %q, want %q", b.Name, req.Name)
	}
	got, err := e.backend.Get(t.Context(), inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec := cloudprovider.WithOwner(pool, got).Owner; rec.Resource != "train" || rec.Token != owner.Token || rec.Confirmed {
		t.Errorf("record from the name: %+v", rec)
	}
	// A second create of the name returns the bid (idempotent by name) and places nothing.
	again, err := e.backend.Create(t.Context(), req)
	if err != nil || again.ID != inst.ID || e.emu.CreateCount() != 1 {
		t.Errorf("second create: %+v %v, %d bids placed", again, err, e.emu.CreateCount())
	}
}

// Nothing comparable: the bid is what the auction needs to win now, not the user's max.
func TestPriceBidsWithoutComparableOffer(t *testing.T) {
	e := newEnv(t, emu.Options{})
	offers := backendtest.Offers(t, e.backend)
	o := findOffer(t, offers, "us-central1-a", "h100-80gb.sxm.8x")
	// Required: max($12.03 + 10% = $13.24, $12.50 + $0.01, win $12.50, minimum $8.00) = $13.24.
	p := e.backend.PriceBids([]cloudprovider.Offer{o}, nil, usd("20"))[0]
	if p.Ineligible != "" || p.PricePerHour != usd("13.24") || p.Details[DetailBidPrice] != "13.24" || p.Details[DetailUndercuts] != "" {
		t.Errorf("bid without a comparable offer: %+v", p)
	}
	p = e.backend.PriceBids([]cloudprovider.Offer{o}, nil, usd("13.239999"))[0]
	if p.PricePerHour != usd("13.23") || p.Ineligible != "bid $13.23/h does not clear: needs at least $13.24/h (last winning $12.03/h + 10% margin), above max_price_per_hour $13.239999/h" {
		t.Errorf("need above the max: %+v", p)
	}
}

// A bid not won in time: the emulator holds it Open, and the backend reports it pending ("Open") for as
// long as that lasts, until the auction has capacity again.
func TestBidNotWonInTime(t *testing.T) {
	e := newEnv(t, emu.Options{})
	ctx := t.Context()
	o := pricedOffer(t, e, "us-central1-a", "a100-80gb.sxm.1x", "2.00")
	if o.Ineligible != "" || o.PricePerHour != usd("1.99") {
		t.Fatalf("offer %+v", o)
	}
	// The auction loses its capacity between plan and apply (the admin knob).
	zero := 0
	if _, err := e.emu.SetAuction(emu.AuctionChange{Region: "us-central1-a", InstanceType: "a100-80gb.sxm.1x", Capacity: &zero}); err != nil {
		t.Fatal(err)
	}
	offers := backendtest.Offers(t, e.backend)
	if f := findOffer(t, offers, "us-central1-a", "a100-80gb.sxm.1x"); f.Available != 0 ||
		f.Ineligible != "auction has no capacity now (last clearing price $0.95/h, lowest winning bid none)" {
		t.Errorf("emptied auction: %+v", f)
	}
	inst, err := e.backend.Create(ctx, cloudprovider.CreateRequest{Name: "mithril-vm-late", Offer: o, MaxPricePerHour: usd("2.00")})
	if err != nil || !inst.AwaitingAllocation {
		t.Fatalf("create: %+v %v", inst, err)
	}
	for range 3 {
		e.clock.Advance(time.Hour)
		got, err := e.backend.Get(ctx, inst.ID)
		if err != nil || got.Status != cloudprovider.StatusPending || got.CloudStatus != "Open" || got.PricePerHour != usd("1.99") || !got.AwaitingAllocation {
			t.Fatalf("held bid: %+v %v", got, err)
		}
	}
	// Capacity comes back: the open bid is allocated.
	if _, err := e.emu.SetAuction(emu.AuctionChange{Region: "us-central1-a", InstanceType: "a100-80gb.sxm.1x", Capacity: new(8)}); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.backend.Get(ctx, inst.ID); got.CloudStatus != "Allocated/STATUS_NEW" || got.AwaitingAllocation {
		t.Errorf("the open bid is allocated once capacity is back: %+v", got)
	}
	// A new bid below the lowest winning bid (another customer's $1.00, allocated again) waits too, with
	// capacity free, although it is above the auction's $0.60 minimum.
	cheap := o
	cheap.PricePerHour = usd("0.90")
	below, err := e.backend.Create(ctx, cloudprovider.CreateRequest{Name: "mithril-vm-below", Offer: cheap})
	if err != nil || !below.AwaitingAllocation || below.Status != cloudprovider.StatusPending {
		t.Fatalf("create below the lowest winning bid: %+v %v", below, err)
	}
	e.clock.Advance(bootTime)
	if got, _ := e.backend.Get(ctx, below.ID); got.Status != cloudprovider.StatusPending || got.CloudStatus != "Open" || !got.AwaitingAllocation {
		t.Errorf("a bid below the lowest winning bid: %+v", got)
	}
}

// Create bids whole cents and never above the max, rounded down to a cent.
func TestCreateCapsInWholeCents(t *testing.T) {
	e := newEnv(t, emu.Options{})
	o := pricedOffer(t, e, "us-central1-a", "a100-80gb.sxm.1x", "3.00") // bid $2.99
	if _, err := e.backend.Create(t.Context(), cloudprovider.CreateRequest{Name: "mithril-vm-cap", Offer: o, MaxPricePerHour: usd("2.989999")}); !cloudprovider.IsCapacity(err) ||
		!strings.Contains(err.Error(), "now costs $2.99/h, above the maximum $2.989999/h") {
		t.Errorf("bid above the cap: %v", err)
	}
	inst, err := e.backend.Create(t.Context(), cloudprovider.CreateRequest{Name: "mithril-vm-cap", Offer: o, MaxPricePerHour: usd("2.999999")})
	if err != nil || inst.PricePerHour != usd("2.99") {
		t.Fatalf("bid within the cap: %+v %v", inst, err)
	}
	if b := bidOf(t, e, inst.ID); b.LimitCents != 299 {
		t.Errorf("limit %d cents", b.LimitCents)
	}
	// An offer price between cents is bid rounded down.
	odd := o
	odd.PricePerHour = usd("2.995")
	inst, err = e.backend.Create(t.Context(), cloudprovider.CreateRequest{Name: "mithril-vm-odd", Offer: odd, MaxPricePerHour: usd("2.999999")})
	if err != nil || bidOf(t, e, inst.ID).LimitCents != 299 {
		t.Errorf("odd price: %+v %v", inst, err)
	}
}
