package wait

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// script is a condition that answers from a list, one answer per call, and a pause that sleeps not
// at all; both log what happened, in order, so tests assert on calls and pauses, never on wall time.
type script struct {
	answers []answer
	log     []string
	calls   int
	cancel  context.CancelFunc
	// cancelAtPause cancels the context at the n-th pause (from 1) when above 0.
	cancelAtPause int
	pauses        int
}

type answer struct {
	done bool
	err  error
	// cancel cancels the context during this call.
	cancel bool
}

func (s *script) cond(ctx context.Context) (bool, error) {
	s.calls++
	s.log = append(s.log, "poll")
	if s.calls > len(s.answers) {
		return false, fmt.Errorf("condition called %d times, script has %d answers", s.calls, len(s.answers))
	}
	a := s.answers[s.calls-1]
	if a.cancel {
		s.cancel()
	}
	return a.done, a.err
}

func (s *script) pause(ctx context.Context, d time.Duration) error {
	s.pauses++
	s.log = append(s.log, d.String())
	if s.cancelAtPause == s.pauses {
		s.cancel()
	}
	return ctx.Err()
}

var (
	errBoom  = errors.New("boom")
	errFlaky = errors.New("flaky")
)

func notYet(n int) []answer { return make([]answer, n) }

func TestUntil(t *testing.T) {
	wrappedFlaky := fmt.Errorf("get: %w", Transient(errFlaky))
	tests := []struct {
		name          string
		b             Backoff
		answers       []answer
		cancelAtPause int
		preCancel     bool
		wantLog       []string
		// wantErr is matched with ==; wantIs, wantPolls and wantLast describe an *Error.
		wantErr   error
		wantIs    error
		wantPolls int
		wantLast  error
	}{
		{
			name:    "done at once",
			b:       Backoff{First: time.Second},
			answers: []answer{{done: true}},
			wantLog: []string{"poll"},
		},
		{
			name:    "grows by factor",
			b:       Backoff{First: time.Second, Factor: 2},
			answers: append(notYet(3), answer{done: true}),
			wantLog: []string{"poll", "1s", "poll", "2s", "poll", "4s", "poll"},
		},
		{
			name:    "capped at max",
			b:       Backoff{First: time.Second, Factor: 2, Max: 5 * time.Second},
			answers: append(notYet(5), answer{done: true}),
			wantLog: []string{"poll", "1s", "poll", "2s", "poll", "4s", "poll", "5s", "poll", "5s", "poll"},
		},
		{
			name:    "fractional factor",
			b:       Backoff{First: 2 * time.Second, Factor: 1.5, Max: 4 * time.Second},
			answers: append(notYet(3), answer{done: true}),
			wantLog: []string{"poll", "2s", "poll", "3s", "poll", "4s", "poll"},
		},
		{
			name:    "zero factor is constant",
			b:       Backoff{First: time.Second},
			answers: append(notYet(2), answer{done: true}),
			wantLog: []string{"poll", "1s", "poll", "1s", "poll"},
		},
		{
			name:    "factor below one is constant",
			b:       Backoff{First: time.Second, Factor: 0.5},
			answers: append(notYet(2), answer{done: true}),
			wantLog: []string{"poll", "1s", "poll", "1s", "poll"},
		},
		{
			name:    "max below first",
			b:       Backoff{First: time.Minute, Max: time.Second},
			answers: append(notYet(1), answer{done: true}),
			wantLog: []string{"poll", "1s", "poll"},
		},
		{
			name:    "zero first polls back to back",
			b:       Backoff{Factor: 2},
			answers: append(notYet(2), answer{done: true}),
			wantLog: []string{"poll", "0s", "poll", "0s", "poll"},
		},
		{
			name:    "wait first",
			b:       Backoff{First: time.Second, Factor: 2, WaitFirst: true},
			answers: append(notYet(1), answer{done: true}),
			wantLog: []string{"1s", "poll", "2s", "poll"},
		},
		{
			name:    "permanent error returned as is",
			b:       Backoff{First: time.Second},
			answers: []answer{{}, {err: errBoom}},
			wantLog: []string{"poll", "1s", "poll"},
			wantErr: errBoom,
		},
		{
			name:    "error wins over done",
			b:       Backoff{First: time.Second},
			answers: []answer{{done: true, err: errBoom}},
			wantLog: []string{"poll"},
			wantErr: errBoom,
		},
		{
			name:    "transient errors are retried",
			b:       Backoff{First: time.Second},
			answers: []answer{{err: Transient(errFlaky)}, {done: true, err: Transient(errFlaky)}, {done: true}},
			wantLog: []string{"poll", "1s", "poll", "1s", "poll"},
		},
		{
			name:      "attempts exhausted",
			b:         Backoff{First: time.Second, Factor: 2, Attempts: 3},
			answers:   []answer{{err: Transient(errBoom)}, {}, {err: Transient(errFlaky)}},
			wantLog:   []string{"poll", "1s", "poll", "2s", "poll"},
			wantIs:    ErrExhausted,
			wantPolls: 3,
			wantLast:  errFlaky,
		},
		{
			name:      "attempts exhausted without errors",
			b:         Backoff{First: time.Second, Attempts: 2},
			answers:   notYet(2),
			wantLog:   []string{"poll", "1s", "poll"},
			wantIs:    ErrExhausted,
			wantPolls: 2,
		},
		{
			name:    "done on the last attempt",
			b:       Backoff{First: time.Second, Attempts: 2},
			answers: []answer{{}, {done: true}},
			wantLog: []string{"poll", "1s", "poll"},
		},
		{
			name:      "wrapped transient error keeps its wrapper",
			b:         Backoff{First: time.Second, Attempts: 1},
			answers:   []answer{{err: wrappedFlaky}},
			wantLog:   []string{"poll"},
			wantIs:    ErrExhausted,
			wantPolls: 1,
			wantLast:  wrappedFlaky,
		},
		{
			name:          "context ends during a pause",
			b:             Backoff{First: time.Second, Factor: 2},
			answers:       []answer{{}, {err: Transient(errFlaky)}},
			cancelAtPause: 2,
			wantLog:       []string{"poll", "1s", "poll", "2s"},
			wantIs:        context.Canceled,
			wantPolls:     2,
			wantLast:      errFlaky,
		},
		{
			name:          "context ends during the first pause",
			b:             Backoff{First: time.Second, WaitFirst: true},
			cancelAtPause: 1,
			wantLog:       []string{"1s"},
			wantIs:        context.Canceled,
			wantPolls:     0,
		},
		{
			name:      "context ends during a poll",
			b:         Backoff{First: time.Second},
			answers:   []answer{{}, {cancel: true, err: Transient(errFlaky)}},
			wantLog:   []string{"poll", "1s", "poll"},
			wantIs:    context.Canceled,
			wantPolls: 2,
			wantLast:  errFlaky,
		},
		{
			name:    "done during a poll that saw the context end",
			b:       Backoff{First: time.Second},
			answers: []answer{{cancel: true, done: true}},
			wantLog: []string{"poll"},
		},
		{
			name:    "permanent error during a poll that saw the context end",
			b:       Backoff{First: time.Second},
			answers: []answer{{cancel: true, err: errBoom}},
			wantLog: []string{"poll"},
			wantErr: errBoom,
		},
		{
			name:      "context already ended",
			b:         Backoff{First: time.Second},
			preCancel: true,
			wantIs:    context.Canceled,
			wantPolls: 0,
		},
		{
			name:      "context already ended, wait first",
			b:         Backoff{First: time.Second, WaitFirst: true},
			preCancel: true,
			wantIs:    context.Canceled,
			wantPolls: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s := &script{answers: tt.answers, cancel: cancel, cancelAtPause: tt.cancelAtPause}
			if tt.preCancel {
				cancel()
			}
			err := until(ctx, "the thing", tt.b, s.cond, s.pause)
			if !slices.Equal(s.log, tt.wantLog) {
				t.Errorf("log = %q, want %q", s.log, tt.wantLog)
			}
			switch {
			case tt.wantIs != nil:
				var we *Error
				if !errors.As(err, &we) {
					t.Fatalf("err = %v (%T), want an *Error", err, err)
				}
				if !errors.Is(err, tt.wantIs) {
					t.Errorf("err = %v, want one wrapping %v", err, tt.wantIs)
				}
				if we.What != "the thing" || we.Polls != tt.wantPolls || we.Last != tt.wantLast {
					t.Errorf("got What %q Polls %d Last %v, want %q %d %v", we.What, we.Polls, we.Last, "the thing", tt.wantPolls, tt.wantLast)
				}
				if tt.wantLast != nil && errors.Is(err, tt.wantLast) {
					t.Errorf("err = %v unwraps to the last transient error", err)
				}
				if !strings.HasPrefix(err.Error(), "waiting for the thing: ") {
					t.Errorf("message %q does not say what it waited for", err)
				}
			case err != tt.wantErr:
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestBackoffInterval(t *testing.T) {
	tests := []struct {
		b    Backoff
		n    int
		want time.Duration
	}{
		{Backoff{First: time.Second}, 0, time.Second},
		{Backoff{First: time.Second}, 10, time.Second},
		{Backoff{First: time.Second, Factor: 2}, 3, 8 * time.Second},
		{Backoff{First: time.Second, Factor: 2, Max: time.Minute}, 10, time.Minute},
		{Backoff{First: time.Second, Factor: 2}, 1000, math.MaxInt64}, // overflow saturates
		{Backoff{First: -time.Second, Factor: 2}, 3, 0},
		{Backoff{Factor: 2, Max: time.Second}, 3, 0},
	}
	for _, tt := range tests {
		if got := tt.b.interval(tt.n); got != tt.want {
			t.Errorf("%+v.interval(%d) = %v, want %v", tt.b, tt.n, got, tt.want)
		}
		if got := tt.b.Interval(tt.n); got != tt.want {
			t.Errorf("%+v.Interval(%d) = %v, want %v", tt.b, tt.n, got, tt.want)
		}
	}
}

func TestSleep(t *testing.T) {
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Errorf("Sleep = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) || time.Since(start) > time.Second {
		t.Errorf("Sleep with an ended context = %v after %v, want context.Canceled at once", err, time.Since(start))
	}
	if err := Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep(0) with an ended context = %v", err)
	}
}

func TestErrorMessage(t *testing.T) {
	tests := []struct {
		err  *Error
		want string
	}{
		{&Error{What: "x", Polls: 1, Err: context.Canceled}, "waiting for x: gave up after 1 poll: context canceled"},
		{&Error{What: "instance a to run", Polls: 3, Err: context.DeadlineExceeded, Last: errFlaky},
			"waiting for instance a to run: gave up after 3 polls: context deadline exceeded (last error: flaky)"},
		{&Error{What: "y", Polls: 2, Err: ErrExhausted}, "waiting for y: gave up after 2 polls: no attempts left"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

func TestTransient(t *testing.T) {
	if Transient(nil) != nil {
		t.Error("Transient(nil) is not nil")
	}
	err := fmt.Errorf("wrapped: %w", Transient(errFlaky))
	if !IsTransient(err) || !errors.Is(err, errFlaky) || err.Error() != "wrapped: flaky" {
		t.Errorf("a wrapped transient error: transient %v, is flaky %v, message %q", IsTransient(err), errors.Is(err, errFlaky), err)
	}
	if IsTransient(errFlaky) || IsTransient(nil) {
		t.Error("an unmarked error is transient")
	}
}

// The exported Until with the real clock: tiny pauses, counted polls.
func TestUntilRealClock(t *testing.T) {
	t.Run("polls until done", func(t *testing.T) {
		n := 0
		err := Until(context.Background(), "five polls", Backoff{First: time.Microsecond, Factor: 2, Max: time.Millisecond}, func(context.Context) (bool, error) {
			n++
			return n == 5, nil
		})
		if err != nil || n != 5 {
			t.Errorf("err %v after %d polls, want nil after 5", err, n)
		}
	})
	t.Run("deadline during a long pause", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		n := 0
		err := Until(ctx, "nothing", Backoff{First: time.Hour}, func(context.Context) (bool, error) {
			n++
			return false, nil
		})
		var we *Error
		if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &we) || we.Polls != 1 || n != 1 {
			t.Errorf("err %v after %d polls, want a deadline after 1", err, n)
		}
	})
	t.Run("zero pause still sees the context end", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		n := 0
		err := Until(ctx, "nothing", Backoff{}, func(context.Context) (bool, error) {
			n++
			if n == 100 {
				cancel()
			}
			return false, nil
		})
		if !errors.Is(err, context.Canceled) || n != 100 {
			t.Errorf("err %v after %d polls, want canceled after 100", err, n)
		}
	})
}

func ExampleUntil() {
	status := []string{"pending", "booting", "booting", "running"}
	i, last := 0, ""
	err := Until(context.Background(), "instance web-1 to run", Backoff{First: time.Millisecond, Factor: 1.5, Max: 10 * time.Millisecond},
		func(ctx context.Context) (bool, error) {
			s := status[i]
			i++
			if s != last {
				fmt.Println("status:", s)
				last = s
			}
			return s == "running", nil
		})
	fmt.Println("err:", err)
	// Output:
	// status: pending
	// status: booting
	// status: running
	// err: <nil>
}
