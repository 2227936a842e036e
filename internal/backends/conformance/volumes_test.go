package conformance_test

import (
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/conformance"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// noVolumes are the registry's clouds whose backends keep no volumes (issue 35: Atlas has none). The
// test fails when one of them implements cloudprovider.VolumeBackend, and when any other cloud does
// not, until this list says so.
var noVolumes = []string{"atlas"}

// TestVolumeConformance runs the volume contract against every cloud of the registry whose backend
// implements cloudprovider.VolumeBackend, each against its own emulator (the harnesses of
// TestConformance), and checks that the others indeed implement none.
func TestVolumeConformance(t *testing.T) {
	eachCloudWith(t, "cloudprovider.VolumeBackend", "no volumes", noVolumes,
		func(b cloudprovider.InstanceManagerBackend) bool { _, ok := b.(cloudprovider.VolumeBackend); return ok },
		conformance.RunVolumes)
}
