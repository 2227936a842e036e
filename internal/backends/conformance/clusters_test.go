package conformance_test

import (
	"slices"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/conformance"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/clouds"
)

// noClusterAPI are the registry's clouds whose backends have no cluster API (issue 34: Prime
// Intellect publishes no create call for its multi-node offers, Lambda's 1-Click Clusters have no
// public API, UpCloud has no interconnect). The test fails when one of them implements
// cloudprovider.ClusterBackend, and when any other cloud does not, until this list says so.
var noClusterAPI = []string{"lambda", "primeintellect", "upcloud"}

// TestClusterConformance runs the cluster contract against every cloud of the registry whose backend
// implements cloudprovider.ClusterBackend, each against its own emulator (the harnesses of
// TestConformance), and checks that the others indeed implement none.
func TestClusterConformance(t *testing.T) {
	eachCloud(t, func(t *testing.T, cloud string, h conformance.Harness) {
		b, _ := h.Start(t)
		_, implements := b.(cloudprovider.ClusterBackend)
		listed := slices.Contains(noClusterAPI, cloud)
		switch {
		case listed && implements:
			t.Fatalf("%s implements cloudprovider.ClusterBackend but is listed as having no cluster API: take it off noClusterAPI", cloud)
		case listed:
			t.Logf("%s has no cluster API, and its backend implements none", cloud)
			return
		case !implements:
			t.Fatalf("%s does not implement cloudprovider.ClusterBackend and is not listed as having no cluster API", cloud)
		}
		conformance.RunClusters(t, h)
	})
}

// eachCloud runs fn, in parallel, for every cloud of the registry with its harness (Cloud set); a
// registered cloud without a harness fails the test.
func eachCloud(t *testing.T, fn func(t *testing.T, cloud string, h conformance.Harness)) {
	for _, cloud := range clouds.Names() {
		h, ok := harnesses[cloud]
		if !ok {
			t.Errorf("the registry's cloud %q has no conformance harness", cloud)
			continue
		}
		h.Cloud = cloud
		t.Run(cloud, func(t *testing.T) {
			t.Parallel()
			fn(t, cloud, h)
		})
	}
}
