package mithril

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// readFixture reads testdata/<name>.
func readFixture(t *testing.T, name string) []byte { return backendtest.Testdata(t, name) }

func TestFixturesParse(t *testing.T) {
	var types []InstanceType
	if err := json.Unmarshal(readFixture(t, "handwritten.instance-types.json"), &types); err != nil {
		t.Fatal(err)
	}
	if len(types) != 3 || types[0].Name != types[1].Name || types[0].FID == types[1].FID || types[0].NumGPUs.Value != 8 || types[1].NetworkType != "" {
		t.Errorf("instance types: %+v", types)
	}

	auctions, err := decodeList[Auction](readFixture(t, "handwritten.spot-availability.json"))
	if err != nil {
		t.Fatal(err)
	}
	if a := auctions[0]; a.LastInstancePrice.Amount != 1203 || a.LowestAllocatedPrice.Amount != 1250 || a.Capacity.Value != 2 || a.Region != "us-central1-a" {
		t.Errorf("auction 0: %+v", a)
	}
	if a := auctions[1]; a.LowestAllocatedPrice.Valid || a.Capacity.Value != 0 || !a.Capacity.Valid {
		t.Errorf("auction 1: %+v", a)
	}
	if a := auctions[2]; a.LastInstancePrice.Amount != 95 || a.LowestAllocatedPrice.Amount != 100 {
		t.Errorf("auction 2 (bare number variant): %+v", a)
	}

	var p CurrentPrices
	if err := json.Unmarshal(readFixture(t, "handwritten.pricing-current.json"), &p); err != nil {
		t.Fatal(err)
	}
	if p.SpotPriceCents.Amount != 1203 || p.ReservedPriceCents.Valid || p.DynamicWinPriceCents.Amount != 1251 || p.AvailableCapacity.Value != 2 || p.TotalCapacity.Value != 4 {
		t.Errorf("pricing: %+v", p)
	}
	var pv CurrentPrices
	if err := json.Unmarshal(readFixture(t, "handwritten.pricing-current.variant.json"), &pv); err != nil {
		t.Fatal(err)
	}
	if pv.SpotPriceCents.Amount != 1203 || pv.MinimumPriceCents.Amount != 800 || pv.AvailableCapacity.Valid || pv.TotalCapacity.Value != 4 {
		t.Errorf("pricing variant: %+v", pv)
	}

	var bid Bid
	if err := json.Unmarshal(readFixture(t, "handwritten.bid.201.json"), &bid); err != nil {
		t.Fatal(err)
	}
	if bid.LimitPrice.Amount != 1399 || bid.Status != BidOpen || len(bid.Instances) != 0 || bid.CreatedAt.IsZero() || bid.DeactivatedAt != nil {
		t.Errorf("bid: %+v", bid)
	}

	var bids page[Bid]
	if err := json.Unmarshal(readFixture(t, "handwritten.bids.page.json"), &bids); err != nil {
		t.Fatal(err)
	}
	if len(bids.Data) != 2 || bids.NextCursor == nil || *bids.NextCursor == "" || bids.Data[1].Status != BidPreempting {
		t.Errorf("bids page: %+v", bids)
	}

	var insts page[Instance]
	if err := json.Unmarshal(readFixture(t, "handwritten.instances.page.json"), &insts); err != nil {
		t.Fatal(err)
	}
	if len(insts.Data) != 2 || insts.NextCursor != nil || insts.Data[0].SSHDestination != "" || insts.Data[1].SSHDestination != "34.121.8.17" || insts.Data[0].CreatedAt.IsZero() {
		t.Errorf("instances page: %+v", insts)
	}
	inv := backendtest.Inventory(t)
	b := &Backend{inv: inv, types: map[string]InstanceType{}}
	for _, it := range types {
		b.types[it.FID] = it
	}
	got, cancel := b.evaluate(t.Context(), bids.Data[0], insts.Data)
	if got.Status != cloudprovider.StatusPending || got.SSH != nil || cancel || got.GPUType != "h100" || got.GPUCount != 8 || got.InstanceType != "h100-80gb.sxm.8x" {
		t.Errorf("starting instance: %+v", got)
	}
	got, cancel = b.evaluate(t.Context(), bids.Data[1], insts.Data)
	if got.Status != cloudprovider.StatusError || !cancel || !strings.Contains(got.Message, "preempted") {
		t.Errorf("preempting bid: %+v gone=%v", got, cancel)
	}
	running := bids.Data[1]
	running.Status = BidAllocated
	got, _ = b.evaluate(t.Context(), running, insts.Data)
	if got.Status != cloudprovider.StatusRunning || got.SSH == nil || got.SSH.Host != "34.121.8.17" || got.SSH.User != "ubuntu" || got.SSH.Port != 22 || got.PricePerHour != usd("12.60") {
		t.Errorf("running instance: %+v", got)
	}

	keys, err := decodeList[SSHKey](readFixture(t, "handwritten.ssh-keys.json"))
	if err != nil || len(keys) != 1 || !strings.HasPrefix(keys[0].FID, "sshkey_") {
		t.Errorf("ssh keys: %+v %v", keys, err)
	}
}

func TestErrorClassification(t *testing.T) {
	answers := []backendtest.Answer{
		{Status: 422, Body: string(readFixture(t, "handwritten.error.422.json")), Kind: cloudprovider.ErrInvalid, Text: "body.limit_price: Field required; query.limit: Input should be less than or equal to 100"},
		{Status: 404, Body: string(readFixture(t, "handwritten.error.404.json")), Kind: cloudprovider.ErrNotFound, Text: "Bid not found"},
		{Status: 401, Body: `{"detail":"Invalid API key"}`, Kind: cloudprovider.ErrAuth, Text: "Invalid API key"},
		{Status: 403, Body: `{"detail":"Forbidden"}`, Kind: cloudprovider.ErrAuth, Text: "Forbidden"},
		{Status: 400, Body: `{"detail":"Insufficient capacity for h100-80gb.sxm.8x in us-central1-a"}`, Kind: cloudprovider.ErrCapacity, Text: "Insufficient capacity"},
		{Status: 400, Body: `{"error":"Project quota exceeded"}`, Kind: cloudprovider.ErrQuota, Text: "Project quota exceeded"},
		{Status: 402, Body: `{"message":"payment required"}`, Kind: cloudprovider.ErrQuota, Text: "payment required"},
		{Status: 400, Body: `{"detail":"Instance type it_x is not available in region us-central1-b"}`, Kind: cloudprovider.ErrInvalid, Text: "not available in region"},
		{Status: 409, Body: `{"detail":{"message":"Bid is terminated"}}`, Kind: cloudprovider.ErrInvalid, Text: "Bid is terminated"},
		{Status: 501, Body: `{"detail":"Pause not supported for spot"}`, Kind: cloudprovider.ErrInvalid, Text: "not supported"},
		{Status: 502, Body: `{"detail":"Upstream service failure"}`, Kind: cloudprovider.ErrOther, Text: "Upstream"},
		{Status: 503, Body: `Service Unavailable`, Kind: cloudprovider.ErrOther, Text: "Service Unavailable"},
	}
	for i, err := range backendtest.WantClassified(t, CloudName, "op", "/x", classify, answers) {
		if StatusOf(err) != answers[i].Status {
			t.Errorf("%d: StatusOf %d", answers[i].Status, StatusOf(err))
		}
	}
}

func TestParseSSHDestination(t *testing.T) {
	tests := []struct {
		in         string
		host, user string
		port       int
	}{
		{"34.121.8.17", "34.121.8.17", "ubuntu", 22},
		{"root@34.121.8.17", "34.121.8.17", "root", 22},
		{"127.0.0.1:2222", "127.0.0.1", "ubuntu", 2222},
		{"[2001:db8::1]:2200", "2001:db8::1", "ubuntu", 2200},
		{"2001:db8::1", "2001:db8::1", "ubuntu", 22},
		{"host.example.com", "host.example.com", "ubuntu", 22},
	}
	for _, tt := range tests {
		ep := parseSSHDestination(tt.in)
		if ep == nil || ep.Host != tt.host || ep.User != tt.user || ep.Port != tt.port {
			t.Errorf("%q: %+v", tt.in, ep)
		}
	}
	if parseSSHDestination("  ") != nil {
		t.Errorf("blank destination parsed")
	}
}
