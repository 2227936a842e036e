package verda

import (
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/conformance"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/verda"
)

// TestConformance runs the backend contract against a fresh in-memory Verda emulator per case. Verda
// accepts a create without SSH keys (ssh_key_ids may be empty).
func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Harness{Cloud: CloudName, Start: startConformance})
}

func startConformance(t *testing.T) (controlplane.InstanceManagerBackend, emukit.Admin) {
	t.Helper()
	// Machines boot in 400 ms (ordered, provisioning, running) on the real clock; delete is immediate.
	srv := emu.New(emu.Options{BootDuration: 400 * time.Millisecond})
	return backendtest.Must(New(Config{
		ClientID:        emu.DefaultClientID,
		ClientSecret:    emu.DefaultClientSecret,
		BaseURL:         backendtest.Serve(t, srv) + emu.BasePath,
		Tuning:          backendtest.Tuning(time.Millisecond, 50*time.Millisecond),
		DeleteRetryWait: 50 * time.Millisecond,
	}, backendtest.Inventory(t), nil))(t), srv
}
