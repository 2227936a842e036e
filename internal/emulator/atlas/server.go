// Package atlas is a local emulator of the Atlas API v1 (internal/backends/atlas/API.md): offers,
// instances (create idempotent by name with 409 already_exists, a price cap, labels; get, list by name
// prefix with page tokens, label updates, delete), clusters placed whole or not at all on a fabric pod
// or a region's network (clusters.go), and {"error":{"code","message"}} errors.
//
// Instance status follows wall-clock timestamps kept in the state (created_at + boot duration), so it
// survives restarts; with Options.StateDir the whole cloud lives in a JSON file shared by processes.
// The emulator also serves the admin surface every emulator shares (emukit.AdminHandler under
// emukit.AdminPath, no credentials): its faults and its stats.
package atlas

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/atlas/atlasapi"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// Offer is one catalog entry: an instance type in a region with its list price and free capacity, as
// GET /v1/offers answers it (the wire type hydra's client shares). Available is how many more
// instances can start; created instances take one, terminated ones give it back.
type Offer = atlasapi.Offer

// DefaultCatalog is a small in-house fleet in two regions, with one sold-out type and one GPU hydra
// does not rent (A10).
func DefaultCatalog() []Offer {
	return []Offer{
		{InstanceType: "l40s.1x", Region: "ams1", Spec: atlasapi.Spec{GPUModel: "NVIDIA L40S", GPUCount: 1, GPUMemoryGB: 48, VCPUs: 16, MemoryGB: 128, DiskGB: 500, PricePerHour: 1.6, Currency: "USD"}, Available: 4},
		{InstanceType: "l40s.4x", Region: "ams1", Spec: atlasapi.Spec{GPUModel: "NVIDIA L40S", GPUCount: 4, GPUMemoryGB: 48, VCPUs: 64, MemoryGB: 512, DiskGB: 2000, PricePerHour: 6.4, Currency: "USD"}, Available: 1},
		{InstanceType: "h100.8x", Region: "ams1", Spec: atlasapi.Spec{GPUModel: "NVIDIA H100 80GB HBM3", GPUCount: 8, GPUMemoryGB: 80, VCPUs: 192, MemoryGB: 2048, DiskGB: 8000, PricePerHour: 24, Currency: "USD"}, Available: 1},
		{InstanceType: "a100.1x", Region: "fra1", Spec: atlasapi.Spec{GPUModel: "NVIDIA A100 80GB", GPUCount: 1, GPUMemoryGB: 80, VCPUs: 24, MemoryGB: 240, DiskGB: 1000, PricePerHour: 1.8, Currency: "USD"}, Available: 2},
		{InstanceType: "l4.1x", Region: "fra1", Spec: atlasapi.Spec{GPUModel: "NVIDIA L4", GPUCount: 1, GPUMemoryGB: 24, VCPUs: 8, MemoryGB: 64, DiskGB: 250, PricePerHour: 0.7, Currency: "USD"}, Available: 6},
		{InstanceType: "rtx6000ada.2x", Region: "fra1", Spec: atlasapi.Spec{GPUModel: "NVIDIA RTX 6000 Ada Generation", GPUCount: 2, GPUMemoryGB: 48, VCPUs: 32, MemoryGB: 256, DiskGB: 1000, PricePerHour: 2.2, Currency: "USD"}, Available: 0},
		{InstanceType: "a10.1x", Region: "fra1", Spec: atlasapi.Spec{GPUModel: "NVIDIA A10", GPUCount: 1, GPUMemoryGB: 24, VCPUs: 8, MemoryGB: 64, DiskGB: 250, PricePerHour: 0.5, Currency: "USD"}, Available: 3},
	}
}

// DefaultHostKey is the SSH host key emulated instances report unless Options.HostKey is set.
const DefaultHostKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEmulatedAtlasHostKeyNotARealKey0000000000"

// DefaultToken is the bearer token the emulator accepts when Options.Tokens is empty.
const DefaultToken = "atlas-test-token"

// Options configure an emulator.
type Options struct {
	// Options are the options every emulator has (state directory, boot duration, clock).
	// Options.BootDuration is how long an instance takes from create to active (default 20s): provisioning for
	// the first third, then booting (no ssh), then active.
	simulation.Options
	// Tokens are the accepted bearer tokens (default: "atlas-test-token").
	Tokens []string
	// Catalog is the initial fleet (default: DefaultCatalog()). A state dir that already holds a state
	// keeps its own catalog.
	Catalog []Offer
	// DeleteDuration is how long an instance stays terminating (default 3s).
	DeleteDuration time.Duration
	// TerminatedRetention is how long a terminated instance stays readable before GET answers 404
	// (default 1h).
	TerminatedRetention time.Duration
	// SSH is reported for active instances (default 127.0.0.1, port 22, user ubuntu).
	SSH emukit.SSH
	// HostKey is the host key active instances report (default DefaultHostKey).
	HostKey string
	// MaxLimit is the largest list page (default 500).
	MaxLimit int
	// Fabrics are the InfiniBand pods whose nodes only clusters get (default DefaultFabrics()).
	Fabrics []Fabric
	// PrivateNet is the first two octets of the nodes' private addresses, <PrivateNet>.<cluster>.<node>
	// (default "10.40"; "127.100" gives loopback addresses a local sshd can listen on).
	PrivateNet string
}

// Faults are the armed faults: the shared vocabulary every emulator understands (simulation.Faults) and
// Atlas's own. They live in the state, so with a StateDir every process sharing the directory sees
// them; counters go down as they fire. On Atlas the shared ones answer as follows: RateLimited with
// 429 rate_limited, ServerErrors with 500 internal, LoseCreateResponses with 503 unavailable after the
// create, BootFailures with status failed, SoldOut with 422 no_capacity on every create.
type Faults struct {
	simulation.Faults
	// QuotaExceeded answers creates with 403 quota_exceeded while set.
	QuotaExceeded bool `json:"quota_exceeded,omitempty"`
	// SlowBoot is added to the boot duration of instances created while it is set.
	SlowBoot simulation.Duration `json:"slow_boot,omitempty"`
}

type instRec struct {
	ID           string     `json:"id"`
	Name         string     `json:"name"`
	InstanceType string     `json:"instance_type"`
	Region       string     `json:"region"`
	GPUModel     string     `json:"gpu_model"`
	GPUCount     int        `json:"gpu_count"`
	Price        float64    `json:"price"`
	Keys         []string   `json:"ssh_public_keys"`
	CreatedAt    time.Time  `json:"created_at"`
	Boot         int64      `json:"boot_ns"`
	Fail         bool       `json:"fail"`
	DeletedAt    *time.Time `json:"deleted_at,omitempty"`
	// Labels are the instance's labels (API.md), as the client set them.
	Labels map[string]string `json:"labels,omitempty"`
	// ClusterID and PrivateIP are set on a cluster's nodes (clusters.go).
	ClusterID string `json:"cluster_id,omitempty"`
	PrivateIP string `json:"private_ip,omitempty"`
}

type state struct {
	Catalog     []Offer    `json:"catalog"`
	Instances   []*instRec `json:"instances"`
	Faults      Faults     `json:"faults"`
	CreateCount int        `json:"create_count"`
	// Fabrics, Clusters and ClusterSeq are the clusters' part of the cloud (clusters.go).
	Fabrics    []Fabric      `json:"fabrics"`
	Clusters   []*clusterRec `json:"clusters"`
	ClusterSeq int           `json:"cluster_seq"`
}

// Server is the emulator; it is an http.Handler serving the API and, under emukit.AdminPath, the
// admin surface.
type Server struct {
	// The Server is a simulation.Admin: SetFaults and Faults replace and read the faults of the shared
	// vocabulary (Atlas's own, QuotaExceeded and SlowBoot, stay as they are); Stats counts the
	// instances ever created and lists the live ones, neither terminating nor terminated.
	*emukit.SeededServer[state]
	opts Options
}

var _ simulation.Admin = (*Server)(nil)

// New builds an emulator.
func New(opts Options) *Server {
	opts.Tokens = emukit.Keys(opts.Tokens, DefaultToken)
	opts.Catalog = emukit.Seed(opts.Catalog, DefaultCatalog)
	opts.Options = opts.WithDefaults(20 * time.Second)
	opts.DeleteDuration = emukit.Positive(opts.DeleteDuration, 3*time.Second)
	opts.TerminatedRetention = emukit.Positive(opts.TerminatedRetention, time.Hour)
	opts.SSH = opts.SSH.WithDefaults("ubuntu")
	opts.HostKey = cmp.Or(opts.HostKey, DefaultHostKey)
	opts.MaxLimit = emukit.Positive(opts.MaxLimit, 500)
	opts.Fabrics = emukit.Seed(opts.Fabrics, DefaultFabrics)
	opts.PrivateNet = cmp.Or(opts.PrivateNet, "10.40")
	catalog := append([]Offer(nil), opts.Catalog...)
	fabrics := append([]Fabric(nil), opts.Fabrics...)
	s := &Server{opts: opts}
	s.SeededServer = emukit.NewSeededServer(opts.StateDir, func() *state {
		return &state{Catalog: append([]Offer(nil), catalog...), Fabrics: append([]Fabric(nil), fabrics...)}
	}, func(st *state) *simulation.Faults { return &st.Faults.Faults },
		func(st *state) (int, []simulation.Machine) {
			return st.CreateCount, emukit.LiveMachines(st.Instances, func(in *instRec) (simulation.Machine, bool) {
				return simulation.Machine{ID: in.ID, Name: in.Name}, in.DeletedAt == nil
			})
		}, s.serveAPI)
	return s
}

// SetAllFaults replaces every armed fault, Atlas's own included.
func (s *Server) SetAllFaults(f Faults) error {
	return s.Store.With(true, func(st *state) error { st.Faults = f; return nil })
}

// AllFaults returns every armed fault, Atlas's own included.
func (s *Server) AllFaults() (Faults, error) {
	var f Faults
	err := s.Store.With(false, func(st *state) error { f = st.Faults; return nil })
	return f, err
}

// InstanceInfo is an admin view of one instance.
type InstanceInfo struct {
	ID, Name, InstanceType, Region, Status string
	SSHPublicKeys                          []string
	Labels                                 map[string]string
}

// Instances lists the instances that are not terminated.
func (s *Server) Instances() []InstanceInfo {
	var out []InstanceInfo
	now := s.opts.Now()
	_ = s.Store.With(false, func(st *state) error {
		for _, in := range st.Instances {
			if v := s.status(in, now); v != "terminated" {
				out = append(out, InstanceInfo{ID: in.ID, Name: in.Name, InstanceType: in.InstanceType, Region: in.Region, Status: v,
					SSHPublicKeys: in.Keys, Labels: maps.Clone(in.Labels)})
			}
		}
		return nil
	})
	return out
}

// SetAvailable sets the free capacity of one instance type in one region.
func (s *Server) SetAvailable(instanceType, region string, n int) error {
	return s.Store.With(true, func(st *state) error {
		for i := range st.Catalog {
			if st.Catalog[i].InstanceType == instanceType && st.Catalog[i].Region == region {
				st.Catalog[i].Available = n
				return nil
			}
		}
		return fmt.Errorf("no %s in %s", instanceType, region)
	})
}

// Catalog returns the current fleet.
func (s *Server) Catalog() []Offer {
	var out []Offer
	_ = s.Store.With(false, func(st *state) error { out = append(out, st.Catalog...); return nil })
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) { emukit.WriteJSON(w, status, v, nil) }

func apiError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

// serveAPI answers one API request.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	if !emukit.Gate(w, r, s.WithFaults, http.StatusInternalServerError, func(w http.ResponseWriter, status int, err error) {
		switch {
		case err != nil:
			apiError(w, http.StatusInternalServerError, "internal", "emulator state: "+err.Error())
		case status == http.StatusTooManyRequests:
			apiError(w, http.StatusTooManyRequests, "rate_limited", "too many requests")
		default:
			apiError(w, http.StatusInternalServerError, "internal", "internal error")
		}
	}) {
		return
	}
	if !emukit.BearerIn(r, s.opts.Tokens) {
		apiError(w, http.StatusUnauthorized, "unauthorized", "missing or invalid token")
		return
	}
	path := strings.TrimRight(r.URL.Path, "/")
	notAllowed := func() { apiError(w, http.StatusMethodNotAllowed, "invalid", "method not allowed") }
	// The endpoints by path and method; an instance's or a cluster's own path is its collection's
	// path, then /<id>.
	collections := map[string]map[string]func(){
		"/v1/offers":         {http.MethodGet: func() { s.offers(w, r) }},
		"/v1/instances":      {http.MethodGet: func() { s.list(w, r) }, http.MethodPost: func() { s.create(w, r) }},
		"/v1/cluster-offers": {http.MethodGet: func() { s.clusterOffers(w) }},
		"/v1/clusters":       {http.MethodGet: func() { s.listClusters(w, r) }, http.MethodPost: func() { s.createCluster(w, r) }},
	}
	items := map[string]func(id string) map[string]func(){
		"/v1/instances": func(id string) map[string]func() {
			return map[string]func(){
				http.MethodGet:    func() { s.get(w, id) },
				http.MethodPatch:  func() { s.patch(w, r, id) },
				http.MethodDelete: func() { s.delete(w, id) },
			}
		},
		"/v1/clusters": func(id string) map[string]func() {
			return map[string]func(){
				http.MethodGet:    func() { s.getCluster(w, id) },
				http.MethodDelete: func() { s.deleteCluster(w, id) },
			}
		},
	}
	if h, ok := collections[path]; ok {
		emukit.ByMethod(r.Method, h, notAllowed)
		return
	}
	if i := strings.LastIndex(path, "/"); i > 0 && items[path[:i]] != nil {
		emukit.ByMethod(r.Method, items[path[:i]](path[i+1:]), notAllowed)
		return
	}
	apiError(w, http.StatusNotFound, "not_found", "no such endpoint")
}

func (s *Server) offers(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	out := []Offer{}
	_ = s.Store.With(false, func(st *state) error {
		for _, o := range st.Catalog {
			if v := q.Get("region"); v != "" && v != o.Region {
				continue
			}
			if v := q.Get("gpu_model"); v != "" && v != o.GPUModel {
				continue
			}
			if o.Currency == "" {
				o.Currency = "USD"
			}
			out = append(out, o)
		}
		return nil
	})
	writeJSON(w, http.StatusOK, map[string]any{"offers": out})
}

func (s *Server) status(in *instRec, now time.Time) string {
	if in.DeletedAt != nil {
		if now.Sub(*in.DeletedAt) < s.opts.DeleteDuration {
			return "terminating"
		}
		return "terminated"
	}
	age, boot := now.Sub(in.CreatedAt), time.Duration(in.Boot)
	switch {
	case in.Fail && age >= boot/2:
		return "failed"
	case age < boot/3:
		return "provisioning"
	case age < boot:
		return "booting"
	}
	return "active"
}

func (s *Server) purged(in *instRec, now time.Time) bool {
	return in.DeletedAt != nil && now.Sub(*in.DeletedAt) >= s.opts.DeleteDuration+s.opts.TerminatedRetention
}

func (s *Server) render(in *instRec, now time.Time) map[string]any {
	st := s.status(in, now)
	msg := ""
	var ssh, hostKey any
	switch st {
	case "failed":
		msg = "hardware check failed: GPU did not initialise"
	case "active":
		ssh = map[string]any{"host": s.opts.SSH.Host, "port": s.opts.SSH.Port, "user": s.opts.SSH.User}
		hostKey = s.opts.HostKey
	}
	updated := in.CreatedAt
	if st == "active" {
		updated = in.CreatedAt.Add(time.Duration(in.Boot))
	}
	if in.DeletedAt != nil {
		updated = *in.DeletedAt
	}
	labels := maps.Clone(in.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	out := map[string]any{
		"id": in.ID, "name": in.Name, "status": st, "status_message": msg,
		"instance_type": in.InstanceType, "region": in.Region, "gpu_model": in.GPUModel, "gpu_count": in.GPUCount,
		"price_per_hour": in.Price, "labels": labels, "ssh": ssh, "host_key": hostKey,
		"created_at": in.CreatedAt.UTC().Format(time.RFC3339), "updated_at": updated.UTC().Format(time.RFC3339),
	}
	if in.ClusterID != "" {
		out["cluster_id"], out["private_ip"] = in.ClusterID, in.PrivateIP
	}
	return out
}

func (s *Server) find(st *state, id string) *instRec {
	return emukit.Find(st.Instances, func(in *instRec) bool { return in.ID == id })
}

// answerInstance answers out, an instance as rendered, with status, or Atlas's 404 for id when there is
// none.
func answerInstance(w http.ResponseWriter, id string, status int, out map[string]any) {
	if out == nil {
		apiError(w, http.StatusNotFound, "not_found", "no instance "+id)
		return
	}
	writeJSON(w, status, out)
}

func (s *Server) get(w http.ResponseWriter, id string) {
	now := s.opts.Now()
	var out map[string]any
	_ = s.Store.With(false, func(st *state) error {
		if in := s.find(st, id); in != nil && !s.purged(in, now) {
			out = s.render(in, now)
		}
		return nil
	})
	answerInstance(w, id, http.StatusOK, out)
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	l, ok := s.listing(w, r)
	if !ok {
		return
	}
	now := s.opts.Now()
	var recs []*instRec
	next := ""
	_ = s.Store.With(false, func(st *state) error {
		recs, next = pageOf(l, st.Instances, func(in *instRec) (string, string) { return in.Name, in.ID },
			func(in *instRec) bool { return s.purged(in, now) },
			func(in *instRec) bool { return s.status(in, now) == "terminated" })
		return nil
	})
	out := []any{}
	for _, in := range recs {
		out = append(out, s.render(in, now))
	}
	writeJSON(w, http.StatusOK, map[string]any{"instances": out, "next_page_token": next})
}

var (
	nameRE     = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)
	labelKeyRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`)
)

// Label limits (API.md).
const (
	maxLabels        = 64
	maxLabelValueLen = 255
)

// checkLabels returns why labels break the rules ("" when they do not).
func checkLabels(labels map[string]string) string {
	if len(labels) > maxLabels {
		return fmt.Sprintf("labels: at most %d labels", maxLabels)
	}
	for k, v := range labels {
		if !labelKeyRE.MatchString(k) {
			return fmt.Sprintf("labels: key %q must be 1-63 lower-case letters, digits, '-', '_' and '.', starting with a letter or digit", k)
		}
		if len(v) > maxLabelValueLen {
			return fmt.Sprintf("labels: the value of %q is longer than %d characters", k, maxLabelValueLen)
		}
	}
	return ""
}

func newID() string {
	return "i-" + simulation.RandomHex(6)
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		apiError(w, http.StatusBadRequest, "invalid", "cannot read body")
		return
	}
	var b atlasapi.CreateRequest
	if err := json.Unmarshal(raw, &b); err != nil {
		apiError(w, http.StatusBadRequest, "invalid", "malformed JSON: "+err.Error())
		return
	}
	switch {
	case !nameRE.MatchString(b.Name):
		apiError(w, http.StatusBadRequest, "invalid", "name must be 1-63 lower-case letters, digits and '-', starting with a letter")
		return
	case b.MaxPricePerHour < 0:
		apiError(w, http.StatusBadRequest, "invalid", "max_price_per_hour must not be negative")
		return
	}
	if msg := cmp.Or(checkKeys(b.SSHPublicKeys), checkLabels(b.Labels)); msg != "" {
		apiError(w, http.StatusBadRequest, "invalid", msg)
		return
	}
	now := s.opts.Now()
	var (
		ref      refusal
		existing map[string]any
		rec      *instRec
		lost     bool
	)
	err = s.Store.With(true, func(st *state) error {
		for _, in := range st.Instances {
			if in.Name == b.Name && s.status(in, now) != "terminated" {
				ref = refusal{http.StatusConflict, "already_exists", "an instance named " + b.Name + " already exists"}
				existing = s.render(in, now)
				return nil
			}
		}
		idx := -1
		for i, o := range st.Catalog {
			if o.InstanceType == b.InstanceType && o.Region == b.Region {
				idx = i
			}
		}
		if idx < 0 {
			ref = refusal{http.StatusBadRequest, "invalid", fmt.Sprintf("unknown instance type %q in region %q", b.InstanceType, b.Region)}
			return nil
		}
		f := &st.Faults
		if f.QuotaExceeded {
			ref = refusal{http.StatusForbidden, "quota_exceeded", "the project's GPU quota would be exceeded"}
			return nil
		}
		o := &st.Catalog[idx]
		if f.SoldOut || o.Available <= 0 {
			ref = refusal{http.StatusUnprocessableEntity, "no_capacity", fmt.Sprintf("no %s capacity left in %s", b.InstanceType, b.Region)}
			return nil
		}
		if b.MaxPricePerHour > 0 && o.PricePerHour > b.MaxPricePerHour+1e-9 {
			ref = refusal{http.StatusUnprocessableEntity, "price_above_max", fmt.Sprintf("%s in %s costs $%v/h, above max_price_per_hour $%v/h", b.InstanceType, b.Region, o.PricePerHour, b.MaxPricePerHour)}
			return nil
		}
		o.Available--
		rec = &instRec{ID: newID(), Name: b.Name, InstanceType: o.InstanceType, Region: o.Region, GPUModel: o.GPUModel, GPUCount: o.GPUCount,
			Price: o.PricePerHour, Keys: b.SSHPublicKeys, CreatedAt: now.UTC(), Boot: int64(s.opts.BootDuration + time.Duration(f.SlowBoot)),
			Labels: maps.Clone(b.Labels)}
		if len(rec.Labels) == 0 {
			rec.Labels = nil
		}
		rec.Fail = f.TakeBootFailure()
		lost = f.TakeLostCreate()
		st.Instances = append(st.Instances, rec)
		st.CreateCount++
		return nil
	})
	var have, created any
	if existing != nil {
		have = existing
	}
	if rec != nil {
		created = s.render(rec, now)
	}
	answerCreate(w, err, ref, "instance", have, lost, created)
}

// patch merges labels into an instance's (API.md "Update labels").
func (s *Server) patch(w http.ResponseWriter, r *http.Request, id string) {
	var b struct {
		Labels map[string]*string `json:"labels"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&b); err != nil {
		apiError(w, http.StatusBadRequest, "invalid", "malformed JSON: "+err.Error())
		return
	}
	now := s.opts.Now()
	var (
		out     map[string]any
		invalid string
	)
	err := s.Store.With(true, func(st *state) error {
		in := s.find(st, id)
		if in == nil || s.status(in, now) == "terminated" {
			return nil
		}
		labels := maps.Clone(in.Labels)
		if labels == nil {
			labels = map[string]string{}
		}
		for k, v := range b.Labels {
			if v == nil {
				delete(labels, k)
			} else {
				labels[k] = *v
			}
		}
		if invalid = checkLabels(labels); invalid != "" {
			return errInvalid
		}
		in.Labels = labels
		if len(labels) == 0 {
			in.Labels = nil
		}
		out = s.render(in, now)
		return nil
	})
	switch {
	case invalid != "":
		apiError(w, http.StatusBadRequest, "invalid", invalid)
	case err != nil:
		apiError(w, http.StatusInternalServerError, "internal", err.Error())
	case out == nil:
		apiError(w, http.StatusNotFound, "not_found", "no instance "+id)
	default:
		writeJSON(w, http.StatusOK, out)
	}
}

// errInvalid makes store.With drop a change that breaks the rules.
var errInvalid = errors.New("invalid")

func (s *Server) delete(w http.ResponseWriter, id string) {
	now := s.opts.Now()
	var (
		out       map[string]any
		inCluster string
	)
	_ = s.Store.With(true, func(st *state) error {
		in := s.find(st, id)
		if in == nil {
			return nil
		}
		switch s.status(in, now) {
		case "terminated":
			return nil
		case "terminating":
			out = s.render(in, now)
			return nil
		}
		if in.ClusterID != "" {
			inCluster = in.ClusterID
			return nil
		}
		t := now.UTC()
		in.DeletedAt = &t
		for i := range st.Catalog {
			if st.Catalog[i].InstanceType == in.InstanceType && st.Catalog[i].Region == in.Region {
				st.Catalog[i].Available++
			}
		}
		out = s.render(in, now)
		return nil
	})
	if inCluster != "" {
		apiError(w, http.StatusConflict, "in_cluster", fmt.Sprintf("instance %s is a node of cluster %s; delete the cluster", id, inCluster))
		return
	}
	answerInstance(w, id, http.StatusAccepted, out)
}
