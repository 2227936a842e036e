package verda

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/conformance"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/verda"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
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
	hs := httptest.NewServer(srv) // loopback only
	t.Cleanup(hs.Close)
	inv, err := inventory.Default()
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(Config{
		ClientID:     emu.DefaultClientID,
		ClientSecret: emu.DefaultClientSecret,
		BaseURL:      hs.URL + emu.BasePath,
		Tuning: restclient.Tuning{RequestsPerSecond: 1000, Burst: 1000,
			RetryWaitMin: time.Millisecond, RetryWaitMax: 50 * time.Millisecond},
		DeleteRetryWait: 50 * time.Millisecond,
	}, inv, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b, srv
}
