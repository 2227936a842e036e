package atlas

import (
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/conformance"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/atlas"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
)

// TestConformance runs the backend contract against a fresh in-memory Atlas emulator per case, served
// over real HTTP on loopback.
func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Harness{
		Cloud: CloudName,
		Start: func(t *testing.T) (controlplane.InstanceManagerBackend, emukit.Admin) {
			t.Helper()
			srv := emu.New(emu.Options{BootDuration: 300 * time.Millisecond, DeleteDuration: 200 * time.Millisecond})
			return backendtest.Must(New(Config{
				BaseURL: backendtest.Start(t, srv.Start), Token: emu.DefaultToken,
				Tuning: backendtest.Tuning(10*time.Millisecond, 2*time.Second),
			}, backendtest.Inventory(t), nil))(t), srv
		},
	})
}
