package provider

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox"
)

// An offer that is listed but sold out at apply fails the create for lack of capacity; the state
// keeps the resource as an error with no machine and the failed offer in its private state. The next
// plan, from another working directory (a CI runner that keeps nothing but the state), skips the
// offer and chooses the next cheapest; the apply replaces the record with a machine there. Nothing
// was billed for the failed create.
func TestAccGPUInstance_capacityMemory(t *testing.T) {
	s := newTestSandbox(t)
	cfg := func(work string) string {
		return s.providerConfigIn(filepath.Join(s.dir, work), "") + testAccGPUInstanceConfig_basic("cap", "h100", "")
	}
	accTest(t, s.checkDestroyed, []resource.TestStep{
		{
			PreConfig: func() { s.setFaults(sandbox.Faults{OutOfStock: []string{"sbx-eu-1/sbx.h100.1x"}}) },
			Config:    cfg("run1"),
			ConfigPlanChecks: preApply(
				planKnown("region", "sbx-eu-1"),
			),
			ExpectError: errorPattern("no capacity"),
		},
		{
			PreConfig: func() {
				s.noneCreated(t, "the sold-out create")
				if n := len(s.live()); n != 0 {
					t.Errorf("%d machines live after the sold-out create", n)
				}
			},
			Config: cfg("run2"),
			ConfigPlanChecks: preApply(
				plancheck.ExpectResourceAction(resourceName, plancheck.ResourceActionDestroyBeforeCreate),
				planKnown("region", "sbx-us-1"),
			),
			ConfigStateChecks: []statecheck.StateCheck{stateKnown("region", "sbx-us-1"), stateKnown("status", "ready")},
			Check:             resource.ComposeTestCheckFunc(s.checkLive(1), s.checkCreated(1)),
		},
	})
}

// With capacity_memory = "0" nothing is remembered: the next plan chooses the sold-out offer again.
func TestAccGPUInstance_capacityMemoryOff(t *testing.T) {
	s := newTestSandbox(t)
	cfg := s.providerConfig(`  capacity_memory = "0"`) + testAccGPUInstanceConfig_basic("cap", "h100", "")
	accTest(t, s.checkDestroyed, []resource.TestStep{
		{
			PreConfig:   func() { s.setFaults(sandbox.Faults{OutOfStock: []string{"sbx-eu-1/sbx.h100.1x"}}) },
			Config:      cfg,
			ExpectError: errorPattern("no capacity"),
		},
		{
			Config:      cfg,
			ExpectError: errorPattern("no capacity"),
			Check:       s.checkCreated(0),
		},
	})
}

// The record a sold-out create leaves (status error, no machine) stays in state: with the one
// offer remembered, the next plan is refused with the way out. Destroying it calls no cloud and fails
// nothing; nothing was ever created.
func TestAccGPUInstance_capacityRecordDestroyed(t *testing.T) {
	s := newTestSandbox(t)
	accTest(t, func(st *terraform.State) error {
		if n := s.created(); n != 0 {
			return fmt.Errorf("%d machines created", n)
		}
		return s.checkDestroyed(st)
	}, []resource.TestStep{{
		PreConfig:   func() { s.setFaults(sandbox.Faults{OutOfStock: []string{"sbx-eu-1/sbx.h100.1x"}}) },
		Config:      s.instanceConfig("cap", "h100", `regions = ["sbx-eu-1"]`),
		ExpectError: errorPattern("no capacity"),
	}, {
		// The record is in state: its one offer is remembered, so the plan is refused with the way out.
		Config: s.instanceConfig("cap", "h100", `regions = ["sbx-eu-1"]`),
		ExpectError: errorPattern("No GPU offer left for hydra_gpu_instance cap", "These offers are still listed", "sandbox-vm-pool/sbx-eu-1/sbx.h100.1x",
			"skipped until", `capacity_memory = "0"`),
	}})
}
