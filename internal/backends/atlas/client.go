// Package atlas is hydra's backend for Atlas, the in-house GPU cloud. Atlas has no public API; its
// REST API is defined in API.md next to this file, and this package holds the typed client for it and
// the InstanceManagerBackend built on it.
package atlas

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/atlas/atlasapi"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendkit"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// CloudName is the backend's name in pools.yml and api_names.
const CloudName = "atlas"

// ClientConfig configures the REST client.
type ClientConfig struct {
	// BaseURL is the Atlas API root (required); paths start with /v1.
	BaseURL string
	// Token is sent as a Bearer token. Never logged.
	Token string
	// Tuning sets timeouts, the rate limit, retries and the transport (restclient defaults when zero).
	restclient.Tuning
	// PageSize is the instance list page size (default 100, at most 500).
	PageSize int
	// Logger receives debug logs (default: none).
	Logger hclog.Logger
}

// Client talks to the Atlas API.
type Client struct {
	rc       *restclient.Client
	log      hclog.Logger
	pageSize int
}

// NewClient builds a client.
func NewClient(cfg ClientConfig) (*Client, error) {
	if cfg.PageSize <= 0 || cfg.PageSize > 500 {
		cfg.PageSize = 100
	}
	rc, err := restclient.New(restclient.Config{
		Cloud: CloudName, BaseURL: cfg.BaseURL, Tuning: cfg.Tuning, Logger: cfg.Logger,
		Authorize: restclient.Bearer(cfg.Token, cloudprovider.Errorf(cloudprovider.ErrAuth, CloudName, "", "no Atlas token configured")),
	})
	if err != nil {
		return nil, err
	}
	return &Client{rc: rc, log: rc.Log(), pageSize: cfg.PageSize}, nil
}

// REST exposes the underlying restclient (tests inspect its rate limiter).
func (c *Client) REST() *restclient.Client { return c.rc }

// OfferEntry is one entry of GET /v1/offers (the wire type the emulator shares).
type OfferEntry = atlasapi.Offer

// SSH is where an instance accepts SSH; Instance is an Atlas instance (atlasapi's shapes).
type (
	SSH      = atlasapi.SSH
	Instance = atlasapi.Instance
)

// ErrorBody is every error answer: {"error":{"code","message"}}, plus the existing instance on a 409.
type ErrorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Instance *Instance `json:"instance,omitempty"`
}

// APIError is a non-2xx answer with its code and message.
type APIError = restclient.APIError

// Error codes (API.md).
const (
	CodeInvalid       = "invalid"
	CodeUnauthorized  = "unauthorized"
	CodeForbidden     = "forbidden"
	CodeQuotaExceeded = "quota_exceeded"
	CodeNotFound      = "not_found"
	CodeAlreadyExists = "already_exists"
	CodeNoCapacity    = "no_capacity"
	CodePriceAboveMax = "price_above_max"
	CodeRateLimited   = "rate_limited"
	CodeInternal      = "internal"
	CodeUnavailable   = "unavailable"
)

func parseError(he *restclient.HTTPError) (*APIError, *Instance) {
	ae := restclient.NewAPIError(he)
	var b ErrorBody
	if err := json.Unmarshal(he.Body, &b); err == nil && (b.Error.Code != "" || b.Error.Message != "") {
		ae.Code, ae.Message = b.Error.Code, b.Error.Message
		return ae, b.Instance
	}
	msg := strings.TrimSpace(string(he.Body))
	if len(msg) > 300 {
		msg = msg[:300] + "..."
	}
	ae.Message = msg
	return ae, nil
}

// kindOf classifies an Atlas error: by its code first (API.md: "Clients classify by code first and
// fall back to the status"), by the HTTP status only when the body names no code this client knows.
// rate_limited, internal and unavailable are outcomes unknown (ErrOther) whatever the status;
// already_exists is ErrInvalid here (CreateInstance adopts the instance such a 409 carries before).
func kindOf(ae *APIError) cloudprovider.ErrorKind {
	switch ae.Code {
	case CodeRateLimited, CodeInternal, CodeUnavailable:
		return cloudprovider.ErrOther
	case CodeNoCapacity, CodePriceAboveMax:
		return cloudprovider.ErrCapacity
	case CodeQuotaExceeded:
		return cloudprovider.ErrQuota
	case CodeUnauthorized, CodeForbidden:
		return cloudprovider.ErrAuth
	case CodeNotFound:
		return cloudprovider.ErrNotFound
	case CodeInvalid, CodeAlreadyExists:
		return cloudprovider.ErrInvalid
	}
	if ae.Status == http.StatusUnprocessableEntity { // Atlas's 422 is a refused launch: sold out or above the price cap
		return cloudprovider.ErrCapacity
	}
	return backendkit.StatusKind(ae.Status)
}

// classify turns a client error into a *cloudprovider.Error keeping the API's message.
func classify(op string, err error) error {
	return restclient.Classify(CloudName, op, err, func(he *restclient.HTTPError) (cloudprovider.ErrorKind, error) {
		ae, _ := parseError(he)
		return kindOf(ae), ae
	})
}

func (c *Client) doJSON(ctx context.Context, op string, r restclient.Request, out any) error {
	return c.rc.CallJSON(ctx, op, r, out, classify)
}

// Offers returns GET /v1/offers.
func (c *Client) Offers(ctx context.Context) ([]OfferEntry, error) {
	var out struct {
		Offers []OfferEntry `json:"offers"`
	}
	err := c.doJSON(ctx, "listing offers", restclient.Request{Method: http.MethodGet, Path: "/v1/offers"}, &out)
	return out.Offers, err
}

// CreateInstance creates an instance. Create is idempotent by name on Atlas, so it is retried like a
// read (5xx, timeouts), and a 409 already_exists returns the existing instance with existed = true.
func (c *Client) CreateInstance(ctx context.Context, req atlasapi.CreateRequest) (inst Instance, existed bool, err error) {
	const op = "creating instance"
	resp, err := c.rc.Do(ctx, restclient.Request{Method: http.MethodPost, Path: "/v1/instances", Body: req})
	if err != nil {
		var he *restclient.HTTPError
		if errors.As(err, &he) && he.Status == http.StatusConflict {
			ae, existing := parseError(he)
			if (ae.Code == CodeAlreadyExists || ae.Code == "") && existing != nil && existing.ID != "" {
				return *existing, true, nil
			}
		}
		return Instance{}, false, classify(op, err)
	}
	if err := json.Unmarshal(resp.Body, &inst); err != nil || inst.ID == "" {
		return Instance{}, false, cloudprovider.Errorf(cloudprovider.ErrOther, CloudName, op, "unexpected answer: %.200s", resp.Body)
	}
	return inst, false, nil
}

// Instance returns one instance; an unknown id is an ErrNotFound error.
func (c *Client) Instance(ctx context.Context, id string) (Instance, error) {
	var inst Instance
	err := c.doJSON(ctx, "reading instance", restclient.Request{Method: http.MethodGet, Path: "/v1/instances/" + url.PathEscape(id)}, &inst)
	return inst, err
}

// Instances lists the live instances whose name starts with prefix, reading every page.
func (c *Client) Instances(ctx context.Context, prefix string) ([]Instance, error) {
	type instanceList struct {
		Instances     []Instance `json:"instances"`
		NextPageToken string     `json:"next_page_token"`
	}
	return listAll(ctx, c, "listing instances", "/v1/instances", prefix, func(l instanceList) ([]Instance, string) {
		return l.Instances, l.NextPageToken
	})
}

// listAll reads every page (at most 1000) of the list at path of what is named with prefix; of returns
// a page's (a P's) items and the next page's token, which ends the reading when empty or repeated.
func listAll[P, T any](ctx context.Context, c *Client, op, path, prefix string, of func(P) ([]T, string)) ([]T, error) {
	var all []T
	token := ""
	for range 1000 {
		q := restclient.Query(url.Values{"limit": {strconv.Itoa(c.pageSize)}}, "name_prefix", prefix, "page_token", token)
		var page P
		if err := c.doJSON(ctx, op, restclient.Request{Method: http.MethodGet, Path: path, Query: q}, &page); err != nil {
			return nil, err
		}
		items, next := of(page)
		all = append(all, items...)
		if next == "" || next == token {
			return all, nil
		}
		token = next
	}
	return nil, cloudprovider.Errorf(cloudprovider.ErrOther, CloudName, op, "too many pages")
}

// UpdateLabels merges labels into the instance's (PATCH /v1/instances/{id}): a nil value removes the
// key. It returns the updated instance; an unknown or terminated instance is an ErrNotFound error.
// The merge is idempotent, so it is retried like a read.
func (c *Client) UpdateLabels(ctx context.Context, id string, labels map[string]*string) (Instance, error) {
	var inst Instance
	body := map[string]any{"labels": labels}
	err := c.doJSON(ctx, "updating instance labels", restclient.Request{Method: http.MethodPatch, Path: "/v1/instances/" + url.PathEscape(id), Body: body}, &inst)
	return inst, err
}

// DeleteInstance starts termination and returns the instance (terminating).
func (c *Client) DeleteInstance(ctx context.Context, id string) (Instance, error) {
	var inst Instance
	err := c.doJSON(ctx, "deleting instance", restclient.Request{Method: http.MethodDelete, Path: "/v1/instances/" + url.PathEscape(id)}, &inst)
	return inst, err
}
