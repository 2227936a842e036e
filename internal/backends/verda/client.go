// Package verda is hydra's backend for Verda (formerly DataCrunch): a typed REST client for the part of
// the Verda Cloud API hydra uses (OAuth2 client credentials, catalog, availability, SSH keys, instances
// and instance actions) and the InstanceManagerBackend built on it.
package verda

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// DefaultBaseURL is Verda's public API root.
const DefaultBaseURL = "https://api.verda.com/v1"

// ClientConfig configures a Client.
type ClientConfig struct {
	// BaseURL is the API root including /v1 (default DefaultBaseURL).
	BaseURL string
	// ClientID and ClientSecret are the OAuth2 client credentials. They are sent only to the token
	// endpoint and never logged.
	ClientID     string
	ClientSecret string
	// Tuning sets timeouts, the rate limit, retries and the transport (restclient defaults when zero).
	restclient.Tuning
	// Logger receives request and token logs (never credentials or tokens).
	Logger hclog.Logger
	// Now is the clock used for token expiry (default time.Now).
	Now func() time.Time
}

// Client talks to the Verda Cloud API. It is safe for concurrent use; all calls share one token and one
// rate limiter.
type Client struct {
	rc     *restclient.Client
	tokens *tokenSource
}

// NewClient builds a client. It does not contact Verda until the first call.
func NewClient(cfg ClientConfig) (*Client, error) {
	if cfg.ClientID == "" || cfg.ClientSecret == "" {
		return nil, errors.New("verda: client_id and client_secret are required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c := &Client{}
	rc, err := restclient.New(restclient.Config{
		Cloud:          CloudName,
		BaseURL:        cfg.BaseURL,
		DefaultBaseURL: DefaultBaseURL,
		Tuning:         cfg.Tuning,
		Logger:         cfg.Logger,
		Authorize:      c.authorize,
	})
	if err != nil {
		return nil, err
	}
	c.rc = rc
	c.tokens = newTokenSource(rc, cfg.ClientID, cfg.ClientSecret, cfg.Now, rc.Log())
	return c, nil
}

// REST exposes the underlying restclient (its shared rate limiter, for tests).
func (c *Client) REST() *restclient.Client { return c.rc }

type tokenKey struct{}

// authorize adds the bearer token to every request except the token request itself.
func (c *Client) authorize(ctx context.Context, req *http.Request) error {
	if strings.HasSuffix(req.URL.Path, tokenPath) {
		return nil
	}
	tok, err := c.tokens.Token(ctx)
	if err != nil {
		return err
	}
	if holder, ok := ctx.Value(tokenKey{}).(*string); ok {
		*holder = tok
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	return nil
}

// do sends one API call. When Verda refuses the token (401), it renews the token once and tries again.
func (c *Client) do(ctx context.Context, op string, r restclient.Request) (*restclient.Response, error) {
	for attempt := 0; ; attempt++ {
		var used string
		resp, err := c.rc.Do(context.WithValue(ctx, tokenKey{}, &used), r)
		var he *restclient.HTTPError
		if attempt == 0 && used != "" && errors.As(err, &he) && he.Status == http.StatusUnauthorized {
			c.tokens.Invalidate(used)
			continue
		}
		if err != nil {
			return nil, classify(op, err)
		}
		return resp, nil
	}
}

// get sends one GET call and decodes its JSON answer (an empty answer is T's zero value).
func get[T any](ctx context.Context, c *Client, op, path string, q url.Values) (T, error) {
	var out T
	r := restclient.Request{Method: http.MethodGet, Path: path, Query: q}
	resp, err := c.do(ctx, op, r)
	if err != nil || len(strings.TrimSpace(string(resp.Body))) == 0 {
		return out, err
	}
	err = restclient.Decode(r, resp.Body, &out)
	return out, classify(op, err)
}

// Locations lists Verda's datacenters (GET /locations).
func (c *Client) Locations(ctx context.Context) ([]Location, error) {
	return get[[]Location](ctx, c, "listing locations", "/locations", nil)
}

// InstanceTypes lists the catalog with prices (GET /instance-types). currency ("usd", "eur" or "") is
// a request; each entry's Currency says what Verda actually answered in.
func (c *Client) InstanceTypes(ctx context.Context, currency string) ([]InstanceType, error) {
	return get[[]InstanceType](ctx, c, "listing instance types", "/instance-types", restclient.Query(nil, "currency", currency))
}

func spotQuery(spot bool, location string) url.Values {
	// The official SDKs disagree on the casing; send both.
	return restclient.Query(nil, "is_spot", strconv.FormatBool(spot), "isSpot", strconv.FormatBool(spot), "location_code", location)
}

// Availability lists, per location, the instance types deployable now (GET /instance-availability).
// Spot and on-demand stock are separate: ask once with spot=false and once with spot=true.
// location "" asks for every location.
func (c *Client) Availability(ctx context.Context, spot bool, location string) ([]LocationAvailability, error) {
	return get[[]LocationAvailability](ctx, c, "listing availability", "/instance-availability", spotQuery(spot, location))
}

// InstanceTypeAvailable asks whether one instance type is deployable now (GET
// /instance-availability/{type}); Verda answers a bare boolean (or the string "true"/"false").
func (c *Client) InstanceTypeAvailable(ctx context.Context, instanceType string, spot bool, location string) (bool, error) {
	out, err := get[FlexBool](ctx, c, "checking availability", "/instance-availability/"+url.PathEscape(instanceType), spotQuery(spot, location))
	return bool(out), err
}

// Images lists OS images (GET /images); instanceType "" lists all.
func (c *Client) Images(ctx context.Context, instanceType string) ([]Image, error) {
	return get[[]Image](ctx, c, "listing images", "/images", restclient.Query(nil, "instance_type", instanceType))
}

// SSHKeys lists the account's SSH keys (GET /ssh-keys).
func (c *Client) SSHKeys(ctx context.Context) ([]SSHKey, error) {
	return get[[]SSHKey](ctx, c, "listing SSH keys", "/ssh-keys", nil)
}

// SSHKey reads one SSH key (GET /ssh-keys/{id}), which Verda answers as an array of one element.
func (c *Client) SSHKey(ctx context.Context, id string) (SSHKey, error) {
	const op = "reading SSH key"
	resp, err := c.do(ctx, op, restclient.Request{Method: http.MethodGet, Path: "/ssh-keys/" + url.PathEscape(id)})
	if err != nil {
		return SSHKey{}, err
	}
	body := strings.TrimSpace(string(resp.Body))
	if strings.HasPrefix(body, "{") {
		var k SSHKey
		if err := json.Unmarshal(resp.Body, &k); err != nil {
			return SSHKey{}, classify(op, err)
		}
		return k, nil
	}
	var keys []SSHKey
	if err := json.Unmarshal(resp.Body, &keys); err != nil {
		return SSHKey{}, classify(op, fmt.Errorf("decoding response: %w", err))
	}
	if len(keys) == 0 {
		return SSHKey{}, classify(op, fmt.Errorf("SSH key %s: empty answer", id))
	}
	return keys[0], nil
}

// CreateSSHKey adds a public key (POST /ssh-keys) and returns its id, which Verda answers as plain text.
// It is not retried on 5xx: a lost answer may hide a created key.
func (c *Client) CreateSSHKey(ctx context.Context, name, publicKey string) (string, error) {
	return c.create(ctx, "adding SSH key", restclient.Request{Method: http.MethodPost, Path: "/ssh-keys",
		Body: map[string]string{"name": name, "key": publicKey}, NotIdempotent: true})
}

// create sends a create call whose answer is the new object's id as plain text.
func (c *Client) create(ctx context.Context, op string, r restclient.Request) (string, error) {
	resp, err := c.do(ctx, op, r)
	if err != nil {
		return "", err
	}
	id, err := parsePlainID(resp.Body)
	if err != nil {
		return "", classify(op, err)
	}
	return id, nil
}

// DeleteSSHKey removes one SSH key (DELETE /ssh-keys/{id}).
func (c *Client) DeleteSSHKey(ctx context.Context, id string) error {
	_, err := c.do(ctx, "deleting SSH key", restclient.Request{Method: http.MethodDelete, Path: "/ssh-keys/" + url.PathEscape(id)})
	return err
}

// Instances lists the account's instances (GET /instances); discontinued ones are left out by Verda.
// status "" lists every status.
func (c *Client) Instances(ctx context.Context, status string) ([]Instance, error) {
	return get[[]Instance](ctx, c, "listing instances", "/instances", restclient.Query(nil, "status", status))
}

// Instance reads one instance (GET /instances/{id}); discontinued instances are still readable.
func (c *Client) Instance(ctx context.Context, id string) (Instance, error) {
	return get[Instance](ctx, c, "reading instance", "/instances/"+url.PathEscape(id), nil)
}

// CreateInstance deploys an instance (POST /instances) and returns its id, answered as plain text. It
// is retried on 429 only: after a 5xx or a timeout the caller must look for the instance (by hostname)
// before trying again.
func (c *Client) CreateInstance(ctx context.Context, req CreateInstanceRequest) (string, error) {
	if req.SSHKeyIDs == nil {
		req.SSHKeyIDs = []string{}
	}
	return c.create(ctx, "creating instance", restclient.Request{Method: http.MethodPost, Path: "/instances", Body: req, NotIdempotent: true})
}

// InstanceAction performs an action on instances (PUT /instances). Verda answers 202 with a result per
// instance, 207 when only some succeeded (the failures carry Error), or an empty 202/204; the results
// are returned as sent (nil when the body was empty). A request-level refusal (for example
// forbidden_action for a single instance) is returned as an error.
func (c *Client) InstanceAction(ctx context.Context, req InstanceActionRequest) ([]ActionResult, error) {
	op := "instance action " + req.Action
	resp, err := c.do(ctx, op, restclient.Request{Method: http.MethodPut, Path: "/instances", Body: req})
	if err != nil {
		return nil, err
	}
	body := strings.TrimSpace(string(resp.Body))
	if body == "" || body == "null" {
		return nil, nil
	}
	var out []ActionResult
	if strings.HasPrefix(body, "{") {
		var one ActionResult
		if err := json.Unmarshal(resp.Body, &one); err != nil {
			return nil, classify(op, fmt.Errorf("decoding response: %w", err))
		}
		out = []ActionResult{one}
	} else if err := json.Unmarshal(resp.Body, &out); err != nil {
		return nil, classify(op, fmt.Errorf("decoding response: %w", err))
	}
	return out, nil
}

const tokenPath = "/oauth2/token"

// tokenSource holds one OAuth2 access token for the client-credentials flow. It refreshes the token
// shortly before it expires (with the refresh grant, falling back to a new client-credentials grant when
// the refresh fails) and lets one caller at a time talk to the token endpoint.
type tokenSource struct {
	rc           *restclient.Client
	clientID     string
	clientSecret string
	now          func() time.Time
	log          hclog.Logger

	sem       chan struct{} // a mutex that waiting callers can abandon when their context ends
	access    string
	refresh   string
	refreshAt time.Time // when to stop using access and renew it
}

func newTokenSource(rc *restclient.Client, id, secret string, now func() time.Time, log hclog.Logger) *tokenSource {
	return &tokenSource{rc: rc, clientID: id, clientSecret: secret, now: now, log: log,
		sem: make(chan struct{}, 1)}
}

func (t *tokenSource) lock(ctx context.Context) error {
	select {
	case t.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (t *tokenSource) unlock() { <-t.sem }

// Token returns a valid access token, renewing it when it is about to expire.
func (t *tokenSource) Token(ctx context.Context) (string, error) {
	if err := t.lock(ctx); err != nil {
		return "", classify("authenticating", err)
	}
	defer t.unlock()
	if t.access != "" && t.now().Before(t.refreshAt) {
		return t.access, nil
	}
	if t.refresh != "" {
		tr, err := t.grant(ctx, map[string]string{
			"grant_type":    "refresh_token",
			"refresh_token": t.refresh,
			"client_id":     t.clientID,
			"client_secret": t.clientSecret,
		})
		if err == nil {
			t.store(tr)
			return t.access, nil
		}
		if ctx.Err() != nil {
			return "", classify("refreshing the access token", err)
		}
		// The Go SDK falls back on 400/401; any failed refresh is worth one fresh grant.
		t.log.Debug("refreshing the access token failed; requesting a new one", "error", err)
		t.refresh = ""
	}
	tr, err := t.grant(ctx, map[string]string{
		"grant_type":    "client_credentials",
		"client_id":     t.clientID,
		"client_secret": t.clientSecret,
	})
	if err != nil {
		t.access = ""
		return "", classifyAuth("authenticating with client credentials", err)
	}
	t.store(tr)
	return t.access, nil
}

// Invalidate forgets token if it is still the current one (the API refused it), so the next call
// renews it.
func (t *tokenSource) Invalidate(token string) {
	t.sem <- struct{}{}
	defer t.unlock()
	if t.access == token {
		t.access = ""
	}
}

func (t *tokenSource) store(tr TokenResponse) {
	lifetime := time.Duration(tr.ExpiresIn) * time.Second
	if lifetime <= 0 {
		lifetime = time.Hour
	}
	skew := min(60*time.Second, lifetime/2)
	t.access = tr.AccessToken
	if tr.RefreshToken != "" {
		t.refresh = tr.RefreshToken
	}
	t.refreshAt = t.now().Add(lifetime - skew)
}

// grant posts one token request as JSON, and again form-encoded when the server says it could not read
// the JSON (a defensive fallback the Go SDK has).
func (t *tokenSource) grant(ctx context.Context, fields map[string]string) (TokenResponse, error) {
	var tr TokenResponse
	err := t.rc.DoJSON(ctx, restclient.Request{Method: http.MethodPost, Path: tokenPath, Body: fields}, &tr)
	var he *restclient.HTTPError
	if errors.As(err, &he) && he.Status == http.StatusBadRequest && wantsForm(he.Body) {
		form := url.Values{}
		for k, v := range fields {
			form.Set(k, v)
		}
		tr = TokenResponse{}
		err = t.rc.DoJSON(ctx, restclient.Request{
			Method:  http.MethodPost,
			Path:    tokenPath,
			RawBody: []byte(form.Encode()),
			Header:  http.Header{"Content-Type": []string{"application/x-www-form-urlencoded"}},
		}, &tr)
	}
	if err != nil {
		return TokenResponse{}, err
	}
	if tr.AccessToken == "" {
		return TokenResponse{}, fmt.Errorf("token response holds no access_token")
	}
	return tr, nil
}

func wantsForm(body []byte) bool {
	var e APIError
	msg := string(body)
	if json.Unmarshal(body, &e) == nil && e.Message != "" {
		msg = e.Message
	}
	msg = strings.ToLower(msg)
	return strings.Contains(msg, "grant_type not specified") || strings.Contains(msg, "unsupported grant type") ||
		strings.Contains(msg, "not valid json")
}

// classifyAuth classifies a failed client-credentials grant: any 4xx means the credentials are wrong.
func classifyAuth(op string, err error) error {
	err = classify(op, err)
	var ce *cloudprovider.Error
	if errors.As(err, &ce) {
		if re, ok := asResponseError(err); ok && re.Status >= 400 && re.Status < 500 && re.Status != http.StatusTooManyRequests {
			ce.Kind = cloudprovider.ErrAuth
		}
	}
	return err
}
