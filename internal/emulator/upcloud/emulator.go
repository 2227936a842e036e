// Package upcloud is a local emulator of the UpCloud API 1.3 subset hydra uses, faithful to the recorded
// traffic: wrapper keys ({"server":{...}}, {"servers":{"server":[...]}}), "yes"/"no" booleans, numbers
// as strings in server objects, 202 create answering state "maintenance" that becomes "started", stop
// answering 200 with the old state before the server is "stopped", delete only of stopped servers
// (DELETE /server/{uuid}/?storages=1 -> 204), {"error":{error_code,error_message}} errors (and
// application/problem+json for unknown paths), prices in euro cents per hour per zone, GPU stock in
// /device/availability, GPU plans with storage_size 0, labels ({"labels":{"label":[{key,value}]}}) that
// PUT /server/{uuid} replaces, label filters on GET /server (?label=key&label=key%3Dvalue), creates
// without a plan ("custom", as UpCloud's SDK records them), the one-time "password" and the
// "remote_access_password" of server answers, storages (GET /storage/private, GET /storage/{uuid},
// POST /storage/{uuid}/templatize; and, in storage.go, POST and DELETE /storage, label filters, attach
// and detach with UpCloud's server-state rule, storages attached at a server's create, and what
// DELETE /server/{uuid}?storages=1 deletes) and, as the emulator keeps no tags, TAG_NOT_FOUND for DELETE
// /tag/{name}.
//
// GET /server honours limit and offset by default. UpCloud's SDK never sends them and UpCloud's
// documentation does not name them, so the real API may ignore them: Options.IgnorePaging (or the admin
// endpoint below) makes the emulator answer every matching server whatever limit and offset say.
//
// Serve it under any address; the API lives below APIPrefix ("/1.3"), and requests without the prefix
// are accepted too. The admin surface every emulator shares (emukit.AdminHandler: GET
// /_emulator/stats, GET and PUT /_emulator/faults) is served beside it, at /_emulator/ and at
// /1.3/_emulator/, with UpCloud's own GET and PUT /_emulator/paging ({"ignore_paging": true} makes GET
// /server ignore limit and offset; false honours them again). Status progressions are computed from
// timestamps kept in the state, so several Server values (in one or several processes) sharing a
// StateDir see the same cloud.
package upcloud

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// APIPrefix is the path prefix of the API (the real base URL is https://api.upcloud.com/1.3).
const APIPrefix = "/1.3"

// Options configure an emulator. Zero values take realistic defaults.
type Options struct {
	// Options are the options every emulator has (state directory, boot duration, clock).
	// Options.BootDuration is how long a new server stays in "maintenance" (default 20s).
	simulation.Options
	// Zones, Plans and Templates seed the catalog (defaults: DefaultZones, DefaultPlans, DefaultTemplates).
	Zones     []Zone
	Plans     []Plan
	Templates []Template
	// StopDuration is how long a stop takes before the server is "stopped" (default 3s).
	StopDuration time.Duration
	// HotplugDuration is how long a started server is in "maintenance" after a storage is attached to
	// or detached from it (default 2s; storage.go).
	HotplugDuration time.Duration
	// Username/Password and Token are the credentials accepted (Basic or Bearer). When all are empty,
	// any Basic or Bearer credentials are accepted (but some must be sent).
	Username, Password, Token string
	// SSHHost, when set, is reported as every server's public IPv4 (e.g. "127.0.0.1" to reach a local
	// sshd); otherwise addresses are invented.
	SSHHost string
	// IgnorePaging makes GET /server answer every server that matches its label filters, ignoring
	// limit and offset, as an API that does not know them would (it seeds a new state; PUT
	// /_emulator/paging and SetIgnorePaging change it later).
	IgnorePaging bool
}

// Server is the emulator, an http.Handler serving the API and the admin surface.
type Server struct {
	// The Server is a simulation.Admin: Faults returns the armed shared faults with their counters as far
	// as they have run down; Stats counts the servers ever created (lost creates included) and lists
	// the ones that exist, by uuid, named by their title (a server exists until DELETE removes it,
	// whatever its state). SetFaults is the Server's own.
	admin
	opts    Options
	store   *emukit.Store[state]
	handler http.Handler
}

type admin = emukit.StateAdmin[state]

var _ simulation.Admin = (*Server)(nil)

// New builds an emulator.
func New(opts Options) *Server {
	opts.Zones = emukit.Seed(opts.Zones, DefaultZones)
	opts.Plans = emukit.Seed(opts.Plans, DefaultPlans)
	opts.Templates = emukit.Seed(opts.Templates, DefaultTemplates)
	opts.Options = opts.WithDefaults(20 * time.Second)
	opts.StopDuration = cmp.Or(opts.StopDuration, 3*time.Second)
	opts.HotplugDuration = cmp.Or(opts.HotplugDuration, 2*time.Second)
	s := &Server{opts: opts, store: emukit.NewStore[state](opts.StateDir, "state")}
	s.admin = emukit.NewStateAdmin(func(write bool, fn func(st *state) error) error {
		var err error
		if serr := s.withState(func(st *state) bool { err = fn(st); return write && err == nil }); serr != nil {
			return serr
		}
		return err
	}, func(st *state) *simulation.Faults { return &st.Faults.Faults },
		func(st *state) (int, []simulation.Machine) {
			live := make([]simulation.Machine, 0, len(st.Servers))
			for _, v := range st.Servers {
				live = append(live, simulation.Machine{ID: v.UUID, Name: v.Title})
			}
			sort.Slice(live, func(i, j int) bool { return live[i].ID < live[j].ID })
			return st.CreateCount, live
		})
	s.handler = emukit.WithAdmin(http.HandlerFunc(s.serveAPI), s)
	return s
}

// Start serves the emulator on addr ("127.0.0.1:0" picks a port) and returns the API base URL to give
// the client (with the /1.3 prefix) and a function that stops the server.
func (s *Server) Start(addr string) (baseURL string, stop func(context.Context) error, err error) {
	return emukit.ServeAt(addr, s, APIPrefix)
}

// withState runs fn under the state lock and saves when fn returns true.
func (s *Server) withState(fn func(st *state) bool) error {
	return s.store.Update(func() *state { return newState(s.opts) }, func(st *state) (bool, error) {
		st.fill()
		return fn(st), nil
	})
}

// SetFaults replaces the armed faults with f (simulation.Admin). UpCloud's extras (see Faults) are cleared.
func (s *Server) SetFaults(f simulation.Faults) error {
	return s.SetCloudFaults(Faults{Faults: f})
}

// SetCloudFaults replaces the armed faults, UpCloud's extras included (persisted with the state).
func (s *Server) SetCloudFaults(f Faults) error {
	return s.withState(func(st *state) bool { st.Faults = f; return true })
}

// CloudFaults returns the armed faults, UpCloud's extras included, with their remaining counters.
func (s *Server) CloudFaults() (Faults, error) {
	var f Faults
	err := s.withState(func(st *state) bool { f = st.Faults; return false })
	return f, err
}

// ServerInfo is an admin view of one live server.
type ServerInfo struct {
	UUID, Title, Hostname, Zone, Plan, State string
	Labels                                   map[string]string
	SSHKeys                                  []string
	StorageSizeGB                            int
	Template                                 string
	Metadata                                 bool
}

// Servers lists the live servers, sorted by title.
func (s *Server) Servers() []ServerInfo {
	var out []ServerInfo
	_ = s.withState(func(st *state) bool {
		now := s.opts.Now()
		for _, v := range st.Servers {
			state, _ := serverState(v, now)
			labels := map[string]string{}
			for _, l := range v.Labels {
				labels[l.Key] = l.Value
			}
			out = append(out, ServerInfo{UUID: v.UUID, Title: v.Title, Hostname: v.Hostname, Zone: v.Zone, Plan: v.Plan, State: state,
				Labels: labels, SSHKeys: append([]string(nil), v.SSHKeys...), StorageSizeGB: v.StorageSize, Template: v.Template, Metadata: v.Metadata})
		}
		return false
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Title < out[j].Title })
	return out
}

// StorageCount is how many disks exist (a delete without ?storages=1 leaves the server's disk behind).
func (s *Server) StorageCount() int {
	n := 0
	_ = s.withState(func(st *state) bool { n = len(st.Disks); return false })
	return n
}

// PagingPath is the admin endpoint of UpCloud's paging knob, below emukit.AdminPath: GET answers and PUT
// sets {"ignore_paging": bool}.
const PagingPath = emukit.AdminPath + "paging"

// Paging is the body of PagingPath.
type Paging struct {
	// IgnorePaging true makes GET /server ignore limit and offset.
	IgnorePaging bool `json:"ignore_paging"`
}

// SetIgnorePaging makes GET /server ignore limit and offset (true) or honour them (false).
func (s *Server) SetIgnorePaging(ignore bool) error {
	return s.withState(func(st *state) bool { st.IgnorePaging = ignore; return true })
}

// IgnoresPaging reports whether GET /server ignores limit and offset.
func (s *Server) IgnoresPaging() bool {
	v := false
	_ = s.withState(func(st *state) bool { v = st.IgnorePaging; return false })
	return v
}

// servePaging answers GET and PUT PagingPath.
func (s *Server) servePaging(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		emukit.WriteJSON(w, http.StatusOK, Paging{IgnorePaging: s.IgnoresPaging()}, nil)
	case http.MethodPut:
		var p Paging
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
			emukit.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()}, nil)
			return
		}
		if err := s.SetIgnorePaging(p.IgnorePaging); err != nil {
			emukit.WriteJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()}, nil)
			return
		}
		emukit.WriteJSON(w, http.StatusOK, p, nil)
	default:
		w.Header().Set("Allow", "GET, PUT")
		emukit.WriteJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "use GET or PUT"}, nil)
	}
}

// SetStock sets the free stock of a GPU plan in a zone.
func (s *Server) SetStock(zone, plan string, n int) error {
	return s.withState(func(st *state) bool {
		if st.Stock[zone] == nil {
			st.Stock[zone] = map[string]int{}
		}
		st.Stock[zone][plan] = n
		return true
	})
}

// Stock returns the free stock of a GPU plan in a zone.
func (s *Server) Stock(zone, plan string) int {
	n := 0
	_ = s.withState(func(st *state) bool { n = st.Stock[zone][plan]; return false })
	return n
}

// response is an answer built under the lock and written after it.
type response struct {
	status      int
	contentType string
	header      http.Header
	body        []byte
}

func jsonResp(status int, v any) response {
	if v == nil {
		return response{status: status}
	}
	b, _ := json.Marshal(v)
	return response{status: status, contentType: "application/json; charset=UTF-8", body: b}
}

func errResp(status int, code, msg string) response {
	return jsonResp(status, map[string]any{"error": map[string]any{"error_code": code, "error_message": msg}})
}

// object reads a request body {"<key>": {...}} and returns its object, numbers kept as json.Number
// (UpCloud takes sizes and counts as numbers or strings). A body that is not JSON, or whose object is
// missing, null or not a T, is answered as UpCloud answers it: 400 <KEY>_INVALID, "The request body is
// not a valid <key> object." (the key's underscores read as spaces). The key is matched as
// encoding/json matches a field's tag.
func object[T any](r *http.Request, key string) (*T, response, bool) {
	body := reflect.New(reflect.StructOf([]reflect.StructField{
		{Name: "Object", Type: reflect.TypeFor[*T](), Tag: reflect.StructTag(`json:"` + key + `"`)}}))
	dec := json.NewDecoder(r.Body)
	dec.UseNumber()
	if err := dec.Decode(body.Interface()); err == nil {
		if obj, ok := body.Elem().Field(0).Interface().(*T); ok && obj != nil {
			return obj, response{}, true
		}
	}
	return nil, errResp(http.StatusBadRequest, strings.ToUpper(key)+"_INVALID",
		"The request body is not a valid "+strings.ReplaceAll(key, "_", " ")+" object."), false
}

func problemResp(status int, code, title string) response {
	b, _ := json.Marshal(map[string]any{
		"type":           "https://developers.upcloud.com/1.3/errors#" + code,
		"title":          title,
		"status":         status,
		"correlation_id": randHex(13),
	})
	return response{status: status, contentType: "application/problem+json", body: b}
}

// ServeHTTP answers one API or admin request. The admin surface is also reachable below APIPrefix, so a
// client that only knows the API base URL finds it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if rest, ok := strings.CutPrefix(r.URL.Path, APIPrefix); ok && strings.HasPrefix(rest, emukit.AdminPath) {
		r2 := new(http.Request)
		*r2 = *r
		u := *r.URL
		u.Path, u.RawPath = rest, ""
		r2.URL = &u
		r = r2
	}
	if r.URL.Path == PagingPath {
		s.servePaging(w, r)
		return
	}
	s.handler.ServeHTTP(w, r)
}

// serveAPI answers one API request.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	var resp response
	var latency time.Duration
	err := s.withState(func(st *state) bool {
		latency = time.Duration(st.Faults.Latency)
		var changed bool
		resp, changed = s.handle(st, r)
		return changed
	})
	if !simulation.Delay(r.Context(), latency) {
		return
	}
	if err != nil {
		resp = errResp(http.StatusInternalServerError, "INTERNAL_ERROR", "emulator state: "+err.Error())
	}
	for k, vs := range resp.header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if resp.contentType != "" {
		w.Header().Set("Content-Type", resp.contentType)
	}
	w.WriteHeader(resp.status)
	if resp.body != nil {
		w.Write(resp.body) //nolint:errcheck
	}
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func (s *Server) handle(st *state, r *http.Request) (response, bool) {
	path := strings.TrimPrefix(r.URL.Path, APIPrefix)
	if path == "" {
		path = "/"
	}
	changed := false
	// Faults that fire before anything else.
	f := &st.Faults
	key := r.Method + " " + path
	if f.Match == "" || strings.HasPrefix(key, f.Match) {
		status, header := f.Take(cmp.Or(f.ServerErrorStatus, http.StatusServiceUnavailable))
		switch {
		case header != nil: // 429
			resp := errResp(status, "TOO_MANY_REQUESTS", "Too many requests.")
			resp.header = header
			return resp, true
		case status != 0:
			return errResp(status, "SERVICE_UNAVAILABLE", "The service is temporarily unavailable."), true
		}
	}
	if resp, ok := s.authorize(r); !ok {
		return resp, changed
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case r.Method == http.MethodGet && path == "/zone":
		return s.zones(st), changed
	case r.Method == http.MethodGet && path == "/plan":
		return s.plans(st), changed
	case r.Method == http.MethodGet && path == "/price":
		return s.prices(st), changed
	case r.Method == http.MethodGet && path == "/device/availability":
		return s.availability(st, r), changed
	case r.Method == http.MethodGet && path == "/account":
		return s.account(), changed
	case r.Method == http.MethodGet && (path == "/storage/template" || path == "/storage/public/template"):
		return s.templates(st, path == "/storage/public/template"), changed
	case parts[0] == "server" && len(parts) == 1:
		switch r.Method {
		case http.MethodGet:
			return s.listServers(st, r), changed
		case http.MethodPost:
			return s.createServer(st, r)
		}
	case parts[0] == "server" && len(parts) == 2:
		if !uuidRE.MatchString(parts[1]) {
			return errResp(http.StatusBadRequest, "SERVER_INVALID", "The server UUID is invalid."), changed
		}
		switch r.Method {
		case http.MethodGet:
			return s.getServer(st, parts[1]), changed
		case http.MethodPut:
			return s.modifyServer(st, parts[1], r)
		case http.MethodDelete:
			return s.deleteServer(st, parts[1], r)
		}
	case parts[0] == "storage" && r.Method == http.MethodGet && isStorageList(parts):
		return s.listStorages(st, parts[1:], r), changed
	case parts[0] == "storage" && len(parts) == 1 && r.Method == http.MethodPost:
		return s.createStorage(st, r)
	case parts[0] == "storage" && len(parts) == 2 && r.Method == http.MethodGet:
		return s.getStorage(st, parts[1]), changed
	case parts[0] == "storage" && len(parts) == 2 && r.Method == http.MethodDelete:
		return s.deleteStorage(st, parts[1])
	case parts[0] == "server" && len(parts) == 4 && parts[2] == "storage" && r.Method == http.MethodPost &&
		(parts[3] == "attach" || parts[3] == "detach"):
		if !uuidRE.MatchString(parts[1]) {
			return errResp(http.StatusBadRequest, "SERVER_INVALID", "The server UUID is invalid."), changed
		}
		return s.attachDetach(st, parts[1], parts[3] == "attach", r)
	case parts[0] == "storage" && len(parts) == 3 && parts[2] == "templatize" && r.Method == http.MethodPost:
		return s.templatize(st, parts[1], r)
	case parts[0] == "tag" && len(parts) == 2 && r.Method == http.MethodDelete:
		return errResp(http.StatusNotFound, "TAG_NOT_FOUND", fmt.Sprintf("The tag %s does not exist.", parts[1])), changed
	case parts[0] == "server" && len(parts) == 3 && r.Method == http.MethodPost:
		if !uuidRE.MatchString(parts[1]) {
			return errResp(http.StatusBadRequest, "SERVER_INVALID", "The server UUID is invalid."), changed
		}
		switch parts[2] {
		case "stop":
			return s.stopServer(st, parts[1], r)
		case "start":
			return s.startServer(st, parts[1])
		}
	}
	return problemResp(http.StatusNotFound, "ERROR_RESOURCE_NOT_FOUND", "The resource you requested does not exist."), changed
}

func (s *Server) authorize(r *http.Request) (response, bool) {
	fail := errResp(http.StatusUnauthorized, "AUTHENTICATION_FAILED", "Authentication failed using the given username and password.")
	h := r.Header.Get("Authorization")
	anyCreds := s.opts.Username == "" && s.opts.Password == "" && s.opts.Token == ""
	switch {
	case strings.HasPrefix(h, "Basic "):
		raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(h, "Basic "))
		if err != nil {
			return fail, false
		}
		user, pass, ok := strings.Cut(string(raw), ":")
		if !ok || user == "" {
			return fail, false
		}
		if anyCreds || (s.opts.Username != "" && user == s.opts.Username && pass == s.opts.Password) {
			return response{}, true
		}
	case strings.HasPrefix(h, "Bearer "):
		tok := strings.TrimPrefix(h, "Bearer ")
		if tok != "" && (anyCreds || (s.opts.Token != "" && tok == s.opts.Token)) {
			return response{}, true
		}
	}
	return fail, false
}

func yn(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func (s *Server) zones(st *state) response {
	var list []any
	for _, z := range st.Zones {
		list = append(list, map[string]any{"id": z.ID, "description": z.Description, "public": yn(z.Public)})
	}
	return jsonResp(http.StatusOK, map[string]any{"zones": map[string]any{"zone": list}})
}

func (s *Server) plans(st *state) response {
	var list []any
	for _, p := range st.Plans {
		m := map[string]any{
			"name":               p.Name,
			"core_number":        p.Cores,
			"memory_amount":      p.MemoryMiB,
			"storage_size":       p.StorageGB,
			"public_traffic_out": 1024 * max(p.Cores/2, 1),
			"current_offering":   yn(!p.Retired),
		}
		if p.GPUAmount > 0 {
			m["storage_size"] = 0
			m["storage_tier"] = nil
			m["gpu_amount"] = p.GPUAmount
			m["gpu_model"] = p.GPUModel
			m["family"] = "gpu"
			m["public_traffic_out"] = 12
		} else {
			m["storage_tier"] = "maxiops"
		}
		list = append(list, m)
	}
	return jsonResp(http.StatusOK, map[string]any{"plans": map[string]any{"plan": list}})
}

func (s *Server) prices(st *state) response {
	var zones []any
	for _, z := range st.Zones {
		m := map[string]any{"name": z.ID}
		for name, item := range zonePriceItems {
			m[name] = map[string]any{"amount": item[0], "price": item[1]}
		}
		for _, p := range st.Plans {
			if zo, ok := p.Zones[z.ID]; ok {
				m["server_plan_"+p.Name] = map[string]any{"amount": 1, "price": zo.PriceCents}
				if b, ok := simpleBackupPrices[p.Name]; ok {
					for i, kind := range []string{"dailies", "weeklies", "monthlies"} {
						m["simple_backup_"+kind+"_"+p.Name] = map[string]any{"amount": 1, "price": b[i]}
					}
				}
			}
		}
		zones = append(zones, m)
	}
	return jsonResp(http.StatusOK, map[string]any{"prices": map[string]any{"zone": zones}})
}

func (s *Server) availability(st *state, r *http.Request) response {
	wantZone := r.URL.Query().Get("zone")
	out := map[string]any{}
	for zone, plans := range st.Stock {
		if wantZone != "" && zone != wantZone {
			continue
		}
		gp := map[string]any{}
		for name, n := range plans {
			if n > 0 {
				gp[name] = map[string]any{"amount": n}
			}
		}
		out[zone] = map[string]any{"gpu_plans": gp}
	}
	return jsonResp(http.StatusOK, out)
}

func (s *Server) account() response {
	user := s.opts.Username
	if user == "" {
		user = "hydra-emulator"
	}
	return jsonResp(http.StatusOK, map[string]any{"account": map[string]any{
		"credits":  9972.2324,
		"username": user,
		"resource_limits": map[string]any{
			"cores": 200, "detached_floating_ips": 10, "gpus": 16, "memory": 1048576, "networks": 100,
			"public_ipv4": 100, "public_ipv6": 100, "storage_hdd": 10240, "storage_maxiops": 10240, "storage_ssd": 10240,
			// The newer limits, as upcloud-go-api's account fixture (TestUnmarshalAccount) shows them.
			"load_balancers": 50, "managed_object_storages": 7, "network_peerings": 100, "ntp_excess_gib": 20000,
		},
	}})
}

func (s *Server) templates(st *state, publicOnly bool) response {
	list := []any{}
	for _, t := range st.Templates {
		if publicOnly && templateAccess(t) != "public" {
			continue
		}
		list = append(list, s.templateJSON(t))
	}
	return jsonResp(http.StatusOK, map[string]any{"storages": map[string]any{"storage": list}})
}

// templatizeDuration is how long a template made by POST /storage/{uuid}/templatize stays in state
// "maintenance" (the recording answers "maintenance", and a GET 17 s later "online").
const templatizeDuration = 15 * time.Second

func templateAccess(t Template) string {
	if t.Access == "" {
		return "public"
	}
	return t.Access
}

// templateJSON is a template as the storage lists show it: public ones without tier, zone and created,
// private ones with them (as in the captured template list).
func (s *Server) templateJSON(t Template) map[string]any {
	access := templateAccess(t)
	tt := "native"
	if t.CloudInit {
		tt = "cloud-init"
	}
	state := "online"
	if s.opts.Now().Before(t.ReadyAt) {
		state = "maintenance"
	}
	m := map[string]any{
		"access": access, "license": 0, "size": t.SizeGB, "state": state, "title": t.Title,
		"type": "template", "uuid": t.UUID, "template_type": tt,
	}
	if access != "public" {
		m["tier"] = cmp.Or(t.Tier, "maxiops")
		m["zone"] = cmp.Or(t.Zone, "fi-hel2")
		if !t.Created.IsZero() {
			m["created"] = t.Created.UTC().Format(time.RFC3339)
		}
	}
	return m
}

// diskJSON is a server's disk as the storage lists show it: "maintenance" with the clone's progress
// (a string, as recorded) while its server is being made.
func (s *Server) diskJSON(st *state, d *disk) map[string]any {
	m := map[string]any{
		"access": "private", "created": d.Created.UTC().Format(time.RFC3339), "license": 0, "size": d.Size,
		"state": "online", "tier": d.Tier, "title": d.Title, "type": "normal", "uuid": d.UUID, "zone": d.Zone,
	}
	if d.Labels != nil {
		m["labels"] = storageLabelsJSON(d.Labels)
	}
	for _, v := range st.Servers {
		if v.Storage == d.UUID {
			if vs, progress := serverState(v, s.opts.Now()); vs == "maintenance" {
				m["state"], m["progress"] = "maintenance", strconv.Itoa(progress)
			}
		}
	}
	return m
}

func storageNotFound(uuid string) response {
	return errResp(http.StatusNotFound, "STORAGE_NOT_FOUND", fmt.Sprintf("The storage %s does not exist.", uuid))
}

// getStorage answers GET /storage/{uuid} for a disk or a template, with the servers it is attached to.
func (s *Server) getStorage(st *state, uuid string) response {
	var m map[string]any
	attached := []any{}
	if d, ok := st.Disks[uuid]; ok {
		m = s.diskJSON(st, d)
		if _, ok := st.Servers[d.Server]; ok {
			attached = append(attached, d.Server)
		}
		m["backups"] = map[string]any{"backup": []any{}}
	} else if t, ok := st.template(uuid); ok {
		m = s.templateJSON(t)
		if templateAccess(t) != "public" {
			delete(m, "template_type") // the recorded private template has none
		}
	} else {
		return storageNotFound(uuid)
	}
	m["servers"] = map[string]any{"server": attached}
	return jsonResp(http.StatusOK, map[string]any{"storage": m})
}

// templatize answers POST /storage/{uuid}/templatize: a disk becomes a private template of its size,
// tier and zone, in state "maintenance" for templatizeDuration (201, as recorded). The emulator does
// not check the state of the disk's server.
func (s *Server) templatize(st *state, uuid string, r *http.Request) (response, bool) {
	d, ok := st.Disks[uuid]
	if !ok {
		return storageNotFound(uuid), false
	}
	b, resp, ok := object[struct {
		Title string `json:"title"`
	}](r, "storage")
	if !ok {
		return resp, false
	}
	if b.Title == "" || len(b.Title) > 255 {
		return errResp(http.StatusBadRequest, "TITLE_INVALID", "The title is invalid."), false
	}
	now := s.opts.Now()
	t := Template{UUID: newUUID("01"), Title: b.Title, SizeGB: d.Size, Access: "private",
		Zone: d.Zone, Tier: d.Tier, Created: now, ReadyAt: now.Add(templatizeDuration)}
	if src, ok := st.template(st.templateOfDisk(uuid)); ok {
		t.CloudInit = src.CloudInit
	}
	st.Templates = append(st.Templates, t)
	m := s.templateJSON(t)
	delete(m, "template_type")
	m["servers"] = map[string]any{"server": []any{}}
	return jsonResp(http.StatusCreated, map[string]any{"storage": m}), true
}

func randHex(n int) string {
	b := make([]byte, (n+1)/2)
	_, _ = rand.Read(b)
	return strings.ToUpper(hex.EncodeToString(b))[:n]
}

func newUUID(prefix string) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	h := hex.EncodeToString(b)
	return prefix + h[2:8] + "-" + h[8:12] + "-4" + h[13:16] + "-" + "a" + h[17:20] + "-" + h[20:32]
}

func labelsJSON(ls []label) map[string]any {
	list := []any{}
	for _, l := range ls {
		list = append(list, map[string]any{"key": l.Key, "value": l.Value})
	}
	return map[string]any{"label": list}
}

// summary is a server as GET /server lists it.
func (s *Server) summary(st *state, v *server) map[string]any {
	now := s.opts.Now()
	state, progress := serverState(v, now)
	p := st.serverPlan(v)
	m := map[string]any{
		"core_number":     strconv.Itoa(p.Cores),
		"created":         v.Created.Unix(),
		"host":            v.Host,
		"hostname":        v.Hostname,
		"labels":          labelsJSON(v.Labels),
		"license":         0,
		"memory_amount":   strconv.Itoa(p.MemoryMiB),
		"plan":            v.Plan,
		"plan_ipv4_bytes": "0",
		"plan_ipv6_bytes": "0",
		"server_group":    nil,
		"simple_backup":   "no",
		"state":           state,
		"tags":            map[string]any{"tag": []any{}},
		"title":           v.Title,
		"uuid":            v.UUID,
		"zone":            v.Zone,
	}
	if state == "maintenance" {
		m["progress"] = strconv.Itoa(progress)
	}
	return m
}

// details is a server as GET /server/{uuid} and the actions answer it.
func (s *Server) details(st *state, v *server) map[string]any {
	m := s.summary(st, v)
	p := st.serverPlan(v)
	ipv4 := v.PublicIPv4
	if s.opts.SSHHost != "" {
		ipv4 = s.opts.SSHHost
	}
	m["boot_order"] = "disk"
	m["firewall"] = "off"
	m["metadata"] = yn(v.Metadata)
	m["nic_model"] = "virtio"
	m["remote_access_enabled"] = "no"
	m["remote_access_type"] = "vnc"
	if v.RemoteAccessPassword != "" {
		m["remote_access_password"] = v.RemoteAccessPassword
	}
	m["timezone"] = "UTC"
	m["video_model"] = "cirrus"
	m["ip_addresses"] = map[string]any{"ip_address": []any{
		map[string]any{"access": "utility", "address": v.UtilityIPv4, "family": "IPv4"},
		map[string]any{"access": "public", "address": v.PublicIPv6, "family": "IPv6"},
		map[string]any{"access": "public", "address": ipv4, "family": "IPv4"},
	}}
	itf := func(i int, typ, addr, fam, network string) map[string]any {
		return map[string]any{
			"bootable": "no", "index": i, "mac": fmt.Sprintf("aa:aa:aa:aa:aa:%02x", i), "network": network,
			"source_ip_filtering": "yes", "type": typ,
			"ip_addresses": map[string]any{"ip_address": []any{map[string]any{
				"address": addr, "dhcp_provided": "yes", "family": fam, "floating": "no", "release_policy": "release"}}},
		}
	}
	m["networking"] = map[string]any{"interfaces": map[string]any{"interface": []any{
		itf(1, "utility", v.UtilityIPv4, "IPv4", "03aaaaaa-aaaa-4aaa-aaaa-aaaaaaaaaa01"),
		itf(2, "public", ipv4, "IPv4", "03aaaaaa-aaaa-4aaa-aaaa-aaaaaaaaaa02"),
		itf(3, "public", v.PublicIPv6, "IPv6", "03000000-0000-4000-8046-000000000000"),
	}}}
	m["storage_devices"] = s.storageDevices(st, v)
	if p.GPUAmount > 0 {
		var devs []any
		for i := 0; i < p.GPUAmount; i++ {
			serial := fmt.Sprintf("17909250%05d", (v.Host+int64(i))%100000)
			devs = append(devs, map[string]any{"model": p.GPUModel, "type": "gpu", "serial": serial,
				"metadata": map[string]any{"serial": serial, "cores": 18176, "memory": p.GPUMemoryGB}})
		}
		m["devices"] = map[string]any{"device": devs}
	}
	return m
}

func (s *Server) listServers(st *state, r *http.Request) response {
	q := r.URL.Query()
	var list []*server
	for _, v := range st.Servers {
		if matchLabels(v.Labels, q["label"]) {
			list = append(list, v)
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].UUID < list[j].UUID })
	if st.IgnorePaging {
		q.Del("limit")
		q.Del("offset")
	}
	offset, _ := strconv.Atoi(q.Get("offset"))
	if offset < 0 {
		offset = 0
	}
	if offset > len(list) {
		offset = len(list)
	}
	list = list[offset:]
	if limit, err := strconv.Atoi(q.Get("limit")); err == nil && limit >= 0 && limit < len(list) {
		list = list[:limit]
	}
	out := []any{}
	for _, v := range list {
		out = append(out, s.summary(st, v))
	}
	return jsonResp(http.StatusOK, map[string]any{"servers": map[string]any{"server": out}})
}

// matchLabels: each filter is "key" (present) or "key=value"; all must match.
func matchLabels(ls []label, filters []string) bool {
	for _, f := range filters {
		k, v, hasV := strings.Cut(f, "=")
		found := false
		for _, l := range ls {
			if l.Key == k && (!hasV || l.Value == v) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func notFound(uuid string) response {
	return errResp(http.StatusNotFound, "SERVER_NOT_FOUND", fmt.Sprintf("The server %s does not exist.", uuid))
}

func (s *Server) getServer(st *state, uuid string) response {
	v, ok := st.Servers[uuid]
	if !ok {
		return notFound(uuid)
	}
	return jsonResp(http.StatusOK, map[string]any{"server": s.details(st, v)})
}

var hostnameRE = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$`)

// createServerBody is what the emulator reads of POST /server's "server" object. Sizes are accepted as
// numbers or strings.
type createServerBody struct {
	Zone           string      `json:"zone"`
	Title          string      `json:"title"`
	Hostname       string      `json:"hostname"`
	Plan           string      `json:"plan"`
	CoreNumber     json.Number `json:"core_number"`
	MemoryAmount   json.Number `json:"memory_amount"`
	Metadata       string      `json:"metadata"`
	StorageDevices struct {
		StorageDevice []struct {
			Action  string      `json:"action"`
			Storage string      `json:"storage"`
			Title   string      `json:"title"`
			Size    json.Number `json:"size"`
			Tier    string      `json:"tier"`
			Address string      `json:"address"`
			Type    string      `json:"type"`
		} `json:"storage_device"`
	} `json:"storage_devices"`
	LoginUser *struct {
		Username       string `json:"username"`
		CreatePassword string `json:"create_password"`
		SSHKeys        struct {
			SSHKey []string `json:"ssh_key"`
		} `json:"ssh_keys"`
	} `json:"login_user"`
	Labels *struct {
		Label []label `json:"label"`
	} `json:"labels"`
}

func (s *Server) createServer(st *state, r *http.Request) (response, bool) {
	b, resp, ok := object[createServerBody](r, "server")
	if !ok {
		return resp, false
	}
	switch {
	case b.Zone == "":
		return errResp(http.StatusBadRequest, "ZONE_MISSING", "The zone is missing."), false
	case b.Title == "":
		return errResp(http.StatusBadRequest, "TITLE_MISSING", "The title is missing."), false
	case b.Hostname == "":
		return errResp(http.StatusBadRequest, "HOSTNAME_MISSING", "The hostname is missing."), false
	case !hostnameRE.MatchString(b.Hostname) || len(b.Hostname) > 128:
		return errResp(http.StatusBadRequest, "HOSTNAME_INVALID", "The hostname is invalid."), false
	case len(b.Title) > 255:
		return errResp(http.StatusBadRequest, "TITLE_INVALID", "The title is invalid."), false
	}
	if _, ok := st.zone(b.Zone); !ok {
		return errResp(http.StatusNotFound, "ZONE_NOT_FOUND", fmt.Sprintf("The zone %s does not exist.", b.Zone)), false
	}
	var p Plan
	var cores, memMiB int
	if b.Plan == "" || b.Plan == "custom" {
		// No plan: a "custom" server of core_number cores and memory_amount MiB (default 1 and 1024, as
		// the SDK's recorded creates show), in any zone.
		cores, memMiB = 1, 1024
		if b.CoreNumber != "" {
			n, err := strconv.Atoi(b.CoreNumber.String())
			if err != nil || n < 1 || n > 64 {
				return errResp(http.StatusBadRequest, "CORE_NUMBER_INVALID", "The number of cores is invalid."), false
			}
			cores = n
		}
		if b.MemoryAmount != "" {
			n, err := strconv.Atoi(b.MemoryAmount.String())
			if err != nil || n < 1024 || n%1024 != 0 {
				return errResp(http.StatusBadRequest, "MEMORY_AMOUNT_INVALID", "The amount of memory is invalid."), false
			}
			memMiB = n
		}
		p = Plan{Name: "custom", Cores: cores, MemoryMiB: memMiB}
	} else {
		var ok bool
		p, ok = st.plan(b.Plan)
		if !ok || p.Retired {
			return errResp(http.StatusBadRequest, "PLAN_INVALID", fmt.Sprintf("The plan %q is invalid.", b.Plan)), false
		}
		if _, ok := p.Zones[b.Zone]; !ok {
			return errResp(http.StatusBadRequest, "PLAN_INVALID", fmt.Sprintf("The plan %s is not available in zone %s.", b.Plan, b.Zone)), false
		}
	}
	devs := b.StorageDevices.StorageDevice
	if len(devs) == 0 || devs[0].Action != "clone" {
		return errResp(http.StatusBadRequest, "STORAGE_DEVICE_INVALID", "The first storage device must have action clone; others may attach storages."), false
	}
	var attach []createAttach
	for _, ad := range devs[1:] {
		attach = append(attach, createAttach{Action: ad.Action, Storage: ad.Storage, Address: ad.Address, Type: ad.Type})
	}
	if resp, ok := checkCreateAttach(st, b.Zone, attach); !ok {
		return resp, false
	}
	d := devs[0]
	tmpl, ok := st.template(d.Storage)
	if !ok {
		return errResp(http.StatusNotFound, "STORAGE_NOT_FOUND", fmt.Sprintf("The storage %s does not exist.", d.Storage)), false
	}
	size, _ := strconv.Atoi(d.Size.String())
	if d.Size == "" || size == 0 {
		if p.GPUAmount > 0 || p.StorageGB == 0 {
			return errResp(http.StatusBadRequest, "SIZE_MISSING", "The plan includes no storage: the storage device size is required."), false
		}
		size = p.StorageGB
	}
	if size < tmpl.SizeGB || size > 4096 {
		return errResp(http.StatusBadRequest, "SIZE_INVALID", fmt.Sprintf("The storage size %d is invalid: the template needs at least %d GB.", size, tmpl.SizeGB)), false
	}
	tier := d.Tier
	if tier == "" {
		tier = "maxiops"
	}
	if tier != "maxiops" && tier != "standard" && tier != "hdd" {
		return errResp(http.StatusBadRequest, "STORAGE_TIER_INVALID", fmt.Sprintf("The storage tier %q is invalid.", tier)), false
	}
	metadata := strings.EqualFold(b.Metadata, "yes")
	if tmpl.CloudInit && !metadata {
		return errResp(http.StatusBadRequest, "METADATA_DISABLED_ON_CLOUD-INIT", "Metadata must be enabled for cloud-init templates."), false
	}
	var keys []string
	username := "root"
	createPassword := true // UpCloud makes a one-time password unless login_user says create_password "no"
	if b.LoginUser != nil {
		keys = b.LoginUser.SSHKeys.SSHKey
		if b.LoginUser.Username != "" {
			username = b.LoginUser.Username
		}
		createPassword = !strings.EqualFold(b.LoginUser.CreatePassword, "no")
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, "ssh-") && !strings.HasPrefix(k, "ecdsa-") && !strings.HasPrefix(k, "sk-") {
			return errResp(http.StatusBadRequest, "SSH_KEY_INVALID", "An SSH key is invalid."), false
		}
	}
	if tmpl.CloudInit && len(keys) == 0 {
		return errResp(http.StatusBadRequest, "LOGIN_USER_INVALID", "This template accepts SSH key authentication only: login_user.ssh_keys is required."), false
	}
	var labels []label
	if b.Labels != nil {
		if resp, ok := checkLabels(b.Labels.Label); !ok {
			return resp, false
		}
		labels = b.Labels.Label
	}
	if st.Faults.SoldOut || (p.GPUAmount > 0 && st.Stock[b.Zone][p.Name] <= 0) {
		return errResp(http.StatusConflict, "SERVER_RESOURCES_UNAVAILABLE",
			fmt.Sprintf("There are not enough resources available for plan %s in zone %s.", p.Name, b.Zone)), false
	}
	if p.GPUAmount > 0 {
		st.Stock[b.Zone][p.Name]--
	}
	now := s.opts.Now()
	st.Seq++
	st.CreateCount++
	boot := st.BootDuration + time.Duration(st.Faults.SlowBoot)
	failBoot := st.Faults.TakeBootFailure()
	v := &server{
		UUID: newUUID("00"), Title: b.Title, Hostname: b.Hostname, Zone: b.Zone, Plan: p.Name,
		Created: now, BootStart: now, BootDuration: boot, FailBoot: failBoot, StopDuration: st.StopDuration,
		Labels: labels, SSHKeys: keys, Username: username, Metadata: metadata,
		PublicIPv4:  fmt.Sprintf("94.237.%d.%d", (st.Seq/250)%250+1, st.Seq%250+1),
		PublicIPv6:  fmt.Sprintf("2a04:3545:1000:720:a8aa:aaff:feaa:%04x", st.Seq%0xffff),
		UtilityIPv4: fmt.Sprintf("10.6.%d.%d", (st.Seq/250)%250, st.Seq%250+1),
		Host:        5872304771 + st.Seq,
		Storage:     newUUID("01"), StorageSize: size, StorageTier: tier, StorageTitle: d.Title, Template: tmpl.UUID,
		Cores: cores, MemoryMiB: memMiB, RemoteAccessPassword: randHex(8),
	}
	if v.StorageTitle == "" {
		v.StorageTitle = "Storage for " + v.Hostname
	}
	st.Servers[v.UUID] = v
	st.Disks[v.Storage] = &disk{UUID: v.Storage, Title: v.StorageTitle, Zone: v.Zone, Size: size, Tier: tier, Created: now,
		Server: v.UUID, Address: "virtio:0"}
	attachAtCreate(st, v, attach)
	if st.Faults.TakeLostCreate() {
		return errResp(http.StatusInternalServerError, "INTERNAL_ERROR", "Internal server error."), true
	}
	d2 := s.details(st, v)
	d2["username"] = username
	if createPassword {
		d2["password"] = randHex(12) // shown once, never stored
	}
	return jsonResp(http.StatusAccepted, map[string]any{"server": d2}), true
}

// checkLabels refuses labels UpCloud would refuse: empty or over-long keys, keys starting with "_"
// (reserved for UpCloud's own labels), over-long values, and one key twice.
func checkLabels(ls []label) (response, bool) {
	seen := map[string]bool{}
	for _, l := range ls {
		if l.Key == "" || strings.HasPrefix(l.Key, "_") || len(l.Key) > 32 || len(l.Value) > 255 || seen[l.Key] {
			return errResp(http.StatusBadRequest, "LABEL_INVALID", fmt.Sprintf("The label %q is invalid.", l.Key)), false
		}
		seen[l.Key] = true
	}
	return response{}, true
}

// modifyServerBody is what the emulator reads of PUT /server/{uuid}'s "server" object (the SDK's
// ModifyServerRequest).
type modifyServerBody struct {
	Title    *string `json:"title"`
	Hostname *string `json:"hostname"`
	Metadata *string `json:"metadata"`
	Labels   *struct {
		Label []label `json:"label"`
	} `json:"labels"`
	Plan         *string         `json:"plan"`
	CoreNumber   json.RawMessage `json:"core_number"`
	MemoryAmount json.RawMessage `json:"memory_amount"`
}

// modifyServer changes a server's title, hostname, metadata flag and labels (PUT /server/{uuid}, as in
// the recorded server.modify.202.json): labels given replace the whole list, and the answer is 202
// with the server's details. These can be changed in any state. A change of plan, cores or memory
// needs a stopped server (SERVER_STATE_ILLEGAL otherwise) and is not emulated beyond that check.
// Other fields (remote_access_enabled, firewall, ...) are accepted and ignored.
func (s *Server) modifyServer(st *state, uuid string, r *http.Request) (response, bool) {
	v, ok := st.Servers[uuid]
	if !ok {
		return notFound(uuid), false
	}
	b, resp, ok := object[modifyServerBody](r, "server")
	if !ok {
		return resp, false
	}
	if (b.Plan != nil && *b.Plan != v.Plan) || len(b.CoreNumber) > 0 || len(b.MemoryAmount) > 0 {
		if state, _ := serverState(v, s.opts.Now()); state != "stopped" {
			return errResp(http.StatusConflict, "SERVER_STATE_ILLEGAL", fmt.Sprintf("The server %s is in state %s; its plan can only be changed while it is stopped.", uuid, state)), false
		}
		return errResp(http.StatusBadRequest, "PLAN_INVALID", "Changing a server's plan is not supported by this emulator."), false
	}
	switch {
	case b.Title != nil && (*b.Title == "" || len(*b.Title) > 255):
		return errResp(http.StatusBadRequest, "TITLE_INVALID", "The title is invalid."), false
	case b.Hostname != nil && (!hostnameRE.MatchString(*b.Hostname) || len(*b.Hostname) > 128):
		return errResp(http.StatusBadRequest, "HOSTNAME_INVALID", "The hostname is invalid."), false
	case b.Metadata != nil && !strings.EqualFold(*b.Metadata, "yes") && !strings.EqualFold(*b.Metadata, "no"):
		return errResp(http.StatusBadRequest, "METADATA_INVALID", "The metadata value is invalid."), false
	}
	if b.Labels != nil {
		if resp, ok := checkLabels(b.Labels.Label); !ok {
			return resp, false
		}
	}
	if b.Title != nil {
		v.Title = *b.Title
	}
	if b.Hostname != nil {
		v.Hostname = *b.Hostname
	}
	if b.Metadata != nil {
		v.Metadata = strings.EqualFold(*b.Metadata, "yes")
	}
	if b.Labels != nil {
		v.Labels = append([]label(nil), b.Labels.Label...)
	}
	return jsonResp(http.StatusAccepted, map[string]any{"server": s.details(st, v)}), true
}

func (s *Server) stopServer(st *state, uuid string, r *http.Request) (response, bool) {
	v, ok := st.Servers[uuid]
	if !ok {
		return notFound(uuid), false
	}
	var body struct {
		StopServer *struct {
			StopType string          `json:"stop_type"`
			Timeout  json.RawMessage `json:"timeout"`
		} `json:"stop_server"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil && !errors.Is(err, io.EOF) {
		return errResp(http.StatusBadRequest, "STOP_SERVER_INVALID", "The request body is invalid."), false
	}
	if body.StopServer != nil && body.StopServer.StopType != "" && body.StopServer.StopType != "soft" && body.StopServer.StopType != "hard" {
		return errResp(http.StatusBadRequest, "STOP_TYPE_INVALID", "The stop type is invalid."), false
	}
	state, _ := serverState(v, s.opts.Now())
	if state != "started" {
		return errResp(http.StatusConflict, "SERVER_STATE_ILLEGAL", fmt.Sprintf("The server %s is in state %s, which does not allow this operation.", uuid, state)), false
	}
	if v.StopAt != nil {
		// Already stopping: answer with the current (still started) state.
		return jsonResp(http.StatusOK, map[string]any{"server": s.details(st, v)}), false
	}
	answer := s.details(st, v) // the old state: stop is asynchronous
	now := s.opts.Now()
	v.StopAt = &now
	v.StopDuration = st.StopDuration
	return jsonResp(http.StatusOK, map[string]any{"server": answer}), true
}

func (s *Server) startServer(st *state, uuid string) (response, bool) {
	v, ok := st.Servers[uuid]
	if !ok {
		return notFound(uuid), false
	}
	state, _ := serverState(v, s.opts.Now())
	if state != "stopped" {
		return errResp(http.StatusConflict, "SERVER_STATE_ILLEGAL", fmt.Sprintf("The server %s is in state %s, which does not allow this operation.", uuid, state)), false
	}
	v.StopAt = nil
	return jsonResp(http.StatusOK, map[string]any{"server": s.details(st, v)}), true
}

func (s *Server) deleteServer(st *state, uuid string, r *http.Request) (response, bool) {
	v, ok := st.Servers[uuid]
	if !ok {
		return notFound(uuid), false
	}
	state, _ := serverState(v, s.opts.Now())
	if state != "stopped" && state != "error" {
		return errResp(http.StatusConflict, "SERVER_STATE_ILLEGAL", fmt.Sprintf("The server %s is in state %s; only a stopped server can be deleted.", uuid, state)), false
	}
	delete(st.Servers, uuid)
	s.releaseDisks(st, uuid, r.URL.Query().Get("storages"))
	if p, ok := st.plan(v.Plan); ok && p.GPUAmount > 0 {
		if st.Stock[v.Zone] == nil {
			st.Stock[v.Zone] = map[string]int{}
		}
		st.Stock[v.Zone][p.Name]++
	}
	return response{status: http.StatusNoContent}, true
}
