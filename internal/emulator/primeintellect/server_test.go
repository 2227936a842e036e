package primeintellect

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

func do(t *testing.T, h http.Handler, method, path, body string) (int, map[string]any, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r := httptest.NewRequest(method, path, rd)
	r.Header.Set("Authorization", "Bearer pi-test-key")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	raw := w.Body.Bytes()
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return w.Code, m, raw
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestShapesMatchRecorded compares the emulator's availability items with the real captures, key by key.
func TestShapesMatchRecorded(t *testing.T) {
	tests := []struct {
		file, path string
		first      func(body map[string]any) map[string]any
	}{
		{"capture.availability-gpus.200.json", "/api/v1/availability/gpus?page=1&page_size=5&gpu_type=H100_80GB", func(b map[string]any) map[string]any {
			return b["items"].([]any)[0].(map[string]any)
		}},
		{"capture.availability-legacy.200.json", "/api/v1/availability/?security=community_cloud", func(b map[string]any) map[string]any {
			return b["A100_80GB"].([]any)[0].(map[string]any)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tt.file))
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
			if strings.Join(keys(got), ",") != strings.Join(keys(want), ",") {
				t.Fatalf("item keys differ:\n got %v\nwant %v", keys(got), keys(want))
			}
			for _, k := range []string{"disk", "vcpu", "memory", "prices"} {
				if strings.Join(keys(got[k].(map[string]any)), ",") != strings.Join(keys(want[k].(map[string]any)), ",") {
					t.Errorf("%s keys differ: %v vs %v", k, keys(got[k].(map[string]any)), keys(want[k].(map[string]any)))
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
	r := httptest.NewRequest(http.MethodGet, "/api/v1/pods/", nil)
	r.Header.Set("Authorization", "Bearer nope")
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if w.Code != 401 || !strings.Contains(w.Body.String(), `"detail"`) {
		t.Fatalf("bad key: %d %s", w.Code, w.Body)
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
	_ = s.SetFaults(Faults{TooManyRequests: 1, RetryAfterSeconds: 7})
	r := httptest.NewRequest(http.MethodGet, "/api/v1/pods/", nil)
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if w.Code != 429 || w.Header().Get("Retry-After") != "7" {
		t.Fatalf("%d Retry-After=%q", w.Code, w.Header().Get("Retry-After"))
	}
	if s.Faults().TooManyRequests != 0 {
		t.Fatal("the fault counter must go down")
	}
}

// TestStateDirShared runs two Server values on one state dir, as two terraform runs would.
func TestStateDirShared(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	a := New(Options{StateDir: dir, Now: clock, BootDuration: time.Minute})
	b := New(Options{StateDir: dir, Now: clock, BootDuration: time.Minute, Catalog: []Item{}})
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
	_ = b.SetFaults(Faults{CapacityGoneOnCreate: 1})
	if a.Faults().CapacityGoneOnCreate != 1 {
		t.Fatal("faults are not shared")
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
	c := New(Options{StateDir: dir, Now: func() time.Time { return now.Add(time.Hour) }})
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
	url, stop, err := New(Options{}).Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer stop(context.Background())
	req, _ := http.NewRequest(http.MethodGet, url+"/api/v1/availability/gpus", nil)
	req.Header.Set("Authorization", "Bearer pi-test-key")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
}
