// Package lambda is hydra's backend for Lambda Cloud (Lambda's on-demand GPU cloud): a typed REST client
// for the part of the Lambda Cloud API v1 hydra uses (instance types, instances, launch, terminate, SSH
// keys) and the InstanceManagerBackend built on it.
//
// The API facts come from Lambda's public OpenAPI document (v1.4.0 as generated into public clients, and
// the newer document's models), SkyPilot's and dstack's Lambda adaptors, and Lambda's documentation.
// What could not be confirmed is marked "not confirmed" where the code depends on it.
package lambda

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
)

// DefaultBaseURL is Lambda's public API root. Lambda's newer documentation and OpenAPI document use
// cloud.lambda.ai; the older cloud.lambdalabs.com/api/v1 is declared as well and reported to redirect
// (301) to the new host, which would turn a POST into a GET, so hydra uses the new host.
const DefaultBaseURL = "https://cloud.lambda.ai/api/v1"

// DefaultTuning follows Lambda's documented limit: "Requests to the Cloud API are generally limited to
// 1 request per second" (the launch endpoint has its own, slower limit; see Config.LaunchInterval).
var DefaultTuning = restclient.Tuning{RequestsPerSecond: 1, Burst: 2}

// ClientConfig configures a Client.
type ClientConfig struct {
	// BaseURL is the API root including /api/v1 (default DefaultBaseURL).
	BaseURL string
	// APIKey is the Cloud API key, sent as a bearer token and never logged.
	APIKey string
	// Tuning sets timeouts, the rate limit, retries and the transport (zero fields: DefaultTuning, then
	// the restclient defaults).
	restclient.Tuning
	// Logger receives request logs (never the key).
	Logger hclog.Logger
}

// Client talks to the Lambda Cloud API. It is safe for concurrent use; all calls share one rate limiter.
type Client struct {
	rc *restclient.Client
}

// NewClient builds a client. It does not contact Lambda until the first call.
func NewClient(cfg ClientConfig) (*Client, error) {
	if cfg.APIKey == "" {
		return nil, errors.New("lambda: api_key is required")
	}
	rc, err := restclient.New(restclient.Config{
		Cloud: CloudName, BaseURL: cfg.BaseURL, DefaultBaseURL: DefaultBaseURL, Tuning: cfg.Tuning, DefaultTuning: DefaultTuning,
		Logger: cfg.Logger, Authorize: restclient.Bearer(cfg.APIKey, nil),
	})
	if err != nil {
		return nil, err
	}
	return &Client{rc: rc}, nil
}

// REST exposes the underlying restclient (its shared rate limiter, for tests).
func (c *Client) REST() *restclient.Client { return c.rc }

// do sends one call and returns the "data" of its answer.
func do[T any](ctx context.Context, c *Client, op string, r restclient.Request) (T, error) {
	var env envelope[T]
	resp, err := c.rc.Do(ctx, r)
	if err == nil {
		err = restclient.Decode(r, resp.Body, &env)
	}
	if err != nil {
		var zero T
		return zero, classify(op, err)
	}
	return env.Data, nil
}

// send sends one call whose answer hydra does not read.
func send(ctx context.Context, c *Client, op string, r restclient.Request) error {
	_, err := c.rc.Do(ctx, r)
	return classify(op, err)
}

// InstanceTypes lists every instance type Lambda offers with its price and the regions that have
// capacity for it now (GET /instance-types), keyed by the type's name.
func (c *Client) InstanceTypes(ctx context.Context) (map[string]InstanceTypeItem, error) {
	return do[map[string]InstanceTypeItem](ctx, c, "listing instance types", restclient.Request{Method: http.MethodGet, Path: "/instance-types"})
}

// Instances lists the account's instances (GET /instances). The API has no paging (not confirmed for
// very large accounts: the OpenAPI document declares no paging parameters).
func (c *Client) Instances(ctx context.Context) ([]Instance, error) {
	return do[[]Instance](ctx, c, "listing instances", restclient.Request{Method: http.MethodGet, Path: "/instances"})
}

// Instance reads one instance (GET /instances/{id}); an unknown id is 404 global/object-does-not-exist.
func (c *Client) Instance(ctx context.Context, id string) (Instance, error) {
	return do[Instance](ctx, c, "reading instance", restclient.Request{Method: http.MethodGet, Path: "/instances/" + url.PathEscape(id)})
}

// Launch starts instances (POST /instance-operations/launch) and returns their ids. It is retried on 429
// only: after a 5xx or a lost answer the caller must look for the instance (by name) before trying again.
func (c *Client) Launch(ctx context.Context, req LaunchRequest) ([]string, error) {
	if req.SSHKeyNames == nil {
		req.SSHKeyNames = []string{}
	}
	if req.FileSystemNames == nil {
		req.FileSystemNames = []string{}
	}
	out, err := do[LaunchResult](ctx, c, "launching instance", restclient.Request{Method: http.MethodPost, Path: "/instance-operations/launch",
		Body: req, NotIdempotent: true})
	return out.InstanceIDs, err
}

// Terminate terminates instances (POST /instance-operations/terminate) and returns those Lambda says it
// terminated. Terminating is idempotent at hydra's level, so the call is retried like a read.
func (c *Client) Terminate(ctx context.Context, ids ...string) ([]Instance, error) {
	out, err := do[TerminateResult](ctx, c, "terminating instance", restclient.Request{Method: http.MethodPost, Path: "/instance-operations/terminate",
		Body: TerminateRequest{InstanceIDs: ids}})
	return out.TerminatedInstances, err
}

// SSHKeys lists the account's SSH keys (GET /ssh-keys).
func (c *Client) SSHKeys(ctx context.Context) ([]SSHKey, error) {
	return do[[]SSHKey](ctx, c, "listing SSH keys", restclient.Request{Method: http.MethodGet, Path: "/ssh-keys"})
}

// AddSSHKey registers a public key under name (POST /ssh-keys); with publicKey "" Lambda generates a key
// pair and answers its private key too. It is not retried on 5xx: a lost answer may hide a stored key.
func (c *Client) AddSSHKey(ctx context.Context, name, publicKey string) (SSHKey, error) {
	return do[SSHKey](ctx, c, "adding SSH key", restclient.Request{Method: http.MethodPost, Path: "/ssh-keys",
		Body: AddSSHKeyRequest{Name: name, PublicKey: strings.TrimSpace(publicKey)}, NotIdempotent: true})
}

// DeleteSSHKey removes an SSH key (DELETE /ssh-keys/{id}).
func (c *Client) DeleteSSHKey(ctx context.Context, id string) error {
	return send(ctx, c, "deleting SSH key", restclient.Request{Method: http.MethodDelete, Path: "/ssh-keys/" + url.PathEscape(id)})
}
