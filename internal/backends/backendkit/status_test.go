package backendkit

import (
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

func TestStatusKind(t *testing.T) {
	for status, want := range map[int]cloudprovider.ErrorKind{
		400: cloudprovider.ErrInvalid, 401: cloudprovider.ErrAuth, 402: cloudprovider.ErrQuota, 403: cloudprovider.ErrAuth,
		404: cloudprovider.ErrNotFound, 405: cloudprovider.ErrOther, 409: cloudprovider.ErrInvalid, 410: cloudprovider.ErrNotFound,
		422: cloudprovider.ErrInvalid, 429: cloudprovider.ErrOther, 500: cloudprovider.ErrOther, 503: cloudprovider.ErrOther,
	} {
		if got := StatusKind(status); got != want {
			t.Errorf("StatusKind(%d) = %v, want %v", status, got, want)
		}
	}
}

// An unknown word is pending, a known one is found whatever its case and spaces, and a running machine
// is pending until it is reachable.
func TestTableStatus(t *testing.T) {
	table := map[string]cloudprovider.Status{"booting": cloudprovider.StatusPending, "active": cloudprovider.StatusRunning,
		"unhealthy": cloudprovider.StatusError, "gone": cloudprovider.StatusTerminated}
	for word, want := range map[string]cloudprovider.Status{"booting": cloudprovider.StatusPending, " ACTIVE ": cloudprovider.StatusRunning,
		"Unhealthy": cloudprovider.StatusError, "gone": cloudprovider.StatusTerminated, "something-new": cloudprovider.StatusPending} {
		if got := TableStatus(table, word, true); got != want {
			t.Errorf("TableStatus(%q) = %v, want %v", word, got, want)
		}
	}
	if got := TableStatus(table, "active", false); got != cloudprovider.StatusPending {
		t.Errorf("TableStatus(active) without an address = %v, want pending", got)
	}
}

func TestPort(t *testing.T) {
	for s, want := range map[string]bool{"22": true, "1": true, "65535": true, "0": false, "65536": false, "-1": false, "2x": false, "": false} {
		if _, ok := Port(s); ok != want {
			t.Errorf("Port(%q) ok = %v, want %v", s, ok, want)
		}
	}
}
