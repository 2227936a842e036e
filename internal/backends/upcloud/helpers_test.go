package upcloud

import (
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/upcloud"
)

const (
	testUser  = "hydra-sub"
	testPass  = "s3cret-Pass!"
	testToken = "ucat_01TESTTOKEN"
)

// fakeClock is a manual clock for the emulator.
type fakeClock = backendtest.Clock

func newFakeClock() *fakeClock {
	return backendtest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
}

// countingTransport counts the HTTP attempts a client makes.
type countingTransport struct {
	n    atomic.Int64
	next http.RoundTripper
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// startEmulator serves an emulator over real HTTP and returns it with its API base URL.
func startEmulator(t *testing.T, opts emu.Options) (*emu.Server, string) {
	t.Helper()
	if opts.Username == "" && opts.Token == "" {
		opts.Username, opts.Password, opts.Token = testUser, testPass, testToken
	}
	srv := emu.New(opts)
	return srv, backendtest.Serve(t, srv) + emu.APIPrefix
}

// fastClientConfig is a client configuration with quick retries and a loose rate limit.
func fastClientConfig(base string) ClientConfig {
	return ClientConfig{
		Username: testUser,
		Password: testPass,
		BaseURL:  base,
		Tuning:   restclient.Tuning{Timeout: 10 * time.Second, RequestsPerSecond: 1000, Burst: 1000, RetryMax: 4, RetryWaitMin: time.Millisecond, RetryWaitMax: 20 * time.Millisecond},
	}
}

func newTestClient(t *testing.T, cfg ClientConfig) *Client {
	t.Helper()
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
