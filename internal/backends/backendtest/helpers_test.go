package backendtest

import (
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
)

func TestRequestLog(t *testing.T) {
	l := NewRequestLog(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	for _, p := range []string{"/v1/offers", "/v1/offers/x", "/missing"} {
		resp, err := http.Get(l.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if got := l.Requests("GET /v1/offers"); got != 2 {
		t.Errorf("Requests(GET /v1/offers) = %d, want 2", got)
	}
	if got := l.Requests("GET /missing Not Found"); got != 1 {
		t.Errorf("the status is not logged: %v", l.Log())
	}
	if l.Count.Load() != 3 {
		t.Errorf("Count = %d, want 3", l.Count.Load())
	}
}

func TestLoadRecorded(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.MkdirAll(filepath.Join("testdata", "recorded"), 0o700); err != nil {
		t.Fatal(err)
	}
	data := `{"request":{"method":"GET","path":"/x"},"response":{"status":200,"content_type":"application/json","body":{"a":1}}}`
	if err := os.WriteFile(filepath.Join("testdata", "recorded", "x.json"), []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	r := LoadRecorded(t, "recorded", "x.json")
	if r.Request.Method != "GET" || r.Response.Status != 200 || string(r.Response.Body) != `{"a":1}` || r.Response.ContentType != "application/json" {
		t.Fatalf("got %+v", r)
	}
}

func TestWantHelpers(t *testing.T) {
	err := controlplane.Errorf(controlplane.ErrAuth, "c", "listing", "bad key")
	WantKind(t, err, controlplane.ErrAuth)
	WantError(t, err, controlplane.ErrAuth, "bad key")
	WantAuthError(t, err, "the-secret")
	if got := Must(42, nil)(t); got != 42 {
		t.Fatalf("Must = %d", got)
	}
	var n atomic.Int32
	d := Concurrently(5, func() { n.Add(1); time.Sleep(20 * time.Millisecond) })
	if n.Load() != 5 || d > time.Second {
		t.Fatalf("%d calls in %v: want 5, at once", n.Load(), d)
	}
}
