// Package primeintellect is hydra's backend for the Prime Intellect compute API: a typed REST client
// for the availability, pods, disks and SSH key endpoints, and the InstanceManagerBackend (with its
// volumes, disks.go) built on it.
//
// Prime is a young marketplace API that changes fast, so the client is defensive: it reads both the
// paginated and the legacy availability forms, re-reads an empty availability answer before
// believing it, tolerates strings for numbers and lists for strings, and classifies errors by what
// their body says (a list of validation errors, a code, Prime's wording) and by the HTTP status only
// when the body says none of these.
package primeintellect

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/wait"
)

// CloudName is the backend's name in pools.yml and api_names.
const CloudName = "primeintellect"

// DefaultBaseURL is the public API root; every path starts with /api/v1.
const DefaultBaseURL = "https://api.primeintellect.ai"

// ClientConfig configures the REST client.
type ClientConfig struct {
	// APIKey is sent as a Bearer token. Never logged.
	APIKey string
	// BaseURL defaults to DefaultBaseURL. Paths (/api/v1/...) are appended to it.
	BaseURL string
	// Tuning sets timeouts, the rate limit, retries and the transport (restclient defaults when zero).
	restclient.Tuning
	// PageSize is the availability page size (default and maximum 100).
	PageSize int
	// EmptyRetries is how many times an empty availability answer is asked again before it is believed
	// (default 3; negative: never). EmptyRetryWait is the first wait, doubled each time (default 1s).
	EmptyRetries   int
	EmptyRetryWait time.Duration
	// Logger receives debug logs (default: none).
	Logger hclog.Logger
}

// Client talks to the Prime Intellect compute API.
type Client struct {
	cfg ClientConfig
	rc  *restclient.Client
	log hclog.Logger
}

// NewClient builds a client.
func NewClient(cfg ClientConfig) (*Client, error) {
	if cfg.PageSize <= 0 || cfg.PageSize > 100 {
		cfg.PageSize = 100
	}
	if cfg.EmptyRetries == 0 {
		cfg.EmptyRetries = 3
	} else if cfg.EmptyRetries < 0 {
		cfg.EmptyRetries = 0
	}
	if cfg.EmptyRetryWait <= 0 {
		cfg.EmptyRetryWait = time.Second
	}
	rc, err := restclient.New(restclient.Config{
		Cloud:          CloudName,
		BaseURL:        cfg.BaseURL,
		DefaultBaseURL: DefaultBaseURL,
		Tuning:         cfg.Tuning,
		Logger:         cfg.Logger,
		Authorize:      restclient.Bearer(cfg.APIKey, cloudprovider.Errorf(cloudprovider.ErrAuth, CloudName, "", "no API key configured (set api_key or PRIME_API_KEY)")),
	})
	if err != nil {
		return nil, err
	}
	return &Client{cfg: cfg, rc: rc, log: rc.Log()}, nil
}

// REST exposes the underlying restclient (tests inspect its rate limiter).
func (c *Client) REST() *restclient.Client { return c.rc }

func (c *Client) doJSON(ctx context.Context, op string, r restclient.Request, out any) error {
	return c.rc.CallJSON(ctx, op, r, out, classify)
}

// call does one JSON request and returns its decoded answer.
func call[T any](ctx context.Context, c *Client, op string, r restclient.Request) (T, error) {
	var out T
	err := c.doJSON(ctx, op, r, &out)
	return out, err
}

// AvailabilityFilter narrows an availability query. Empty fields do not filter. The API may ignore a
// parameter, so the client applies the same filter to what comes back.
type AvailabilityFilter struct {
	GPUType    string
	GPUCount   int
	DataCenter string
	Socket     string
	Security   string
	// Disks keeps only the GPUs co-located with these disks (the repeated disks parameter); the client
	// cannot check it on what comes back, and the legacy form ignores it.
	Disks []string
}

func (f AvailabilityFilter) query() url.Values {
	q := restclient.Query(f.countQuery(), "data_center_id", f.DataCenter, "socket", f.Socket, "security", f.Security)
	for _, d := range f.Disks {
		q.Add("disks", d)
	}
	return q
}

// countQuery holds the parameters the legacy endpoint takes too: gpu_type and gpu_count.
func (f AvailabilityFilter) countQuery() url.Values {
	q := restclient.Query(nil, "gpu_type", f.GPUType)
	if f.GPUCount > 0 {
		q.Set("gpu_count", strconv.Itoa(f.GPUCount))
	}
	return q
}

func (f AvailabilityFilter) match(a GPUAvailability) bool {
	return (f.GPUType == "" || strings.EqualFold(f.GPUType, a.GPUType)) &&
		(f.GPUCount == 0 || f.GPUCount == a.GPUCount.Int()) &&
		(f.DataCenter == "" || strings.EqualFold(f.DataCenter, a.DataCenter)) &&
		(f.Socket == "" || strings.EqualFold(f.Socket, a.Socket)) &&
		(f.Security == "" || f.Security == a.Security)
}

// maxPages bounds pagination so a server that never stops cannot loop the client forever.
const maxPages = 200

const opAvailability = "listing availability"

// Availability returns every offer matching f, reading every page. An empty answer is asked again
// (EmptyRetries times, with backoff) before it is believed: a flaky replica sometimes answers
// 200 {items:[], totalCount:0}. When /availability/gpus does not exist (404), the legacy keyed form at
// /availability/ is read instead.
func (c *Client) Availability(ctx context.Context, f AvailabilityFilter) ([]GPUAvailability, error) {
	pause := c.cfg.EmptyRetryWait
	for attempt := 0; ; attempt++ {
		items, err := c.availabilityOnce(ctx, f)
		if err != nil || len(items) > 0 || attempt >= c.cfg.EmptyRetries {
			return items, err
		}
		c.log.Debug("availability answered empty; asking again", "attempt", attempt+1, "wait", pause)
		if err := wait.Sleep(ctx, pause); err != nil {
			return nil, cloudprovider.NewError(cloudprovider.ErrOther, CloudName, opAvailability, err)
		}
		pause *= 2
	}
}

func (c *Client) availabilityOnce(ctx context.Context, f AvailabilityFilter) ([]GPUAvailability, error) {
	var all []GPUAvailability
	seen := map[string]bool{}
	for page := 1; ; page++ {
		if page > maxPages {
			return nil, cloudprovider.Errorf(cloudprovider.ErrOther, CloudName, opAvailability, "more than %d pages of availability; giving up", maxPages)
		}
		q := f.query()
		q.Set("page", strconv.Itoa(page))
		q.Set("page_size", strconv.Itoa(c.cfg.PageSize))
		resp, err := c.rc.Do(ctx, restclient.Request{Method: http.MethodGet, Path: "/api/v1/availability/gpus", Query: q})
		if err != nil {
			if page == 1 && statusOf(err) == http.StatusNotFound {
				c.log.Debug("no /availability/gpus; reading the legacy /availability/")
				return c.legacyAvailability(ctx, f)
			}
			return nil, classify(opAvailability, err)
		}
		items, total, paginated, err := parseAvailability(resp.Body, c.log)
		if err != nil {
			return nil, cloudprovider.NewError(cloudprovider.ErrOther, CloudName, opAvailability, err)
		}
		fresh := 0
		for _, it := range items {
			k := itemKey(it)
			if seen[k] {
				continue
			}
			seen[k] = true
			fresh++
			if f.match(it) {
				all = append(all, it)
			}
		}
		switch {
		case !paginated: // the legacy keyed form holds everything at once
			return all, nil
		case len(items) == 0 || fresh == 0: // an empty or repeated page: nothing more to read
			return all, nil
		case total >= 0 && len(seen) >= total:
			return all, nil
		case total < 0 && len(items) < c.cfg.PageSize:
			return all, nil
		}
	}
}

func (c *Client) legacyAvailability(ctx context.Context, f AvailabilityFilter) ([]GPUAvailability, error) {
	resp, err := c.rc.Do(ctx, restclient.Request{Method: http.MethodGet, Path: "/api/v1/availability/", Query: f.countQuery()})
	if err != nil {
		return nil, classify(opAvailability, err)
	}
	items, _, _, err := parseAvailability(resp.Body, c.log)
	if err != nil {
		return nil, cloudprovider.NewError(cloudprovider.ErrOther, CloudName, opAvailability, err)
	}
	var out []GPUAvailability
	for _, it := range items {
		if f.match(it) {
			out = append(out, it)
		}
	}
	return out, nil
}

// itemKey identifies an offer across pages (pages may shift while they are read).
func itemKey(a GPUAvailability) string {
	return strings.Join([]string{a.Provider, a.CloudID, a.GPUType, a.Socket, strconv.Itoa(a.GPUCount.Int()),
		a.DataCenter, a.Region, a.Country, a.Security, strconv.FormatBool(a.Spot())}, "|")
}

// parseAvailability reads any availability form: {items, totalCount} (paginated; total is -1 when
// totalCount is missing), the legacy object keyed by GPU type, or a bare list. Items that do not decode
// are skipped with a warning rather than failing the whole answer.
func parseAvailability(body []byte, log hclog.Logger) (items []GPUAvailability, total int, paginated bool, err error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || string(body) == "null" {
		return nil, 0, true, nil
	}
	decodeItems := func(raws []json.RawMessage, gpuType string) {
		for _, r := range raws {
			if string(bytes.TrimSpace(r)) == "null" {
				continue
			}
			var it GPUAvailability
			if err := json.Unmarshal(r, &it); err != nil {
				if log != nil {
					log.Warn("skipping an availability item that does not decode", "error", err)
				}
				continue
			}
			if it.GPUType == "" {
				it.GPUType = gpuType
			}
			items = append(items, it)
		}
	}
	switch body[0] {
	case '[':
		var raws []json.RawMessage
		if err := json.Unmarshal(body, &raws); err != nil {
			return nil, 0, false, fmt.Errorf("availability: %w", err)
		}
		decodeItems(raws, "")
		return items, len(items), false, nil
	case '{':
	default:
		return nil, 0, false, fmt.Errorf("availability: unexpected answer %.80q", body)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		return nil, 0, false, fmt.Errorf("availability: %w", err)
	}
	if rawItems, ok := obj["items"]; ok {
		var raws []json.RawMessage
		if s := string(bytes.TrimSpace(rawItems)); s != "null" {
			if err := json.Unmarshal(rawItems, &raws); err != nil {
				return nil, 0, true, fmt.Errorf("availability items: %w", err)
			}
		}
		decodeItems(raws, "")
		total = -1
		if rt, ok := obj["totalCount"]; ok {
			var n Number
			if json.Unmarshal(rt, &n) == nil && n.Set {
				total = n.Int()
			}
		}
		return items, total, true, nil
	}
	// Legacy: {"H100_80GB": [items...], ...}. Keys whose value is not a list are ignored.
	for key, raw := range obj {
		var raws []json.RawMessage
		if json.Unmarshal(raw, &raws) != nil {
			continue
		}
		decodeItems(raws, key)
	}
	return items, len(items), false, nil
}

// GPUSummary returns GET /api/v1/availability/gpu-summary: gpuType → count → region (or "cheapest")
// → prices. Used to cross-check an empty availability answer.
func (c *Client) GPUSummary(ctx context.Context) (map[string]map[string]map[string]json.RawMessage, error) {
	return call[map[string]map[string]map[string]json.RawMessage](ctx, c, "reading the GPU summary", restclient.Request{Method: http.MethodGet, Path: "/api/v1/availability/gpu-summary"})
}

// Disks returns GET /api/v1/availability/disks, reading every page: where disks are sold, and at what
// price per GB and hour (spec.pricePerUnit). The volume calls read it (disks.go); a pod's own disk is
// ordered with its offer (diskSize).
func (c *Client) Disks(ctx context.Context) ([]DiskOffer, error) {
	key := func(d DiskOffer) string {
		return strings.Join([]string{d.Provider, d.CloudID, d.DataCenter, d.Country, d.Region, d.Security}, "|")
	}
	return allPages(c.cfg.PageSize, key, func(page int) ([]DiskOffer, Number, error) {
		var out struct {
			Items      []DiskOffer `json:"items"`
			TotalCount Number      `json:"totalCount"`
		}
		q := url.Values{"page": {strconv.Itoa(page + 1)}, "page_size": {strconv.Itoa(c.cfg.PageSize)}}
		err := c.doJSON(ctx, "listing disk availability", restclient.Request{Method: http.MethodGet, Path: "/api/v1/availability/disks", Query: q}, &out)
		return out.Items, out.TotalCount, err
	})
}

// CreatePod creates a pod. It is not retried on 5xx or timeouts (a lost answer may hide a pod): the
// caller looks for the pod by name before it tries again.
func (c *Client) CreatePod(ctx context.Context, req CreatePodRequest) (Pod, error) {
	return call[Pod](ctx, c, "creating pod", restclient.Request{Method: http.MethodPost, Path: "/api/v1/pods/", Body: req, NotIdempotent: true})
}

// Pod returns one pod; a missing pod is an ErrNotFound error.
func (c *Client) Pod(ctx context.Context, id string) (Pod, error) {
	return call[Pod](ctx, c, "reading pod", restclient.Request{Method: http.MethodGet, Path: "/api/v1/pods/" + url.PathEscape(id)})
}

// Pods returns every pod of the account, reading every page.
func (c *Client) Pods(ctx context.Context) ([]Pod, error) {
	return listAll(ctx, c, "listing pods", "/api/v1/pods/", func(p Pod) string { return p.ID })
}

// listPageSize is the limit of an offset-paginated list (pods, disks).
const listPageSize = 100

// listAll reads every page of an offset-paginated list ({data, total_count}) at path.
func listAll[T any](ctx context.Context, c *Client, op, path string, id func(T) string) ([]T, error) {
	return allPages(listPageSize, id, func(page int) ([]T, Number, error) {
		var pl struct {
			Data       []T    `json:"data"`
			TotalCount Number `json:"total_count"`
		}
		q := url.Values{"offset": {strconv.Itoa(page * listPageSize)}, "limit": {strconv.Itoa(listPageSize)}}
		err := c.doJSON(ctx, op, restclient.Request{Method: http.MethodGet, Path: path, Query: q}, &pl)
		return pl.Data, pl.TotalCount, err
	})
}

// allPages reads pages 0, 1, ... (at most maxPages) with read, keeping each item once (key identifies
// it across pages), until a page is shorter than size, holds nothing new, or the total it states is read.
func allPages[T any](size int, key func(T) string, read func(page int) ([]T, Number, error)) ([]T, error) {
	var all []T
	seen := map[string]bool{}
	for page := 0; page < maxPages; page++ {
		items, total, err := read(page)
		if err != nil {
			return nil, err
		}
		fresh := 0
		for _, it := range items {
			if k := key(it); !seen[k] {
				seen[k] = true
				fresh++
				all = append(all, it)
			}
		}
		if len(items) < size || fresh == 0 || (total.Set && len(all) >= total.Int()) {
			break
		}
	}
	return all, nil
}

// PodStatuses returns GET /api/v1/pods/status for the given pods (pod_ids repeated).
func (c *Client) PodStatuses(ctx context.Context, ids ...string) ([]PodStatus, error) {
	var out struct {
		Data []PodStatus `json:"data"`
	}
	q := url.Values{"pod_ids": ids}
	err := c.doJSON(ctx, "reading pod status", restclient.Request{Method: http.MethodGet, Path: "/api/v1/pods/status", Query: q}, &out)
	return out.Data, err
}

// DeletePod terminates a pod and returns the status the API answers with.
func (c *Client) DeletePod(ctx context.Context, id string) (string, error) {
	return c.deleteStatus(ctx, "deleting pod", "/api/v1/pods/"+url.PathEscape(id))
}

// deleteStatus deletes what is at path and returns the status the API answers with.
func (c *Client) deleteStatus(ctx context.Context, op, path string) (string, error) {
	out, err := call[struct {
		Status string `json:"status"`
	}](ctx, c, op, restclient.Request{Method: http.MethodDelete, Path: path})
	return out.Status, err
}

// SSHKeys lists the account's SSH keys.
func (c *Client) SSHKeys(ctx context.Context) ([]SSHKey, error) {
	var out struct {
		Data []SSHKey `json:"data"`
	}
	q := url.Values{"offset": {"0"}, "limit": {"100"}}
	err := c.doJSON(ctx, "listing SSH keys", restclient.Request{Method: http.MethodGet, Path: "/api/v1/ssh_keys/", Query: q}, &out)
	return out.Data, err
}

// CreateSSHKey registers a public key on the account.
func (c *Client) CreateSSHKey(ctx context.Context, name, publicKey string) (SSHKey, error) {
	body := map[string]string{"name": name, "publicKey": publicKey}
	return call[SSHKey](ctx, c, "adding SSH key", restclient.Request{Method: http.MethodPost, Path: "/api/v1/ssh_keys/", Body: body, NotIdempotent: true})
}
