package primeintellect

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient/jsonshape"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit/emutest"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/primeintellect"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
)

// recorded is one file of testdata/ (copied from reference/recorded/primeintellect).
type recorded = backendtest.Recorded

// loadRecorded reads testdata/<name>.
func loadRecorded(t *testing.T, name string) recorded { return backendtest.LoadRecorded(t, name) }

func TestRecordedAvailabilityParses(t *testing.T) {
	tests := []struct {
		file          string
		wantItems     int
		wantTotal     int
		wantPaginated bool
		wantTypes     []string
	}{
		{"capture.availability-gpus.200.json", 8, 608, true, []string{"A100_80GB", "H100_80GB"}},
		{"capture.availability-legacy.200.json", 79, 79, false, []string{"A100_80GB", "A40_48GB"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			r := loadRecorded(t, tt.file)
			items, total, paginated, err := parseAvailability(r.Response.Body, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(items) != tt.wantItems || total != tt.wantTotal || paginated != tt.wantPaginated {
				t.Fatalf("items=%d total=%d paginated=%v, want %d %d %v", len(items), total, paginated, tt.wantItems, tt.wantTotal, tt.wantPaginated)
			}
			types := map[string]bool{}
			for _, it := range items {
				types[it.GPUType] = true
				if it.CloudID == "" || it.Provider == "" || it.Socket == "" || it.GPUCount.Int() < 1 {
					t.Errorf("item lacks identity: %+v", it)
				}
				if it.Spot() {
					t.Errorf("isSpot null must read as on-demand: %+v", it.IsSpot)
				}
				if _, ok := it.BasePrice(); !ok {
					t.Errorf("%s/%s has no price", it.Provider, it.CloudID)
				}
			}
			for _, want := range tt.wantTypes {
				if !types[want] {
					t.Errorf("GPU type %s missing; got %v", want, types)
				}
			}
		})
	}
}

func TestRecordedPrices(t *testing.T) {
	r := loadRecorded(t, "capture.availability-legacy.200.json")
	items, _, _, err := parseAvailability(r.Response.Body, nil)
	if err != nil {
		t.Fatal(err)
	}
	var community, runpod, included bool
	for _, it := range items {
		switch {
		case it.Security == CommunityCloud && !community:
			community = true
			if it.Prices.OnDemand.Set || !it.Prices.CommunityPrice.Set {
				t.Fatalf("community offer should have onDemand null and communityPrice set: %+v", it.Prices)
			}
			p, _ := it.BasePrice()
			if p != it.Prices.CommunityPrice.V {
				t.Errorf("community base price %v, want communityPrice %v", p, it.Prices.CommunityPrice.V)
			}
		case it.Provider == "runpod" && it.CloudID == "NVIDIA A100 80GB PCIe" && !runpod:
			runpod = true
			total, _ := it.TotalPrice()
			want := 1.6567999999999998 + 0.00014*120
			if d := total - want; d > 1e-9 || d < -1e-9 {
				t.Errorf("runpod total %v, want %v (onDemand plus the excluded 120 GB disk)", total, want)
			}
		case it.Disk.DefaultIncludedInPrice != nil && *it.Disk.DefaultIncludedInPrice && !included:
			included = true
			if it.DiskPrice() != 0 {
				t.Errorf("disk included in price must add nothing, got %v", it.DiskPrice())
			}
		}
	}
	if !community || !runpod || !included {
		t.Fatalf("capture lacks expected cases: community=%v runpod=%v included=%v", community, runpod, included)
	}
}

func TestRecordedSummaryAndDisksDecode(t *testing.T) {
	r := loadRecorded(t, "capture.availability-gpu-summary.200.json")
	var sum map[string]map[string]map[string]json.RawMessage
	if err := json.Unmarshal(r.Response.Body, &sum); err != nil {
		t.Fatal(err)
	}
	var cheapest struct {
		OnDemand  Number `json:"onDemand"`
		SpotPrice Number `json:"spotPrice"`
	}
	if err := json.Unmarshal(sum["A100_80GB"]["1"]["cheapest"], &cheapest); err != nil {
		t.Fatal(err)
	}
	if cheapest.OnDemand.V != 0.99 || cheapest.SpotPrice.V != 0.5748 {
		t.Fatalf("cheapest = %+v", cheapest)
	}
	d := loadRecorded(t, "capture.availability-disks.200.json")
	var page AvailabilityPage
	if err := json.Unmarshal(d.Response.Body, &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 4 || page.TotalCount.Int() != 23 {
		t.Fatalf("disks page: %d items, total %d", len(page.Items), page.TotalCount.Int())
	}
}

// TestRecordedReplay serves the real captures over HTTP: the trimmed paginated capture claims 608
// items but holds 8, and repeats itself on every page; the client must stop rather than loop. The
// legacy capture is served at /availability/ while /availability/gpus is missing.
func TestRecordedReplay(t *testing.T) {
	inv, err := inventory.Default()
	if err != nil {
		t.Fatal(err)
	}
	gpus := loadRecorded(t, "capture.availability-gpus.200.json")
	legacy := loadRecorded(t, "capture.availability-legacy.200.json")
	tests := []struct {
		name       string
		legacyOnly bool
		wantItems  int
		// wantUnmapped: the capture holds A40 offers (not in the inventory), reported as unmapped.
		wantUnmapped bool
	}{
		{"paginated, trimmed", false, 8, false},
		{"legacy only", true, 79, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var requests atomic.Int32
			bodies := map[string][]byte{"/api/v1/availability": legacy.Response.Body}
			if !tt.legacyOnly {
				bodies["/api/v1/availability/gpus"] = gpus.Response.Body
			}
			url := serveRecorded(t, &requests, bodies)
			c := backendtest.Must(NewClient(ClientConfig{APIKey: "k", BaseURL: url, PageSize: 8, Tuning: backendtest.Unlimited}))(t)
			items, err := c.Availability(context.Background(), AvailabilityFilter{})
			if err != nil {
				t.Fatal(err)
			}
			if len(items) != tt.wantItems {
				t.Fatalf("got %d items, want %d", len(items), tt.wantItems)
			}
			if n := requests.Load(); n > 3 {
				t.Fatalf("%d requests: the client should stop on a repeated page", n)
			}
			b := backendtest.Must(New(Config{APIKey: "k", BaseURL: url, Tuning: backendtest.Unlimited}, inv, nil))(t)
			offers := backendtest.Offers(t, b)
			if len(offers) == 0 {
				t.Fatal("no offers mapped from the capture")
			}
			unmapped := false
			for _, o := range offers {
				switch {
				case o.GPUType == "a100-80gb" && o.CloudGPU == "A100_80GB", o.GPUType == "h100" && o.CloudGPU == "H100_80GB":
				case o.GPUType == "" && o.CloudGPU == "A40_48GB": // not in the inventory: reported, not dropped
					unmapped = true
				default:
					t.Errorf("unexpected GPU type %q for %q", o.GPUType, o.CloudGPU)
				}
				if o.Cloud != CloudName || o.PricePerHour <= 0 || o.Details[DetailCloudID] == "" || o.Available != -1 {
					t.Errorf("bad offer %+v", o)
				}
			}
			if unmapped != tt.wantUnmapped {
				t.Errorf("A40 reported unmapped: %v, want %v", unmapped, tt.wantUnmapped)
			}
		})
	}
}

// serveRecorded serves recorded bodies by path (a trailing slash ignored), counting the requests in n;
// any other path answers Prime's 404.
func serveRecorded(t *testing.T, n *atomic.Int32, bodies map[string][]byte) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		body, ok := bodies[strings.TrimRight(r.URL.Path, "/")]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			body = []byte(`{"detail":"Not Found"}`)
		}
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestRecordedSummaryAndDisksReplay serves the captured GPU summary and disk availability over HTTP
// and checks what the client makes of them.
func TestRecordedSummaryAndDisksReplay(t *testing.T) {
	ctx := context.Background()
	summary := loadRecorded(t, "capture.availability-gpu-summary.200.json")
	disks := loadRecorded(t, "capture.availability-disks.200.json")
	var requests atomic.Int32
	// The disks capture answers every page: it holds 4 of its 23 items.
	url := serveRecorded(t, &requests, map[string][]byte{summary.Request.Path: summary.Response.Body, disks.Request.Path: disks.Response.Body})
	c := backendtest.Must(NewClient(ClientConfig{APIKey: "k", BaseURL: url, PageSize: 4, Tuning: backendtest.Unlimited}))(t)
	sum, err := c.GPUSummary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var cheapest struct {
		OnDemand, CommunityPrice, SpotPrice Number
	}
	if err := json.Unmarshal(sum["A100_80GB"]["1"]["cheapest"], &cheapest); err != nil {
		t.Fatal(err)
	}
	if cheapest.OnDemand.V != 0.99 || cheapest.SpotPrice.V != 0.5748 || len(sum) < 2 {
		t.Fatalf("summary: %d GPU types, A100 cheapest %+v", len(sum), cheapest)
	}
	requests.Store(0)
	got, err := c.Disks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || requests.Load() != 2 {
		t.Fatalf("%d disk offers in %d requests, want the capture's 4 and a stop at the repeated page", len(got), requests.Load())
	}
	first, roan := got[0], got[3]
	if first.Provider != "runpod" || first.CloudID != "" || first.DataCenter != "US-WA-1" || first.Spec.MaxCount.Int() != 8192 ||
		first.Spec.PricePerUnit.V != 0.0001111111111111111 || first.IsMultinode == nil || !*first.IsMultinode || first.StockStatus != "Available" {
		t.Errorf("first disk offer %+v", first)
	}
	if roan.Provider != "dc_roan" || roan.DataCenter != "" || roan.Country != "US" {
		t.Errorf("a null dataCenter reads as empty: %+v", roan)
	}
}

// TestEmulatorAnswersRecordedRequests sends every recorded request to the emulator and holds its answer
// to the recording: the same status, and the same shape (keys and JSON types, recursively: nulls where
// Prime sends null, numbers as numbers; jsonshape). Objects keyed by GPU type, count or region are maps
// (their keys are data). The trimmed /availability/gpus capture holds 8 runpod secure-cloud offers
// only, so its items are learnt together with the legacy capture's 79 items of the same type (null
// dataCenter and country, community prices). Beyond the recordings only what the reference documents
// is allowed (reference/provider-apis.md 3.2): isSpot is "bool or null" (the captures hold on-demand
// offers only, all null; the emulator's spot offer is true), region is "Regions enum or null" (legacy
// items have no region), and the summary's prices are numbers or null like the items' (the summary
// capture has no community-only GPU type).
func TestEmulatorAnswersRecordedRequests(t *testing.T) {
	e := newEnv(t, emu.Options{})
	legacyItems := func(t *testing.T) any {
		return emu.LegacyAvailabilityItems(backendtest.Must(jsonshape.Decode(loadRecorded(t, "capture.availability-legacy.200.json").Response.Body))(t))
	}
	tests := []struct {
		file    string
		also    func(t *testing.T) any
		allowed []string
	}{
		{"capture.availability-gpus.200.json", legacyItems, []string{"items[].isSpot:bool", "items[].region:null"}},
		{"capture.availability-legacy.200.json", nil, []string{"{}", "{}[].isSpot:bool"}},
		{"capture.availability-gpu-summary.200.json", nil, []string{"{}", "{}{}", "{}{}{}", "{}{}{}.onDemand:null", "{}{}{}.communityPrice:number"}},
		{"capture.availability-disks.200.json", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			rec := loadRecorded(t, tt.file)
			a := emutest.Fetch(t, e.URL, rec.Request.Method, rec.Request.Path, nil, "Authorization", "Bearer "+testKey)
			body := a.Raw
			if a.Status != rec.Response.Status {
				t.Fatalf("HTTP %d (%s), recorded %d", a.Status, body, rec.Response.Status)
			}
			recorded, err := jsonshape.Decode(rec.Response.Body)
			if err != nil {
				t.Fatal(err)
			}
			got, err := jsonshape.Decode(body)
			if err != nil {
				t.Fatalf("answered %q: %v", body, err)
			}
			learnt := []any{recorded}
			if tt.also != nil {
				learnt = append(learnt, tt.also(t))
			}
			for _, d := range jsonshape.Learn(learnt...).Check(got, tt.allowed...) {
				t.Error(d)
			}
		})
	}
}
