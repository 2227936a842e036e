package backendkit

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// StatusKind classifies an error answer by its HTTP status alone, for a backend whose error body says
// nothing it knows: 401 and 403 are credentials (ErrAuth), 402 the account's standing (ErrQuota), 404
// and 410 a missing object (ErrNotFound), 400, 409 and 422 a request the cloud refuses (ErrInvalid).
// Anything else (a 429 after the client's retries, a 5xx) leaves the outcome unknown: ErrOther. A
// backend whose cloud gives a status another meaning decides that status before asking.
func StatusKind(status int) cloudprovider.ErrorKind {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		return cloudprovider.ErrAuth
	case http.StatusPaymentRequired:
		return cloudprovider.ErrQuota
	case http.StatusNotFound, http.StatusGone:
		return cloudprovider.ErrNotFound
	case http.StatusBadRequest, http.StatusConflict, http.StatusUnprocessableEntity:
		return cloudprovider.ErrInvalid
	}
	return cloudprovider.ErrOther
}

// TableStatus maps a cloud's status word onto hydra's status with the cloud's table (its keys in lower
// case). A word the table does not know is pending, so that polling goes on (bounded by the caller's
// timeout) rather than failing on a new status name, and a running machine is pending until it is
// reachable (the cloud has given it an address).
func TableStatus(table map[string]cloudprovider.Status, word string, reachable bool) cloudprovider.Status {
	s, ok := table[strings.ToLower(strings.TrimSpace(word))]
	if !ok || s == cloudprovider.StatusRunning && !reachable {
		return cloudprovider.StatusPending
	}
	return s
}

// Port reads a TCP port number from a cloud's SSH details: ok only for 1 to 65535.
func Port(s string) (port int, ok bool) {
	p, err := strconv.Atoi(s)
	return p, err == nil && p > 0 && p < 65536
}
