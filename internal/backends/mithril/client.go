// Package mithril is hydra's backend for Mithril (formerly ML Foundry), whose GPU capacity is sold as
// spot instances through a sealed second-price auction. It holds a typed client of the v2 REST API
// (client.go), the status mapping (status.go), the bid pricing rules (bids.go) and the
// cloudprovider.AuctionBackend (backend.go).
//
// Money: Mithril writes prices as "$X.XX" strings and integer cents; the package keeps them as whole
// cents (Cents) and converts them to hydra's money.USD exactly (one cent is money.Cent). Bids are
// placed in whole cents, never above the user's max_price_per_hour rounded down to a cent.
//
// Offers lists every auction, also one without capacity now (Available 0, Ineligible with its last
// clearing price and lowest winning bid) and one whose GPU the inventory does not map (GPUType "",
// CloudGPU the instance type's name, never priced as a bid). Instance type names are read in all of
// Mithril's styles ("h100-80gb.sxm.8x", "h100.80gb.sxm", "b200-192gb.8x", "b200.8x"; names.go) and
// matched against the inventory's api_names by GPU model, memory and form factor. PriceBids sets each bid (see its doc for the full rule): the
// basis is the cheapest comparable offer of another cloud (same GPU type and count; spot first, else
// on-demand) and the bid is one cent under it, capped by the max, but never below what the auction
// needs to win (its last winning price plus win_margin_percent, the lowest winning bid plus a cent, its
// win price and minimum). With nothing comparable the bid is exactly what the auction needs, capped by
// the max, never the max merely because nothing compares; an offer whose winning bid would be above
// the max or the basis is ineligible, with both figures in the reason.
package mithril

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// CloudName is the backend's name in pools.yml and api_names.
const CloudName = "mithril"

// DefaultBaseURL is Mithril's API root (v2 paths are joined to it).
const DefaultBaseURL = "https://api.mithril.ai"

// ClientConfig configures the REST client.
type ClientConfig struct {
	// APIKey is the console API key ("fkey_..."), sent as a Bearer token. Never logged.
	APIKey string
	// BaseURL defaults to DefaultBaseURL.
	BaseURL string
	// Tuning sets timeouts, the rate limit, retries and the transport (restclient defaults when zero).
	restclient.Tuning
	// Logger receives request logs (never credentials).
	Logger hclog.Logger
}

// Client speaks the subset of Mithril's v2 API hydra uses.
type Client struct {
	rc *restclient.Client
}

// NewClient builds a client.
func NewClient(cfg ClientConfig) (*Client, error) {
	key := strings.TrimSpace(cfg.APIKey)
	if key == "" {
		return nil, cloudprovider.Errorf(cloudprovider.ErrAuth, CloudName, "configuring client", "no API key (set api_key or MITHRIL_API_KEY)")
	}
	rc, err := restclient.New(restclient.Config{
		Cloud: CloudName, BaseURL: cfg.BaseURL, DefaultBaseURL: DefaultBaseURL, Tuning: cfg.Tuning, Logger: cfg.Logger,
		Authorize: restclient.Bearer(key, nil),
	})
	if err != nil {
		return nil, cloudprovider.NewError(cloudprovider.ErrInvalid, CloudName, "configuring client", err)
	}
	return &Client{rc: rc}, nil
}

// REST exposes the underlying restclient (its shared rate limiter, for tests).
func (c *Client) REST() *restclient.Client { return c.rc }

// call sends one call and decodes its JSON answer.
func call[T any](ctx context.Context, c *Client, op string, r restclient.Request) (T, error) {
	var out T
	err := c.rc.DoJSON(ctx, r, &out)
	return out, classify(op, err)
}

// get is call of GET path?q.
func get[T any](ctx context.Context, c *Client, op, path string, q url.Values) (T, error) {
	return call[T](ctx, c, op, restclient.Request{Method: http.MethodGet, Path: path, Query: q})
}

// getList is get of a list answered as a bare array or in a {data:[...]} envelope (decodeList).
func getList[T any](ctx context.Context, c *Client, op, path string, q url.Values) ([]T, error) {
	raw, err := get[json.RawMessage](ctx, c, op, path, q)
	if err != nil {
		return nil, err
	}
	out, err := decodeList[T](raw)
	if err != nil {
		return nil, cloudprovider.NewError(cloudprovider.ErrOther, CloudName, op, err)
	}
	return out, nil
}

// Projects lists the account's projects (GET /v2/projects).
func (c *Client) Projects(ctx context.Context) ([]Project, error) {
	return get[[]Project](ctx, c, "listing projects", "/v2/projects", nil)
}

// InstanceTypes returns the catalog (GET /v2/instance-types).
func (c *Client) InstanceTypes(ctx context.Context) ([]InstanceType, error) {
	return get[[]InstanceType](ctx, c, "listing instance types", "/v2/instance-types", nil)
}

// SpotAvailability returns the spot auctions (GET /v2/spot/availability).
func (c *Client) SpotAvailability(ctx context.Context) ([]Auction, error) {
	// The spec answers a bare array; tolerate the {data:[...]} envelope too.
	return getList[Auction](ctx, c, "listing spot auctions", "/v2/spot/availability", nil)
}

// CurrentPricing returns the auction signals of one instance type FID in one region, for one instance
// (GET /v2/pricing/current).
func (c *Client) CurrentPricing(ctx context.Context, instanceTypeFID, region string) (CurrentPrices, error) {
	q := restclient.Query(url.Values{"instance_type": {instanceTypeFID}, "instance_quantity": {"1"}}, "region", region)
	return get[CurrentPrices](ctx, c, "reading current prices", "/v2/pricing/current", q)
}

// CreateBid places a bid (POST /v2/spot/bids). It is never retried after a 5xx or a lost answer: the
// bid may exist, so the caller must look it up by name before trying again.
func (c *Client) CreateBid(ctx context.Context, req CreateBidRequest) (Bid, error) {
	return call[Bid](ctx, c, "placing bid", restclient.Request{Method: http.MethodPost, Path: "/v2/spot/bids", Body: req, NotIdempotent: true})
}

// GetBid returns one bid (GET /v2/spot/bids/{fid}); an unknown bid is an ErrNotFound error.
func (c *Client) GetBid(ctx context.Context, fid string) (Bid, error) {
	if err := checkFID(fid); err != nil {
		return Bid{}, cloudprovider.NewError(cloudprovider.ErrNotFound, CloudName, "reading bid", err)
	}
	return get[Bid](ctx, c, "reading bid "+fid, "/v2/spot/bids/"+url.PathEscape(fid), nil)
}

// InstanceStatus returns one instance's status and, while it is preempting, its end time (GET
// /v2/instances/{fid}/status); an unknown instance is an ErrNotFound error.
func (c *Client) InstanceStatus(ctx context.Context, fid string) (InstanceStatus, error) {
	if err := checkFID(fid); err != nil {
		return InstanceStatus{}, cloudprovider.NewError(cloudprovider.ErrNotFound, CloudName, "reading instance status", err)
	}
	return get[InstanceStatus](ctx, c, "reading instance status "+fid, "/v2/instances/"+url.PathEscape(fid)+"/status", nil)
}

// CancelBid cancels a bid and terminates its instances (DELETE /v2/spot/bids/{fid}). An unknown bid is
// an ErrNotFound error; callers that only want the bid gone treat that as done.
func (c *Client) CancelBid(ctx context.Context, fid string) error {
	if err := checkFID(fid); err != nil {
		return cloudprovider.NewError(cloudprovider.ErrNotFound, CloudName, "cancelling bid", err)
	}
	_, err := c.rc.Do(ctx, restclient.Request{Method: http.MethodDelete, Path: "/v2/spot/bids/" + url.PathEscape(fid)})
	return classify("cancelling bid "+fid, err)
}

// ListBids lists the project's bids (GET /v2/spot/bids), following next_cursor to the end.
func (c *Client) ListBids(ctx context.Context, project string, f BidFilter) ([]Bid, error) {
	q := restclient.Query(url.Values{"project": {project}},
		"name", f.Name, "status", f.Status, "instance_type", f.InstanceType, "region", f.Region)
	out, err := paginate[Bid](ctx, c, "listing bids", "/v2/spot/bids", q, f.PageSize)
	if err != nil {
		return nil, err
	}
	// Mithril's own SDK found server-side filters sometimes ignored or returning nothing; filter
	// again here so callers can rely on the result.
	kept := out[:0]
	for _, b := range out {
		if (f.Name == "" || b.Name == f.Name) && (f.Status == "" || strings.EqualFold(b.Status, f.Status)) &&
			(f.Region == "" || b.Region == "" || b.Region == f.Region) && (f.InstanceType == "" || b.InstanceType == f.InstanceType) {
			kept = append(kept, b)
		}
	}
	return kept, nil
}

// ListInstances lists the project's instances (GET /v2/instances), following next_cursor to the end.
func (c *Client) ListInstances(ctx context.Context, project string, f InstanceFilter) ([]Instance, error) {
	q := restclient.Query(url.Values{"project": {project}},
		"bid_fid_in", strings.Join(f.BidFIDs, ","), "status_in", strings.Join(f.StatusIn, ","), "region", f.Region)
	out, err := paginate[Instance](ctx, c, "listing instances", "/v2/instances", q, f.PageSize)
	if err != nil {
		return nil, err
	}
	if len(f.BidFIDs) > 0 {
		want := map[string]bool{}
		for _, b := range f.BidFIDs {
			want[b] = true
		}
		kept := out[:0]
		for _, in := range out {
			if want[in.Bid] {
				kept = append(kept, in)
			}
		}
		out = kept
	}
	return out, nil
}

// SSHKeys lists the project's SSH keys (GET /v2/ssh-keys?project=).
func (c *Client) SSHKeys(ctx context.Context, project string) ([]SSHKey, error) {
	return getList[SSHKey](ctx, c, "listing SSH keys", "/v2/ssh-keys", url.Values{"project": {project}})
}

// CreateSSHKey registers a public key (POST /v2/ssh-keys).
func (c *Client) CreateSSHKey(ctx context.Context, req CreateSSHKeyRequest) (SSHKey, error) {
	return call[SSHKey](ctx, c, "registering SSH key", restclient.Request{Method: http.MethodPost, Path: "/v2/ssh-keys", Body: req, NotIdempotent: true})
}

// maxPages bounds pagination so a server that keeps answering the same cursor cannot loop forever.
const maxPages = 1000

func paginate[T any](ctx context.Context, c *Client, op, path string, q url.Values, pageSize int) ([]T, error) {
	if pageSize <= 0 || pageSize > 100 {
		pageSize = 100
	}
	q.Set("limit", strconv.Itoa(pageSize))
	var all []T
	seen := map[string]bool{}
	for range maxPages {
		raw, err := get[json.RawMessage](ctx, c, op, path, q)
		if err != nil {
			return nil, err
		}
		var p page[T]
		trimmed := strings.TrimSpace(string(raw))
		if strings.HasPrefix(trimmed, "[") {
			// A bare array: no pagination.
			if err := json.Unmarshal(raw, &p.Data); err != nil {
				return nil, cloudprovider.NewError(cloudprovider.ErrOther, CloudName, op, fmt.Errorf("decoding response: %w", err))
			}
		} else if err := json.Unmarshal(raw, &p); err != nil {
			return nil, cloudprovider.NewError(cloudprovider.ErrOther, CloudName, op, fmt.Errorf("decoding response: %w", err))
		}
		all = append(all, p.Data...)
		if p.NextCursor == nil || *p.NextCursor == "" || len(p.Data) == 0 {
			return all, nil
		}
		if seen[*p.NextCursor] {
			return nil, cloudprovider.Errorf(cloudprovider.ErrOther, CloudName, op, "the API repeated cursor %q", *p.NextCursor)
		}
		seen[*p.NextCursor] = true
		q.Set("next_cursor", *p.NextCursor)
	}
	return nil, cloudprovider.Errorf(cloudprovider.ErrOther, CloudName, op, "more than %d pages", maxPages)
}

// decodeList decodes a bare array or a {data:[...]} envelope.
func decodeList[T any](raw json.RawMessage) ([]T, error) {
	var out []T
	trimmed := strings.TrimSpace(string(raw))
	if trimmed == "" || trimmed == "null" {
		return nil, nil
	}
	if strings.HasPrefix(trimmed, "[") {
		if err := json.Unmarshal(raw, &out); err != nil {
			return nil, fmt.Errorf("decoding response: %w", err)
		}
		return out, nil
	}
	var p page[T]
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("decoding response: %w", err)
	}
	return p.Data, nil
}

// checkFID rejects ids that cannot name a bid (empty, or holding URL syntax). FIDs carry prefixes
// ("bid_..."), but an id without one is still passed on: the API decides.
func checkFID(fid string) error {
	if fid == "" || strings.ContainsAny(fid, "/?#") {
		return fmt.Errorf("invalid id %q", fid)
	}
	return nil
}

// classify turns a restclient error into a classified cloud error (cloudprovider.Error) of the right kind, keeping the message
// of Mithril's error body.
func classify(op string, err error) error {
	return restclient.Classify(CloudName, op, err, func(he *restclient.HTTPError) (cloudprovider.ErrorKind, error) {
		msg := errorMessage(he.Body)
		text := fmt.Sprintf("HTTP %d", he.Status)
		if msg != "" {
			text += ": " + msg
		}
		return kindFor(he.Status, msg), &APIError{Status: he.Status, Message: msg, text: text}
	})
}

// APIError is an error answer of the API: its status and the message of its body.
type APIError struct {
	Status  int
	Message string
	text    string
}

func (e *APIError) Error() string { return e.text }

// StatusOf returns the HTTP status of an API error in err's chain (0 if none).
func StatusOf(err error) int {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Status
	}
	return 0
}

func kindFor(status int, msg string) cloudprovider.ErrorKind {
	low := strings.ToLower(msg)
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(low, w) {
				return true
			}
		}
		return false
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return cloudprovider.ErrAuth
	case status == http.StatusNotFound:
		return cloudprovider.ErrNotFound
	case status == http.StatusPaymentRequired:
		return cloudprovider.ErrQuota
	case has("capacity", "insufficient", "not enough", "no available", "sold out"):
		return cloudprovider.ErrCapacity
	case has("quota", "limit exceeded", "balance", "billing", "payment", "credit"):
		return cloudprovider.ErrQuota
	case status == http.StatusUnprocessableEntity || status == http.StatusBadRequest || status == http.StatusConflict || status == http.StatusNotImplemented:
		return cloudprovider.ErrInvalid
	}
	return cloudprovider.ErrOther
}

// errorMessage extracts the message of an error body: FastAPI's {"detail": "..."} or
// {"detail": [{loc, msg, type}]}, or {"error": ...} or {"message": ...}; otherwise the body itself.
func errorMessage(body []byte) string {
	text := strings.TrimSpace(string(body))
	if text == "" {
		return ""
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		if len(text) > 300 {
			text = text[:300] + "..."
		}
		return text
	}
	for _, key := range []string{"detail", "error", "message", "msg"} {
		if raw, ok := m[key]; ok {
			if s := messageOf(raw); s != "" {
				return s
			}
		}
	}
	return text
}

func messageOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var list []struct {
		Loc  []any  `json:"loc"`
		Msg  string `json:"msg"`
		Type string `json:"type"`
	}
	if json.Unmarshal(raw, &list) == nil && len(list) > 0 {
		var parts []string
		for _, d := range list {
			var loc []string
			for _, l := range d.Loc {
				loc = append(loc, fmt.Sprint(l))
			}
			p := d.Msg
			if len(loc) > 0 {
				p = strings.Join(loc, ".") + ": " + d.Msg
			}
			parts = append(parts, p)
		}
		return strings.Join(parts, "; ")
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil {
		for _, key := range []string{"message", "detail", "msg", "error"} {
			if r, ok := obj[key]; ok {
				if s := messageOf(r); s != "" {
					return s
				}
			}
		}
	}
	return ""
}
