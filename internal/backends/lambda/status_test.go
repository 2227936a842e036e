package lambda

import (
	"strings"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

func TestStatusTable(t *testing.T) {
	for _, tc := range []struct {
		status string
		hasIP  bool
		want   cloudprovider.Status
		msg    bool
	}{
		{"booting", false, cloudprovider.StatusPending, false},
		{"booting", true, cloudprovider.StatusPending, false}, // the ip appears before the machine is up
		{"active", true, cloudprovider.StatusRunning, false},
		{"active", false, cloudprovider.StatusPending, false}, // running needs an address
		{"ACTIVE", true, cloudprovider.StatusRunning, false},
		{"unhealthy", true, cloudprovider.StatusError, true},
		{"unhealthy", false, cloudprovider.StatusError, true},
		{"terminating", true, cloudprovider.StatusTerminated, false},
		{"terminated", false, cloudprovider.StatusTerminated, false},
		{"preempted", false, cloudprovider.StatusTerminated, false},
		{"", false, cloudprovider.StatusPending, false},
		{"rebooting", true, cloudprovider.StatusPending, false}, // unknown words keep polling
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
