package backendkit

import (
	"net/http"

	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
)

// StatusKind classifies an error answer by its HTTP status alone, for a backend whose error body says
// nothing it knows: 401 and 403 are credentials (ErrAuth), 402 the account's standing (ErrQuota), 404
// and 410 a missing object (ErrNotFound), 400, 409 and 422 a request the cloud refuses (ErrInvalid).
// Anything else (a 429 after the client's retries, a 5xx) leaves the outcome unknown: ErrOther. A
// backend whose cloud gives a status another meaning decides that status before asking.
func StatusKind(status int) controlplane.ErrorKind {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		return controlplane.ErrAuth
	case http.StatusPaymentRequired:
		return controlplane.ErrQuota
	case http.StatusNotFound, http.StatusGone:
		return controlplane.ErrNotFound
	case http.StatusBadRequest, http.StatusConflict, http.StatusUnprocessableEntity:
		return controlplane.ErrInvalid
	}
	return controlplane.ErrOther
}
