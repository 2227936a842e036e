package backendkit

import (
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
)

func TestStatusKind(t *testing.T) {
	for status, want := range map[int]controlplane.ErrorKind{
		400: controlplane.ErrInvalid, 401: controlplane.ErrAuth, 402: controlplane.ErrQuota, 403: controlplane.ErrAuth,
		404: controlplane.ErrNotFound, 405: controlplane.ErrOther, 409: controlplane.ErrInvalid, 410: controlplane.ErrNotFound,
		422: controlplane.ErrInvalid, 429: controlplane.ErrOther, 500: controlplane.ErrOther, 503: controlplane.ErrOther,
	} {
		if got := StatusKind(status); got != want {
			t.Errorf("StatusKind(%d) = %v, want %v", status, got, want)
		}
	}
}

// An unknown word is pending, a known one is found whatever its case and spaces, and a running machine
// is pending until it is reachable.
func TestTableStatus(t *testing.T) {
	table := map[string]controlplane.Status{"booting": controlplane.StatusPending, "active": controlplane.StatusRunning,
		"unhealthy": controlplane.StatusError, "gone": controlplane.StatusTerminated}
	for word, want := range map[string]controlplane.Status{"booting": controlplane.StatusPending, " ACTIVE ": controlplane.StatusRunning,
		"Unhealthy": controlplane.StatusError, "gone": controlplane.StatusTerminated, "something-new": controlplane.StatusPending} {
		if got := TableStatus(table, word, true); got != want {
			t.Errorf("TableStatus(%q) = %v, want %v", word, got, want)
		}
	}
	if got := TableStatus(table, "active", false); got != controlplane.StatusPending {
		t.Errorf("TableStatus(active) without an address = %v, want pending", got)
	}
}
