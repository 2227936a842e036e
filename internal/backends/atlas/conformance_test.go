package atlas

import (
	"context"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/conformance"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/atlas"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
)

// TestConformance runs the backend contract against a fresh in-memory Atlas emulator per case, served
// over real HTTP on loopback.
func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Harness{
		Cloud: CloudName,
		Start: func(t *testing.T) (controlplane.InstanceManagerBackend, emukit.Admin) {
			t.Helper()
			srv := emu.New(emu.Options{BootDuration: 300 * time.Millisecond, DeleteDuration: 200 * time.Millisecond})
			url, stop, err := srv.Start("127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = stop(context.Background()) })
			inv, err := inventory.Default()
			if err != nil {
				t.Fatal(err)
			}
			b, err := New(Config{
				BaseURL: url, Token: emu.DefaultToken,
				Tuning: restclient.Tuning{RequestsPerSecond: 1000, Burst: 1000, RetryWaitMin: 10 * time.Millisecond, RetryWaitMax: 2 * time.Second},
			}, inv, nil)
			if err != nil {
				t.Fatal(err)
			}
			return b, srv
		},
	})
}
