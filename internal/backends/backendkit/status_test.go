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
