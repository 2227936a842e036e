// Package upcloud is hydra's UpCloud backend: a typed client for the subset of UpCloud API 1.3 that hydra
// uses (plans, prices, GPU stock, templates, servers, storages) and the InstanceManagerBackend built on
// it, with UpCloud's block storages as volumes (storage.go).
//
// UpCloud wraps objects and lists in extra keys ({"server":{...}}, {"servers":{"server":[...]}}), spells
// booleans "yes"/"no" and sends several numbers as strings; the types in this package read all of that.
package upcloud

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// CloudName is the backend's name in pools.yml and api_names.
const CloudName = "upcloud"

// DefaultBaseURL is UpCloud's API root.
const DefaultBaseURL = "https://api.upcloud.com/1.3"

// ClientConfig configures a Client. Exactly one of Username/Password (an API-enabled account or
// sub-account) and Token must be set.
type ClientConfig struct {
	// Username and Password authenticate with HTTP Basic.
	Username, Password string
	// Token authenticates with "Authorization: Bearer <token>".
	Token string
	// BaseURL defaults to DefaultBaseURL.
	BaseURL string
	// Tuning sets timeouts, the rate limit, retries and the transport (restclient defaults when zero).
	restclient.Tuning
	// Logger receives request logs (never credentials).
	Logger hclog.Logger
	// UserAgent is sent with every request.
	UserAgent string
}

// Client is a typed UpCloud API 1.3 client.
type Client struct {
	rc *restclient.Client
}

// NewClient builds a client. It refuses a configuration with both Basic credentials and a token, or
// with neither (as UpCloud's own SDK does).
func NewClient(cfg ClientConfig) (*Client, error) {
	basic := cfg.Username != "" || cfg.Password != ""
	token := cfg.Token != ""
	switch {
	case basic && token:
		return nil, errors.New("upcloud: configure either username/password or a token, not both")
	case !basic && !token:
		return nil, errors.New("upcloud: no credentials: set username and password, or a token")
	case basic && (cfg.Username == "" || cfg.Password == ""):
		return nil, errors.New("upcloud: both username and password are required for basic authentication")
	}
	var authHeader string
	if token {
		authHeader = "Bearer " + cfg.Token
	} else {
		authHeader = "Basic " + base64.StdEncoding.EncodeToString([]byte(cfg.Username+":"+cfg.Password))
	}
	rc, err := restclient.New(restclient.Config{
		Cloud: CloudName, BaseURL: cfg.BaseURL, DefaultBaseURL: DefaultBaseURL, Tuning: cfg.Tuning, Logger: cfg.Logger,
		UserAgent: cfg.UserAgent, Authorize: restclient.Authorization(authHeader),
	})
	if err != nil {
		return nil, err
	}
	return &Client{rc: rc}, nil
}

// REST exposes the underlying restclient (its shared rate limiter, for tests).
func (c *Client) REST() *restclient.Client { return c.rc }

func (c *Client) get(ctx context.Context, op, path string, q url.Values, out any) error {
	return c.call(ctx, op, restclient.Request{Method: http.MethodGet, Path: path, Query: q}, out)
}

// call sends one request through the shared client (its timeout, rate limit, and retries of 429, 408
// and 5xx unless the request is NotIdempotent) and decodes a 2xx JSON answer into out. Every error,
// an answer that does not decode included, comes back classified (see classify).
func (c *Client) call(ctx context.Context, op string, r restclient.Request, out any) error {
	return classify(op, c.rc.DoJSON(ctx, r, out))
}

// decode sends one request (see call) and returns its decoded answer.
func decode[T any](ctx context.Context, c *Client, op string, r restclient.Request) (*T, error) {
	var out T
	if err := c.call(ctx, op, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// server sends one request that UpCloud answers with a server's details, and returns the server.
func (c *Client) server(ctx context.Context, op string, r restclient.Request) (*Server, error) {
	out, err := decode[ServerDetails](ctx, c, op, r)
	if err != nil {
		return nil, err
	}
	return &out.Server, nil
}

// ListZones returns the zones (GET /zone).
func (c *Client) ListZones(ctx context.Context) ([]Zone, error) {
	var out ZoneList
	if err := c.get(ctx, "listing zones", "/zone", nil, &out); err != nil {
		return nil, err
	}
	return out.Zones.Zone, nil
}

// ListPlans returns every plan, GPU plans included (GET /plan).
func (c *Client) ListPlans(ctx context.Context) ([]Plan, error) {
	var out PlanList
	if err := c.get(ctx, "listing plans", "/plan", nil, &out); err != nil {
		return nil, err
	}
	return out.Plans.Plan, nil
}

// ListPrices returns the hourly prices per zone, in euro cents (GET /price).
func (c *Client) ListPrices(ctx context.Context) (*PriceList, error) {
	return decode[PriceList](ctx, c, "listing prices", restclient.Request{Method: http.MethodGet, Path: "/price"})
}

// DeviceAvailability returns the GPU stock per zone and plan (GET /device/availability).
func (c *Client) DeviceAvailability(ctx context.Context) (DeviceAvailability, error) {
	out := DeviceAvailability{}
	if err := c.get(ctx, "reading GPU availability", "/device/availability", nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// GetAccount returns the account and its resource limits (GET /account).
func (c *Client) GetAccount(ctx context.Context) (*Account, error) {
	return decode[Account](ctx, c, "reading account", restclient.Request{Method: http.MethodGet, Path: "/account"})
}

// ListTemplates returns the OS templates the account can clone, public and private (GET /storage/template).
func (c *Client) ListTemplates(ctx context.Context) ([]Storage, error) {
	var out StorageList
	if err := c.get(ctx, "listing templates", "/storage/template", nil, &out); err != nil {
		return nil, err
	}
	return out.Storages.Storage, nil
}

// CreateServerRequest sends POST /server. It is never retried except on 429: a lost answer to a create may
// hide a server that exists, so the caller must look (by name) before it tries again. An error code
// of the *_NOT_FOUND kind (a missing template) is ErrInvalid here.
func (c *Client) CreateServerRequest(ctx context.Context, req CreateServer) (*Server, error) {
	body := struct {
		Server CreateServer `json:"server"`
	}{req}
	out, err := create(ctx, c, "creating server", "/server", "server", body, func(d *ServerDetails) string { return d.Server.UUID })
	if cloudprovider.IsNotFound(err) {
		// A create cannot miss the server it makes: a *_NOT_FOUND names something the request refers to
		// (the template's STORAGE_NOT_FOUND, a network), so the request is invalid.
		return nil, cloudprovider.NewError(cloudprovider.ErrInvalid, CloudName, "creating server", errors.Unwrap(err))
	}
	if err != nil {
		return nil, err
	}
	return &out.Server, nil
}

// create posts body to path, never retried but on 429, and returns the decoded answer (a W), which must
// name the new thing's uuid (uuid reads it; what names the thing).
func create[W any](ctx context.Context, c *Client, op, path, what string, body any, uuid func(*W) string) (*W, error) {
	out, err := decode[W](ctx, c, op, restclient.Request{Method: http.MethodPost, Path: path, Body: body, NotIdempotent: true})
	if err != nil {
		return nil, err
	}
	if uuid(out) == "" {
		return nil, classify(op, errors.New("the answer carries no "+what+" uuid"))
	}
	return out, nil
}

// GetServer returns a server's details (GET /server/{uuid}); a missing server is an ErrNotFound error.
func (c *Client) GetServer(ctx context.Context, uuid string) (*Server, error) {
	if uuid == "" {
		return nil, classify("reading server", errors.New("empty server uuid"))
	}
	return c.server(ctx, "reading server", restclient.Request{Method: http.MethodGet, Path: "/server/" + url.PathEscape(uuid)})
}

// ModifyServer changes a server's attributes (PUT /server/{uuid}) and returns its details; UpCloud
// answers 202. Labels given replace the whole list. It is idempotent, so it is retried like a read.
func (c *Client) ModifyServer(ctx context.Context, uuid string, req ModifyServer) (*Server, error) {
	if uuid == "" {
		return nil, classify("modifying server", errors.New("empty server uuid"))
	}
	body := struct {
		Server ModifyServer `json:"server"`
	}{req}
	return c.server(ctx, "modifying server", restclient.Request{Method: http.MethodPut, Path: "/server/" + url.PathEscape(uuid), Body: body})
}

// listPageSize is how many servers ListServers asks for per page (the SDK's maximum, 100).
var listPageSize = 100

// maxListPages bounds how many pages ListServers reads (a million servers at 100 a page).
const maxListPages = 10000

// ListServers returns every server of the account (summaries without addresses), each once. labels are
// optional label filters ("key" or "key=value", all must match), sent as repeated "label" parameters
// to GET /server/ as UpCloud's SDK sends them (the recorded server.list-label-filter.200.json).
//
// It asks for limit/offset pages, but UpCloud's SDK never pages and UpCloud's documentation names no
// such parameters, so a page that repeats the last one (the same first server) or brings no server
// not seen yet ends the listing: a page longer than the limit was the whole list (the API ignores
// paging), and a full one is followed by one request without limit and offset, as the SDK lists. An
// API that ignores paging costs at most two requests more, never a loop.
func (c *Client) ListServers(ctx context.Context, labels ...string) ([]Server, error) {
	path := "/server"
	if len(labels) > 0 {
		path = "/server/"
	}
	var all []Server
	seen := map[string]bool{}
	add := func(list []Server) (fresh int) {
		for _, s := range list {
			if s.UUID == "" || !seen[s.UUID] {
				seen[s.UUID] = true
				all = append(all, s)
				fresh++
			}
		}
		return fresh
	}
	query := func(paged bool, offset int) url.Values {
		q := url.Values{}
		if paged {
			q.Set("limit", strconv.Itoa(listPageSize))
			q.Set("offset", strconv.Itoa(offset))
		}
		for _, l := range labels {
			q.Add("label", l)
		}
		return q
	}
	firstOfLast := ""
	for page := 0; ; page++ {
		if page >= maxListPages {
			return nil, classify("listing servers", fmt.Errorf("more than %d pages of servers: giving up paging", maxListPages))
		}
		var out ServerList
		if err := c.get(ctx, "listing servers", path, query(true, page*listPageSize), &out); err != nil {
			return nil, err
		}
		list := out.Servers.Server
		repeated := page > 0 && len(list) > 0 && list[0].UUID == firstOfLast
		if !repeated && add(list) > 0 {
			if len(list) < listPageSize {
				return all, nil
			}
			firstOfLast = list[0].UUID
			continue
		}
		if len(list) < listPageSize || len(list) > listPageSize {
			// An empty or short page ends the list; one longer than the limit held every server.
			return all, nil
		}
		// A full page again: the API ignores offset and perhaps honours limit. Ask as the SDK does.
		var whole ServerList
		if err := c.get(ctx, "listing servers", path, query(false, 0), &whole); err != nil {
			return nil, err
		}
		add(whole.Servers.Server)
		return all, nil
	}
}

// StopServer asks for a stop (POST /server/{uuid}/stop). The answer carries the server as it was: its
// state usually still says "started"; poll GetServer until "stopped". It is retried like a read: a
// second stop of a stopping server answers it again, or SERVER_STATE_ILLEGAL once it is stopped.
func (c *Client) StopServer(ctx context.Context, uuid, stopType string, timeout time.Duration) (*Server, error) {
	var body StopServer
	body.StopServer.StopType = stopType
	if timeout > 0 {
		body.StopServer.Timeout = strconv.Itoa(int(timeout / time.Second))
	}
	return c.server(ctx, "stopping server", restclient.Request{Method: http.MethodPost, Path: "/server/" + url.PathEscape(uuid) + "/stop", Body: body})
}

// StartServer starts a stopped server (POST /server/{uuid}/start). It is retried like a read: a start
// of a server that already started is refused with SERVER_STATE_ILLEGAL and changes nothing.
func (c *Client) StartServer(ctx context.Context, uuid string) (*Server, error) {
	body := map[string]any{"server": map[string]any{}}
	return c.server(ctx, "starting server", restclient.Request{Method: http.MethodPost, Path: "/server/" + url.PathEscape(uuid) + "/start", Body: body})
}

// DeleteServer deletes a stopped server and its disks (DELETE /server/{uuid}/?storages=1, with the
// trailing slash the SDK sends). A started server is refused with SERVER_STATE_ILLEGAL. It is retried
// like a read: a delete repeated after one that worked answers SERVER_NOT_FOUND (ErrNotFound).
func (c *Client) DeleteServer(ctx context.Context, uuid string) error {
	q := url.Values{}
	q.Set("storages", "1")
	return c.call(ctx, "deleting server", restclient.Request{Method: http.MethodDelete, Path: "/server/" + url.PathEscape(uuid) + "/", Query: q}, nil)
}
