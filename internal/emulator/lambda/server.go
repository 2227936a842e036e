// Package lambda is a local emulator of the Lambda Cloud API v1 (Lambda's on-demand GPU cloud), for
// tests and for a provider configured with emulator_dir. It answers like the real API as its OpenAPI
// document and public clients describe it:
//
//   - every successful answer is {"data": ...}; every error {"error": {"code", "message",
//     "suggestion"}} with field_errors for invalid parameters;
//
//   - an API key as a bearer token (or as the user of HTTP basic auth); a missing or wrong key is 401
//     global/invalid-api-key;
//
//   - GET /instance-types is an object keyed by type name with price_cents_per_hour, specs (vcpus,
//     memory_gib, storage_gib, gpus), gpu_description and regions_with_capacity_available;
//
//   - POST /instance-operations/launch takes exactly one SSH key name, a name of at most 64 characters
//     and quantity 1, and answers {"instance_ids": [...]}; no capacity is 400
//     instance-operations/launch/insufficient-capacity; names need not be unique;
//
//   - instances move booting -> active (the ip appears half-way through booting), or to unhealthy when
//     their boot fails; terminate moves them to terminating, then terminated, and after
//     TerminatedRetention they are forgotten (404 global/object-does-not-exist);
//
//   - GET/POST/DELETE /ssh-keys; a POST without public_key generates a key pair and answers the private
//     key.
//
//   - launches are paced as Lambda documents (one every 12 s, Options.LaunchInterval): a launch request
//     sooner than that is answered 429 with the plain-text page of Lambda's edge, "error code: 1015",
//     not JSON; an armed rate-limit fault answers the same page;
//
//   - Preempt takes an instance back (status preempted), and SetAccountFaults makes launches fail with
//     global/quota-exceeded (400) or global/account-inactive (403), in Lambda's error shape.
//
// Where the real API's behaviour could not be confirmed the emulator picks one and says so: whether
// the 429 page carries a Retry-After (not here), terminating an instance that is already terminating
// (400 global/invalid-parameters here), a duplicate SSH key name (400 global/duplicate), the messages
// and statuses of the quota and inactive-account errors.
//
// Faults use the shared vocabulary (simulation.Faults); the Server is a simulation.Admin and serves
// emukit.AdminHandler under emukit.AdminPath ("/_emulator/") next to the API.
//
// State is in memory, or in a JSON file under Options.StateDir shared (under flock) by every emulator
// process using that directory. Statuses are computed from timestamps stored in the state, so they
// progress across process restarts.
package lambda

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/lambda/lambdaapi"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// BasePath is the path prefix of every endpoint; a client's base URL is the server's URL + BasePath.
const BasePath = "/api/v1"

// DefaultAPIKey is the API key the emulator accepts by default.
const DefaultAPIKey = "hydra-emulator-lambda-api-key"

// MaxNameLength is the longest instance or SSH key name accepted ("Must be 64 characters or fewer").
const MaxNameLength = 64

// Options configure an emulator.
type Options struct {
	// Options are the options every emulator has (state directory, boot duration, clock).
	// Options.BootDuration is how long a new instance boots before it is active (default 30s; real machines take
	// minutes). Its ip appears half-way through.
	simulation.Options
	// APIKey is the only key accepted (default DefaultAPIKey).
	APIKey string
	// TerminateDuration is how long a terminated instance stays terminating (default 10s).
	TerminateDuration time.Duration
	// TerminatedRetention is how long a terminated instance is still answered, with status terminated,
	// before it is forgotten (default 5m).
	TerminatedRetention time.Duration
	// Catalog is the instance types with prices and capacity (default DefaultCatalog()).
	Catalog []CatalogEntry
	// Regions are the regions (default DefaultRegions()).
	Regions []Region
	// InstanceIP, when set, is the ip every instance reports (e.g. "127.0.0.1" to reach a local sshd);
	// otherwise each instance gets its own address in 203.0.113.0/24 and 198.18.0.0/15.
	InstanceIP string
	// LaunchInterval is the least time between two launch requests (default DefaultLaunchInterval;
	// negative: no pacing).
	LaunchInterval time.Duration
}

// DefaultLaunchInterval is Lambda's documented launch pacing: five launches a minute, one every 12 s.
const DefaultLaunchInterval = 12 * time.Second

// Server is the emulated Lambda Cloud API, an http.Handler (the API under BasePath, the admin surface
// under emukit.AdminPath).
type Server struct {
	admin   // the shared fault vocabulary and machine counts (admin.go)
	opts    Options
	catalog map[string]CatalogEntry
	regions map[string]Region
	store   *emukit.Store[state]
	handler http.Handler
}

// New builds an emulator.
func New(opts Options) *Server {
	opts.APIKey = cmp.Or(opts.APIKey, DefaultAPIKey)
	opts.Options = opts.WithDefaults(30 * time.Second)
	opts.TerminateDuration = emukit.Positive(opts.TerminateDuration, 10*time.Second)
	opts.TerminatedRetention = emukit.Positive(opts.TerminatedRetention, 5*time.Minute)
	opts.Catalog = emukit.Seed(opts.Catalog, DefaultCatalog)
	opts.Regions = emukit.Seed(opts.Regions, DefaultRegions)
	opts.LaunchInterval = cmp.Or(opts.LaunchInterval, DefaultLaunchInterval)
	s := &Server{opts: opts, catalog: map[string]CatalogEntry{}, regions: map[string]Region{},
		store: emukit.NewStore[state](opts.StateDir, "lambda-state")}
	for _, c := range opts.Catalog {
		s.catalog[c.Name] = c
	}
	for _, r := range opts.Regions {
		s.regions[r.Name] = r
	}
	s.admin = newAdmin(s)
	s.handler = emukit.WithAdmin(emukit.LockedAPI{
		BasePath: BasePath,
		NotFound: notFound("Not found."),
		BadBody:  invalid("body", "Could not read the request body."),
		Answer:   s.answer,
		StateError: func(err error) reply {
			return errReply(http.StatusInternalServerError, "global/unknown", "emulator state: "+err.Error(), "")
		},
	}, s)
	return s
}

// Start serves the emulator on addr (e.g. "127.0.0.1:0") and returns the base URL clients use
// (including /api/v1) and a function that stops it.
func (s *Server) Start(addr string) (baseURL string, stop func(context.Context) error, err error) {
	return emukit.ServeAt(addr, s, BasePath)
}

// ServeHTTP answers one API or admin request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// reply is one answer, built while the state is locked and written after.
type reply = emukit.Reply

// dataReply is a successful answer: {"data": v}.
func dataReply(v any) reply {
	b, err := json.Marshal(map[string]any{"data": v})
	if err != nil {
		return errReply(http.StatusInternalServerError, "global/unknown", err.Error(), "")
	}
	return reply{Status: http.StatusOK, ContentType: "application/json", Body: b}
}

// errReply is Lambda's error answer.
func errReply(status int, code, msg, suggestion string) reply {
	b, _ := json.Marshal(map[string]any{"error": lambdaapi.APIError{Code: code, Message: msg, Suggestion: suggestion}})
	return reply{Status: status, ContentType: "application/json", Body: b}
}

// invalid is 400 global/invalid-parameters with the offending field in field_errors.
// decodeNamed decodes a create's body into req and checks the name it holds as Lambda does (*name points
// into req); ok is false with the refusal to answer.
func decodeNamed(body []byte, req any, name *string) (reply, bool) {
	if err := json.Unmarshal(body, req); err != nil {
		return invalid("body", "The request body is not valid JSON."), false
	}
	switch {
	case strings.TrimSpace(*name) == "":
		return invalid("name", "A name is required."), false
	case len(*name) > MaxNameLength:
		return invalid("name", fmt.Sprintf("Must be %d characters or fewer.", MaxNameLength)), false
	}
	return reply{}, true
}

func invalid(field, msg string) reply {
	b, _ := json.Marshal(map[string]any{
		"error":        lambdaapi.APIError{Code: "global/invalid-parameters", Message: "Invalid request data."},
		"field_errors": map[string]lambdaapi.APIError{field: {Code: "global/invalid-parameters", Message: msg}},
	})
	return reply{Status: http.StatusBadRequest, ContentType: "application/json", Body: b}
}

func notFound(msg string) reply {
	return errReply(http.StatusNotFound, "global/object-does-not-exist", msg, "")
}

// answer answers one API request under the state lock, or a fault in its place.
func (s *Server) answer(r *http.Request, path string, body []byte) (rep reply, latency time.Duration, err error) {
	err = s.update(func(st *state) error {
		latency = time.Duration(st.Faults.Latency)
		key := r.Method + " " + routeKey(path)
		st.Requests[key]++
		var ok bool
		if rep, ok = fault(st); ok {
			return nil
		}
		if rep, ok = s.pace(st, r.Method, path); ok {
			return nil
		}
		if rep, ok = s.authenticate(r); !ok {
			return nil
		}
		rep = s.route(st, key, path, body)
		return nil
	})
	return rep, latency, err
}

// routeKey turns a path into its endpoint template for request counting ("/instances/{id}").
func routeKey(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) == 2 && (parts[0] == "instances" || parts[0] == "ssh-keys" || parts[0] == "filesystems") {
		parts[1] = "{id}"
	}
	return "/" + strings.Join(parts, "/")
}

// fault answers the request with an armed 429 (Lambda's edge's plain-text page) or 5xx (in Lambda's
// error shape), before it is acted on.
func fault(st *state) (reply, bool) {
	return emukit.TakeReply(&st.Faults, http.StatusInternalServerError, rateLimited(),
		func(status int) reply {
			return errReply(status, "global/unknown", "Something unexpected occurred.", "Try again later.")
		})
}

// authenticate checks the API key: a bearer token, or the user of HTTP basic auth ("curl -u KEY:").
func (s *Server) authenticate(r *http.Request) (reply, bool) {
	key := ""
	h := r.Header.Get("Authorization")
	if tok, ok := strings.CutPrefix(h, "Bearer "); ok {
		key = strings.TrimSpace(tok)
	} else if user, _, ok := r.BasicAuth(); ok {
		key = user
	}
	const suggestion = "Check your API key or create a new one, then try again."
	switch {
	case key == "":
		return errReply(http.StatusUnauthorized, "global/invalid-api-key", "No API key was provided.", suggestion), false
	case subtle.ConstantTimeCompare([]byte(key), []byte(s.opts.APIKey)) != 1:
		return errReply(http.StatusUnauthorized, "global/invalid-api-key", "API key was invalid, expired, or deleted.", suggestion), false
	}
	return reply{}, true
}

// Lambda's endpoints by their request-count key ("METHOD /path", an id as {id}: routeKey), by what
// they read of the request: nothing, the id in the path, or the body.
var (
	listings = map[string]func(s *Server, st *state) reply{
		"GET /instance-types": (*Server).instanceTypes,
		"GET /regions":        func(s *Server, _ *state) reply { return dataReply(s.opts.Regions) },
		"GET /instances":      (*Server).listInstances,
		"GET /ssh-keys":       (*Server).listKeys,
		"GET /file-systems":   (*Server).listFileSystems,
	}
	byID = map[string]func(s *Server, st *state, id string) reply{
		"GET /instances/{id}":      (*Server).getInstance,
		"DELETE /ssh-keys/{id}":    (*Server).deleteKey,
		"DELETE /filesystems/{id}": (*Server).deleteFileSystem,
	}
	withBody = map[string]func(s *Server, st *state, body []byte) reply{
		"POST /instance-operations/launch":    (*Server).launch,
		"POST /instance-operations/terminate": (*Server).terminate,
		"POST /ssh-keys":                      (*Server).addKey,
		"POST /filesystems":                   (*Server).createFileSystem,
	}
)

// route answers the request of key (routeKey's) at path, or 404.
func (s *Server) route(st *state, key, path string, body []byte) reply {
	if h, ok := listings[key]; ok {
		return h(s, st)
	}
	if h, ok := withBody[key]; ok {
		return h(s, st, body)
	}
	if h, ok := byID[key]; ok {
		id, _ := url.PathUnescape(strings.Split(strings.Trim(path, "/"), "/")[1])
		return h(s, st, id)
	}
	return notFound("Not found.")
}

// ---- catalog ----

func (s *Server) typeView(c CatalogEntry) map[string]any {
	return map[string]any{
		"name":                 c.Name,
		"description":          c.Description,
		"gpu_description":      c.GPUDescription,
		"price_cents_per_hour": c.PriceCentsPerHour,
		"specs": map[string]any{
			"vcpus": c.VCPUs, "memory_gib": c.MemoryGiB, "storage_gib": c.StorageGiB, "gpus": c.GPUs,
		},
	}
}

// free is how many more machines of a type may start in a region.
func (s *Server) free(st *state, c CatalogEntry, region string) int {
	return c.Capacity[region] - emukit.Count(st.Instances, func(in *instance) bool {
		return in.TerminatedAt == nil && in.InstanceType == c.Name && in.Region == region
	})
}

func (s *Server) instanceTypes(st *state) reply {
	out := map[string]any{}
	for _, c := range s.opts.Catalog {
		regions := []Region{}
		for _, r := range s.opts.Regions {
			if s.free(st, c, r.Name) > 0 {
				regions = append(regions, r)
			}
		}
		out[c.Name] = map[string]any{"instance_type": s.typeView(c), "regions_with_capacity_available": regions}
	}
	return dataReply(out)
}

// ---- instances ----

// statusOf computes an instance's status from its stored timestamps.
func (s *Server) statusOf(in *instance, now time.Time) string {
	if in.TerminatedAt != nil {
		if now.Before(in.TerminatedAt.Add(time.Duration(in.Terminate))) {
			return "terminating"
		}
		return "terminated"
	}
	switch {
	case now.Sub(in.CreatedAt) < time.Duration(in.Boot):
		return "booting"
	case in.FailBoot:
		return "unhealthy"
	}
	return "active"
}

// statusWord is an instance's status as answered: preempted for an instance Lambda took back.
func (s *Server) statusWord(in *instance, now time.Time) string {
	if in.Preempted {
		return StatusPreempted
	}
	return s.statusOf(in, now)
}

// gone reports whether a terminated instance is past its retention and no longer answered.
func (s *Server) gone(in *instance, now time.Time) bool {
	return in.TerminatedAt != nil &&
		!now.Before(in.TerminatedAt.Add(time.Duration(in.Terminate)+s.opts.TerminatedRetention))
}

func unavailable(code, desc string) map[string]any {
	return map[string]any{"available": false, "reason_code": code, "reason_description": desc}
}

func (s *Server) instanceView(st *state, in *instance, now time.Time) map[string]any {
	status := s.statusWord(in, now)
	c := s.catalog[in.InstanceType]
	fsNames, fsMounts := fileSystemFields(st, in)
	var ip, privateIP, hostname any
	if in.TerminatedAt != nil || now.Sub(in.CreatedAt) >= time.Duration(in.Boot)/2 {
		ip, privateIP = in.IP, in.PrivateIP
		hostname = strings.ReplaceAll(in.IP, ".", "-") // not confirmed: the form of Lambda's hostnames
	}
	yes := map[string]any{"available": true}
	actions := map[string]any{"migrate": yes, "rebuild": yes, "restart": yes, "cold_reboot": yes, "terminate": yes}
	switch status {
	case "booting":
		no := unavailable("vm-has-not-launched", "The instance has not launched yet.")
		actions = map[string]any{"migrate": no, "rebuild": no, "restart": no, "cold_reboot": no, "terminate": yes}
	case "terminating", "terminated", StatusPreempted:
		no := unavailable("vm-is-terminating", "The instance is terminating.")
		actions = map[string]any{"migrate": no, "rebuild": no, "restart": no, "cold_reboot": no, "terminate": no}
	}
	out := map[string]any{
		"id":                 in.ID,
		"status":             status,
		"ssh_key_names":      in.SSHKeyNames,
		"file_system_names":  fsNames,
		"file_system_mounts": fsMounts,
		"region":             s.regions[in.Region],
		"instance_type":      s.typeView(c),
		"jupyter_token":      in.JupyterToken,
		"jupyter_url":        "https://jupyter-" + in.ID + ".lambdaspaces.com/?token=" + in.JupyterToken,
		"is_reserved":        false,
		"actions":            actions,
	}
	// Optional fields are left out, not null, when they have no value.
	if in.Name != nil {
		out["name"] = *in.Name
	}
	if ip != nil {
		out["ip"], out["private_ip"], out["hostname"] = ip, privateIP, hostname
	}
	return out
}

func (s *Server) listInstances(st *state) reply {
	now := s.opts.Now()
	out := []map[string]any{}
	for _, in := range sortedInstances(st) {
		out = append(out, s.instanceView(st, in, now))
	}
	return dataReply(out)
}

func (s *Server) getInstance(st *state, id string) reply {
	in, ok := st.Instances[id]
	if !ok {
		return notFound("Specified instance does not exist.")
	}
	return dataReply(s.instanceView(st, in, s.opts.Now()))
}

func (s *Server) launch(st *state, body []byte) reply {
	var req struct {
		RegionName       string           `json:"region_name"`
		InstanceTypeName string           `json:"instance_type_name"`
		SSHKeyNames      []string         `json:"ssh_key_names"`
		FileSystemNames  []string         `json:"file_system_names"`
		FileSystemMounts []fsMount        `json:"file_system_mounts"`
		Quantity         *int             `json:"quantity"`
		Name             *string          `json:"name"`
		UserData         string           `json:"user_data"`
		Image            *json.RawMessage `json:"image"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return invalid("body", "The request body is not valid JSON.")
	}
	if _, ok := s.regions[req.RegionName]; !ok {
		return invalid("region_name", fmt.Sprintf("Unknown region %q.", req.RegionName))
	}
	c, ok := s.catalog[req.InstanceTypeName]
	if !ok {
		return invalid("instance_type_name", fmt.Sprintf("Unknown instance type %q.", req.InstanceTypeName))
	}
	if len(req.SSHKeyNames) != 1 {
		return invalid("ssh_key_names", "Currently, exactly one SSH key must be specified.")
	}
	if req.Quantity != nil && *req.Quantity != 1 {
		return invalid("quantity", "Quantity must be 1.")
	}
	if req.Name != nil && len(*req.Name) > MaxNameLength {
		return invalid("name", fmt.Sprintf("Must be %d characters or fewer.", MaxNameLength))
	}
	if req.Image != nil {
		return invalid("image", "The emulator offers only the default image.")
	}
	found := false
	for _, k := range st.SSHKeys {
		found = found || k.Name == req.SSHKeyNames[0]
	}
	if !found {
		return errReply(http.StatusBadRequest, "global/object-does-not-exist",
			fmt.Sprintf("SSH key %q does not exist.", req.SSHKeyNames[0]), "Add the SSH key to your account, or check its name.")
	}
	mounts, rep, ok := s.launchMounts(st, req.RegionName, req.FileSystemNames, req.FileSystemMounts)
	if !ok {
		return rep
	}
	if rep, failed := accountFault(st); failed {
		return rep
	}
	if st.Faults.SoldOut || s.free(st, c, req.RegionName) <= 0 {
		return errReply(http.StatusBadRequest, "instance-operations/launch/insufficient-capacity",
			"Not enough capacity to fulfill launch request.", "Choose an instance type with more availability, or try again later.")
	}
	st.IPSeq++
	ip := s.opts.InstanceIP
	if ip == "" {
		ip = fmt.Sprintf("203.0.113.%d", 1+st.IPSeq%254)
	}
	in := &instance{
		ID:           simulation.RandomHex(16),
		Name:         req.Name,
		Region:       req.RegionName,
		InstanceType: c.Name,
		SSHKeyNames:  req.SSHKeyNames,
		UserData:     req.UserData,
		IP:           ip,
		PrivateIP:    fmt.Sprintf("10.19.%d.%d", (st.IPSeq/254)%254, 1+st.IPSeq%254),
		JupyterToken: simulation.RandomHex(16),
		CreatedAt:    s.opts.Now(),
		Boot:         int64(s.opts.BootDuration),
		FailBoot:     st.Faults.TakeBootFailure(),
		FileSystems:  mounts,
	}
	st.Instances[in.ID] = in
	st.Created++
	if st.Faults.TakeLostCreate() {
		return reply{Status: http.StatusBadGateway, ContentType: "text/html",
			Body: []byte("<html><body><h1>502 Bad Gateway</h1></body></html>")}
	}
	return dataReply(map[string]any{"instance_ids": []string{in.ID}})
}

func (s *Server) terminate(st *state, body []byte) reply {
	var req struct {
		InstanceIDs []string `json:"instance_ids"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return invalid("body", "The request body is not valid JSON.")
	}
	if len(req.InstanceIDs) == 0 {
		return invalid("instance_ids", "At least one instance id is required.")
	}
	now := s.opts.Now()
	// The whole request fails if one id cannot be terminated; nothing is changed then.
	for _, id := range req.InstanceIDs {
		in, ok := st.Instances[id]
		if !ok {
			return notFound("Specified instance does not exist.")
		}
		if in.TerminatedAt != nil {
			// Not confirmed: what Lambda answers for an instance that is already terminating.
			return errReply(http.StatusBadRequest, "global/invalid-parameters",
				fmt.Sprintf("Instance %s is already %s.", id, s.statusWord(in, now)), "")
		}
	}
	out := []map[string]any{}
	for _, id := range req.InstanceIDs {
		in := st.Instances[id]
		t := now
		in.TerminatedAt = &t
		in.Terminate = int64(s.opts.TerminateDuration)
		out = append(out, s.instanceView(st, in, now))
	}
	return dataReply(map[string]any{"terminated_instances": out})
}

// ---- SSH keys ----

func keyView(k *sshKey) map[string]any {
	return map[string]any{"id": k.ID, "name": k.Name, "public_key": k.PublicKey}
}

func (s *Server) listKeys(st *state) reply {
	out := []map[string]any{}
	for _, k := range sortedKeys(st) {
		out = append(out, keyView(k))
	}
	return dataReply(out)
}

func (s *Server) addKey(st *state, body []byte) reply {
	var req struct {
		Name      string  `json:"name"`
		PublicKey *string `json:"public_key"`
	}
	if r, ok := decodeNamed(body, &req, &req.Name); !ok {
		return r
	}
	for _, k := range st.SSHKeys {
		if k.Name == req.Name {
			// Not confirmed: the status and message Lambda answers for a duplicate name.
			return errReply(http.StatusBadRequest, "global/duplicate",
				fmt.Sprintf("An SSH key named %q already exists.", req.Name), "Use a different name.")
		}
	}
	k := &sshKey{ID: simulation.RandomHex(16), Name: req.Name, CreatedAt: s.opts.Now()}
	var view map[string]any
	if req.PublicKey != nil && strings.TrimSpace(*req.PublicKey) != "" {
		pub := strings.TrimSpace(*req.PublicKey)
		if len(pub) > 4096 {
			return invalid("public_key", "Must be 4096 characters or fewer.")
		}
		if _, _, _, _, err := ssh.ParseAuthorizedKey([]byte(pub)); err != nil {
			return invalid("public_key", "Invalid public key.")
		}
		k.PublicKey = pub
		view = keyView(k)
	} else {
		pub, priv, err := generateKey(req.Name)
		if err != nil {
			return errReply(http.StatusInternalServerError, "global/unknown", "Something unexpected occurred.", "")
		}
		k.PublicKey = pub
		view = keyView(k)
		view["private_key"] = priv
	}
	st.SSHKeys[k.ID] = k
	return dataReply(view)
}

// generateKey makes an ed25519 key pair: the public key as an authorized_keys line, the private key in
// OpenSSH PEM form.
func generateKey(comment string) (string, string, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", "", err
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		return "", "", err
	}
	block, err := ssh.MarshalPrivateKey(priv, comment)
	if err != nil {
		return "", "", err
	}
	line := sshPub.Type() + " " + base64.StdEncoding.EncodeToString(sshPub.Marshal()) + " " + comment
	return line, string(pem.EncodeToMemory(block)), nil
}

func (s *Server) deleteKey(st *state, id string) reply {
	k, ok := st.SSHKeys[id]
	if !ok {
		return notFound("Specified SSH key does not exist.")
	}
	for _, in := range st.Instances {
		if in.TerminatedAt != nil {
			continue
		}
		for _, n := range in.SSHKeyNames {
			if n == k.Name {
				return errReply(http.StatusBadRequest, "ssh-keys/key-in-use", "The SSH key is in use by an instance.",
					"Terminate the instances using the key first.")
			}
		}
	}
	delete(st.SSHKeys, id)
	return dataReply(map[string]any{})
}
