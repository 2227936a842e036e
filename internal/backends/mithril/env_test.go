package mithril

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/mithril"
)

// fakeClock is the emulator's clock: tests move it instead of sleeping.
type fakeClock = backendtest.Clock

// countingTransport counts the HTTP attempts that reach the server and records their methods and paths.
type countingTransport struct {
	n     atomic.Int64
	next  http.RoundTripper
	mu    sync.Mutex
	calls []string // "METHOD /path"
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	c.mu.Lock()
	c.calls = append(c.calls, r.Method+" "+r.URL.Path)
	c.mu.Unlock()
	return c.next.RoundTrip(r)
}

// since returns the calls after the first n recorded.
func (c *countingTransport) since(n int) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.calls[n:]...)
}

// mark is the number of calls recorded so far.
func (c *countingTransport) mark() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.calls)
}

type env struct {
	emu     *emu.Server
	srv     *httptest.Server
	clock   *fakeClock
	counter *countingTransport
	backend *Backend
	client  *Client
	project string
}

const bootTime = 30 * time.Second

func newEnv(t *testing.T, opts emu.Options, mutate ...func(*Config)) *env {
	t.Helper()
	clock := backendtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	backendtest.Clocked(&opts.Options, clock, bootTime)
	e := emu.New(opts)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	counter := &countingTransport{next: http.DefaultTransport}
	cfg := Config{
		APIKey:  emu.DefaultAPIKey,
		Project: emu.DefaultProject,
		BaseURL: srv.URL,
		Tuning:  restclient.Tuning{Timeout: 5 * time.Second, RequestsPerSecond: 1000, Burst: 1000, RetryWaitMin: time.Millisecond, RetryWaitMax: 20 * time.Millisecond, Transport: counter},
	}
	for _, m := range mutate {
		m(&cfg)
	}
	b := backendtest.Must(New(cfg, backendtest.Inventory(t), nil))(t)
	return &env{emu: e, srv: srv, clock: clock, counter: counter, backend: b, client: b.Client(), project: emu.ProjectFID(emu.DefaultProject)}
}
