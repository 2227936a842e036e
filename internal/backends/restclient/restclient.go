// Package restclient is the HTTP plumbing every cloud client shares: a timeout on every request,
// context cancellation, retries with exponential backoff and jitter on 429, 408 and 5xx only, a rate
// limit shared by every caller of one client, JSON in and out, and errors that carry the status and body
// so each cloud can classify them. It knows nothing about any one cloud.
package restclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-retryablehttp"
	"golang.org/x/time/rate"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// Config configures one cloud's client.
type Config struct {
	// Cloud names the cloud in logs and errors.
	Cloud string
	// BaseURL is the API root, e.g. "https://api.example.com/v1". Paths are joined to it.
	BaseURL string
	// DefaultBaseURL is the API root when BaseURL is empty: the cloud's public API.
	DefaultBaseURL string
	// Tuning sets timeouts, the rate limit, retries and the transport.
	Tuning
	// DefaultTuning is the cloud's own defaults: Tuning's zero fields take its values first, then
	// restclient's defaults (a cloud with a documented rate limit sets RequestsPerSecond and Burst).
	DefaultTuning Tuning
	// Authorize adds credentials to each request (headers only; never the URL, so logs stay clean).
	Authorize func(ctx context.Context, req *http.Request) error
	// Logger receives retry and request logs (default: a null logger).
	Logger hclog.Logger
	// UserAgent is sent with every request (default: Tuning.UserAgent, else DefaultUserAgent).
	UserAgent string
}

// DefaultUserAgent is the User-Agent of a client configured with none.
const DefaultUserAgent = "terraform-provider-hydra"

// Tuning is the part of Config that every cloud's configuration passes through unchanged; zero fields
// take the defaults.
type Tuning struct {
	// Timeout bounds each HTTP attempt (default 30s). The caller's context bounds the whole call.
	Timeout time.Duration
	// RequestsPerSecond and Burst set the shared rate limit (default 5/s, burst 10).
	RequestsPerSecond float64
	Burst             int
	// RetryMax is how many times a retryable failure is retried (default 4, DefaultRetryMax).
	RetryMax int
	// RetryWaitMin and RetryWaitMax bound the backoff (default 250ms and 8s, DefaultRetryWaitMin and
	// DefaultRetryWaitMax).
	RetryWaitMin, RetryWaitMax time.Duration
	// Transport overrides the HTTP transport (tests).
	Transport http.RoundTripper
	// UserAgent is sent with every request unless Config.UserAgent is set: the provider's, with its
	// version and Terraform's (clouds.UserAgent).
	UserAgent string
}

// Client sends JSON requests to one cloud's API.
type Client struct {
	cfg     Config
	base    *url.URL
	http    *retryablehttp.Client
	limiter *rate.Limiter
}

// HTTPError is a response with a status outside 2xx.
type HTTPError struct {
	Method string
	Path   string
	Status int
	// Body is the response body, cut to 4 KiB.
	Body []byte
	// RetryAfter is the server's Retry-After, if it sent one.
	RetryAfter time.Duration
}

func (e *HTTPError) Error() string {
	body := strings.TrimSpace(string(e.Body))
	if len(body) > 512 {
		body = body[:512] + "..."
	}
	return fmt.Sprintf("%s %s: HTTP %d: %s", e.Method, e.Path, e.Status, body)
}

// New builds a client. The rate limiter lives in the client, so every operation that shares the client
// (every resource of one provider process) shares the limit.
func New(cfg Config) (*Client, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = cfg.DefaultBaseURL
	}
	if cfg.BaseURL == "" {
		return nil, fmt.Errorf("%s: no API base URL", cfg.Cloud)
	}
	base, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
	if err != nil || base.Scheme == "" || base.Host == "" {
		return nil, fmt.Errorf("%s: invalid API base URL %q: want an absolute http(s) URL", cfg.Cloud, cfg.BaseURL)
	}
	cfg.Tuning = cfg.Tuning.or(cfg.DefaultTuning).withDefaults()
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = cfg.Tuning.UserAgent
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = DefaultUserAgent
	}
	c := &Client{cfg: cfg, base: base, limiter: rate.NewLimiter(rate.Limit(cfg.RequestsPerSecond), cfg.Burst)}
	transport := cfg.Transport
	if transport == nil {
		transport = http.DefaultTransport
		if t, ok := transport.(*http.Transport); ok {
			transport = t.Clone()
		}
	}
	rc := retryablehttp.NewClient()
	rc.HTTPClient = &http.Client{Timeout: cfg.Timeout, Transport: &limitedTransport{next: transport, limiter: c.limiter}}
	rc.RetryMax = cfg.RetryMax
	rc.RetryWaitMin = cfg.RetryWaitMin
	rc.RetryWaitMax = cfg.RetryWaitMax
	rc.CheckRetry = checkRetry
	rc.Backoff = backoffWithJitter
	rc.Logger = leveled{cfg.Logger.Named(cfg.Cloud)}
	rc.ErrorHandler = retryablehttp.PassthroughErrorHandler
	c.http = rc
	return c, nil
}

// Log returns the client's logger, named after its cloud (one that drops everything when the Config
// gave none).
func (c *Client) Log() hclog.Logger { return c.cfg.Logger.Named(c.cfg.Cloud) }

// Limiter exposes the client's shared rate limiter (tests and benchmarks).
func (c *Client) Limiter() *rate.Limiter { return c.limiter }

// Request is one API call.
type Request struct {
	Method string
	// Path is joined to the base URL ("/instances/abc").
	Path  string
	Query url.Values
	// Body is encoded as JSON when not nil.
	Body any
	// Header adds headers (for example a form content type with RawBody).
	Header http.Header
	// RawBody is sent as is when Body is nil.
	RawBody []byte
	// NotIdempotent requests (creates) are retried only on 429, where the server has certainly not acted
	// on them; a 5xx or a timeout may hide a success, so the caller must look before it tries again.
	NotIdempotent bool
}

// Response is a 2xx answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Do sends the request and returns the 2xx response, or an *HTTPError for any other status.
func (c *Client) Do(ctx context.Context, r Request) (*Response, error) {
	u := *c.base
	u.Path = c.base.Path + r.Path
	if r.Query != nil {
		u.RawQuery = r.Query.Encode()
	}
	var body []byte
	if r.Body != nil {
		b, err := json.Marshal(r.Body)
		if err != nil {
			return nil, fmt.Errorf("encoding %s %s: %w", r.Method, r.Path, err)
		}
		body = b
	} else {
		body = r.RawBody
	}
	var rdr any
	if body != nil {
		rdr = body
	}
	req, err := retryablehttp.NewRequestWithContext(ctx, r.Method, u.String(), rdr)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.cfg.UserAgent)
	if r.Body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, vs := range r.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if c.cfg.Authorize != nil {
		if err := c.cfg.Authorize(ctx, req.Request); err != nil {
			return nil, err
		}
	}
	if r.NotIdempotent {
		req.Request = req.Request.WithContext(context.WithValue(req.Context(), notIdempotentKey{}, true))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("%s %s: %w", r.Method, r.Path, ctxErr)
		}
		return nil, fmt.Errorf("%s %s: %w", r.Method, r.Path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading response: %w", r.Method, r.Path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		cut := data
		if len(cut) > 4096 {
			cut = cut[:4096]
		}
		return nil, &HTTPError{Method: r.Method, Path: r.Path, Status: resp.StatusCode, Body: cut, RetryAfter: retryAfter(resp)}
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: data}, nil
}

// DoJSON sends the request and decodes a 2xx JSON body into out (when out is not nil).
func (c *Client) DoJSON(ctx context.Context, r Request, out any) error {
	resp, err := c.Do(ctx, r)
	if err != nil {
		return err
	}
	if out == nil || len(bytes.TrimSpace(resp.Body)) == 0 {
		return nil
	}
	return Decode(r, resp.Body, out)
}

// Decode decodes the JSON answer body of r into out; an answer that does not decode is an error naming
// the call ("GET /path: decoding response: ...").
func Decode(r Request, body []byte, out any) error {
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%s %s: decoding response: %w", r.Method, r.Path, err)
	}
	return nil
}

type notIdempotentKey struct{}

// checkRetry retries 429, 408 and 5xx (and connection errors), never another 4xx, and never once the
// caller's context is done. Requests marked NotIdempotent retry on 429 only.
func checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	// retryablehttp hands CheckRetry the request's own context.
	notIdempotent, _ := ctx.Value(notIdempotentKey{}).(bool)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) && strings.Contains(uerr.Error(), "unsupported protocol scheme") {
			return false, err
		}
		// A connection refused before anything was sent is safe to retry even for a create; other
		// transport errors may hide a success, so creates leave them to the caller.
		if notIdempotent && !strings.Contains(err.Error(), "connection refused") {
			return false, err
		}
		return true, nil
	}
	return retryableStatus(resp.StatusCode, notIdempotent), nil
}

// backoffWithJitter doubles the wait each attempt, adds up to 50% random jitter, and honours a
// server's Retry-After on 429 and 503 (capped at max).
func backoffWithJitter(minWait, maxWait time.Duration, attempt int, resp *http.Response) time.Duration {
	status := 0
	if resp != nil {
		status = resp.StatusCode
	}
	return backoff(minWait, maxWait, attempt, status, retryAfter(resp))
}

func retryAfter(resp *http.Response) time.Duration {
	if resp == nil {
		return 0
	}
	v := resp.Header.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return time.Until(t)
	}
	return 0
}

// limitedTransport waits for the shared rate limiter before every attempt, retries included.
type limitedTransport struct {
	next    http.RoundTripper
	limiter *rate.Limiter
}

func (t *limitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.limiter.Wait(req.Context()); err != nil {
		return nil, err
	}
	return t.next.RoundTrip(req)
}

// leveled adapts hclog to retryablehttp's LeveledLogger. Only method, URL (no credentials are ever put
// in URLs) and status are logged.
type leveled struct{ l hclog.Logger }

func (l leveled) Error(msg string, kv ...any) { l.l.Warn(msg, kv...) }
func (l leveled) Info(msg string, kv ...any)  { l.l.Debug(msg, kv...) }

// Debug is retryablehttp's detail, at TRACE; except its retries, which an operator must see: a retry
// (after a 429's Retry-After wait, a 5xx or a lost connection) is a WARN line with the wait.
func (l leveled) Debug(msg string, kv ...any) {
	if msg == "retrying request" {
		l.l.Warn("retrying a request to the cloud", kv...)
		return
	}
	l.l.Trace(msg, kv...)
}
func (l leveled) Warn(msg string, kv ...any) { l.l.Warn(msg, kv...) }

// CallJSON is DoJSON for a backend's client: the call's errors go through classify (with op), and a 2xx
// answer that does not decode into out is ErrOther of the client's cloud ("unexpected answer"). An
// empty body, or a nil out, decodes nothing.
func (c *Client) CallJSON(ctx context.Context, op string, r Request, out any, classify func(op string, err error) error) error {
	resp, err := c.Do(ctx, r)
	if err != nil {
		return classify(op, err)
	}
	if out == nil || len(bytes.TrimSpace(resp.Body)) == 0 {
		return nil
	}
	if err := json.Unmarshal(resp.Body, out); err != nil {
		return cloudprovider.Errorf(cloudprovider.ErrOther, c.cfg.Cloud, op, "%s %s: unexpected answer: %v", r.Method, r.Path, err)
	}
	return nil
}

// Authorization is a Config.Authorize that sends value as the Authorization header of every request
// ("Bearer <key>", "Basic <credentials>").
func Authorization(value string) func(context.Context, *http.Request) error {
	return func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", value)
		return nil
	}
}

// Bearer is a Config.Authorize that sends token as a bearer token. When token is empty and missing is
// set, every request fails with missing instead, before anything is sent.
func Bearer(token string, missing error) func(context.Context, *http.Request) error {
	if token == "" && missing != nil {
		return func(context.Context, *http.Request) error { return missing }
	}
	return Authorization("Bearer " + token)
}
