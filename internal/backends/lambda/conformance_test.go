package lambda

import (
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/conformance"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/lambda"
)

// TestConformance runs the backend contract against a fresh in-memory Lambda emulator per case. Lambda
// has no labels, so ownership is carried by the name alone (the confirmation case is skipped).
func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Harness{Cloud: CloudName, Start: startConformance})
}

func startConformance(t *testing.T) (controlplane.InstanceManagerBackend, emukit.Admin) {
	t.Helper()
	// Machines boot in 400 ms and terminate in 200 ms on the real clock.
	srv := emu.New(emu.Options{BootDuration: 400 * time.Millisecond, TerminateDuration: 200 * time.Millisecond, LaunchInterval: -1})
	return backendtest.Must(New(Config{
		APIKey:         emu.DefaultAPIKey,
		BaseURL:        backendtest.Serve(t, srv) + emu.BasePath,
		Tuning:         backendtest.Tuning(time.Millisecond, 50*time.Millisecond),
		LaunchInterval: -1,
		// A failed boot is unhealthy, pending for the grace, then an error: a short grace on the real
		// clock (TestUnhealthyGrace tests the default one on a fake clock).
		UnhealthyGrace: 300 * time.Millisecond,
	}, backendtest.Inventory(t), nil))(t), srv
}
