package backendtest

import (
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
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
	err := cloudprovider.Errorf(cloudprovider.ErrAuth, "c", "listing", "bad key")
	WantKind(t, err, cloudprovider.ErrAuth)
	WantError(t, err, cloudprovider.ErrAuth, "bad key")
	WantAuthError(t, err, "the-secret")
	if got := Must(42, nil)(t); got != 42 {
		t.Fatalf("Must = %d", got)
	}
	// Calls that wait for each other (here for a mutex, 45 ms each) pass; calls that do not, fail.
	var n atomic.Int32
	var mu sync.Mutex
	WantSharedLimit(t, func() { mu.Lock(); defer mu.Unlock(); n.Add(1); time.Sleep(45 * time.Millisecond) })
	if n.Load() != 11 {
		t.Fatalf("%d calls, want 11", n.Load())
	}
	ft := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() { defer close(done); WantSharedLimit(ft, func() {}) }()
	<-done
	if !ft.failed {
		t.Error("WantSharedLimit passed calls that did not wait for each other")
	}
}

// fatalTB records a Fatalf instead of failing the test, and stops its goroutine as Fatalf does.
type fatalTB struct {
	testing.TB
	failed bool
}

func (f *fatalTB) Fatalf(string, ...any) { f.failed = true; runtime.Goexit() }
