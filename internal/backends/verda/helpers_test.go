package verda

import (
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/verda"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// fakeClock is shared by the emulator and the client so tests move time instead of waiting.
type fakeClock = backendtest.Clock

func newClock() *fakeClock { return backendtest.NewClock(time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC)) }

const bootTime = 40 * time.Second

type fixture struct {
	srv   *emu.Server
	url   string
	clock *fakeClock
}

// startEmulator runs an emulator on a real HTTP server with the fake clock.
func startEmulator(t *testing.T, opts emu.Options) *fixture {
	t.Helper()
	clock := newClock()
	backendtest.Clocked(&opts.Options, clock, bootTime)
	srv := emu.New(opts)
	return &fixture{srv: srv, url: backendtest.Serve(t, srv) + emu.BasePath, clock: clock}
}

func (f *fixture) clientConfig() ClientConfig {
	return ClientConfig{
		BaseURL:      f.url,
		ClientID:     emu.DefaultClientID,
		ClientSecret: emu.DefaultClientSecret,
		Tuning:       backendtest.Retrying(4, time.Millisecond, 5*time.Millisecond),
		Now:          f.clock.Now,
	}
}

func (f *fixture) client(t *testing.T) *Client {
	t.Helper()
	return backendtest.Must(NewClient(f.clientConfig()))(t)
}

func (f *fixture) config() Config {
	cc := f.clientConfig()
	return Config{
		ClientID:        cc.ClientID,
		ClientSecret:    cc.ClientSecret,
		BaseURL:         cc.BaseURL,
		Tuning:          cc.Tuning,
		DeleteRetryWait: time.Millisecond,
		DeleteRetryMax:  3,
		Now:             f.clock.Now,
	}
}

func (f *fixture) backend(t *testing.T, mod func(*Config)) *Backend {
	t.Helper()
	cfg := f.config()
	if mod != nil {
		mod(&cfg)
	}
	return backendtest.Must(New(cfg, backendtest.Inventory(t), nil))(t)
}

func (f *fixture) setFaults(t *testing.T, fl simulation.Faults) {
	t.Helper()
	if err := f.srv.SetFaults(fl); err != nil {
		t.Fatal(err)
	}
}

// wantKind fails the test unless err is a classified cloud error (cloudprovider.Error) of kind.
var wantKind = backendtest.WantKind

const (
	testKey  = backendtest.TestKey
	otherKey = backendtest.OtherKey
)
