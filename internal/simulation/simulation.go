// Package simulation is what hydra's simulated clouds share: the sandbox (which users run) and the
// emulators of the clouds' APIs. It holds the one fault vocabulary (Faults) with its admin surface
// (Admin, Stats), and the small helpers both use to simulate a cloud (Delay, TakeFault, RandomHex).
// It knows nothing of any cloud's API shapes (the emulators' kit, internal/emulator/emukit, does).
package simulation

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strconv"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/wait"
)

// Delay waits d (nothing when d <= 0). It returns false, early, when ctx ends first: the client is
// gone and the request needs no answer.
func Delay(ctx context.Context, d time.Duration) bool {
	return d <= 0 || wait.Sleep(ctx, d) == nil
}

// TakeFault fires one armed fault and uses up one of its count: while *tooMany > 0 a 429 with a
// Retry-After header of retryAfter seconds (1 when not positive), else while *serverErrors > 0 a
// serverStatus answer. status is 0 when neither is armed.
func TakeFault(tooMany *int, retryAfter int, serverErrors *int, serverStatus int) (status int, header http.Header) {
	switch {
	case *tooMany > 0:
		*tooMany--
		if retryAfter <= 0 {
			retryAfter = 1
		}
		return http.StatusTooManyRequests, http.Header{"Retry-After": {strconv.Itoa(retryAfter)}}
	case *serverErrors > 0:
		*serverErrors--
		return serverStatus, nil
	}
	return 0, nil
}

// RandomHex is n random bytes in lower-case hex.
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
