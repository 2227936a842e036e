package backendtest

import (
	"fmt"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// errorsTB records the errors a helper reports instead of failing the test.
type errorsTB struct {
	testing.TB
	errs []string
}

func (r *errorsTB) Helper() {}

func (r *errorsTB) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestWantHardwareOnly(t *testing.T) {
	hw := cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 16, MemoryGB: 128}
	offer := func(details map[string]string) []cloudprovider.Offer {
		return []cloudprovider.Offer{{Region: "r1", InstanceType: "t1", Hardware: hw, Details: details}}
	}
	tests := []struct {
		name     string
		offers   []cloudprovider.Offer
		wantErrs int
	}{
		{"hardware only", offer(map[string]string{"socket": "SXM5"}), 0},
		{"a key duplicates Hardware", offer(map[string]string{"vcpus": "16"}), 1},
		{"both keys duplicate it", offer(map[string]string{"vcpus": "16", "memory_gb": "128"}), 2},
		{"no offer", nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &errorsTB{TB: t}
			found := WantHardwareOnly(rec, tt.offers, []HardwareCase{{Region: "r1", InstanceType: "t1", Want: hw}}, "vcpus", "memory_gb")
			if len(rec.errs) != tt.wantErrs || len(found) != 1 {
				t.Errorf("errors %q (want %d), %d offers returned (want 1)", rec.errs, tt.wantErrs, len(found))
			}
		})
	}
}
