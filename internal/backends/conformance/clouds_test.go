package conformance_test

import (
	"slices"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/conformance"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/clouds"
)

// TestConformance runs the backend contract against every cloud of the registry (internal/clouds), the
// sandbox included: for each, a fresh emulator per case whose machines boot and terminate within a
// second, served over real HTTP on loopback, and the backend built against it with the test inventory.
// A cloud added to the registry without a harness (conformance.Harnesses) fails the test.
func TestConformance(t *testing.T) {
	eachCloud(t, func(t *testing.T, _ string, h conformance.Harness) { conformance.Run(t, h) })
}

// noClusterAPI are the registry's clouds whose backends have no cluster API (issue 34: Prime
// Intellect publishes no create call for its multi-node offers, Lambda's 1-Click Clusters have no
// public API, UpCloud has no interconnect). The test fails when one of them implements
// cloudprovider.ClusterBackend, and when any other cloud does not, until this list says so.
var noClusterAPI = []string{"lambda", "primeintellect", "upcloud"}

// TestClusterConformance runs the cluster contract against every cloud of the registry whose backend
// implements cloudprovider.ClusterBackend, each against its own emulator (the harnesses of
// TestConformance), and checks that the others indeed implement none.
func TestClusterConformance(t *testing.T) {
	eachCloudWith(t, "cloudprovider.ClusterBackend", "no cluster API", noClusterAPI,
		func(b cloudprovider.InstanceManagerBackend) bool {
			_, ok := b.(cloudprovider.ClusterBackend)
			return ok
		},
		conformance.RunClusters)
}

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

// eachCloudWith runs suite for every cloud of the registry whose backend has an optional ability
// (implements says so), and fails for a cloud listed in without that has it, or one not listed that
// has it not.
func eachCloudWith(t *testing.T, ability, lacking string, without []string,
	implements func(cloudprovider.InstanceManagerBackend) bool, suite func(*testing.T, conformance.Harness)) {
	eachCloud(t, func(t *testing.T, cloud string, h conformance.Harness) {
		b, _ := h.Start(t)
		has, listed := implements(b), slices.Contains(without, cloud)
		switch {
		case listed && has:
			t.Fatalf("%s implements %s but is listed as having %s: take it off the list", cloud, ability, lacking)
		case listed:
			t.Logf("%s has %s, and its backend implements none", cloud, lacking)
			return
		case !has:
			t.Fatalf("%s does not implement %s and is not listed as having %s", cloud, ability, lacking)
		}
		suite(t, h)
	})
}

// eachCloud runs fn, in parallel, for every cloud of the registry with its harness (Cloud set); a
// registered cloud without a harness fails the test.
func eachCloud(t *testing.T, fn func(t *testing.T, cloud string, h conformance.Harness)) {
	for _, cloud := range clouds.Names() {
		h, ok := conformance.Harnesses()[cloud]
		if !ok {
			t.Errorf("the registry's cloud %q has no conformance harness", cloud)
			continue
		}
		t.Run(cloud, func(t *testing.T) {
			t.Parallel()
			fn(t, cloud, h)
		})
	}
}
