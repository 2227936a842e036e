package sandbox

import (
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/conformance"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
)

// TestConformance runs the backend contract against a fresh sandbox per case. The sandbox is in
// process: the backend is its own emulator and admin, over a directory of its own, without SSH machines.
func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Harness{
		Cloud: CloudName,
		Start: func(t *testing.T) (controlplane.InstanceManagerBackend, emukit.Admin) {
			t.Helper()
			b := newBackendWith(t, Config{Dir: t.TempDir(), BootTime: 300 * time.Millisecond, DeleteTime: 200 * time.Millisecond,
				Tuning: restclient.Tuning{RetryWaitMin: 10 * time.Millisecond, RetryWaitMax: 200 * time.Millisecond}})
			return b, b
		},
	})
}
