// Package wait is the one poll loop hydra's backends and control plane share: call a condition, and
// until it reports done, sleep an interval that starts at Backoff.First and grows by Backoff.Factor up
// to Backoff.Max, stopping when the context ends, when the condition fails permanently, or after
// Backoff.Attempts calls.
//
// A condition reports progress with (done, err):
//
//   - (true, nil): the wait is over; Until returns nil.
//   - (false, nil): not yet; Until sleeps and calls it again.
//   - (_, err) with err marked by Transient: not yet, and err is remembered as the last error (for the
//     message of a wait that gives up, and for Error.Last); Until sleeps and calls it again.
//   - (_, err) with any other err: a permanent failure; Until returns err exactly as it is.
//
// When the wait gives up (the context ended, or Backoff.Attempts calls did not finish it) Until returns
// an *Error that says what it was waiting for and wraps the context's error or ErrExhausted.
//
// Typical uses:
//
//	// Poll a status until it is reached, seeing every change; errors from Get are retried.
//	err := wait.Until(ctx, "instance web-1 to run", wait.Backoff{First: 2 * time.Second, Max: 30 * time.Second, Factor: 1.5, WaitFirst: true},
//		func(ctx context.Context) (bool, error) {
//			inst, err := get(ctx)
//			if err != nil {
//				return false, wait.Transient(err)
//			}
//			if inst.Status != last {
//				onChange(inst)
//				last = inst.Status
//			}
//			return inst.Status == "running", nil
//		})
//
//	// Retry an action up to 5 times, doubling the pause; a *PermanentError stops at once.
//	err := wait.Until(ctx, "provisioning web-1", wait.Backoff{First: 10 * time.Second, Factor: 2, Attempts: 5},
//		func(ctx context.Context) (bool, error) {
//			err := provision(ctx)
//			var perm *PermanentError
//			if err != nil && !errors.As(err, &perm) {
//				return false, wait.Transient(err)
//			}
//			return err == nil, err
//		})
package wait

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// Backoff says when Until calls its condition. The zero value polls back to back with no limit but
// the context's; set First.
type Backoff struct {
	// First is the pause after the first call (and before it, with WaitFirst). A value of 0 or less
	// polls back to back.
	First time.Duration
	// Max caps the pause when above 0; 0 means no cap.
	Max time.Duration
	// Factor multiplies the pause after every pause. Values up to 1 (0 included) keep it constant.
	Factor float64
	// Attempts caps how many times the condition is called when above 0; 0 means no cap (only the
	// context ends the wait).
	Attempts int
	// WaitFirst pauses First before the first call instead of calling at once.
	WaitFirst bool
}

// interval is the n-th pause (n from 0): First·Factor^n, capped at Max.
func (b Backoff) interval(n int) time.Duration {
	d := float64(max(b.First, 0))
	if b.Factor > 1 && d > 0 {
		d *= math.Pow(b.Factor, float64(n))
	}
	if b.Max > 0 && d > float64(b.Max) {
		return b.Max
	}
	if d >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(d)
}

// Interval returns the n-th pause of the schedule (n from 0): First·Factor^n, capped at Max. Loops
// that cannot use Until (a poller shared by many waits) follow the same schedule through it.
func (b Backoff) Interval(n int) time.Duration { return b.interval(n) }

// Condition is polled by Until. It reports whether the wait is over; see the package doc for what
// its error means. It gets Until's context.
type Condition func(ctx context.Context) (done bool, err error)

// ErrExhausted is what an *Error wraps when Backoff.Attempts calls all ended without the condition
// being done.
var ErrExhausted = errors.New("no attempts left")

// Error is what Until returns when it gives up: the context ended (Err is the context's error) or the
// attempts ran out (Err is ErrExhausted). errors.Is sees Err only; the last transient error is in Last
// and in the message, but it is not unwrapped, so that a timeout is never classified as that error.
type Error struct {
	// What is what Until was waiting for, as its caller described it.
	What string
	// Polls is how many times the condition was called.
	Polls int
	// Last is the last transient error the condition returned (without the Transient mark), if any.
	Last error
	// Err is why Until gave up: the context's error or ErrExhausted.
	Err error
}

// Error says what was awaited, how many polls were made, why the wait stopped and the last error.
func (e *Error) Error() string {
	msg := fmt.Sprintf("waiting for %s: gave up after %d %s: %v", e.What, e.Polls, plural(e.Polls, "poll", "polls"), e.Err)
	if e.Last != nil {
		msg += fmt.Sprintf(" (last error: %v)", e.Last)
	}
	return msg
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// transientError marks an error that Until retries.
type transientError struct{ err error }

func (e *transientError) Error() string { return e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

// Transient marks err as temporary: a condition that returns it is called again after the next pause,
// and err becomes the Last error of the wait. Transient(nil) is nil. The mark is transparent:
// errors.Is and errors.As see through it, and its message is err's.
func Transient(err error) error {
	if err == nil {
		return nil
	}
	return &transientError{err: err}
}

// IsTransient reports whether err, or an error it wraps, was marked by Transient.
func IsTransient(err error) bool {
	var t *transientError
	return errors.As(err, &t)
}

// Until calls cond, at once or after First when b.WaitFirst is set, and again after every pause of
// b's schedule, until cond is done (Until returns nil), cond returns an error not marked Transient
// (Until returns that error unchanged), ctx ends or b.Attempts calls have been made (Until returns an
// *Error naming what, as in "waiting for <what>: ..."). A context that has already ended stops Until
// before the first call.
func Until(ctx context.Context, what string, b Backoff, cond Condition) error {
	return until(ctx, what, b, cond, sleep)
}

// Sleep pauses d, or less when ctx ends first, and returns ctx's error in that case (at once when ctx
// has already ended, whatever d).
func Sleep(ctx context.Context, d time.Duration) error { return sleep(ctx, d) }

// sleep pauses d, or less when ctx ends first, and returns ctx's error in that case.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// until is Until with the pause injected, so that tests need no clock.
func until(ctx context.Context, what string, b Backoff, cond Condition, pause func(context.Context, time.Duration) error) error {
	giveUp := func(polls int, last, why error) error {
		return &Error{What: what, Polls: polls, Last: last, Err: why}
	}
	if err := ctx.Err(); err != nil {
		return giveUp(0, nil, err)
	}
	step := 0
	if b.WaitFirst {
		if err := pause(ctx, b.interval(step)); err != nil {
			return giveUp(0, nil, err)
		}
		step++
	}
	var last error
	for polls := 1; ; polls++ {
		done, err := cond(ctx)
		if err != nil {
			if !IsTransient(err) {
				return err
			}
			if t, ok := err.(*transientError); ok {
				err = t.err // strip a bare mark; a wrapped one keeps its wrapper's message
			}
			last = err
		} else if done {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return giveUp(polls, last, err)
		}
		if b.Attempts > 0 && polls >= b.Attempts {
			return giveUp(polls, last, ErrExhausted)
		}
		if err := pause(ctx, b.interval(step)); err != nil {
			return giveUp(polls, last, err)
		}
		step++
	}
}
