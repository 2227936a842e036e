package atlas

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit/emutest"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

func do(t *testing.T, h http.Handler, method, path, body string) (int, map[string]any) {
	t.Helper()
	a := emutest.Do(t, h, method, path, body, "Authorization", "Bearer atlas-test-token")
	if a.JSONErr != nil {
		t.Fatalf("%s %s: non-JSON answer %q", method, path, a.Raw)
	}
	return a.Status, a.Body
}

const createBody = `{"name":"atlas-vm-a","instance_type":"l40s.1x","region":"ams1","ssh_public_keys":["ssh-ed25519 AAAA u@h"]}`

func TestErrorShapeAndConflict(t *testing.T) {
	s := New(Options{})
	code, body := do(t, s, http.MethodPost, "/v1/instances", createBody)
	if code != 201 || body["status"] != "provisioning" || body["ssh"] != nil || body["host_key"] != nil {
		t.Fatalf("create: %d %v", code, body)
	}
	code, again := do(t, s, http.MethodPost, "/v1/instances/", createBody)
	errObj, _ := again["error"].(map[string]any)
	inst, _ := again["instance"].(map[string]any)
	if code != 409 || errObj["code"] != "already_exists" || inst["id"] != body["id"] {
		t.Fatalf("second create: %d %v", code, again)
	}
	if s.CreateCount() != 1 {
		t.Fatal("a 409 must not create")
	}
	tests := []struct {
		method, path, body string
		code               int
		errCode            string
	}{
		{http.MethodGet, "/v1/instances/i-nope", "", 404, "not_found"},
		{http.MethodDelete, "/v1/instances/i-nope", "", 404, "not_found"},
		{http.MethodPost, "/v1/instances", `{"name":"x","instance_type":"nope","region":"ams1","ssh_public_keys":["ssh-ed25519 AAAA"]}`, 400, "invalid"},
		{http.MethodPost, "/v1/instances", `{"name":"atlas-vm-b","instance_type":"rtx6000ada.2x","region":"fra1","ssh_public_keys":["ssh-ed25519 AAAA"]}`, 422, "no_capacity"},
		{http.MethodGet, "/v1/instances?limit=501", "", 400, "invalid"},
		{http.MethodGet, "/v2/whatever", "", 404, "not_found"},
		{http.MethodGet, "/v1/instances/i-1/x", "", 404, "not_found"},
		{http.MethodPut, "/v1/instances", "", 405, "invalid"},
		{http.MethodPost, "/v1/instances/i-nope", "", 405, "invalid"},
		{http.MethodPatch, "/v1/clusters/c-nope", "", 405, "invalid"},
		{http.MethodPost, "/v1/cluster-offers", "", 405, "invalid"},
		{http.MethodGet, "/v1/clusters/c-nope", "", 404, "not_found"},
	}
	for _, tt := range tests {
		code, body := do(t, s, tt.method, tt.path, tt.body)
		e, _ := body["error"].(map[string]any)
		if code != tt.code || e["code"] != tt.errCode || e["message"] == "" {
			t.Errorf("%s %s: %d %v, want %d %s", tt.method, tt.path, code, body, tt.code, tt.errCode)
		}
	}
	if a := emutest.Do(t, s, http.MethodGet, "/v1/offers", nil); a.Status != 401 || !strings.Contains(string(a.Raw), `"unauthorized"`) {
		t.Fatalf("no token: %d %s", a.Status, a.Raw)
	}
}

func TestStateDirShared(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	a := New(Options{Options: simulation.Options{StateDir: dir, Now: clock, BootDuration: time.Minute}})
	b := New(Options{Options: simulation.Options{StateDir: dir, Now: clock, BootDuration: time.Minute}, Catalog: []Offer{}})
	code, inst := do(t, a, http.MethodPost, "/v1/instances", createBody)
	if code != 201 {
		t.Fatal(code)
	}
	now = now.Add(2 * time.Minute)
	code, got := do(t, b, http.MethodGet, "/v1/instances/"+inst["id"].(string), "")
	if code != 200 || got["status"] != "active" || got["ssh"] == nil || got["host_key"] != DefaultHostKey {
		t.Fatalf("b sees %d %v", code, got)
	}
	// b's create with the same name conflicts: the name lock is shared too.
	if code, _ := do(t, b, http.MethodPost, "/v1/instances", createBody); code != 409 {
		t.Fatalf("second process create: %d", code)
	}
	_ = b.SetAllFaults(Faults{QuotaExceeded: true, Faults: simulation.Faults{ServerErrors: 2}})
	if f, _ := a.AllFaults(); !f.QuotaExceeded || f.ServerErrors != 2 || a.CreateCount() != 1 || len(b.Instances()) != 1 {
		t.Fatal("faults and counters are not shared")
	}
	// The shared vocabulary is replaced through the admin; Atlas's own faults stay.
	_ = a.SetFaults(simulation.Faults{})
	if f, _ := b.AllFaults(); !f.QuotaExceeded || f.ServerErrors != 0 {
		t.Fatalf("after SetFaults: %+v", f)
	}
	var avail int
	for _, o := range b.Catalog() {
		if o.InstanceType == "l40s.1x" {
			avail = o.Available
		}
	}
	if avail != 3 {
		t.Fatalf("capacity after one create = %d, want 3", avail)
	}
}

func TestStart(t *testing.T) {
	url := backendtest.Start(t, New(Options{}).Start)
	if a := emutest.Fetch(t, url, http.MethodGet, "/v1/offers", nil, "Authorization", "Bearer atlas-test-token"); a.Status != 200 {
		t.Fatal(a.Status)
	}
}

func TestLabels(t *testing.T) {
	s := New(Options{})
	code, inst := do(t, s, http.MethodPost, "/v1/instances",
		`{"name":"atlas-vm-l","instance_type":"l4.1x","region":"fra1","ssh_public_keys":["ssh-ed25519 AAAA u@h"],"labels":{"a":"1","b":"2"}}`)
	if code != 201 {
		t.Fatalf("create: %d %v", code, inst)
	}
	id := inst["id"].(string)
	labels := func(m map[string]any) map[string]any { l, _ := m["labels"].(map[string]any); return l }
	if l := labels(inst); len(l) != 2 || l["a"] != "1" {
		t.Fatalf("labels at create %v", l)
	}
	code, got := do(t, s, http.MethodPatch, "/v1/instances/"+id, `{"labels":{"a":null,"b":"3","c":"4"}}`)
	if l := labels(got); code != 200 || len(l) != 2 || l["b"] != "3" || l["c"] != "4" {
		t.Fatalf("patch: %d %v", code, got)
	}
	_, listed := do(t, s, http.MethodGet, "/v1/instances?name_prefix=atlas-vm-l", "")
	items, _ := listed["instances"].([]any)
	if len(items) != 1 || labels(items[0].(map[string]any))["c"] != "4" {
		t.Fatalf("list: %v", listed)
	}
	// An instance without labels reports {}.
	_, plain := do(t, s, http.MethodPost, "/v1/instances", createBody)
	if l, ok := plain["labels"].(map[string]any); !ok || len(l) != 0 {
		t.Fatalf("labels of a plain instance: %v", plain["labels"])
	}
	tests := []struct {
		method, path, body string
		code               int
	}{
		{http.MethodPatch, "/v1/instances/" + id, `{"labels":{"Bad Key":"x"}}`, 400},
		{http.MethodPatch, "/v1/instances/" + id, `{"labels":{"k":"` + strings.Repeat("v", 256) + `"}}`, 400},
		{http.MethodPatch, "/v1/instances/" + id, `{"labels":`, 400},
		{http.MethodPatch, "/v1/instances/i-nope", `{"labels":{}}`, 404},
		{http.MethodPost, "/v1/instances", `{"name":"atlas-vm-m","instance_type":"l4.1x","region":"fra1","ssh_public_keys":["ssh-ed25519 AAAA"],"labels":{"_x":"y"}}`, 400},
	}
	for _, tt := range tests {
		if code, body := do(t, s, tt.method, tt.path, tt.body); code != tt.code {
			t.Errorf("%s %s %s: %d %v, want %d", tt.method, tt.path, tt.body, code, body, tt.code)
		}
	}
	if _, got := do(t, s, http.MethodGet, "/v1/instances/"+id, ""); labels(got)["b"] != "3" {
		t.Fatalf("a refused patch changed the labels: %v", got)
	}
}

func TestTerminatedCannotBeLabelled(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := New(Options{Options: simulation.Options{Now: func() time.Time { return now }}})
	_, inst := do(t, s, http.MethodPost, "/v1/instances", createBody)
	id := inst["id"].(string)
	do(t, s, http.MethodDelete, "/v1/instances/"+id, "")
	if code, _ := do(t, s, http.MethodPatch, "/v1/instances/"+id, `{"labels":{"a":"b"}}`); code != 200 {
		t.Fatalf("patch while terminating: %d", code)
	}
	now = now.Add(time.Minute)
	if code, _ := do(t, s, http.MethodPatch, "/v1/instances/"+id, `{"labels":{"a":"b"}}`); code != 404 {
		t.Fatalf("patch of a terminated instance: %d, want 404", code)
	}
}

func TestPriceCap(t *testing.T) {
	s := New(Options{})
	body := func(name string, maxPrice float64) string {
		return string(emutest.JSON(t, map[string]any{"name": name, "instance_type": "l40s.1x", "region": "ams1",
			"ssh_public_keys": []string{"ssh-ed25519 AAAA"}, "max_price_per_hour": maxPrice}))
	}
	code, got := do(t, s, http.MethodPost, "/v1/instances", body("atlas-vm-c", 1.59))
	if e, _ := got["error"].(map[string]any); code != 422 || e["code"] != "price_above_max" {
		t.Fatalf("above the cap: %d %v", code, got)
	}
	if code, _ := do(t, s, http.MethodPost, "/v1/instances", body("atlas-vm-c", -1)); code != 400 {
		t.Fatalf("negative cap: %d", code)
	}
	if s.CreateCount() != 0 {
		t.Fatal("a create above the cap created")
	}
	if code, _ := do(t, s, http.MethodPost, "/v1/instances", body("atlas-vm-c", 1.6)); code != 201 {
		t.Fatalf("at the cap: %d", code)
	}
}

func TestSharedFaults(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := New(Options{Options: simulation.Options{Now: func() time.Time { return now }, BootDuration: time.Minute}})
	_ = s.SetFaults(simulation.Faults{SoldOut: true})
	if code, _ := do(t, s, http.MethodPost, "/v1/instances", createBody); code != 422 {
		t.Fatalf("sold out: %d", code)
	}
	if _, off := do(t, s, http.MethodGet, "/v1/offers", ""); len(off["offers"].([]any)) == 0 {
		t.Fatal("sold out must keep the offers listed")
	}
	_ = s.SetFaults(simulation.Faults{LoseCreateResponses: 1, BootFailures: 1})
	code, got := do(t, s, http.MethodPost, "/v1/instances", createBody)
	if e, _ := got["error"].(map[string]any); code != 503 || e["code"] != "unavailable" || s.CreateCount() != 1 {
		t.Fatalf("lost create: %d %v, %d created", code, got, s.CreateCount())
	}
	now = now.Add(time.Minute)
	_, listed := do(t, s, http.MethodGet, "/v1/instances", "")
	if items := listed["instances"].([]any); len(items) != 1 || items[0].(map[string]any)["status"] != "failed" {
		t.Fatalf("boot failure: %v", listed)
	}
	if f, _ := s.Faults(); f != (simulation.Faults{}) {
		t.Fatalf("faults not used up: %+v", f)
	}
	_ = s.SetFaults(simulation.Faults{ServerErrors: 1})
	if code, body := do(t, s, http.MethodGet, "/v1/offers", ""); code != 500 || body["error"].(map[string]any)["code"] != "internal" {
		t.Fatalf("server error: %d %v", code, body)
	}
}

// TestAdminOverHTTP: the admin surface is served beside the API, without credentials or faults.
func TestAdminOverHTTP(t *testing.T) {
	s := New(Options{})
	if code, _ := do(t, s, http.MethodPost, "/v1/instances", createBody); code != 201 {
		t.Fatal(code)
	}
	emutest.WantAdmin(t, s, s, simulation.Faults{ServerErrors: 5, SoldOut: true}, 1, "atlas-vm-a")
}
