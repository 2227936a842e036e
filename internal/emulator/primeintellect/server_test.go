package primeintellect

import (
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit/emutest"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

func do(t *testing.T, h http.Handler, method, path, body string) (int, map[string]any, []byte) {
	t.Helper()
	a := emutest.Do(t, h, method, path, body, "Authorization", "Bearer pi-test-key")
	return a.Status, a.Body, a.Raw
}

// TestShapesMatchRecorded compares the emulator's availability items (GPUs and disks) with the real
// captures, key by key, their nested objects' too.
func TestShapesMatchRecorded(t *testing.T) {
	items := func(b map[string]any) map[string]any { return b["items"].([]any)[0].(map[string]any) }
	gpuNested := []string{"disk", "vcpu", "memory", "prices"}
	tests := []struct {
		file, path string
		first      func(body map[string]any) map[string]any
		nested     []string
	}{
		{"testdata/capture.availability-gpus.200.json", "/api/v1/availability/gpus?page=1&page_size=5&gpu_type=H100_80GB", items, gpuNested},
		{"testdata/capture.availability-legacy.200.json", "/api/v1/availability/?security=community_cloud", func(b map[string]any) map[string]any {
			return b["A100_80GB"].([]any)[0].(map[string]any)
		}, gpuNested},
		{"../../backends/primeintellect/testdata/capture.availability-disks.200.json", "/api/v1/availability/disks", items, []string{"spec"}},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.file), func(t *testing.T) {
			data, err := os.ReadFile(filepath.FromSlash(tt.file))
			if err != nil {
				t.Fatal(err)
			}
			var rec struct {
				Response struct {
					Body map[string]any `json:"body"`
				} `json:"response"`
			}
			if err := json.Unmarshal(data, &rec); err != nil {
				t.Fatal(err)
			}
			want := tt.first(rec.Response.Body)
			code, body, raw := do(t, New(Options{}), http.MethodGet, tt.path, "")
			if code != 200 {
				t.Fatalf("%d %s", code, raw)
			}
			got := tt.first(body)
			if got["isSpot"] == true {
				t.Fatal("the first item should be on-demand")
			}
			if strings.Join(slices.Sorted(maps.Keys(got)), ",") != strings.Join(slices.Sorted(maps.Keys(want)), ",") {
				t.Fatalf("item keys differ:\n got %v\nwant %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
			}
			for _, k := range tt.nested {
				if strings.Join(slices.Sorted(maps.Keys(got[k].(map[string]any))), ",") != strings.Join(slices.Sorted(maps.Keys(want[k].(map[string]any))), ",") {
					t.Errorf("%s keys differ: %v vs %v", k, slices.Sorted(maps.Keys(got[k].(map[string]any))), slices.Sorted(maps.Keys(want[k].(map[string]any))))
				}
			}
			if got["isSpot"] != nil {
				t.Errorf("on-demand offers carry isSpot null, got %v", got["isSpot"])
			}
		})
	}
}

func TestPaginationAndFilters(t *testing.T) {
	s := New(Options{})
	n := len(DefaultCatalog())
	total := 0
	for page := 1; page <= 10; page++ {
		code, body, raw := do(t, s, http.MethodGet, "/api/v1/availability/gpus?page_size=5&page="+string(rune('0'+page)), "")
		if code != 200 {
			t.Fatalf("%d %s", code, raw)
		}
		if int(body["totalCount"].(float64)) != n {
			t.Fatalf("totalCount %v, want %d", body["totalCount"], n)
		}
		items := body["items"].([]any)
		total += len(items)
		if len(items) == 0 {
			break
		}
	}
	if total != n {
		t.Fatalf("pages held %d items, want %d", total, n)
	}
	_, body, _ := do(t, s, http.MethodGet, "/api/v1/availability/gpus?gpu_type=H100_80GB&gpu_count=8&regions=united_states&regions=canada", "")
	items := body["items"].([]any)
	if len(items) != 1 || items[0].(map[string]any)["provider"] != "lambdalabs" {
		t.Fatalf("filtered = %v", items)
	}
	if code, _, _ := do(t, s, http.MethodGet, "/api/v1/availability/gpus?page_size=101", ""); code != 422 {
		t.Fatalf("page_size above 100: %d, want 422", code)
	}
}

func TestAuthAndErrors(t *testing.T) {
	s := New(Options{})
	if a := emutest.Do(t, s, http.MethodGet, "/api/v1/pods/", nil, "Authorization", "Bearer nope"); a.Status != 401 || !strings.Contains(string(a.Raw), `"detail"`) {
		t.Fatalf("bad key: %d %s", a.Status, a.Raw)
	}
	code, body, _ := do(t, s, http.MethodGet, "/api/v1/pods/unknown", "")
	if code != 404 || body["detail"] != "Pod not found" {
		t.Fatalf("unknown pod: %d %v", code, body)
	}
	code, body, _ = do(t, s, http.MethodPost, "/api/v1/pods/", `{"pod":{"name":"x","cloudId":"NVIDIA L4","gpuType":"L4_24GB","socket":"PCIe","gpuCount":1},"provider":{"type":"runpod"}}`)
	if code != 400 || body["detail"] != "Missing field: max_price not specified" {
		t.Fatalf("null maxPrice: %d %v", code, body)
	}
	code, body, _ = do(t, New(Options{AllowNullMaxPrice: true}), http.MethodPost, "/api/v1/pods/", `{"pod":{"name":"x","cloudId":"NVIDIA L4","gpuType":"L4_24GB","socket":"PCIe","gpuCount":1},"provider":{"type":"runpod"}}`)
	if code != 200 || body["status"] != "PROVISIONING" {
		t.Fatalf("null maxPrice allowed: %d %v", code, body)
	}
}

func TestTooManyRequestsHasRetryAfter(t *testing.T) {
	s := New(Options{})
	_ = s.SetFaults(simulation.Faults{RateLimited: 1, RetryAfterSeconds: 7})
	a := emutest.Do(t, s, http.MethodGet, "/api/v1/pods/", nil)
	if a.Status != 429 || a.Header.Get("Retry-After") != "7" || !strings.Contains(string(a.Raw), `"detail"`) {
		t.Fatalf("%d Retry-After=%q %s", a.Status, a.Header.Get("Retry-After"), a.Raw)
	}
	if f, err := s.Faults(); err != nil || f.RateLimited != 0 {
		t.Fatalf("the fault counter must go down: %+v %v", f, err)
	}
}

const createL4 = `{"pod":{"name":"pi-vm-x","cloudId":"NVIDIA L4","gpuType":"L4_24GB","socket":"PCIe","gpuCount":1,"maxPrice":1},"provider":{"type":"runpod"}}`

// TestSharedFaults checks the shared fault vocabulary in Prime's own answers.
func TestSharedFaults(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := New(Options{Options: simulation.Options{Now: func() time.Time { return now }, BootDuration: time.Minute}})

	_ = s.SetFaults(simulation.Faults{ServerErrors: 1})
	if code, body, _ := do(t, s, http.MethodGet, "/api/v1/pods/", ""); code != 500 || body["detail"] == nil {
		t.Fatalf("server error: %d %v", code, body)
	}

	_ = s.SetFaults(simulation.Faults{SoldOut: true})
	code, body, _ := do(t, s, http.MethodPost, "/api/v1/pods/", createL4)
	if code != 400 || !strings.Contains(body["detail"].(string), "No capacity") {
		t.Fatalf("sold out: %d %v", code, body)
	}
	if code, _, _ := do(t, s, http.MethodGet, "/api/v1/availability/gpus?gpu_type=L4_24GB", ""); code != 200 {
		t.Fatal("offers stay listed while sold out")
	}

	_ = s.SetFaults(simulation.Faults{LoseCreateResponses: 1, BootFailures: 1})
	if code, _, raw := do(t, s, http.MethodPost, "/api/v1/pods/", createL4); code != 502 {
		t.Fatalf("lost create answer: %d %s", code, raw)
	}
	st, err := s.Stats()
	if err != nil || st.Created != 1 || len(st.Live) != 1 || st.Live[0].Name != "pi-vm-x" {
		t.Fatalf("stats after a lost create = %+v %v", st, err)
	}
	now = now.Add(time.Minute)
	code, body, _ = do(t, s, http.MethodGet, "/api/v1/pods/"+st.Live[0].ID, "")
	if code != 200 || body["status"] != "ERROR" || body["installationStatus"] != "ERROR" {
		t.Fatalf("boot failure: %d %v", code, body)
	}
	if f, _ := s.Faults(); f != (simulation.Faults{}) {
		t.Fatalf("faults not used up: %+v", f)
	}
	// A pod being deleted is no longer live.
	if code, _, _ := do(t, s, http.MethodDelete, "/api/v1/pods/"+st.Live[0].ID, ""); code != 200 {
		t.Fatal(code)
	}
	if st, _ := s.Stats(); st.Created != 1 || len(st.Live) != 0 {
		t.Fatalf("stats after delete = %+v", st)
	}
}

// TestAdminHTTP drives the shared admin surface over HTTP; it needs no API key.
func TestAdminHTTP(t *testing.T) {
	s := New(Options{})
	emutest.WantAdmin(t, s, s, simulation.Faults{RateLimited: 2, Latency: simulation.Duration(time.Millisecond)}, 0)
}

// TestCloudFaults checks the faults only Prime has.
func TestCloudFaults(t *testing.T) {
	s := New(Options{})
	_ = s.SetCloudFaults(CloudFaults{EmptyAvailability: 1, PaymentRequired: true})
	_, body, _ := do(t, s, http.MethodGet, "/api/v1/availability/gpus", "")
	if len(body["items"].([]any)) != 0 {
		t.Fatalf("empty availability fault: %v", body)
	}
	if _, body, _ = do(t, s, http.MethodGet, "/api/v1/availability/gpus", ""); len(body["items"].([]any)) == 0 {
		t.Fatal("the empty answer must be used up")
	}
	if code, _, _ := do(t, s, http.MethodPost, "/api/v1/pods/", createL4); code != 402 {
		t.Fatalf("payment required: %d", code)
	}
	if f := s.CloudFaults(); f.EmptyAvailability != 0 || !f.PaymentRequired {
		t.Fatalf("cloud faults = %+v", f)
	}
}

// TestNullLocations: as in the captures, some offers carry null dataCenter and country, and a create
// without a dataCenterId lands on such an offer.
func TestNullLocations(t *testing.T) {
	s := New(Options{})
	for _, path := range []string{"/api/v1/availability/gpus?gpu_type=A100_80GB", "/api/v1/availability/?gpu_type=A100_80GB"} {
		_, body, _ := do(t, s, http.MethodGet, path, "")
		items, _ := body["items"].([]any)
		if items == nil {
			items, _ = body["A100_80GB"].([]any)
		}
		var noDC, noCountry, dcSet int
		for _, it := range items {
			m := it.(map[string]any)
			if v, ok := m["dataCenter"]; ok && v == nil {
				noDC++
			} else {
				dcSet++
			}
			if v, ok := m["country"]; ok && v == nil {
				noCountry++
			}
			if v, ok := m["isSpot"]; !ok || (v != nil && v != true) {
				t.Errorf("isSpot is true or null, got %v", v)
			}
		}
		if noDC < 2 || noCountry < 1 || dcSet < 2 {
			t.Fatalf("%s: %d items without dataCenter, %d without country, %d with one", path, noDC, noCountry, dcSet)
		}
	}
	code, pod, raw := do(t, s, http.MethodPost, "/api/v1/pods/", `{"pod":{"name":"pi-vm-n","cloudId":"NVIDIA A100 80GB PCIe","gpuType":"A100_80GB","socket":"PCIe","gpuCount":1,"maxPrice":2,"security":"secure_cloud"},"provider":{"type":"runpod"}}`)
	if code != 200 || pod["priceHr"].(float64) != 1.6567999999999998+120*0.00014 {
		t.Fatalf("create without dataCenterId: %d %s", code, raw)
	}
}

// TestStateDirShared runs two Server values on one state dir, as two terraform runs would.
func TestStateDirShared(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	a := New(Options{Options: simulation.Options{StateDir: dir, Now: clock, BootDuration: time.Minute}})
	b := New(Options{Options: simulation.Options{StateDir: dir, Now: clock, BootDuration: time.Minute}, Catalog: []Item{}})
	code, pod, raw := do(t, a, http.MethodPost, "/api/v1/pods/", `{"pod":{"name":"pi-vm-shared","cloudId":"NVIDIA L4","gpuType":"L4_24GB","socket":"PCIe","gpuCount":1,"maxPrice":1},"provider":{"type":"runpod"}}`)
	if code != 200 {
		t.Fatalf("%d %s", code, raw)
	}
	id := pod["id"].(string)
	// b sees the pod, and a's catalog (a state that exists keeps its catalog).
	now = now.Add(2 * time.Minute)
	code, got, _ := do(t, b, http.MethodGet, "/api/v1/pods/"+id, "")
	if code != 200 || got["name"] != "pi-vm-shared" || got["status"] != "ACTIVE" || got["sshConnection"] != "root@127.0.0.1 -p 22" {
		t.Fatalf("b sees %d %v", code, got)
	}
	if len(b.Catalog()) != len(DefaultCatalog()) {
		t.Fatal("b should share a's catalog")
	}
	// Faults set through one are seen by the other; capacity used by one is used for both.
	_ = b.SetFaults(simulation.Faults{SoldOut: true})
	_ = b.SetCloudFaults(CloudFaults{EmptyAvailability: 2})
	if f, err := a.Faults(); err != nil || !f.SoldOut || a.CloudFaults().EmptyAvailability != 2 {
		t.Fatal("faults are not shared")
	}
	if st, err := a.Stats(); err != nil || st.Created != 1 || len(st.Live) != 1 || st.Live[0].ID != id {
		t.Fatalf("stats are not shared: %+v %v", st, err)
	}
	if a.CreateCount() != 1 || b.CreateCount() != 1 || len(b.Pods()) != 1 {
		t.Fatal("counters are not shared")
	}
	code, _, _ = do(t, b, http.MethodDelete, "/api/v1/pods/"+id, "")
	if code != 200 {
		t.Fatal(code)
	}
	if _, err := os.Stat(filepath.Join(dir, "state.json")); err != nil {
		t.Fatal(err)
	}
	// A new process on the same dir after a restart sees the deletion.
	c := New(Options{Options: simulation.Options{StateDir: dir, Now: func() time.Time { return now.Add(time.Hour) }}})
	if len(c.Pods()) != 0 {
		t.Fatalf("pods after delete: %v", c.Pods())
	}
}

func TestSummary(t *testing.T) {
	code, body, raw := do(t, New(Options{}), http.MethodGet, "/api/v1/availability/gpu-summary", "")
	if code != 200 {
		t.Fatalf("%d %s", code, raw)
	}
	h100 := body["H100_80GB"].(map[string]any)
	one := h100["1"].(map[string]any)
	cheapest := one["cheapest"].(map[string]any)
	if cheapest["onDemand"].(float64) != 1.9 {
		t.Fatalf("cheapest 1x H100 = %v", cheapest)
	}
	if _, ok := h100["8"]; !ok {
		t.Fatal("counts are keyed as strings")
	}
}

func TestStart(t *testing.T) {
	url := backendtest.Start(t, New(Options{}).Start)
	if a := emutest.Fetch(t, url, http.MethodGet, "/api/v1/availability/gpus", nil, "Authorization", "Bearer pi-test-key"); a.Status != 200 {
		t.Fatal(a.Status)
	}
}
