package backendtest

import (
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// StatusCase is a cloud's status word for a machine, whether the machine is reachable (the cloud has
// given it an address), and the status hydra must make of them.
type StatusCase struct {
	Word      string
	Reachable bool
	Want      cloudprovider.Status
}

// WantStatuses checks a backend's status mapping against every case: the status, and a message
// exactly when that status is an error. It returns the messages, in the cases' order, for checks of
// the backend's own.
func WantStatuses(t testing.TB, mapStatus func(word string, reachable bool) (cloudprovider.Status, string), cases []StatusCase) []string {
	t.Helper()
	msgs := make([]string, len(cases))
	for i, c := range cases {
		got, msg := mapStatus(c.Word, c.Reachable)
		if got != c.Want {
			t.Errorf("%q (reachable %v): %s, want %s", c.Word, c.Reachable, got, c.Want)
		}
		if (got == cloudprovider.StatusError) != (msg != "") {
			t.Errorf("%q (reachable %v): %s with message %q", c.Word, c.Reachable, got, msg)
		}
		msgs[i] = msg
	}
	return msgs
}
