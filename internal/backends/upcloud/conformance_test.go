package upcloud

import (
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/conformance"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
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
	b, err := New(Config{
		Username: testUser,
		Password: testPass,
		BaseURL:  base,
		// Retry-After (1s in the suite) is honoured up to RetryWaitMax.
		Tuning:        restclient.Tuning{Timeout: 10 * time.Second, RequestsPerSecond: 1000, Burst: 1000, RetryWaitMin: 10 * time.Millisecond, RetryWaitMax: 2 * time.Second},
		PollInterval:  50 * time.Millisecond,
		DeleteTimeout: 20 * time.Second,
	}, testInventory(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	return b, srv
}
