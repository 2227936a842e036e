package primeintellect

import (
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/primeintellect"
)

const testKey = "pi-test-key"

// clock is a settable clock for the emulator, so status progressions need no sleeping.
type clock = backendtest.Clock

func newClock() *clock { return backendtest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) }

// env is an emulator behind a real HTTP server, with a request log.
type env struct {
	*backendtest.RequestLog // "METHOD /path status"
	emu                     *emu.Server
	clock                   *clock
}

func newEnv(t *testing.T, opts emu.Options) *env {
	t.Helper()
	e := &env{clock: newClock()}
	backendtest.Clocked(&opts.Options, e.clock, 40*time.Second)
	e.emu = emu.New(opts)
	e.RequestLog = backendtest.NewRequestLog(t, e.emu)
	return e
}

// fastConfig keeps retries and waits short so the tests run in well under a second each.
func (e *env) config() Config {
	return Config{
		APIKey:                testKey,
		BaseURL:               e.URL,
		Tuning:                backendtest.Retrying(4, time.Millisecond, 10*time.Millisecond),
		EmptyAvailabilityWait: time.Millisecond,
	}
}

func (e *env) client(t *testing.T, mut func(*ClientConfig)) *Client {
	t.Helper()
	cfg := ClientConfig{
		APIKey:         testKey,
		BaseURL:        e.URL,
		Tuning:         backendtest.Retrying(4, time.Millisecond, 10*time.Millisecond),
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
	inv := backendtest.Inventory(t)
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

// backendOffers is e.backend with its offers, failing the test when it cannot list them.
func (e *env) backendOffers(t *testing.T, mut func(*Config)) (*Backend, []cloudprovider.Offer) {
	t.Helper()
	b := e.backend(t, mut)
	return b, backendtest.Offers(t, b)
}

// wantKind fails the test unless err is a classified cloud error (cloudprovider.Error) of kind.
var wantKind = backendtest.WantKind
