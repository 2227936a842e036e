// Package simulation is what hydra's simulated clouds share: the sandbox (which users run) and the
// emulators of the clouds' APIs. It holds the one fault vocabulary (Faults) with its admin surface
// (Admin, Stats), the options every emulator has (Options: state directory, boot time, clock), and
// the small helpers both use to simulate a cloud (Delay, TakeFault, RandomHex).
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

// Options are the options every emulator has; each emulator's Options embed them, and its New gives
// them their defaults with WithDefaults.
type Options struct {
	// StateDir keeps the cloud's state in a JSON file in this directory, under an exclusive file lock,
	// so that every emulator (and process) sharing the directory sees one cloud ("": in memory). A
	// state file that exists wins over the options that seed a new state (catalog, durations).
	StateDir string
	// BootDuration is how long a new machine takes until it runs (the emulator's Options say what the
	// machine goes through meanwhile, and the default).
	BootDuration time.Duration
	// Now is the clock (default time.Now); tests inject a fake one to move statuses along instead of
	// sleeping.
	Now func() time.Time
}

// WithDefaults returns o with boot as BootDuration when it is not positive, and time.Now as Now when it
// is nil.
func (o Options) WithDefaults(boot time.Duration) Options {
	if o.BootDuration <= 0 {
		o.BootDuration = boot
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}
