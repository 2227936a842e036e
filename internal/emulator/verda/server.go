// Package verda is a local emulator of the Verda (formerly DataCrunch) Cloud API v1, for hydra's tests
// and for users' CI (the provider's `emulator_dir`). It answers like the real API, as its public
// documentation, its SDKs and recorded traffic show:
// OAuth2 client credentials with expiring, refreshable tokens; decimal-string prices; plain-text ids
// from POST /instances and POST /ssh-keys; GET /ssh-keys/{id} answering an array; instances moving
// ordered -> provisioning -> running, with ip null until running; spot and on-demand availability
// asked separately; 503 "Not enough resources..." on create; deletion through PUT /instances with
// forbidden_action for discontinued and provisioning instances; {code, message} error bodies; instant
// clusters placed whole or refused with 503 (clusters.go).
//
// An unknown instance id is answered 400 {"code":"invalid_request","message":"Invalid instance id"}
// (not 404), as the real API answers unknown ids. Instances keep the description and tags they were
// created with and answer them back.
//
// Faults use the shared vocabulary (simulation.Faults); the Server is a simulation.Admin and serves
// emukit.AdminHandler under emukit.AdminPath ("/_emulator/") next to the API.
//
// State is in memory, or in a JSON file under Options.StateDir shared (under flock) by every emulator
// process using that directory. Statuses are computed from timestamps stored in the state, so they
// progress across process restarts.
package verda

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/verda/verdaapi"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// BasePath is the path prefix of every endpoint; a client's base URL is the server's URL + BasePath.
const BasePath = "/v1"

// Credentials the emulator accepts by default.
const (
	DefaultClientID     = "hydra-emulator-client"
	DefaultClientSecret = "hydra-emulator-secret"
)

// eurPerUSD converts the catalog when a USD account asks for ?currency=eur.
const eurPerUSD = 1 / 1.08

// Options configure an emulator.
type Options struct {
	// Options are the options every emulator has (state directory, boot duration, clock).
	// Options.BootDuration is how long a new instance takes to run: ordered for its first quarter, then
	// provisioning, then running with an ip (default 30s).
	simulation.Options
	// ClientID and ClientSecret are the only credentials accepted (defaults DefaultClientID and
	// DefaultClientSecret).
	ClientID     string
	ClientSecret string
	// TokenLifetime is expires_in of access tokens (default 1h, as Verda).
	TokenLifetime time.Duration
	// RefreshTokenLifetime bounds refresh tokens (default 24h). Refresh tokens are single use.
	RefreshTokenLifetime time.Duration
	// Catalog is the instance types with prices and capacity (default DefaultCatalog()).
	Catalog []CatalogEntry
	// ClusterTypes are the instant-cluster types with prices and stock (default DefaultClusterTypes()).
	ClusterTypes []ClusterTypeEntry
	// ClusterPrivateNet is the first two octets of cluster nodes' private addresses,
	// <ClusterPrivateNet>.<cluster>.<10+node> (default "10.1"; "127.102" gives loopback addresses a
	// local sshd can listen on).
	ClusterPrivateNet string
	// ClusterIDAsText answers POST /clusters with the id as plain text, as POST /instances answers,
	// instead of the {"id": ...} both SDKs' tests show, for clients that must take either.
	ClusterIDAsText bool
	// Locations are the datacenters (default DefaultLocations()).
	Locations []Location
	// Currency is the account currency the catalog prices are in: "usd" (default; ?currency=eur is
	// then honoured by converting) or "eur" (every answer is in EUR whatever is asked, like some
	// European accounts).
	Currency string
	// InstanceIP, when set, is the ip every running instance and every cluster's login node reports
	// (e.g. "127.0.0.1" to reach a local sshd); otherwise each gets its own address in 198.51.100.0/22.
	InstanceIP string
	// TokenFormOnly makes the token endpoint refuse JSON bodies with 400 "grant_type not specified",
	// so clients must fall back to a form-encoded body.
	TokenFormOnly bool
}

// Server is the emulated Verda API, an http.Handler (the API under BasePath, the admin surface under
// emukit.AdminPath).
type Server struct {
	admin   // the shared fault vocabulary and machine counts (admin.go)
	opts    Options
	catalog map[string]CatalogEntry
	store   *emukit.Store[state]
	handler http.Handler
}

// New builds an emulator.
func New(opts Options) *Server {
	opts.ClientID = cmp.Or(opts.ClientID, DefaultClientID)
	opts.ClientSecret = cmp.Or(opts.ClientSecret, DefaultClientSecret)
	opts.TokenLifetime = emukit.Positive(opts.TokenLifetime, time.Hour)
	opts.RefreshTokenLifetime = emukit.Positive(opts.RefreshTokenLifetime, 24*time.Hour)
	opts.Options = opts.WithDefaults(30 * time.Second)
	opts.Catalog = emukit.Seed(opts.Catalog, DefaultCatalog)
	opts.ClusterTypes = emukit.Seed(opts.ClusterTypes, DefaultClusterTypes)
	opts.ClusterPrivateNet = cmp.Or(opts.ClusterPrivateNet, "10.1")
	opts.Locations = emukit.Seed(opts.Locations, DefaultLocations)
	opts.Currency = strings.ToLower(opts.Currency)
	if opts.Currency == "" {
		opts.Currency = "usd"
	}
	s := &Server{opts: opts, catalog: map[string]CatalogEntry{}, store: emukit.NewStore[state](opts.StateDir, "verda-state")}
	for _, c := range opts.Catalog {
		s.catalog[c.InstanceType] = c
	}
	s.admin = newAdmin(s)
	s.handler = emukit.WithAdmin(emukit.LockedAPI{
		BasePath: BasePath,
		NotFound: errReply(http.StatusNotFound, "not_found", "Not found"),
		BadBody:  errReply(http.StatusBadRequest, "invalid_request", "Could not read the request body"),
		Answer:   s.answer,
		StateError: func(err error) reply {
			return errReply(http.StatusInternalServerError, "server_error", "emulator state: "+err.Error())
		},
	}, s)
	return s
}

// Start serves the emulator on addr (e.g. "127.0.0.1:0") and returns the base URL clients use
// (including /v1) and a function that stops it.
func (s *Server) Start(addr string) (baseURL string, stop func(context.Context) error, err error) {
	return emukit.ServeAt(addr, s, BasePath)
}

// reply is one answer, built while the state is locked and written after.
type reply = emukit.Reply

func jsonReply(status int, v any) reply {
	b, err := json.Marshal(v)
	if err != nil {
		return errReply(http.StatusInternalServerError, "server_error", err.Error())
	}
	return reply{Status: status, ContentType: "application/json", Body: b}
}

func errReply(status int, code, msg string) reply {
	b, _ := json.Marshal(map[string]string{"code": code, "message": msg})
	return reply{Status: status, ContentType: "application/json", Body: b}
}

func textReply(status int, text string) reply {
	return reply{Status: status, ContentType: "text/plain; charset=utf-8", Body: []byte(text)}
}

// ServeHTTP answers one API or admin request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// answer answers one API request under the state lock, or a fault in its place.
func (s *Server) answer(r *http.Request, path string, body []byte) (rep reply, latency time.Duration, err error) {
	err = s.update(func(st *state) error {
		latency = time.Duration(st.Faults.Latency)
		st.Requests[r.Method+" "+routeKey(path)]++
		var ok bool
		if rep, ok = fault(st); !ok {
			rep = s.route(st, r, path, body)
		}
		return nil
	})
	return rep, latency, err
}

// routeKey turns a path into its endpoint template for request counting ("/instances/{id}").
func routeKey(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) >= 2 && parts[0] != "oauth2" {
		parts[1] = "{id}"
	}
	return "/" + strings.Join(parts, "/")
}

// fault answers the request with an armed 429 or 5xx, in Verda's error shape, before it is acted on.
func fault(st *state) (reply, bool) {
	return emukit.TakeReply(&st.Faults, http.StatusInternalServerError,
		errReply(http.StatusTooManyRequests, "too_many_requests", "Too many requests, slow down"),
		func(status int) reply { return errReply(status, "server_error", "Something went wrong on our side") })
}

func (s *Server) route(st *state, r *http.Request, path string, body []byte) reply {
	if path == "/oauth2/token" {
		if r.Method != http.MethodPost {
			return errReply(http.StatusMethodNotAllowed, "invalid_request", "Method not allowed")
		}
		return s.token(st, r, body)
	}
	if rep, ok := s.authenticate(st, r); !ok {
		return rep
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	id := ""
	if len(parts) > 1 {
		id, _ = url.PathUnescape(parts[1])
	}
	q := r.URL.Query()
	switch parts[0] {
	case "balance":
		if r.Method == http.MethodGet && len(parts) == 1 {
			return jsonReply(http.StatusOK, map[string]any{"amount": 1000.0, "currency": s.opts.Currency})
		}
	case "locations":
		if r.Method == http.MethodGet && len(parts) == 1 {
			return jsonReply(http.StatusOK, s.opts.Locations)
		}
	case "instance-types":
		if r.Method == http.MethodGet {
			return s.instanceTypes(q, id, len(parts))
		}
	case "instance-availability":
		if r.Method == http.MethodGet {
			return s.availability(st, q, id, len(parts))
		}
	case "images":
		if r.Method == http.MethodGet && len(parts) == 1 {
			return s.images(q)
		}
	case "ssh-keys", "sshkeys":
		return s.sshKeys(st, r.Method, id, len(parts), body)
	case "clusters":
		return s.clusters(st, r, id, len(parts), body)
	case "volumes":
		if rep, ok := s.volumes(st, r, id, len(parts), body); ok { // volumes.go
			return rep
		}
		if r.Method == http.MethodDelete && len(parts) == 2 {
			return s.deleteVolume(st, id)
		}
	case "volume-types":
		if r.Method == http.MethodGet && len(parts) == 1 {
			return s.volumeTypesReply()
		}
	case "cluster-types":
		if r.Method == http.MethodGet {
			return s.clusterTypes(q, len(parts))
		}
	case "cluster-availability":
		if r.Method == http.MethodGet {
			return s.clusterAvailability(st, q, id, len(parts))
		}
	case "instances":
		switch {
		case r.Method == http.MethodGet && len(parts) == 1:
			return s.listInstances(st, q)
		case r.Method == http.MethodGet && len(parts) == 2:
			return s.getInstance(st, id)
		case r.Method == http.MethodPost && len(parts) == 1:
			return s.createInstance(st, body)
		case r.Method == http.MethodPut && len(parts) == 1:
			return s.action(st, body)
		}
	}
	return errReply(http.StatusNotFound, "not_found", "Not found")
}

// ---- auth ----

func newUUID() string {
	b := make([]byte, 16)
	rand.Read(b) //nolint:errcheck
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func (s *Server) newJWT(exp time.Time) string {
	enc := base64.RawURLEncoding
	head := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	payload, _ := json.Marshal(map[string]any{"sub": "emulated-user", "scope": "cloud-api-v1", "exp": exp.Unix(), "jti": simulation.RandomHex(8)})
	return head + "." + enc.EncodeToString(payload) + "." + enc.EncodeToString([]byte(simulation.RandomHex(16)))
}

func (s *Server) token(st *state, r *http.Request, body []byte) reply {
	fields := map[string]string{}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "application/x-www-form-urlencoded" {
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return errReply(http.StatusBadRequest, "invalid_request", "grant_type not specified")
		}
		for k := range form {
			fields[k] = form.Get(k)
		}
	} else {
		if s.opts.TokenFormOnly {
			return errReply(http.StatusBadRequest, "invalid_request", "grant_type not specified")
		}
		var raw map[string]any
		if err := json.Unmarshal(body, &raw); err != nil {
			return errReply(http.StatusBadRequest, "invalid_request", "Request body is not valid json")
		}
		for k, v := range raw {
			if sv, ok := v.(string); ok {
				fields[k] = sv
			}
		}
	}
	now := s.opts.Now()
	for t, exp := range st.AccessTokens {
		if !now.Before(exp) {
			delete(st.AccessTokens, t)
		}
	}
	for t, exp := range st.RefreshTokens {
		if !now.Before(exp) {
			delete(st.RefreshTokens, t)
		}
	}
	switch fields["grant_type"] {
	case "":
		return errReply(http.StatusBadRequest, "invalid_request", "grant_type not specified")
	case "client_credentials":
		if !s.validClient(fields["client_id"], fields["client_secret"]) {
			return errReply(http.StatusUnauthorized, "unauthorized_request", "Invalid client credentials")
		}
	case "refresh_token":
		rt := fields["refresh_token"]
		exp, ok := st.RefreshTokens[rt]
		if rt == "" || !ok || !now.Before(exp) {
			return errReply(http.StatusUnauthorized, "unauthorized_request", "Invalid or expired refresh token")
		}
		delete(st.RefreshTokens, rt) // single use: a new one is issued below
	default:
		return errReply(http.StatusBadRequest, "invalid_request", "unsupported grant type")
	}
	st.Grants[fields["grant_type"]]++
	exp := now.Add(s.opts.TokenLifetime)
	access := s.newJWT(exp)
	refresh := simulation.RandomHex(24)
	st.AccessTokens[access] = exp
	st.RefreshTokens[refresh] = now.Add(s.opts.RefreshTokenLifetime)
	return jsonReply(http.StatusOK, map[string]any{
		"access_token":  access,
		"refresh_token": refresh,
		"scope":         "cloud-api-v1",
		"token_type":    "Bearer",
		"expires_in":    int(s.opts.TokenLifetime / time.Second),
	})
}

func (s *Server) validClient(id, secret string) bool {
	a := subtle.ConstantTimeCompare([]byte(id), []byte(s.opts.ClientID))
	b := subtle.ConstantTimeCompare([]byte(secret), []byte(s.opts.ClientSecret))
	return a&b == 1
}

func (s *Server) authenticate(st *state, r *http.Request) (reply, bool) {
	h := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || tok == "" {
		return errReply(http.StatusUnauthorized, "unauthorized_request", "Missing access token"), false
	}
	exp, known := st.AccessTokens[tok]
	if !known || !s.opts.Now().Before(exp) {
		return errReply(http.StatusUnauthorized, "unauthorized_request", "Invalid or expired access token"), false
	}
	return reply{}, true
}

// ---- catalog ----

func formatPrice(p float64) string {
	s := strconv.FormatFloat(p, 'f', 2, 64)
	if v, _ := strconv.ParseFloat(s, 64); v != p {
		s = strconv.FormatFloat(p, 'f', -1, 64)
	}
	return s
}

// currencyFor says what currency an answer is in and the factor from the account currency.
func (s *Server) currencyFor(asked string) (string, float64) {
	asked = strings.ToLower(asked)
	if s.opts.Currency == "usd" && asked == "eur" {
		return "eur", eurPerUSD
	}
	return s.opts.Currency, 1
}

func (s *Server) typeJSON(c CatalogEntry, currency string, factor float64) map[string]any {
	gpuDesc, memDesc := "", ""
	if c.GPUCount > 0 {
		gpuDesc = fmt.Sprintf("%dx %s", c.GPUCount, c.Name)
		memDesc = fmt.Sprintf("%dGB GPU RAM", c.GPUCount*c.GPUMemoryGB)
	}
	price := func(p float64) string { return formatPrice(math.Round(p*factor*1000) / 1000) }
	var warning any
	if c.Model == "H100" {
		warning = "H100: Use Nvidia driver 535 or higher for best performance"
	}
	var p2p any
	if c.GPUCount > 1 {
		p2p = "50GB/s"
	}
	storage := map[string]any{"description": "dynamic"}
	if c.LocalStorageGB > 0 {
		storage = map[string]any{"description": fmt.Sprintf("%dGB NVME", c.LocalStorageGB), "size_in_gigabytes": c.LocalStorageGB}
	}
	var displayName any
	if c.GPUCount == 0 {
		displayName = "Rome/Milan" // as the recorded catalog names its CPU node's processors; GPU types have none
	}
	os := []string{"ubuntu-22.04", "ubuntu-24.04"}
	if c.LegacyImagesOnly {
		os = []string{"ubuntu-22.04"}
	}
	return map[string]any{
		"id":                    uuidFor(c.InstanceType),
		"instance_type":         c.InstanceType,
		"name":                  c.Name,
		"display_name":          displayName,
		"model":                 c.Model,
		"manufacturer":          c.Manufacturer,
		"description":           "Dedicated Hardware Instance",
		"best_for":              []string{},
		"cpu":                   map[string]any{"description": fmt.Sprintf("%d CPU", c.CPUCores), "number_of_cores": c.CPUCores},
		"gpu":                   map[string]any{"description": gpuDesc, "number_of_gpus": c.GPUCount},
		"gpu_memory":            map[string]any{"description": memDesc, "size_in_gigabytes": c.GPUCount * c.GPUMemoryGB},
		"memory":                map[string]any{"description": fmt.Sprintf("%dGB RAM", c.MemoryGB), "size_in_gigabytes": c.MemoryGB},
		"storage":               storage,
		"price_per_hour":        price(c.PricePerHour),
		"spot_price":            price(c.SpotPrice),
		"dynamic_price":         price(c.PricePerHour),
		"max_dynamic_price":     price(c.PricePerHour * 1.5),
		"serverless_price":      price(c.PricePerHour * 1.2),
		"serverless_spot_price": price(c.SpotPrice * 1.2),
		"currency":              currency,
		"deploy_warning":        warning,
		"p2p":                   p2p,
		"supported_os":          os,
	}
}

// uuidFor is a stable uuid-shaped id for a name.
func uuidFor(name string) string {
	h := sha256.Sum256([]byte(name))
	x := hex.EncodeToString(h[:16])
	return x[:8] + "-" + x[8:12] + "-4" + x[13:16] + "-a" + x[17:20] + "-" + x[20:32]
}

func (s *Server) instanceTypes(q url.Values, name string, nparts int) reply {
	currency, factor := s.currencyFor(q.Get("currency"))
	if nparts == 1 {
		out := []map[string]any{}
		for _, c := range s.opts.Catalog {
			if !c.Hidden {
				out = append(out, s.typeJSON(c, currency, factor))
			}
		}
		return jsonReply(http.StatusOK, out)
	}
	if nparts == 2 {
		c, ok := s.catalog[name]
		if !ok || c.Hidden {
			return errReply(http.StatusNotFound, "not_found", "Invalid instance type")
		}
		return jsonReply(http.StatusOK, s.typeJSON(c, currency, factor))
	}
	return errReply(http.StatusNotFound, "not_found", "Not found")
}

func boolParam(q url.Values, names ...string) bool {
	for _, n := range names {
		if v := q.Get(n); v != "" {
			b, _ := strconv.ParseBool(v)
			return b
		}
	}
	return false
}

func spotParam(q url.Values) bool { return boolParam(q, "is_spot", "isSpot", "isspot") }

func locationParam(q url.Values) string {
	for _, n := range []string{"location_code", "locationCode"} {
		if v := q.Get(n); v != "" {
			return v
		}
	}
	return ""
}

// free is how many more instances of a type may start in a location.
func (s *Server) free(st *state, c CatalogEntry, location string, spot bool) int {
	capacity := c.OnDemand[location]
	if spot {
		capacity = c.Spot[location]
	}
	return capacity - emukit.Count(st.Instances, func(in *instance) bool {
		return in.DeletedAt == nil && in.InstanceType == c.InstanceType && in.Location == location && in.IsSpot == spot
	})
}

func (s *Server) availability(st *state, q url.Values, name string, nparts int) reply {
	spot := spotParam(q)
	if nparts != 1 && nparts != 2 {
		return errReply(http.StatusNotFound, "not_found", "Not found")
	}
	names := make([]string, 0, len(s.opts.Catalog))
	for _, c := range s.opts.Catalog {
		names = append(names, c.InstanceType)
	}
	return s.availabilityReply(locationParam(q), name, nparts == 2, names, func(name, location string) bool {
		c, ok := s.catalog[name]
		return ok && s.free(st, c, location, spot) > 0
	})
}

// availabilityReply answers an availability GET: for one name, whether it has room in loc (in any
// location when loc is empty); else each location (only loc when set) with the names that have room
// there, in the order given.
func (s *Server) availabilityReply(loc, name string, one bool, names []string, room func(name, location string) bool) reply {
	if one {
		for _, l := range s.opts.Locations {
			if (loc == "" || loc == l.Code) && room(name, l.Code) {
				return jsonReply(http.StatusOK, true)
			}
		}
		return jsonReply(http.StatusOK, false)
	}
	out := []verdaapi.LocationAvailability{}
	for _, l := range s.opts.Locations {
		if loc != "" && loc != l.Code {
			continue
		}
		e := verdaapi.LocationAvailability{LocationCode: l.Code, Availabilities: []string{}}
		for _, n := range names {
			if room(n, l.Code) {
				e.Availabilities = append(e.Availabilities, n)
			}
		}
		out = append(out, e)
	}
	return jsonReply(http.StatusOK, out)
}

func (s *Server) images(q url.Values) reply {
	t := q.Get("instance_type")
	c, known := s.catalog[t]
	out := []image{}
	for _, im := range images {
		if t != "" && known && c.LegacyImagesOnly && !legacyImage(im) {
			continue
		}
		out = append(out, im)
	}
	return jsonReply(http.StatusOK, out)
}

// ---- SSH keys ----

func keyView(k *sshKey) map[string]any {
	return map[string]any{"id": k.ID, "name": k.Name, "key": k.Key, "fingerprint": k.Fingerprint,
		"created_at": k.CreatedAt.UTC().Format(time.RFC3339Nano)}
}

func (s *Server) sshKeys(st *state, method, id string, nparts int, body []byte) reply {
	switch {
	case method == http.MethodGet && nparts == 1:
		keys := emukit.ByAge(st.SSHKeys, func(k *sshKey) time.Time { return k.CreatedAt }, func(k *sshKey) string { return k.ID })
		out := []map[string]any{}
		for _, k := range keys {
			out = append(out, keyView(k))
		}
		return jsonReply(http.StatusOK, out)
	case method == http.MethodGet && nparts == 2:
		k, ok := st.SSHKeys[id]
		if !ok {
			return errReply(http.StatusBadRequest, "invalid_request", "Invalid ssh-key ID")
		}
		// Quirk: one key comes back as an array of one.
		return jsonReply(http.StatusOK, []map[string]any{keyView(k)})
	case method == http.MethodPost && nparts == 1:
		var req struct {
			Name string `json:"name"`
			Key  string `json:"key"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return errReply(http.StatusBadRequest, "invalid_request", "Request body is not valid json")
		}
		if strings.TrimSpace(req.Name) == "" {
			return errReply(http.StatusBadRequest, "invalid_request", "name is required")
		}
		fp, ok := fingerprint(req.Key)
		if !ok {
			return errReply(http.StatusBadRequest, "invalid_request", "Invalid ssh key")
		}
		k := &sshKey{ID: newUUID(), Name: req.Name, Key: strings.TrimSpace(req.Key), Fingerprint: fp, CreatedAt: s.opts.Now()}
		st.SSHKeys[k.ID] = k
		return textReply(http.StatusCreated, k.ID)
	case method == http.MethodDelete && nparts == 2:
		if _, ok := st.SSHKeys[id]; !ok {
			return errReply(http.StatusBadRequest, "invalid_request", "Invalid ssh-key ID")
		}
		delete(st.SSHKeys, id)
		return reply{Status: http.StatusOK}
	case method == http.MethodDelete && nparts == 1:
		var req struct {
			Keys []string `json:"keys"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return errReply(http.StatusBadRequest, "invalid_request", "Request body is not valid json")
		}
		for _, id := range req.Keys {
			if _, ok := st.SSHKeys[id]; !ok {
				return errReply(http.StatusBadRequest, "invalid_request", "Invalid ssh-key ID")
			}
		}
		for _, id := range req.Keys {
			delete(st.SSHKeys, id)
		}
		return reply{Status: http.StatusOK}
	}
	return errReply(http.StatusNotFound, "not_found", "Not found")
}

// fingerprint checks an OpenSSH public key line and returns its SHA256 fingerprint.
func fingerprint(line string) (string, bool) {
	f := strings.Fields(line)
	if len(f) < 2 || !strings.HasPrefix(f[0], "ssh-") && !strings.HasPrefix(f[0], "ecdsa-") && !strings.HasPrefix(f[0], "sk-") {
		return "", false
	}
	blob, err := base64.StdEncoding.DecodeString(f[1])
	if err != nil || len(blob) < 8 {
		return "", false
	}
	sum := sha256.Sum256(blob)
	return "SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:]), true
}
