package lambda

import (
	"strings"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
)

func TestStatusTable(t *testing.T) {
	for _, tc := range []struct {
		status string
		hasIP  bool
		want   controlplane.Status
		msg    bool
	}{
		{"booting", false, controlplane.StatusPending, false},
		{"booting", true, controlplane.StatusPending, false}, // the ip appears before the machine is up
		{"active", true, controlplane.StatusRunning, false},
		{"active", false, controlplane.StatusPending, false}, // running needs an address
		{"ACTIVE", true, controlplane.StatusRunning, false},
		{"unhealthy", true, controlplane.StatusError, true},
		{"unhealthy", false, controlplane.StatusError, true},
		{"terminating", true, controlplane.StatusTerminated, false},
		{"terminated", false, controlplane.StatusTerminated, false},
		{"preempted", false, controlplane.StatusTerminated, false},
		{"", false, controlplane.StatusPending, false},
		{"rebooting", true, controlplane.StatusPending, false}, // unknown words keep polling
	} {
		got, msg := mapStatus(tc.status, tc.hasIP)
		if got != tc.want || (msg != "") != tc.msg {
			t.Errorf("mapStatus(%q, %v) = %q, %q; want %q (message %v)", tc.status, tc.hasIP, got, msg, tc.want, tc.msg)
		}
		if tc.msg && !strings.Contains(msg, tc.status) {
			t.Errorf("the message %q does not name Lambda's status %q", msg, tc.status)
		}
	}
	// Every word of Lambda's InstanceStatus enum is in the table.
	for _, s := range []string{StatusBooting, StatusActive, StatusUnhealthy, StatusTerminating, StatusTerminated} {
		if _, ok := statusTable[s]; !ok {
			t.Errorf("%s is not mapped", s)
		}
	}
}
