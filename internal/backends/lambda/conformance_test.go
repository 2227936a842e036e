package lambda

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/conformance"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/lambda"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
)

// TestConformance runs the backend contract against a fresh in-memory Lambda emulator per case. Lambda
// has no labels, so ownership is carried by the name alone (the confirmation case is skipped).
func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Harness{Cloud: CloudName, Start: startConformance})
}

func startConformance(t *testing.T) (controlplane.InstanceManagerBackend, emukit.Admin) {
	t.Helper()
	// Machines boot in 400 ms and terminate in 200 ms on the real clock.
	srv := emu.New(emu.Options{BootDuration: 400 * time.Millisecond, TerminateDuration: 200 * time.Millisecond})
	hs := httptest.NewServer(srv) // loopback only
	t.Cleanup(hs.Close)
	inv, err := inventory.Default()
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(Config{
		APIKey:  emu.DefaultAPIKey,
		BaseURL: hs.URL + emu.BasePath,
		Tuning: restclient.Tuning{RequestsPerSecond: 1000, Burst: 1000,
			RetryWaitMin: time.Millisecond, RetryWaitMax: 50 * time.Millisecond},
		LaunchInterval: -1,
	}, inv, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b, srv
}
