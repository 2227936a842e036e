package verda

import (
	"strings"
	"testing"
)

// Verda reports a spot machine it took back as discontinued, with no notice: an interruption with a
// reason and no times. On-demand machines and other statuses have none.
func TestInterruptionOf(t *testing.T) {
	tests := []struct {
		status string
		spot   bool
		want   bool
	}{
		{"discontinued", true, true},
		{"DISCONTINUED", true, true},
		{"discontinued", false, false},
		{"running", true, false},
		{"deleting", true, false},
	}
	for _, tc := range tests {
		got := interruptionOf(Instance{Status: tc.status, IsSpot: tc.spot})
		if (got != nil) != tc.want {
			t.Errorf("%s spot=%v: %+v, want interruption %v", tc.status, tc.spot, got, tc.want)
			continue
		}
		if got != nil && (!strings.Contains(got.Reason, "discontinued") || !got.NoticeAt.IsZero() || !got.EndsAt.IsZero()) {
			t.Errorf("%s: %+v", tc.status, got)
		}
	}
}
