package verda

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

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
