package restclient

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/hashicorp/go-hclog"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// server is an httptest server on loopback that answers request n (from 1) with answer(n, w, r) and
// records what it saw.
type server struct {
	*httptest.Server
	mu     sync.Mutex
	seen   []string // "METHOD /path body"
	answer func(n int, w http.ResponseWriter, r *http.Request)
}

func newServer(t *testing.T, answer func(n int, w http.ResponseWriter, r *http.Request)) *server {
	t.Helper()
	s := &server{answer: answer}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.seen = append(s.seen, strings.TrimSpace(r.Method+" "+r.URL.Path+" "+string(body)))
		n := len(s.seen)
		s.mu.Unlock()
		s.answer(n, w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// requests is how many requests the server has seen.
func (s *server) requests() int { return len(s.log()) }

// log is a copy of what the server has seen.
func (s *server) log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

// statuses answers request n with statuses[n-1] (the last one repeats), 2xx with {"ok":true}.
func statuses(codes ...int) func(int, http.ResponseWriter, *http.Request) {
	return func(n int, w http.ResponseWriter, r *http.Request) {
		code := codes[min(n, len(codes))-1]
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		if code < 300 {
			_, _ = fmt.Fprint(w, `{"ok":true}`)
		} else {
			_, _ = fmt.Fprintf(w, `{"error":"status %d"}`, code)
		}
	}
}

// fastTuning retries at once and hardly rate-limits, so tests count requests, not seconds.
func fastTuning() Tuning {
	return Tuning{RequestsPerSecond: 1000, Burst: 1000, RetryMax: 3, RetryWaitMin: time.Millisecond, RetryWaitMax: 2 * time.Millisecond}
}

func newClient(t *testing.T, baseURL string, tuning Tuning) *Client {
	t.Helper()
	c, err := New(Config{Cloud: "test", BaseURL: baseURL, Tuning: tuning})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRetryPolicy(t *testing.T) {
	tests := []struct {
		name          string
		method        string
		notIdempotent bool
		codes         []int
		wantRequests  int
		wantStatus    int // 0: success
	}{
		{name: "GET 500 then 200", method: "GET", codes: []int{500, 200}, wantRequests: 2},
		{name: "GET 502 503 504 then 200", method: "GET", codes: []int{502, 503, 504, 200}, wantRequests: 4},
		{name: "GET 500 until retries run out", method: "GET", codes: []int{500}, wantRequests: 4, wantStatus: 500},
		{name: "GET 408 then 200", method: "GET", codes: []int{408, 200}, wantRequests: 2},
		{name: "GET 429 then 200", method: "GET", codes: []int{429, 200}, wantRequests: 2},
		{name: "GET 501 is not retried", method: "GET", codes: []int{501, 200}, wantRequests: 1, wantStatus: 501},
		{name: "GET 400 is not retried", method: "GET", codes: []int{400, 200}, wantRequests: 1, wantStatus: 400},
		{name: "GET 404 is not retried", method: "GET", codes: []int{404, 200}, wantRequests: 1, wantStatus: 404},
		{name: "GET 409 is not retried", method: "GET", codes: []int{409, 200}, wantRequests: 1, wantStatus: 409},
		{name: "DELETE 503 then 200", method: "DELETE", codes: []int{503, 200}, wantRequests: 2},
		{name: "PUT 500 then 200", method: "PUT", codes: []int{500, 200}, wantRequests: 2},
		// The policy follows Request.NotIdempotent, not the method: a POST not marked is retried.
		{name: "POST 500 then 200", method: "POST", codes: []int{500, 200}, wantRequests: 2},
		{name: "not idempotent POST 500 is not retried", method: "POST", notIdempotent: true, codes: []int{500, 201}, wantRequests: 1, wantStatus: 500},
		{name: "not idempotent POST 503 is not retried", method: "POST", notIdempotent: true, codes: []int{503, 201}, wantRequests: 1, wantStatus: 503},
		{name: "not idempotent POST 408 is not retried", method: "POST", notIdempotent: true, codes: []int{408, 201}, wantRequests: 1, wantStatus: 408},
		{name: "not idempotent POST 429 is retried", method: "POST", notIdempotent: true, codes: []int{429, 429, 201}, wantRequests: 3},
		{name: "not idempotent POST 429 until retries run out", method: "POST", notIdempotent: true, codes: []int{429}, wantRequests: 4, wantStatus: 429},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, statuses(tt.codes...))
			c := newClient(t, srv.URL+"/v1", fastTuning())
			var out struct{ OK bool }
			err := c.DoJSON(context.Background(), Request{Method: tt.method, Path: "/things", Body: map[string]int{"n": 1}, NotIdempotent: tt.notIdempotent}, &out)
			if got := srv.requests(); got != tt.wantRequests {
				t.Errorf("server saw %d requests, want %d", got, tt.wantRequests)
			}
			// Every attempt carries the whole body again.
			for i, s := range srv.log() {
				if want := tt.method + ` /v1/things {"n":1}`; s != want {
					t.Errorf("request %d = %q, want %q", i+1, s, want)
				}
			}
			if tt.wantStatus == 0 {
				if err != nil || !out.OK {
					t.Fatalf("err = %v, out = %+v, want success", err, out)
				}
				return
			}
			var he *HTTPError
			if !errors.As(err, &he) {
				t.Fatalf("err = %v, want an *HTTPError", err)
			}
			if he.Status != tt.wantStatus || he.Method != tt.method || he.Path != "/things" || !strings.Contains(string(he.Body), strconv.Itoa(tt.wantStatus)) {
				t.Errorf("got %+v, want status %d with the body", he, tt.wantStatus)
			}
		})
	}
}

// recordBackoff makes c record each backoff its policy computes, and wait only sleep instead, so a
// Retry-After of seconds is checked without being waited out.
func recordBackoff(c *Client, sleep time.Duration) *[]time.Duration {
	var waits []time.Duration
	policy := c.http.Backoff
	c.http.Backoff = func(minWait, maxWait time.Duration, attempt int, resp *http.Response) time.Duration {
		waits = append(waits, policy(minWait, maxWait, attempt, resp))
		return sleep
	}
	return &waits
}

func TestRetryAfter(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		retryAfter string
		// the backoff the policy computes lies in [wantMin, wantMax]
		wantMin, wantMax time.Duration
	}{
		{name: "429 seconds", status: 429, retryAfter: "3", wantMin: 3 * time.Second, wantMax: 3 * time.Second},
		{name: "503 seconds", status: 503, retryAfter: "2", wantMin: 2 * time.Second, wantMax: 2 * time.Second},
		{name: "429 capped at RetryWaitMax", status: 429, retryAfter: "120", wantMin: 8 * time.Second, wantMax: 8 * time.Second},
		{name: "429 http date", status: 429, retryAfter: time.Now().Add(5 * time.Second).UTC().Format(http.TimeFormat), wantMin: 3 * time.Second, wantMax: 5 * time.Second},
		// Without a usable Retry-After, or on a status that does not promise one, the jittered
		// exponential backoff applies: RetryWaitMin (250ms) ± 25% on the first retry.
		{name: "429 without retry-after", status: 429, wantMin: 187 * time.Millisecond, wantMax: 313 * time.Millisecond},
		{name: "429 garbage retry-after", status: 429, retryAfter: "soon", wantMin: 187 * time.Millisecond, wantMax: 313 * time.Millisecond},
		{name: "500 ignores retry-after", status: 500, retryAfter: "3", wantMin: 187 * time.Millisecond, wantMax: 313 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
				if n == 1 {
					if tt.retryAfter != "" {
						w.Header().Set("Retry-After", tt.retryAfter)
					}
					w.WriteHeader(tt.status)
					return
				}
				_, _ = fmt.Fprint(w, `{"ok":true}`)
			})
			c := newClient(t, srv.URL, Tuning{RequestsPerSecond: 1000, Burst: 1000}) // default waits: 250ms..8s
			waits := recordBackoff(c, time.Millisecond)
			if _, err := c.Do(context.Background(), Request{Method: "GET", Path: "/x"}); err != nil {
				t.Fatal(err)
			}
			if got := srv.requests(); got != 2 {
				t.Errorf("server saw %d requests, want 2", got)
			}
			if len(*waits) != 1 || (*waits)[0] < tt.wantMin || (*waits)[0] > tt.wantMax {
				t.Errorf("backoffs %v, want one in [%v, %v]", *waits, tt.wantMin, tt.wantMax)
			}
		})
	}
}

// A 429 with Retry-After is waited out (capped at RetryWaitMax here, to keep the test short) and
// retried, with the real backoff; a last 429 reports its Retry-After.
func TestRetryAfterWaitedOut(t *testing.T) {
	srv := newServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "7")
		if n <= 2 {
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		_, _ = fmt.Fprint(w, `{"ok":true}`)
	})
	tuning := fastTuning()
	tuning.RetryWaitMax = 20 * time.Millisecond
	c := newClient(t, srv.URL, tuning)
	if _, err := c.Do(context.Background(), Request{Method: "POST", Path: "/x", NotIdempotent: true}); err != nil {
		t.Fatal(err)
	}
	if got := srv.requests(); got != 3 {
		t.Errorf("server saw %d requests, want 3", got)
	}

	tuning.RetryMax = 1
	c = newClient(t, srv.URL, tuning)
	srv.mu.Lock()
	srv.seen = nil
	srv.mu.Unlock()
	_, err := c.Do(context.Background(), Request{Method: "GET", Path: "/x"})
	var he *HTTPError
	if !errors.As(err, &he) || he.Status != http.StatusTooManyRequests || he.RetryAfter != 7*time.Second {
		t.Errorf("err = %v (%+v), want a 429 with RetryAfter 7s", err, he)
	}
	if got := srv.requests(); got != 2 {
		t.Errorf("server saw %d requests, want 2 (RetryMax 1)", got)
	}
}

// wantStopped calls c, which the context ctx stops, and wants the call to fail (with wantErr, unless
// it is nil) after the server saw wantRequests requests.
func wantStopped(ctx context.Context, t *testing.T, c *Client, srv *server, wantErr error, wantRequests int) {
	t.Helper()
	if _, err := c.Do(ctx, Request{Method: "GET", Path: "/x"}); err == nil || wantErr != nil && !errors.Is(err, wantErr) {
		t.Errorf("err = %v, want %v", err, cmp.Or(wantErr, errors.New("an error")))
	}
	if got := srv.requests(); got != wantRequests {
		t.Errorf("server saw %d requests, want %d", got, wantRequests)
	}
}

func TestCancelStopsRetries(t *testing.T) {
	slow := Tuning{RequestsPerSecond: 1000, Burst: 1000, RetryMax: 10, RetryWaitMin: time.Hour, RetryWaitMax: time.Hour}

	t.Run("cancelled during the backoff", func(t *testing.T) {
		srv := newServer(t, statuses(503))
		c := newClient(t, srv.URL, slow)
		backingOff := make(chan struct{}, 10)
		policy := c.http.Backoff
		c.http.Backoff = func(minWait, maxWait time.Duration, attempt int, resp *http.Response) time.Duration {
			backingOff <- struct{}{}
			return policy(minWait, maxWait, attempt, resp) // an hour
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { <-backingOff; cancel() }()
		wantStopped(ctx, t, c, srv, context.Canceled, 1)
	})
	t.Run("cancelled while the request is in flight", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		srv := newServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
			cancel()
			w.WriteHeader(http.StatusServiceUnavailable)
		})
		c := newClient(t, srv.URL, fastTuning())
		wantStopped(ctx, t, c, srv, context.Canceled, 1)
	})
	t.Run("deadline during the backoff", func(t *testing.T) {
		srv := newServer(t, statuses(500))
		c := newClient(t, srv.URL, slow)
		ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
		defer cancel()
		wantStopped(ctx, t, c, srv, context.DeadlineExceeded, 1)
	})
	t.Run("already cancelled", func(t *testing.T) {
		srv := newServer(t, statuses(200))
		c := newClient(t, srv.URL, slow)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		wantStopped(ctx, t, c, srv, context.Canceled, 0)
	})
}

// Tuning.Timeout bounds each attempt, not the call: a hung attempt is abandoned and retried, unless the
// request is not idempotent (the server may have acted on it).
func TestAttemptTimeout(t *testing.T) {
	for _, notIdempotent := range []bool{false, true} {
		t.Run(fmt.Sprintf("not idempotent %v", notIdempotent), func(t *testing.T) {
			srv := newServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
				if n == 1 {
					<-r.Context().Done() // hang until the client gives up
					return
				}
				_, _ = fmt.Fprint(w, `{"ok":true}`)
			})
			tuning := fastTuning()
			tuning.Timeout = 200 * time.Millisecond
			c := newClient(t, srv.URL, tuning)
			_, err := c.Do(context.Background(), Request{Method: "POST", Path: "/x", NotIdempotent: notIdempotent})
			want := 2
			if notIdempotent {
				want = 1
				if err == nil {
					t.Error("a timed-out create was reported as a success")
				}
			} else if err != nil {
				t.Error(err)
			}
			if got := srv.requests(); got != want {
				t.Errorf("server saw %d requests, want %d", got, want)
			}
		})
	}
}

// countingTransport counts round trips and fails each with err.
type countingTransport struct {
	n   atomic.Int32
	err error
}

func (t *countingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	t.n.Add(1)
	return nil, t.err
}

func TestTransportErrors(t *testing.T) {
	reset := errors.New("read: connection reset by peer")
	tests := []struct {
		name          string
		err           error
		notIdempotent bool
		wantAttempts  int32
	}{
		{name: "reset, GET", err: reset, wantAttempts: 4},
		{name: "reset, not idempotent", err: reset, notIdempotent: true, wantAttempts: 1},
		{name: "refused, not idempotent", err: errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), notIdempotent: true, wantAttempts: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := &countingTransport{err: tt.err}
			tuning := fastTuning()
			tuning.Transport = tr
			c := newClient(t, "http://127.0.0.1:1", tuning)
			_, err := c.Do(context.Background(), Request{Method: "POST", Path: "/x", NotIdempotent: tt.notIdempotent})
			if err == nil || !strings.Contains(err.Error(), tt.err.Error()) {
				t.Errorf("err = %v, want one carrying %q", err, tt.err)
			}
			if got := tr.n.Load(); got != tt.wantAttempts {
				t.Errorf("%d attempts, want %d", got, tt.wantAttempts)
			}
		})
	}
}

func TestRateLimiter(t *testing.T) {
	t.Run("concurrent callers share one limit", func(t *testing.T) {
		srv := newServer(t, statuses(200))
		const n, perSecond = 20, 1000
		c := newClient(t, srv.URL, Tuning{RequestsPerSecond: perSecond, Burst: 1})
		start := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			wg.Go(func() {
				_, err := c.Do(context.Background(), Request{Method: "GET", Path: "/x"})
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		if got := srv.requests(); got != n {
			t.Errorf("server saw %d requests, want %d", got, n)
		}
		// A lower bound only, which the limiter guarantees however slow the machine: with burst 1,
		// n requests need n-1 intervals of 1ms (a little slack for float rounding).
		if least, got := (n-1)*time.Second/perSecond*9/10, time.Since(start); got < least {
			t.Errorf("%d requests took %v, want at least %v", n, got, least)
		}
	})
	tiny := Tuning{RequestsPerSecond: 1.0 / 3600, Burst: 1, RetryMax: 3, RetryWaitMin: time.Millisecond, RetryWaitMax: time.Millisecond}
	t.Run("short context never reaches the server", func(t *testing.T) {
		srv := newServer(t, statuses(200))
		c := newClient(t, srv.URL, tiny)
		if !c.Limiter().Allow() { // spend the one token: the next request waits an hour
			t.Fatal("a fresh limiter has no token")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		wantStopped(ctx, t, c, srv, nil, 0) // a request an hour away from its turn
	})
	t.Run("cancelled context never reaches the server", func(t *testing.T) {
		srv := newServer(t, statuses(200))
		c := newClient(t, srv.URL, tiny)
		if !c.Limiter().Allow() {
			t.Fatal("a fresh limiter has no token")
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		wantStopped(ctx, t, c, srv, context.Canceled, 0)
	})
	t.Run("retries wait for the limiter too", func(t *testing.T) {
		srv := newServer(t, statuses(503, 200))
		c := newClient(t, srv.URL, tiny) // the first attempt takes the one token
		ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
		defer cancel()
		wantStopped(ctx, t, c, srv, nil, 1) // the retry waits for the limiter past the deadline
	})
}

// A retry is a WARN line (operators see the clouds' 429s and 5xx); the rest of retryablehttp's detail
// stays at TRACE.
func TestRetriesLoggedAtWarn(t *testing.T) {
	var got []string
	l := hclog.NewInterceptLogger(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Trace})
	l.RegisterSink(&recordingSink{f: func(level hclog.Level, msg string) { got = append(got, level.String()+" "+msg) }})
	lv := leveled{l}
	lv.Debug("retrying request", "request", "GET /x", "timeout", "2s", "remaining", 3)
	lv.Debug("performing request", "method", "GET")
	if len(got) != 2 || got[0] != "warn retrying a request to the cloud" || got[1] != "trace performing request" {
		t.Fatalf("logged %q", got)
	}
}

type recordingSink struct {
	f func(level hclog.Level, msg string)
}

func (s *recordingSink) Accept(_ string, level hclog.Level, msg string, _ ...any) { s.f(level, msg) }

// A cloud's own defaults (DefaultBaseURL, DefaultTuning) apply where the configuration leaves a value
// out, and the configuration wins where it sets one.
func TestCloudDefaults(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		wantURL  string
		wantRate float64
		wantErr  bool
	}{
		{"cloud defaults", Config{DefaultBaseURL: "https://api.example/v1", DefaultTuning: Tuning{RequestsPerSecond: 1, Burst: 2}},
			"https://api.example/v1", 1, false},
		{"configuration wins", Config{BaseURL: "http://127.0.0.1:1/x", DefaultBaseURL: "https://api.example/v1",
			Tuning: Tuning{RequestsPerSecond: 7}, DefaultTuning: Tuning{RequestsPerSecond: 1}}, "http://127.0.0.1:1/x", 7, false},
		{"restclient's defaults last", Config{DefaultBaseURL: "https://api.example"}, "https://api.example", DefaultRequestsPerSecond, false},
		{"no base URL at all", Config{}, "", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Cloud = "test"
			c, err := New(tt.cfg)
			if (err != nil) != tt.wantErr {
				t.Fatalf("New: %v, want error %t", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if got := c.base.String(); got != tt.wantURL {
				t.Errorf("base URL %q, want %q", got, tt.wantURL)
			}
			if got := float64(c.Limiter().Limit()); got != tt.wantRate {
				t.Errorf("rate %v/s, want %v/s", got, tt.wantRate)
			}
		})
	}
}
