package backendtest

import (
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// WantHardwareOnly is WantHardware, and fails the test when a case's offer also carries one of the
// cloud's own keys for what Hardware holds (dupKeys: "vcpus", "memory_gb", ...) among its Details.
func WantHardwareOnly(t testing.TB, offers []cloudprovider.Offer, cases []HardwareCase, dupKeys ...string) []cloudprovider.Offer {
	t.Helper()
	found := WantHardware(t, offers, cases)
	for i, o := range found {
		for _, k := range dupKeys {
			if _, dup := o.Details[k]; dup {
				t.Errorf("%s: detail %q duplicates Hardware", cases[i], k)
			}
		}
	}
	return found
}
