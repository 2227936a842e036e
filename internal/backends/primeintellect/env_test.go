package primeintellect

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/primeintellect"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
)

const testKey = "pi-test-key"

// clock is a settable clock for the emulator, so status progressions need no sleeping.
type clock = backendtest.Clock

func newClock() *clock { return backendtest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) }

// env is an emulator behind a real HTTP server, with a request log.
type env struct {
	emu   *emu.Server
	srv   *httptest.Server
	clock *clock
	mu    sync.Mutex
	log   []string // "METHOD /path status"
	count atomic.Int32
}

func (e *env) requests(prefix string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, l := range e.log {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(s int) { r.status = s; r.ResponseWriter.WriteHeader(s) }

func newEnv(t *testing.T, opts emu.Options) *env {
	t.Helper()
	e := &env{clock: newClock()}
	if opts.Now == nil {
		opts.Now = e.clock.Now
	}
	if opts.BootDuration == 0 {
		opts.BootDuration = 40 * time.Second
	}
	e.emu = emu.New(opts)
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{ResponseWriter: w, status: 200}
		e.emu.ServeHTTP(rec, r)
		e.count.Add(1)
		e.mu.Lock()
		e.log = append(e.log, r.Method+" "+r.URL.Path+" "+http.StatusText(rec.status))
		e.mu.Unlock()
	}))
	t.Cleanup(e.srv.Close)
	return e
}

// fastConfig keeps retries and waits short so the tests run in well under a second each.
func (e *env) config() Config {
	return Config{
		APIKey:                testKey,
		BaseURL:               e.srv.URL,
		Tuning:                restclient.Tuning{RequestsPerSecond: 1000, Burst: 1000, RetryMax: 4, RetryWaitMin: time.Millisecond, RetryWaitMax: 10 * time.Millisecond},
		EmptyAvailabilityWait: time.Millisecond,
	}
}

func (e *env) client(t *testing.T, mut func(*ClientConfig)) *Client {
	t.Helper()
	cfg := ClientConfig{
		APIKey:         testKey,
		BaseURL:        e.srv.URL,
		Tuning:         restclient.Tuning{RequestsPerSecond: 1000, Burst: 1000, RetryMax: 4, RetryWaitMin: time.Millisecond, RetryWaitMax: 10 * time.Millisecond},
		EmptyRetryWait: time.Millisecond,
	}
	if mut != nil {
		mut(&cfg)
	}
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (e *env) backend(t *testing.T, mut func(*Config)) *Backend {
	t.Helper()
	inv, err := inventory.Default()
	if err != nil {
		t.Fatal(err)
	}
	cfg := e.config()
	if mut != nil {
		mut(&cfg)
	}
	b, err := New(cfg, inv, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func wantKind(t *testing.T, err error, kind controlplane.ErrorKind) {
	t.Helper()
	if err == nil {
		t.Fatalf("want a %v error, got nil", kind)
	}
	if got := controlplane.KindOf(err); got != kind {
		t.Fatalf("want a %v error, got %v: %v", kind, got, err)
	}
}
