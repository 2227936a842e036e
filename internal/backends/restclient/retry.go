package restclient

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"time"
)

// Defaults of Tuning: what a zero field means.
const (
	DefaultTimeout           = 30 * time.Second
	DefaultRequestsPerSecond = 5
	DefaultBurst             = 10
	DefaultRetryMax          = 4
	DefaultRetryWaitMin      = 250 * time.Millisecond
	DefaultRetryWaitMax      = 8 * time.Second
)

// or returns t with every zero field of its rate limit, retries and timeout set to d's.
func (t Tuning) or(d Tuning) Tuning {
	t.Timeout = cmp.Or(t.Timeout, d.Timeout)
	t.RequestsPerSecond = cmp.Or(t.RequestsPerSecond, d.RequestsPerSecond)
	t.Burst = cmp.Or(t.Burst, d.Burst)
	t.RetryMax = cmp.Or(t.RetryMax, d.RetryMax)
	t.RetryWaitMin = cmp.Or(t.RetryWaitMin, d.RetryWaitMin)
	t.RetryWaitMax = cmp.Or(t.RetryWaitMax, d.RetryWaitMax)
	return t
}

// withDefaults returns t with every zero field set to its default.
func (t Tuning) withDefaults() Tuning {
	return t.or(Tuning{Timeout: DefaultTimeout, RequestsPerSecond: DefaultRequestsPerSecond, Burst: DefaultBurst,
		RetryMax: DefaultRetryMax, RetryWaitMin: DefaultRetryWaitMin, RetryWaitMax: DefaultRetryWaitMax})
}

// retryableStatus is the retry policy for an answer's status: 429 always (the server has not acted on
// the request); 408 and every 5xx but 501 only when the request is idempotent (a 5xx may hide a success).
func retryableStatus(status int, notIdempotent bool) bool {
	switch {
	case status == http.StatusTooManyRequests:
		return true
	case notIdempotent:
		return false
	case status == http.StatusRequestTimeout:
		return true
	case status >= 500 && status != http.StatusNotImplemented:
		return true
	}
	return false
}

// backoff is the wait before retry number attempt (from 0): minWait doubled each attempt, capped at
// maxWait, between 3/4 and 5/4 of that at random; a server's Retry-After on 429 and 503 instead
// (capped at maxWait).
func backoff(minWait, maxWait time.Duration, attempt, status int, retryAfter time.Duration) time.Duration {
	if (status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable) && retryAfter > 0 {
		return min(retryAfter, maxWait)
	}
	wait := float64(minWait) * math.Pow(2, float64(attempt))
	if wait > float64(maxWait) {
		wait = float64(maxWait)
	}
	jitter := rand.Float64() * wait / 2
	return time.Duration(wait/2 + jitter + wait/4)
}

// Retry runs a call that does not go over HTTP (a simulated cloud in process) under the same retry
// policy as a Client: an error of attempt that holds an *HTTPError is retried like the answer it stands
// for (429 always, after its RetryAfter up to RetryWaitMax; 408 and 5xx but 501 unless notIdempotent),
// with the Client's backoff and jitter, at most t.RetryMax times; zero fields of t take the defaults
// New uses. Any other error, and the last one when the retries run out, is returned as it is. When ctx
// ends during a wait, Retry returns an error that wraps ctx.Err().
func Retry(ctx context.Context, t Tuning, notIdempotent bool, attempt func(ctx context.Context) error) error {
	t = t.withDefaults()
	for i := 0; ; i++ {
		err := attempt(ctx)
		if err == nil {
			return nil
		}
		var he *HTTPError
		if !errors.As(err, &he) || i >= t.RetryMax || !retryableStatus(he.Status, notIdempotent) {
			return err
		}
		timer := time.NewTimer(backoff(t.RetryWaitMin, t.RetryWaitMax, i, he.Status, he.RetryAfter))
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("%w (before retrying: %v)", ctx.Err(), err)
		case <-timer.C:
		}
	}
}
