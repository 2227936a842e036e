package mithril

import (
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	client "github.com/hydragpu/terraform-provider-hydra/internal/backends/mithril"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit/emutest"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

func call(t *testing.T, base, method, path string, body any, out any) int {
	t.Helper()
	a := emutest.Fetch(t, base, method, path, body, "Authorization", "Bearer "+DefaultAPIKey)
	if out != nil && len(a.Raw) > 0 {
		if err := json.Unmarshal(a.Raw, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, a.Raw)
		}
	}
	return a.Status
}

// auctionServer serves an emulator on a fake clock (machines boot in 10 s, a minute's preemption
// window) over HTTP, with the FID of the instance type its tests bid on in us-central1-a.
func auctionServer(t *testing.T) (*backendtest.Clock, *Server, *httptest.Server, string) {
	t.Helper()
	c := backendtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := New(Options{Options: simulation.Options{Now: c.Now, BootDuration: 10 * time.Second}, PreemptionWindow: time.Minute})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return c, s, srv, s.InstanceTypeFID("us-central1-a", "a100-80gb.sxm.1x")
}

func bidBody(name, typeFID, region, price string) map[string]any {
	return map[string]any{"project": ProjectFID(DefaultProject), "region": region, "instance_type": typeFID, "limit_price": price,
		"instance_quantity": 1, "name": name, "launch_specification": map[string]any{"volumes": []string{}, "ssh_keys": []string{}}}
}

func pricing(t *testing.T, base, fid, region string) map[string]any {
	var p map[string]any
	if code := call(t, base, "GET", "/v2/pricing/current?"+url.Values{"instance_type": {fid}, "region": {region}}.Encode(), nil, &p); code != 200 {
		t.Fatalf("pricing: %d", code)
	}
	return p
}

func TestSecondPriceAuction(t *testing.T) {
	c := backendtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := New(Options{
		Options:          simulation.Options{Now: c.Now, BootDuration: 10 * time.Second},
		PreemptionWindow: time.Minute,
		Catalog: []Offering{
			{Name: "h100-80gb.sxm.8x", GPUType: "H100", NumGPUs: 8, Region: "r1", Capacity: 2, MinimumCents: 500, LastPriceCents: 900},
		},
	})
	srv := httptest.NewServer(s)
	defer srv.Close()
	fid := s.InstanceTypeFID("r1", "h100-80gb.sxm.8x")
	status := func(b map[string]any) any {
		t.Helper()
		var got map[string]any
		call(t, srv.URL, "GET", "/v2/spot/bids/"+b["fid"].(string), nil, &got)
		return got["status"]
	}

	var low, high, under, mid, top map[string]any
	if code := call(t, srv.URL, "POST", "/v2/spot/bids", bidBody("low", fid, "r1", "$4.00"), &low); code != 201 {
		t.Fatalf("create: %d", code)
	}
	if low["status"] != "Open" || low["limit_price"] != "$4.00" || !strings.HasPrefix(low["fid"].(string), "bid_") {
		t.Errorf("below the minimum stays open: %v", low)
	}
	call(t, srv.URL, "POST", "/v2/spot/bids", bidBody("high", fid, "r1", "$10.00"), &high)
	if high["status"] != "Allocated" || len(high["instances"].([]any)) != 1 {
		t.Errorf("allocated: %v", high)
	}
	p := pricing(t, srv.URL, fid, "r1")
	// One slot left, no losing bid above the minimum: clearing at the minimum. A new bid needs the
	// lowest winning bid, $10.00, although a slot is free.
	if p["spot_price_cents"] != 500.0 || p["available_capacity"] != 1.0 || p["lowest_allocated_bid_cents"] != 1000.0 || p["dynamic_win_price_cents"] != 1000.0 {
		t.Errorf("pricing after one win: %v", p)
	}
	// A new bid below the lowest winning bid stays Open, even with a slot free.
	call(t, srv.URL, "POST", "/v2/spot/bids", bidBody("under", fid, "r1", "$7.00"), &under)
	if under["status"] != "Open" || len(under["instances"].([]any)) != 0 {
		t.Errorf("a bid below the lowest winning bid: %v", under)
	}
	// One that beats it takes the slot; winners pay the highest losing bid (the held $7.00).
	call(t, srv.URL, "POST", "/v2/spot/bids", bidBody("mid", fid, "r1", "$11.00"), &mid)
	if mid["status"] != "Allocated" {
		t.Errorf("a bid above the lowest winning bid: %v", mid)
	}
	if p := pricing(t, srv.URL, fid, "r1"); p["spot_price_cents"] != 700.0 || p["available_capacity"] != 0.0 || p["dynamic_win_price_cents"] != 1001.0 {
		t.Errorf("pricing when full: %v", p)
	}
	// A newer, higher bid with the auction full: "high" (the lowest allocated) is outbid.
	call(t, srv.URL, "POST", "/v2/spot/bids", bidBody("top", fid, "r1", "$12.00"), &top)
	if got := status(high); got != "Preempting" {
		t.Errorf("outbid bid: %v", got)
	}
	if top["status"] != "Open" {
		t.Errorf("the new bid waits for the preemption window: %v", top["status"])
	}
	var avail []map[string]any
	call(t, srv.URL, "GET", "/v2/spot/availability", nil, &avail)
	if len(avail) != 1 || avail[0]["capacity"] != 0.0 || avail[0]["lowest_allocated_price"] != "$11.00" || !strings.HasPrefix(avail[0]["fid"].(string), "auc_") {
		t.Errorf("availability: %v", avail)
	}
	c.Advance(time.Minute)
	if got := status(top); got != "Allocated" {
		t.Errorf("after the window the higher bid wins: %v", got)
	}
	if got := status(high); got != "Open" {
		t.Errorf("the preempted bid stays open: %v", got)
	}
	// Winners pay the highest losing bid: $10.00.
	if p := pricing(t, srv.URL, fid, "r1"); p["spot_price_cents"] != 1000.0 {
		t.Errorf("second price: %v", p)
	}
	var insts struct {
		Data []map[string]any `json:"data"`
	}
	call(t, srv.URL, "GET", "/v2/instances?project="+ProjectFID(DefaultProject)+"&bid_fid_in="+high["fid"].(string), nil, &insts)
	if len(insts.Data) != 1 || insts.Data[0]["status"] != "STATUS_PREEMPTED" || insts.Data[0]["ssh_destination"] != nil {
		t.Errorf("preempted instance: %v", insts.Data)
	}
	// Cancelling: 204, instances terminated, and a second cancel is a 404.
	if code := call(t, srv.URL, "DELETE", "/v2/spot/bids/"+mid["fid"].(string), nil, nil); code != 204 {
		t.Errorf("cancel: %d", code)
	}
	call(t, srv.URL, "GET", "/v2/instances?project="+ProjectFID(DefaultProject)+"&bid_fid_in="+mid["fid"].(string), nil, &insts)
	if insts.Data[0]["status"] != "STATUS_TERMINATED" {
		t.Errorf("cancelled bid's instance: %v", insts.Data)
	}
	var e404 map[string]any
	if code := call(t, srv.URL, "DELETE", "/v2/spot/bids/"+mid["fid"].(string), nil, &e404); code != 404 || e404["detail"] == nil {
		t.Errorf("second cancel: %d %v", code, e404)
	}
	// The freed slot goes to the best open bid: the preempted one is allocated anew. The held bid still
	// waits below the lowest winning bid.
	if got := status(high); got != "Allocated" {
		t.Errorf("reallocation: %v", got)
	}
	if got := status(under); got != "Open" {
		t.Errorf("held bid: %v", got)
	}
	// Once no bid wins any more, the held bid is released and wins a slot.
	call(t, srv.URL, "DELETE", "/v2/spot/bids/"+high["fid"].(string), nil, nil)
	call(t, srv.URL, "DELETE", "/v2/spot/bids/"+top["fid"].(string), nil, nil)
	if got := status(under); got != "Allocated" {
		t.Errorf("released bid: %v", got)
	}
	if got := status(low); got != "Open" {
		t.Errorf("below the minimum: %v", got)
	}
}

// The admin knob holds bids Open: an auction without capacity allocates nothing, and market bids set
// its lowest winning bid, below which new bids wait.
func TestAuctionAdminHoldsBidsOpen(t *testing.T) {
	c, s, srv, fid := auctionServer(t)
	put := func(body string) (int, AuctionInfo) {
		t.Helper()
		a := emutest.Fetch(t, srv.URL, "PUT", AuctionsPath, body)
		var info AuctionInfo
		_ = json.Unmarshal(a.Raw, &info)
		return a.Status, info
	}

	// Capacity 0 over HTTP: the market's allocated bid is preempted, and hydra's new bid waits Open.
	code, info := put(`{"region":"us-central1-a","instance_type":"a100-80gb.sxm.1x","capacity":0}`)
	if code != 200 || info.Capacity != 0 || info.Available != 0 || info.InstanceType != "a100-80gb.sxm.1x" || !slices.Equal(info.MarketBidsCents, []int64{100}) {
		t.Fatalf("PUT capacity 0: %d %+v", code, info)
	}
	var b map[string]any
	call(t, srv.URL, "POST", "/v2/spot/bids", bidBody("waits", fid, "us-central1-a", "$9.00"), &b)
	c.Advance(time.Hour)
	live := s.LiveBids()
	if len(live) != 1 || live[0].Status != "Open" || len(live[0].Instances) != 0 {
		t.Fatalf("a bid in an auction without capacity: %+v", live)
	}
	var avail []map[string]any
	call(t, srv.URL, "GET", "/v2/spot/availability", nil, &avail)
	for _, a := range avail {
		if a["instance_type"] == fid && (a["capacity"] != 0.0 || a["lowest_allocated_price"] != nil) {
			t.Errorf("availability of the emptied auction: %v", a)
		}
	}
	// Capacity back: the bid (the best) is allocated.
	if _, err := s.SetAuction(AuctionChange{Region: "us-central1-a", InstanceType: "a100-80gb.sxm.1x", Capacity: new(1)}); err != nil {
		t.Fatal(err)
	}
	if live := s.LiveBids(); live[0].Status != "Allocated" {
		t.Errorf("after capacity is back: %+v", live)
	}

	// Market bids raise the lowest winning bid: with capacity free, a new bid below it waits Open.
	code, info = put(`{"region":"us-central1-a","instance_type":"a100-80gb.sxm.1x","capacity":8,"market_bids_cents":[5000,6000]}`)
	if code != 200 || info.Available != 5 || info.LowestWinningCents != 900 || !slices.Equal(info.MarketBidsCents, []int64{5000, 6000}) {
		t.Fatalf("PUT market bids: %d %+v", code, info)
	}
	call(t, srv.URL, "DELETE", "/v2/spot/bids/"+b["fid"].(string), nil, nil)
	if got := s.Auctions(); got[1].LowestWinningCents != 5000 || got[1].WinPriceCents != 5000 {
		t.Fatalf("auctions: %+v", got[1])
	}
	var held, wins map[string]any
	call(t, srv.URL, "POST", "/v2/spot/bids", bidBody("held", fid, "us-central1-a", "$49.99"), &held)
	call(t, srv.URL, "POST", "/v2/spot/bids", bidBody("wins", fid, "us-central1-a", "$50.00"), &wins)
	if held["status"] != "Open" || wins["status"] != "Allocated" {
		t.Errorf("below and at the lowest winning bid: %v %v", held["status"], wins["status"])
	}

	// Listing, and errors.
	a := emutest.Fetch(t, srv.URL, "GET", AuctionsPath, nil)
	var all []AuctionInfo
	a.Decode(t, &all)
	if a.Status != 200 || len(all) != len(DefaultCatalog()) || all[1].OpenBids != 1 {
		t.Errorf("GET auctions: %d %+v", a.Status, all)
	}
	if code, _ := put(`{"region":"nowhere","instance_type":"a100-80gb.sxm.1x","capacity":0}`); code != 404 {
		t.Errorf("unknown auction: %d", code)
	}
	if code, _ := put(`{"region":"us-central1-a","instance_type":"a100-80gb.sxm.1x","capacity":-1}`); code != 400 {
		t.Errorf("negative capacity: %d", code)
	}
	if code, _ := put(`not json`); code != 400 {
		t.Errorf("bad body: %d", code)
	}
}

// The default catalog serves an auction with no capacity now, and its other customers' bids are all
// allocated.
func TestDefaultCatalogMarket(t *testing.T) {
	s := New(Options{})
	srv := httptest.NewServer(s)
	defer srv.Close()
	for _, a := range s.Auctions() {
		if a.OpenBids != 0 {
			t.Errorf("%s %s: market bids left open: %+v", a.Region, a.InstanceType, a)
		}
		if a.Region == "us-central1-b" && a.InstanceType == "h100-80gb.sxm.8x" && (a.Available != 0 || a.LowestWinningCents != 1200 || a.Capacity != 2) {
			t.Errorf("full auction: %+v", a)
		}
	}
	// us-central1-a's 8x H100 has two slots free but winning bids at $12.50 and $13.00: a new bid below
	// $12.50 waits Open, one at $12.50 wins.
	fid := s.InstanceTypeFID("us-central1-a", "h100-80gb.sxm.8x")
	var below, at map[string]any
	call(t, srv.URL, "POST", "/v2/spot/bids", bidBody("below", fid, "us-central1-a", "$12.49"), &below)
	call(t, srv.URL, "POST", "/v2/spot/bids", bidBody("at", fid, "us-central1-a", "$12.50"), &at)
	if below["status"] != "Open" || at["status"] != "Allocated" {
		t.Errorf("bids around the lowest winning bid: %v %v", below["status"], at["status"])
	}
}

func TestInstanceProgressionAndAuth(t *testing.T) {
	c := backendtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := New(Options{Options: simulation.Options{Now: c.Now, BootDuration: 30 * time.Second}, SSHDestination: "127.0.0.1:2222"})
	srv := httptest.NewServer(s)
	defer srv.Close()
	var b map[string]any
	call(t, srv.URL, "POST", "/v2/spot/bids", bidBody("p", s.InstanceTypeFID("us-central1-a", "a100-80gb.sxm.1x"), "us-central1-a", "$2.00"), &b)
	inst := b["instances"].([]any)[0].(string)
	statuses := []string{}
	for _, d := range []time.Duration{0, 5 * time.Second, 30 * time.Second} {
		c.Advance(d)
		var st map[string]any
		call(t, srv.URL, "GET", "/v2/instances/"+inst+"/status", nil, &st)
		statuses = append(statuses, st["status"].(string))
	}
	if strings.Join(statuses, ",") != "STATUS_NEW,STATUS_STARTING,STATUS_RUNNING" {
		t.Errorf("progression: %v", statuses)
	}
	var insts struct {
		Data []map[string]any `json:"data"`
	}
	call(t, srv.URL, "GET", "/v2/instances?project="+ProjectFID(DefaultProject), nil, &insts)
	if insts.Data[0]["ssh_destination"] != "127.0.0.1:2222" {
		t.Errorf("ssh_destination: %v", insts.Data[0])
	}
	if a := emutest.Fetch(t, srv.URL, "GET", "/v2/spot/availability", nil, "Authorization", "Bearer fkey_nope"); a.Status != 401 {
		t.Errorf("bad key: %d", a.Status)
	}
	var nf map[string]any
	if code := call(t, srv.URL, "GET", "/v2/nothing", nil, &nf); code != 404 || nf["detail"] != "Not Found" {
		t.Errorf("unknown path: %d %v", code, nf)
	}
	var v map[string]any
	if code := call(t, srv.URL, "POST", "/v2/spot/bids", map[string]any{"limit_price": 12.5}, &v); code != 422 {
		t.Errorf("422: %d %v", code, v)
	} else if d, ok := v["detail"].([]any); !ok || len(d) < 5 {
		t.Errorf("422 detail: %v", v)
	}
}

func TestStateDirSharedByTwoServers(t *testing.T) {
	dir := t.TempDir()
	c := backendtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a := New(Options{Options: simulation.Options{StateDir: dir, Now: c.Now, BootDuration: 10 * time.Second}})
	b := New(Options{Options: simulation.Options{StateDir: dir, Now: c.Now, BootDuration: 10 * time.Second}})
	sa, sb := httptest.NewServer(a), httptest.NewServer(b)
	defer sa.Close()
	defer sb.Close()
	var bid map[string]any
	fid := a.InstanceTypeFID("us-central1-a", "h100-80gb.sxm.8x")
	if fid == "" || fid != b.InstanceTypeFID("us-central1-a", "h100-80gb.sxm.8x") {
		t.Fatalf("catalog FIDs differ: %q", fid)
	}
	call(t, sa.URL, "POST", "/v2/spot/bids", bidBody("shared", fid, "us-central1-a", "$14.00"), &bid)
	var got map[string]any
	if code := call(t, sb.URL, "GET", "/v2/spot/bids/"+bid["fid"].(string), nil, &got); code != 200 || got["name"] != "shared" || got["status"] != "Allocated" {
		t.Fatalf("server b: %d %v", code, got)
	}
	if b.CreateCount() != 1 {
		t.Errorf("create count via b: %d", b.CreateCount())
	}
	// Faults set through one server apply to the other.
	if err := a.SetFaults(simulation.Faults{RateLimited: 1}); err != nil {
		t.Fatal(err)
	}
	if code := call(t, sb.URL, "GET", "/v2/spot/availability", nil, nil); code != 429 {
		t.Errorf("fault through b: %d", code)
	}
	// A third server started later (a new terraform run) sees the same cloud.
	c.Advance(10 * time.Second)
	third := New(Options{Options: simulation.Options{StateDir: dir}})
	bids := third.LiveBids()
	if len(bids) != 1 || bids[0].InstanceStatuses[0] != "STATUS_RUNNING" {
		t.Errorf("third server: %+v", bids)
	}
	// Concurrent creates through both servers are serialised by the lock.
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			srv := sa
			if i%2 == 1 {
				srv = sb
			}
			call(t, srv.URL, "POST", "/v2/spot/bids", bidBody("c", fid, "us-central1-a", "$1.00"), nil)
		}()
	}
	wg.Wait()
	if n := a.CreateCount(); n != 11 {
		t.Errorf("%d creates recorded, want 11", n)
	}
}

func TestLatencyAndServerErrorFaults(t *testing.T) {
	s := New(Options{})
	srv := httptest.NewServer(s)
	defer srv.Close()
	_ = s.SetFaults(simulation.Faults{Latency: simulation.Duration(50 * time.Millisecond), ServerErrors: 1})
	start := time.Now()
	var body map[string]any
	if code := call(t, srv.URL, "GET", "/v2/instance-types", nil, &body); code != 502 || body["detail"] != "Upstream service failure" {
		t.Errorf("server error: %d %v", code, body)
	}
	if time.Since(start) < 50*time.Millisecond {
		t.Errorf("no latency")
	}
	if code := call(t, srv.URL, "GET", "/v2/instance-types", nil, nil); code != 200 {
		t.Errorf("after the fault: %d", code)
	}
	f, _ := s.Faults()
	if f.ServerErrors != 0 || time.Duration(f.Latency) != 50*time.Millisecond {
		t.Errorf("faults %+v", f)
	}
	// Mithril's own status for server errors, and faults limited to one path.
	_ = s.SetFaults(simulation.Faults{ServerErrors: 1, RateLimited: 1, RetryAfterSeconds: 3})
	_ = s.SetOwnFaults(OwnFaults{ServerErrorStatus: 503, OnlyPath: "GET /v2/spot/"})
	if code := call(t, srv.URL, "GET", "/v2/instance-types", nil, nil); code != 200 {
		t.Errorf("a path outside OnlyPath: %d", code)
	}
	if a := emutest.Fetch(t, srv.URL, "GET", "/v2/spot/availability", nil, "Authorization", "Bearer "+DefaultAPIKey); a.Status != 429 || a.Header.Get("Retry-After") != "3" {
		t.Errorf("429 first: %d %q", a.Status, a.Header.Get("Retry-After"))
	}
	if code := call(t, srv.URL, "GET", "/v2/spot/availability", nil, nil); code != 503 {
		t.Errorf("then the 5xx in Mithril's status: %d", code)
	}
}

// The shared fault vocabulary on bid creates: a lost answer places the bid, sold out places none, and
// a boot failure ends the instance in STATUS_ERROR.
func TestSharedCreateFaults(t *testing.T) {
	c := backendtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := New(Options{Options: simulation.Options{Now: c.Now, BootDuration: 10 * time.Second}})
	srv := httptest.NewServer(s)
	defer srv.Close()
	fid := s.InstanceTypeFID("us-central1-a", "a100-80gb.sxm.1x")

	_ = s.SetFaults(simulation.Faults{SoldOut: true})
	var e map[string]any
	if code := call(t, srv.URL, "POST", "/v2/spot/bids", bidBody("sold", fid, "us-central1-a", "$2.00"), &e); code != 400 || !strings.Contains(e["detail"].(string), "Insufficient capacity") {
		t.Errorf("sold out: %d %v", code, e)
	}
	if s.CreateCount() != 0 {
		t.Errorf("a sold-out create placed a bid")
	}

	_ = s.SetFaults(simulation.Faults{LoseCreateResponses: 1, BootFailures: 1})
	if code := call(t, srv.URL, "POST", "/v2/spot/bids", bidBody("lost", fid, "us-central1-a", "$2.00"), &e); code != 502 {
		t.Errorf("lost answer: %d %v", code, e)
	}
	var page struct {
		Data []map[string]any `json:"data"`
	}
	call(t, srv.URL, "GET", "/v2/spot/bids?project="+ProjectFID(DefaultProject)+"&name=lost", nil, &page)
	if len(page.Data) != 1 || page.Data[0]["status"] != "Allocated" {
		t.Fatalf("the bid of a lost answer: %v", page.Data)
	}
	inst := page.Data[0]["instances"].([]any)[0].(string)
	c.Advance(10 * time.Second)
	var st map[string]any
	call(t, srv.URL, "GET", "/v2/instances/"+inst+"/status", nil, &st)
	if st["status"] != "STATUS_ERROR" {
		t.Errorf("boot failure: %v", st)
	}
	f, _ := s.Faults()
	if f.LoseCreateResponses != 0 || f.BootFailures != 0 {
		t.Errorf("faults not used up: %+v", f)
	}
	stats, err := s.Stats()
	if err != nil || stats.Created != 1 || len(stats.Live) != 1 || stats.Live[0].Name != "lost" || stats.Live[0].ID != page.Data[0]["fid"] {
		t.Errorf("stats %+v %v", stats, err)
	}
}

func TestPreemptionFault(t *testing.T) {
	c, s, srv, fid := auctionServer(t)
	var b map[string]any
	call(t, srv.URL, "POST", "/v2/spot/bids", bidBody("pre", fid, "us-central1-a", "$2.00"), &b)
	c.Advance(10 * time.Second)
	if err := s.SetOwnFaults(OwnFaults{Preemptions: 1}); err != nil {
		t.Fatal(err)
	}
	live := s.LiveBids()
	if len(live) != 1 || live[0].Status != "Preempting" || live[0].InstanceStatuses[0] != "STATUS_PREEMPTING" {
		t.Fatalf("preempting: %+v", live)
	}
	if f, _ := s.OwnFaults(); f.Preemptions != 0 {
		t.Errorf("preemption not used up: %+v", f)
	}
	// Another customer's bids are never preempted by the fault; after the window the bid is open again
	// and, with capacity free, allocated a new instance.
	c.Advance(time.Minute)
	live = s.LiveBids()
	if len(live) != 1 || live[0].Status != "Allocated" || len(live[0].Instances) != 1 || live[0].Instances[0] == b["instances"].([]any)[0] {
		t.Errorf("after the window: %+v", live)
	}
}

func TestAdminOverHTTP(t *testing.T) {
	s := New(Options{})
	emutest.WantAdmin(t, s, s, simulation.Faults{RateLimited: 2, LoseCreateResponses: 1}, 0)
}

// The default catalog serves Mithril's name styles, each with its structured fields, and a GPU hydra
// does not rent.
func TestDefaultCatalogNames(t *testing.T) {
	srv := httptest.NewServer(New(Options{}))
	defer srv.Close()
	var types []client.InstanceType // as hydra's client reads them
	if code := call(t, srv.URL, "GET", "/v2/instance-types", nil, &types); code != 200 {
		t.Fatalf("instance types: %d", code)
	}
	tests := []struct {
		name, gpu    string
		count, memGB int
		socket       string
		cpus, ramGB  int
	}{
		{"h100-80gb.sxm.8x", "H100", 8, 80, "SXM5", 208, 1800},
		{"h100-80gb.pcie.8x", "H100", 8, 80, "PCIe", 192, 1500},
		{"h100.80gb.sxm", "H100", 8, 80, "SXM5", 208, 1800},
		{"a100-80gb.sxm.1x", "A100", 1, 80, "SXM4", 30, 240},
		{"b200.8x", "B200", 8, 180, "SXM6", 224, 2900},
		{"b200-192gb.8x", "B200", 8, 192, "SXM6", 224, 2900},
		{"a10-24gb.pcie.1x", "A10", 1, 24, "PCIe", 30, 200},
	}
	for _, tc := range tests {
		found := false
		for _, it := range types {
			if it.Name != tc.name {
				continue
			}
			found = true
			n := func(v int) client.OptInt { return client.OptInt{Value: int64(v), Valid: true} }
			if it.GPUType != tc.gpu || it.NumGPUs != n(tc.count) || it.GPUMemoryGB != n(tc.memGB) || it.GPUSocket != tc.socket || it.NumCPUs != n(tc.cpus) || it.RAMGB != n(tc.ramGB) {
				t.Errorf("%s: %+v", tc.name, it)
			}
		}
		if !found {
			t.Errorf("%s: not in the catalog", tc.name)
		}
	}
}
