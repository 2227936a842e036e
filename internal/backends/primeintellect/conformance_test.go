package primeintellect

import (
	"context"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/conformance"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/primeintellect"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
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
	url, stop, err := e.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop(context.Background()) })
	inv, err := inventory.Default()
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(Config{
		APIKey:  emu.DefaultAPIKey,
		BaseURL: url,
		// Retry-After (1 s in the suite) is honoured up to RetryWaitMax.
		Tuning:                restclient.Tuning{RequestsPerSecond: 1000, Burst: 1000, RetryWaitMin: 10 * time.Millisecond, RetryWaitMax: 2 * time.Second},
		EmptyAvailabilityWait: 10 * time.Millisecond,
	}, inv, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b, e
}
