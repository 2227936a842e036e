package controlplane

import (
	"strings"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
)

// An import ID without its "--<token>" suffix fails before Terraform's "Cannot import non-existent
// remote object", saying what the ID lacks and listing the machines it probably means.
func TestImportHint(t *testing.T) {
	pools := []inventory.Pool{{Name: "sandbox-vm-pool", Cloud: "sandbox", Prefix: "sbx-vm-"}, {Name: "verda-vm-pool", Cloud: "verda", Prefix: "verda-vm-"}}
	machine := func(pool int, name string) Machine {
		return Machine{Pool: pools[pool], Ownership: OwnedConfirmed, Instance: cloudprovider.Instance{
			Name: name, ID: "id-" + name, Region: "eu-1", Status: cloudprovider.StatusRunning}}
	}
	machines := []Machine{
		machine(0, "sbx-vm-trainer--abcdefgh"), machine(0, "sbx-vm-trainer-2--bcdefghi"),
		machine(1, "verda-vm-trainer--cdefghij"), machine(0, "sbx-vm-legacy"),
	}
	for _, tc := range []struct {
		name, id    string
		unreachable map[string]string
		want        []string // nil: the import goes on
		not         []string
	}{
		{"full name", "sbx-vm-trainer--abcdefgh", nil, nil, nil},
		{"legacy machine without a token", "sbx-vm-legacy", nil, nil, nil},
		{"prefix and name", "sbx-vm-trainer", nil,
			[]string{`"sbx-vm-trainer" has no "--<token>" suffix`, "Machines whose names start with it", "sbx-vm-trainer--abcdefgh (sandbox eu-1, running, id id-sbx-vm-trainer--abcdefgh, ownership confirmed)",
				"sbx-vm-trainer-2--bcdefghi", "terraform import <resource address> sbx-vm-trainer--abcdefgh"}, []string{"verda-vm-trainer"}},
		{"name alone", "trainer", nil,
			[]string{`"trainer" has no "--<token>" suffix`, "sbx-vm-trainer--abcdefgh", "verda-vm-trainer--cdefghij"}, []string{"trainer-2"}},
		{"nothing matches", "sbx-vm-ghost", map[string]string{"verda": "timeout"},
			[]string{`"sbx-vm-ghost" has no "--<token>" suffix`, `No machine at the configured clouds has a name that starts with "sbx-vm-ghost"`, "hydra_gpu_instances", "Not listed (could not be reached): verda."}, nil},
		{"not hydra's at all", "i-0123", nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !needsCandidates(pools, tc.id) && tc.want != nil {
				t.Fatalf("%q would not be checked", tc.id)
			}
			got := importHint(tc.id, pools, machines, tc.unreachable)
			if tc.want == nil {
				if got != "" {
					t.Fatalf("the import of %q must go on, got:\n%s", tc.id, got)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("the hint lacks %q:\n%s", w, got)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("the hint names %q:\n%s", n, got)
				}
			}
		})
	}
	if needsCandidates(pools, "sbx-vm-trainer--abcdefgh") {
		t.Error("a full cloud-side name needs no listing")
	}
}
