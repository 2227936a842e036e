package upcloud

import (
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/conformance"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/upcloud"
)

// TestConformance runs the backend contract against a fresh in-memory UpCloud emulator per case.
func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Harness{Cloud: CloudName, Start: startConformance})
}

// startConformance serves a fresh emulator on loopback whose servers boot in 300ms and stop in 200ms,
// and builds the backend against it with the default inventory and fast delete polling.
func startConformance(t *testing.T) (controlplane.InstanceManagerBackend, emukit.Admin) {
	t.Helper()
	// httptest listens on loopback, and its Close also drops connections the client dialled but never
	// used (http.Server.Shutdown would wait 5s for those).
	srv, base := startEmulator(t, emu.Options{BootDuration: 300 * time.Millisecond, StopDuration: 200 * time.Millisecond})
	// Retry-After (1s in the suite) is honoured up to RetryWaitMax.
	tuning := backendtest.Tuning(10*time.Millisecond, 2*time.Second)
	tuning.Timeout = 10 * time.Second
	return backendtest.Must(New(Config{
		Username:      testUser,
		Password:      testPass,
		BaseURL:       base,
		Tuning:        tuning,
		PollInterval:  50 * time.Millisecond,
		DeleteTimeout: 20 * time.Second,
	}, backendtest.Inventory(t), nil))(t), srv
}
