package lambda

import (
	"strings"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

func TestStatusTable(t *testing.T) {
	cases := []backendtest.StatusCase{
		{Word: "booting", Reachable: false, Want: cloudprovider.StatusPending},
		{Word: "booting", Reachable: true, Want: cloudprovider.StatusPending}, // the ip appears before the machine is up
		{Word: "active", Reachable: true, Want: cloudprovider.StatusRunning},
		{Word: "active", Reachable: false, Want: cloudprovider.StatusPending}, // running needs an address
		{Word: "ACTIVE", Reachable: true, Want: cloudprovider.StatusRunning},
		{Word: "unhealthy", Reachable: true, Want: cloudprovider.StatusError},
		{Word: "unhealthy", Reachable: false, Want: cloudprovider.StatusError},
		{Word: "terminating", Reachable: true, Want: cloudprovider.StatusTerminated},
		{Word: "terminated", Reachable: false, Want: cloudprovider.StatusTerminated},
		{Word: "preempted", Reachable: false, Want: cloudprovider.StatusTerminated},
		{Word: "", Reachable: false, Want: cloudprovider.StatusPending},
		{Word: "rebooting", Reachable: true, Want: cloudprovider.StatusPending}, // unknown words keep polling
	}
	for i, msg := range backendtest.WantStatuses(t, mapStatus, cases) {
		if msg != "" && !strings.Contains(msg, cases[i].Word) {
			t.Errorf("the message %q does not name Lambda's status %q", msg, cases[i].Word)
		}
	}
	// Every word of Lambda's InstanceStatus enum is in the table.
	for _, s := range []string{StatusBooting, StatusActive, StatusUnhealthy, StatusTerminating, StatusTerminated} {
		if _, ok := statusTable[s]; !ok {
			t.Errorf("%s is not mapped", s)
		}
	}
}
