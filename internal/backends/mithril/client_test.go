package mithril

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/mithril"
)

func TestClientCatalogAndPricing(t *testing.T) {
	e := newEnv(t, emu.Options{})
	ctx := t.Context()
	types, err := e.client.InstanceTypes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fids := map[string]string{} // region/name -> fid
	byFID := map[string]InstanceType{}
	for _, it := range types {
		if !strings.HasPrefix(it.FID, "it_") {
			t.Errorf("FID without prefix: %q", it.FID)
		}
		byFID[it.FID] = it
	}
	auctions, err := e.client.SpotAvailability(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range auctions {
		if !strings.HasPrefix(a.FID, "auc_") || !a.LastInstancePrice.Valid {
			t.Errorf("auction %+v", a)
		}
		fids[a.Region+"/"+byFID[a.InstanceType].Name] = a.InstanceType
	}
	a, b := fids["us-central1-a/h100-80gb.sxm.8x"], fids["us-central1-b/h100-80gb.sxm.8x"]
	if a == "" || b == "" || a == b {
		t.Fatalf("instance type FIDs must differ per region: %q %q", a, b)
	}
	p, err := e.client.CurrentPricing(ctx, a, "us-central1-a")
	if err != nil {
		t.Fatal(err)
	}
	// Default catalog: capacity 4, two market bids at $12.50 and $13.00, minimum $8.00, last $12.03; a
	// new bid must reach the lowest winning bid, $12.50.
	if p.SpotPriceCents.Amount != 1203 || p.MinimumPriceCents.Amount != 800 || p.LowestAllocatedBidCents.Amount != 1250 ||
		p.AvailableCapacity.Value != 2 || p.TotalCapacity.Value != 4 || p.DynamicWinPriceCents.Amount != 1250 || p.ReservedPriceCents.Valid {
		t.Errorf("pricing %+v", p)
	}
	if _, err := e.client.CurrentPricing(ctx, "", ""); cloudprovider.KindOf(err) != cloudprovider.ErrInvalid || !strings.Contains(err.Error(), "query.instance_type: Field required") {
		t.Errorf("missing instance_type: %v", err)
	}
	projects, err := e.client.Projects(ctx)
	if err != nil || len(projects) != 1 || projects[0].FID != e.project {
		t.Errorf("projects %+v %v", projects, err)
	}
}

func TestClientAuthFailure(t *testing.T) {
	e := newEnv(t, emu.Options{}, func(c *Config) { c.APIKey = "fkey_wrong_secret_value" })
	ctx := t.Context()
	calls := map[string]func() error{
		"instance types": func() error { _, err := e.client.InstanceTypes(ctx); return err },
		"availability":   func() error { _, err := e.client.SpotAvailability(ctx); return err },
		"bids":           func() error { _, err := e.client.ListBids(ctx, e.project, BidFilter{}); return err },
		"offers":         func() error { _, err := e.backend.Offers(ctx); return err },
		"list":           func() error { _, err := e.backend.List(ctx, "x"); return err },
	}
	for name, call := range calls {
		err := call()
		if cloudprovider.KindOf(err) != cloudprovider.ErrAuth {
			t.Errorf("%s: %v, want auth error", name, err)
		}
		if err != nil && strings.Contains(err.Error(), "fkey_wrong_secret_value") {
			t.Errorf("%s: the key leaks into the error: %v", name, err)
		}
	}
	if _, err := NewClient(ClientConfig{BaseURL: "http://x"}); cloudprovider.KindOf(err) != cloudprovider.ErrAuth {
		t.Errorf("no key: %v", err)
	}
}

func TestClientValidationErrors(t *testing.T) {
	e := newEnv(t, emu.Options{})
	ctx := t.Context()
	fid := e.emu.InstanceTypeFID("us-central1-a", "h100-80gb.sxm.8x")
	base := CreateBidRequest{Project: e.project, Region: "us-central1-a", InstanceType: fid, LimitPrice: "$13.00", InstanceQuantity: 1, Name: "v",
		LaunchSpecification: LaunchSpecification{Volumes: []string{}, SSHKeys: []string{}}}
	bad := base
	bad.LimitPrice = "13.00" // the API wants the dollar sign
	_, err := e.client.CreateBid(ctx, bad)
	if cloudprovider.KindOf(err) != cloudprovider.ErrInvalid || !strings.Contains(err.Error(), "body.limit_price") || StatusOf(err) != 422 {
		t.Errorf("limit price without $: %v", err)
	}
	bad = base
	bad.InstanceQuantity = 0
	if _, err := e.client.CreateBid(ctx, bad); StatusOf(err) != 422 || !strings.Contains(err.Error(), "instance_quantity") {
		t.Errorf("quantity 0: %v", err)
	}
	bad = base
	bad.Region = "us-central1-b" // FIDs are per region
	if _, err := e.client.CreateBid(ctx, bad); cloudprovider.KindOf(err) != cloudprovider.ErrInvalid || !strings.Contains(err.Error(), "not available in region us-central1-b") {
		t.Errorf("FID of another region: %v", err)
	}
	// limit outside 1..100 and a missing project: FastAPI 422 with the query location.
	_, err = e.client.REST().Do(ctx, restclient.Request{Method: http.MethodGet, Path: "/v2/spot/bids", Query: url.Values{"project": {e.project}, "limit": {"500"}}})
	if err = classify("listing", err); StatusOf(err) != 422 || !strings.Contains(err.Error(), "query.limit: Input should be less than or equal to 100") {
		t.Errorf("limit 500: %v", err)
	}
	_, err = e.client.REST().Do(ctx, restclient.Request{Method: http.MethodGet, Path: "/v2/instances"})
	if err = classify("listing", err); StatusOf(err) != 422 || !strings.Contains(err.Error(), "query.project: Field required") {
		t.Errorf("no project: %v", err)
	}
	if e.emu.CreateCount() != 0 {
		t.Errorf("invalid bids were created")
	}
}

func TestClientUnknownBid404(t *testing.T) {
	e := newEnv(t, emu.Options{})
	ctx := t.Context()
	before := e.counter.n.Load()
	if _, err := e.client.GetBid(ctx, "bid_doesnotexist0000"); !cloudprovider.IsNotFound(err) || !strings.Contains(err.Error(), "Bid not found") {
		t.Errorf("get: %v", err)
	}
	if n := e.counter.n.Load() - before; n != 1 {
		t.Errorf("a 404 was retried: %d attempts", n)
	}
	if err := e.client.CancelBid(ctx, "bid_doesnotexist0000"); !cloudprovider.IsNotFound(err) {
		t.Errorf("cancel: %v", err)
	}
	// Cancelling a bid that is already gone counts as done.
	if err := e.backend.cancelBid(ctx, "bid_doesnotexist0000"); err != nil {
		t.Errorf("cancelBid on 404: %v", err)
	}
	if err := e.backend.Delete(ctx, "bid_doesnotexist0000"); err != nil {
		t.Errorf("Delete on 404 is done: %v", err)
	}
	if _, err := e.backend.Get(ctx, "bid_doesnotexist0000"); !cloudprovider.IsNotFound(err) {
		t.Errorf("Get on 404: %v", err)
	}
}

func placeBid(t *testing.T, e *env, name, region, typ string, cents int64) Bid {
	t.Helper()
	b, err := e.client.CreateBid(t.Context(), CreateBidRequest{Project: e.project, Region: region, InstanceType: e.emu.InstanceTypeFID(region, typ),
		LimitPrice: FormatDollars(cents), InstanceQuantity: 1, Name: name, LaunchSpecification: LaunchSpecification{Volumes: []string{}, SSHKeys: []string{}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestClientPagination(t *testing.T) {
	e := newEnv(t, emu.Options{})
	ctx := t.Context()
	for i := range 7 {
		placeBid(t, e, fmt.Sprintf("page-%d", i), "us-central1-a", "a100-80gb.sxm.1x", 150)
	}
	before := e.counter.n.Load()
	bids, err := e.client.ListBids(ctx, e.project, BidFilter{PageSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	if n := e.counter.n.Load() - before; n != 3 {
		t.Errorf("%d requests for 7 bids in pages of 3, want 3", n)
	}
	seen := map[string]bool{}
	for _, b := range bids {
		if seen[b.FID] || !strings.HasPrefix(b.FID, "bid_") {
			t.Errorf("duplicate or bad FID %q", b.FID)
		}
		seen[b.FID] = true
	}
	if len(bids) != 7 {
		t.Errorf("%d bids, want 7", len(bids))
	}
	insts, err := e.client.ListInstances(ctx, e.project, InstanceFilter{PageSize: 2})
	if err != nil || len(insts) != 7 {
		t.Errorf("instances: %d %v", len(insts), err)
	}
	one, err := e.client.ListBids(ctx, e.project, BidFilter{Name: "page-3"})
	if err != nil || len(one) != 1 || one[0].Name != "page-3" {
		t.Errorf("name filter: %+v %v", one, err)
	}
	byBid, err := e.client.ListInstances(ctx, e.project, InstanceFilter{BidFIDs: []string{one[0].FID}})
	if err != nil || len(byBid) != 1 || byBid[0].Bid != one[0].FID || !strings.HasPrefix(byBid[0].FID, "inst_") {
		t.Errorf("bid_fid_in: %+v %v", byBid, err)
	}
}

func TestClientSharedRateLimit(t *testing.T) {
	// Three requests of burst, and practically no refill: the fourth must wait for a token whoever
	// sends it, so with a short deadline it fails in the limiter without reaching the server.
	e := newEnv(t, emu.Options{}, func(c *Config) { c.RequestsPerSecond = 0.001; c.Burst = 3 })
	ctx := t.Context()
	if _, err := e.client.InstanceTypes(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.SpotAvailability(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.backend.Client().Projects(ctx); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	before := e.counter.n.Load()
	_, err := e.client.SpotAvailability(short)
	if err == nil {
		t.Fatal("the fourth request passed the shared limit")
	}
	if e.counter.n.Load() != before {
		t.Errorf("a rate-limited request reached the server")
	}
	if !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "rate") {
		t.Logf("error: %v", err)
	}
}
