package restclient

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestRetry(t *testing.T) {
	boom := errors.New("not an HTTP answer")
	tests := []struct {
		name          string
		notIdempotent bool
		// errs are the attempts' errors in turn (nil: success); the last one repeats.
		errs         []error
		wantAttempts int
		wantStatus   int // of the *HTTPError returned; 0: success, -1: boom
	}{
		{name: "one 503 then success", errs: []error{&HTTPError{Status: 503}, nil}, wantAttempts: 2},
		{name: "500 502 504 then success", errs: []error{&HTTPError{Status: 500}, &HTTPError{Status: 502}, &HTTPError{Status: 504}, nil}, wantAttempts: 4},
		{name: "a persistent 500 gives up after the retries", errs: []error{&HTTPError{Status: 500}}, wantAttempts: 4, wantStatus: 500},
		{name: "408 is retried", errs: []error{&HTTPError{Status: 408}, nil}, wantAttempts: 2},
		{name: "429 is retried", errs: []error{&HTTPError{Status: 429, RetryAfter: time.Millisecond}, nil}, wantAttempts: 2},
		{name: "501 is not retried", errs: []error{&HTTPError{Status: 501}, nil}, wantAttempts: 1, wantStatus: 501},
		{name: "404 is not retried", errs: []error{&HTTPError{Status: 404}, nil}, wantAttempts: 1, wantStatus: 404},
		{name: "other errors are not retried", errs: []error{boom, nil}, wantAttempts: 1, wantStatus: -1},
		{name: "not idempotent: 500 is not retried", notIdempotent: true, errs: []error{&HTTPError{Status: 500}, nil}, wantAttempts: 1, wantStatus: 500},
		{name: "not idempotent: 429 is retried", notIdempotent: true, errs: []error{&HTTPError{Status: 429}, &HTTPError{Status: 429}, nil}, wantAttempts: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			attempts := 0
			err := Retry(context.Background(), fastTuning(), tt.notIdempotent, func(context.Context) error {
				attempts++
				return tt.errs[min(attempts, len(tt.errs))-1]
			})
			if attempts != tt.wantAttempts {
				t.Errorf("%d attempts, want %d", attempts, tt.wantAttempts)
			}
			var he *HTTPError
			switch {
			case tt.wantStatus == 0 && err != nil:
				t.Fatalf("error %v, want success", err)
			case tt.wantStatus == -1 && !errors.Is(err, boom):
				t.Fatalf("error %v, want the attempt's own", err)
			case tt.wantStatus > 0 && (!errors.As(err, &he) || he.Status != tt.wantStatus):
				t.Fatalf("error %v, want HTTP %d", err, tt.wantStatus)
			}
		})
	}
}

// TestRetryIsTheClientsPolicy checks Retry decides every status as the HTTP client does.
func TestRetryIsTheClientsPolicy(t *testing.T) {
	for status := 400; status < 600; status++ {
		for _, notIdempotent := range []bool{false, true} {
			ctx := context.WithValue(context.Background(), notIdempotentKey{}, notIdempotent)
			client, _ := checkRetry(ctx, &http.Response{StatusCode: status}, nil)
			tries := 0
			_ = Retry(context.Background(), Tuning{RetryMax: 1, RetryWaitMin: time.Microsecond, RetryWaitMax: time.Microsecond}, notIdempotent,
				func(context.Context) error { tries++; return &HTTPError{Status: status} })
			if (tries == 2) != client {
				t.Errorf("HTTP %d (not idempotent %v): the client retries %v, Retry tried %d times", status, notIdempotent, client, tries)
			}
		}
	}
}

func TestRetryDefaultsAndWaits(t *testing.T) {
	d := Tuning{}.withDefaults()
	if d.RetryMax != DefaultRetryMax || d.RetryWaitMin != DefaultRetryWaitMin || d.RetryWaitMax != DefaultRetryWaitMax ||
		d.Timeout != DefaultTimeout || d.RequestsPerSecond != DefaultRequestsPerSecond || d.Burst != DefaultBurst {
		t.Fatalf("defaults %+v", d)
	}
	c, err := New(Config{Cloud: "test", BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if c.http.RetryMax != DefaultRetryMax || c.http.RetryWaitMin != DefaultRetryWaitMin || c.http.RetryWaitMax != DefaultRetryWaitMax {
		t.Fatalf("the client's policy %d %v %v is not the defaults", c.http.RetryMax, c.http.RetryWaitMin, c.http.RetryWaitMax)
	}
	tests := []struct {
		attempt, status int
		retryAfter      time.Duration
		lo, hi          time.Duration
	}{
		{0, 500, 0, 187 * time.Millisecond, 313 * time.Millisecond},
		{2, 500, 0, 750 * time.Millisecond, 1250 * time.Millisecond},
		{9, 500, 0, 6 * time.Second, 10 * time.Second},
		{0, 429, 3 * time.Second, 3 * time.Second, 3 * time.Second},
		{0, 503, time.Minute, 8 * time.Second, 8 * time.Second},
		{0, 500, time.Minute, 187 * time.Millisecond, 313 * time.Millisecond},
	}
	for _, tt := range tests {
		for range 20 {
			if w := backoff(DefaultRetryWaitMin, DefaultRetryWaitMax, tt.attempt, tt.status, tt.retryAfter); w < tt.lo || w > tt.hi {
				t.Fatalf("attempt %d, HTTP %d, Retry-After %v: wait %v, want within [%v, %v]", tt.attempt, tt.status, tt.retryAfter, w, tt.lo, tt.hi)
			}
		}
	}
}

func TestRetryStopsWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	attempts := 0
	err := Retry(ctx, Tuning{RetryWaitMin: time.Hour, RetryWaitMax: time.Hour}, false, func(context.Context) error {
		attempts++
		cancel()
		return &HTTPError{Status: 503}
	})
	if !errors.Is(err, context.Canceled) || attempts != 1 {
		t.Fatalf("err %v after %d attempts, want the context's error after 1", err, attempts)
	}
}
