package primeintellect

import (
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/conformance"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/primeintellect"
)

// TestConformance runs the backend contract against the emulator. The default offer (the cheapest
// eligible on-demand one) fits: Prime's offers report no stock count (Available -1).
func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Harness{Cloud: CloudName, Start: startConformance})
}

// startConformance serves a fresh in-memory emulator on loopback, whose pods boot in under a second
// and terminate in a third of one, and builds the backend against it with the default inventory.
func startConformance(t *testing.T) (controlplane.InstanceManagerBackend, emukit.Admin) {
	t.Helper()
	e := emu.New(emu.Options{BootDuration: 800 * time.Millisecond, DeleteDuration: 300 * time.Millisecond})
	return backendtest.Must(New(Config{
		APIKey:  emu.DefaultAPIKey,
		BaseURL: backendtest.Start(t, e.Start),
		// Retry-After (1 s in the suite) is honoured up to RetryWaitMax.
		Tuning:                backendtest.Tuning(10*time.Millisecond, 2*time.Second),
		EmptyAvailabilityWait: 10 * time.Millisecond,
	}, backendtest.Inventory(t), nil))(t), e
}
