package lambda

import (
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/lambda"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
)

const bootTime = 40 * time.Second

type fixture struct {
	srv   *emu.Server
	url   string
	clock *backendtest.Clock
}

// startEmulator runs an emulator on a real HTTP server with a fake clock, so tests move time instead of
// waiting.
func startEmulator(t *testing.T, opts emu.Options) *fixture {
	t.Helper()
	clock := backendtest.NewClock(time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC))
	backendtest.Clocked(&opts.Options, clock, bootTime)
	if opts.LaunchInterval == 0 {
		opts.LaunchInterval = -1 // no pacing, except in the tests of it (pacing_test.go)
	}
	srv := emu.New(opts)
	return &fixture{srv: srv, url: backendtest.Serve(t, srv) + emu.BasePath, clock: clock}
}

var fastTuning = restclient.Tuning{RequestsPerSecond: 1000, Burst: 1000, RetryMax: 4,
	RetryWaitMin: time.Millisecond, RetryWaitMax: 5 * time.Millisecond}

func (f *fixture) backend(t *testing.T, mod func(*Config)) *Backend {
	t.Helper()
	cfg := Config{APIKey: emu.DefaultAPIKey, BaseURL: f.url, Tuning: fastTuning, LaunchInterval: -1}
	if mod != nil {
		mod(&cfg)
	}
	return backendtest.Must(New(cfg, testInventory(t), nil))(t)
}

var testInventory = backendtest.Inventory

func pool(t *testing.T) inventory.Pool {
	t.Helper()
	p, ok := testInventory(t).PoolByName("lambda-vm-pool")
	if !ok {
		t.Fatal("no lambda-vm-pool in the embedded inventory")
	}
	return p
}

// request is a create request for resource name from offer, with a fresh ownership token.
func request(t *testing.T, offer cloudprovider.Offer, name string, keys ...string) cloudprovider.CreateRequest {
	t.Helper()
	p := pool(t)
	offer.Pool = p.Name
	owner := cloudprovider.Ownership{Resource: name, Token: cloudprovider.NewOwnerToken()}
	return cloudprovider.CreateRequest{Name: cloudprovider.CloudName(p, name, owner.Token), Pool: p, Offer: offer,
		Owner: owner, SSHPublicKeys: keys}
}

// wantKind fails the test unless err is a classified cloud error (cloudprovider.Error) of kind.
var wantKind = backendtest.WantKind

const (
	testKey  = backendtest.TestKey
	otherKey = backendtest.OtherKey
)
