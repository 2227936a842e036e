package atlas

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func do(t *testing.T, h http.Handler, method, path, body string) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r := httptest.NewRequest(method, path, rd)
	r.Header.Set("Authorization", "Bearer atlas-test-token")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var m map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil {
		t.Fatalf("%s %s: non-JSON answer %q", method, path, w.Body)
	}
	return w.Code, m
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
	}
	for _, tt := range tests {
		code, body := do(t, s, tt.method, tt.path, tt.body)
		e, _ := body["error"].(map[string]any)
		if code != tt.code || e["code"] != tt.errCode || e["message"] == "" {
			t.Errorf("%s %s: %d %v, want %d %s", tt.method, tt.path, code, body, tt.code, tt.errCode)
		}
	}
	r := httptest.NewRequest(http.MethodGet, "/v1/offers", nil)
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if w.Code != 401 || !strings.Contains(w.Body.String(), `"unauthorized"`) {
		t.Fatalf("no token: %d %s", w.Code, w.Body)
	}
}

func TestStateDirShared(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	a := New(Options{StateDir: dir, Now: clock, BootDuration: time.Minute})
	b := New(Options{StateDir: dir, Now: clock, BootDuration: time.Minute, Catalog: []Offer{}})
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
	_ = b.SetFaults(Faults{QuotaExceeded: true})
	if !a.Faults().QuotaExceeded || a.CreateCount() != 1 || len(b.Instances()) != 1 {
		t.Fatal("faults and counters are not shared")
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
	url, stop, err := New(Options{}).Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer stop(context.Background())
	req, _ := http.NewRequest(http.MethodGet, url+"/v1/offers", nil)
	req.Header.Set("Authorization", "Bearer atlas-test-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
}
