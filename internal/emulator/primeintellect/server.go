// Package primeintellect is a local emulator of the Prime Intellect compute API (/api/v1): paginated
// and legacy availability, the GPU summary, disk availability, pods (create, get, list, status, delete), disks
// (create, get, list, rename, delete; attached to pods at their create, see disks.go) and SSH keys,
// with the quirks hydra's client must survive: {detail} errors, isSpot null instead of false,
// community offers priced by communityPrice, ACTIVE pods without an sshConnection (then `[null]`),
// cloudIds that change, empty availability answers, and a 400 when maxPrice is null.
//
// Some offers carry null dataCenter and country (and isSpot is null on every on-demand offer), as in
// the real captures.
//
// Pod status follows wall-clock timestamps kept in the state (created_at + boot duration), so it
// survives restarts; with Options.StateDir the whole cloud lives in a JSON file shared by processes.
//
// Faults use the shared vocabulary (simulation.Faults) and the shared admin surface (simulation.Admin, served
// over HTTP under emukit.AdminPath); the faults only Prime has are CloudFaults.
package primeintellect

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// DefaultAPIKey is the API key the emulator accepts when Options.APIKeys is empty.
const DefaultAPIKey = "pi-test-key"

// Options configure an emulator.
type Options struct {
	// Options are the options every emulator has (state directory, boot duration, clock).
	// Options.BootDuration is how long a pod takes from create to reachable (default 20s). The pod is
	// PROVISIONING for the first quarter, ACTIVE with installation running and no sshConnection until
	// half, ACTIVE/FINISHED with sshConnection [null] until the end, then ACTIVE with an SSH connection.
	simulation.Options
	// APIKeys are the accepted API keys (default: "pi-test-key").
	APIKeys []string
	// Catalog is the initial availability (default: DefaultCatalog()). A state dir that already
	// holds a state keeps its own catalog.
	Catalog []Item
	// DeleteDuration is how long a pod stays DELETING (default 3s).
	DeleteDuration time.Duration
	// TerminatedRetention is how long a terminated pod still answers GET /pods/{id} with TERMINATED
	// before it answers 404 (default 1 minute).
	TerminatedRetention time.Duration
	// SSH makes up sshConnection (default 127.0.0.1, port 22, user root).
	SSH emukit.SSH
	// SSHAsList sends sshConnection as a one-element list instead of a string.
	SSHAsList bool
	// AllowNullMaxPrice accepts creates without a numeric maxPrice (by default they get a 400, as some
	// upstream providers answer).
	AllowNullMaxPrice bool
	// LegacyOnly answers 404 on /availability/gpus, like the API before Nov 2025: clients must read
	// the legacy keyed form at /availability/.
	LegacyOnly bool
	// MaxPageSize is the largest page_size accepted (default 100); larger ones get a 422.
	MaxPageSize int
	// DiskProvisionDuration is how long a new disk stays PROVISIONING (default BootDuration/4).
	DiskProvisionDuration time.Duration
	// DiskMountPath is where a pod's first disk is mounted (default DefaultDiskMountPath); later ones
	// get "-2", "-3", ... appended (the emulator's choice: no document says).
	DiskMountPath string
}

// CloudFaults are the failures only Prime Intellect has, switched on at runtime beside the shared
// simulation.Faults; counters go down as they fire. They persist in the state.
type CloudFaults struct {
	// EmptyAvailability answers that many availability requests with an empty list (a flaky replica).
	EmptyAvailability int `json:"empty_availability,omitempty"`
	// SlowBoot is added to the boot duration of pods created while it is set.
	SlowBoot simulation.Duration `json:"slow_boot,omitempty"`
	// PaymentRequired answers creates with 402 (no balance) while set.
	PaymentRequired bool `json:"payment_required,omitempty"`
}

type podRec struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	CloudID    string     `json:"cloud_id"`
	GPUType    string     `json:"gpu_type"`
	Socket     string     `json:"socket"`
	GPUCount   int        `json:"gpu_count"`
	Provider   string     `json:"provider"`
	DataCenter string     `json:"data_center"`
	Slot       string     `json:"slot"`
	Price      float64    `json:"price"`
	MaxPrice   float64    `json:"max_price"`
	Spot       bool       `json:"spot"`
	DiskGB     int        `json:"disk_gb"`
	VCPUs      int        `json:"vcpus"`
	MemoryGB   int        `json:"memory_gb"`
	Image      string     `json:"image"`
	SSHKeyID   string     `json:"ssh_key_id"`
	Disks      []podDisk  `json:"disks,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	Boot       int64      `json:"boot_ns"`
	Fail       bool       `json:"fail"`
	DeletedAt  *time.Time `json:"deleted_at,omitempty"`
}

type keyRec struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	PublicKey string    `json:"public_key"`
	CreatedAt time.Time `json:"created_at"`
}

type state struct {
	Catalog     []Item            `json:"catalog"`
	Pods        []*podRec         `json:"pods"`
	Keys        []keyRec          `json:"ssh_keys"`
	Disks       []*diskRec        `json:"disks"`
	Faults      simulation.Faults `json:"faults"`
	CloudFaults CloudFaults       `json:"cloud_faults"`
	CreateCount int               `json:"create_count"`
	Flips       int               `json:"flips"`
	Creates     []json.RawMessage `json:"creates"`
}

// Server is the emulator; it is an http.Handler serving the API and, under emukit.AdminPath, the
// shared admin surface.
type Server struct {
	// The Server is a simulation.Admin: SetFaults and Faults replace and read the armed shared faults;
	// Stats counts the pods ever created and lists the live ones, neither DELETING nor TERMINATED.
	*emukit.SeededServer[state]
	opts Options
}

var _ simulation.Admin = (*Server)(nil)

// New builds an emulator.
func New(opts Options) *Server {
	opts.APIKeys = emukit.Keys(opts.APIKeys, DefaultAPIKey)
	opts.Catalog = emukit.Seed(opts.Catalog, DefaultCatalog)
	opts.Options = opts.WithDefaults(20 * time.Second)
	opts.DeleteDuration = emukit.Positive(opts.DeleteDuration, 3*time.Second)
	opts.TerminatedRetention = emukit.Positive(opts.TerminatedRetention, time.Minute)
	opts.SSH = opts.SSH.WithDefaults("root")
	opts.MaxPageSize = emukit.Positive(opts.MaxPageSize, 100)
	opts.DiskProvisionDuration = emukit.Positive(opts.DiskProvisionDuration, opts.BootDuration/4)
	if opts.DiskMountPath == "" {
		opts.DiskMountPath = DefaultDiskMountPath
	}
	catalog := append([]Item(nil), opts.Catalog...)
	s := &Server{opts: opts}
	s.SeededServer = emukit.NewSeededServer(opts.StateDir, func() *state {
		return &state{Catalog: append([]Item(nil), catalog...)}
	}, func(st *state) *simulation.Faults { return &st.Faults },
		func(st *state) (int, []simulation.Machine) {
			now := s.opts.Now()
			return st.CreateCount, emukit.LiveMachines(st.Pods, func(p *podRec) (simulation.Machine, bool) {
				v := s.view(p, now)
				return simulation.Machine{ID: p.ID, Name: p.Name}, v.status != "TERMINATED" && v.status != "DELETING"
			})
		}, s.serveAPI)
	return s
}

// SetCloudFaults replaces the armed Prime-only faults.
func (s *Server) SetCloudFaults(f CloudFaults) error {
	return s.Store.With(true, func(st *state) error { st.CloudFaults = f; return nil })
}

// CloudFaults returns the Prime-only faults still armed.
func (s *Server) CloudFaults() CloudFaults {
	var f CloudFaults
	_ = s.Store.With(false, func(st *state) error { f = st.CloudFaults; return nil })
	return f
}

// PodInfo is an admin view of one pod.
type PodInfo struct {
	ID, Name, CloudID, Provider, Status string
	MaxPrice                            float64
}

// Pods lists the pods that are not terminated.
func (s *Server) Pods() []PodInfo {
	var out []PodInfo
	now := s.opts.Now()
	_ = s.Store.With(false, func(st *state) error {
		for _, p := range st.Pods {
			v := s.view(p, now)
			if v.status != "TERMINATED" {
				out = append(out, PodInfo{ID: p.ID, Name: p.Name, CloudID: p.CloudID, Provider: p.Provider, Status: v.status, MaxPrice: p.MaxPrice})
			}
		}
		return nil
	})
	return out
}

// CreateRequests returns the bodies of the last create requests (at most 50), oldest first.
func (s *Server) CreateRequests() []json.RawMessage {
	var out []json.RawMessage
	_ = s.Store.With(false, func(st *state) error { out = append(out, st.Creates...); return nil })
	return out
}

// FlipCloudIDs gives every catalog item a new cloudId, as upstream plan tokens change within minutes.
func (s *Server) FlipCloudIDs() error {
	return s.Store.With(true, func(st *state) error {
		st.Flips++
		for i := range st.Catalog {
			base, _, _ := strings.Cut(st.Catalog[i].CloudID, "#")
			st.Catalog[i].CloudID = fmt.Sprintf("%s#r%d", base, st.Flips)
		}
		return nil
	})
}

// SetCapacity sets the capacity of every catalog item of a Prime GPU type (e.g. "H100_80GB").
func (s *Server) SetCapacity(gpuType string, capacity int) error {
	return s.Store.With(true, func(st *state) error {
		for i := range st.Catalog {
			if st.Catalog[i].GPUType == gpuType {
				st.Catalog[i].Capacity = capacity
			}
		}
		return nil
	})
}

// SetCatalog replaces the catalog.
func (s *Server) SetCatalog(items []Item) error {
	return s.Store.With(true, func(st *state) error { st.Catalog = append([]Item(nil), items...); return nil })
}

// Catalog returns the current catalog.
func (s *Server) Catalog() []Item {
	var out []Item
	_ = s.Store.With(false, func(st *state) error { out = append(out, st.Catalog...); return nil })
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) { emukit.WriteJSON(w, status, v, nil) }

func detail(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"detail": msg})
}

// validation answers a FastAPI 422 with {"detail":[{loc,msg,type}]}.
func validation(w http.ResponseWriter, loc []string, msg, typ string) {
	l := make([]any, len(loc))
	for i, x := range loc {
		l[i] = x
	}
	writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": []any{map[string]any{"loc": l, "msg": msg, "type": typ}}})
}

func newID() string {
	return simulation.RandomHex(16)
}

// serveAPI answers one API request.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	// Faults fire first, like a gateway in front of the API.
	if !emukit.Gate(w, r, s.WithFaults, http.StatusInternalServerError, func(w http.ResponseWriter, status int, err error) {
		switch {
		case err != nil:
			detail(w, http.StatusInternalServerError, "emulator state: "+err.Error())
		case status == http.StatusTooManyRequests:
			detail(w, http.StatusTooManyRequests, "Rate limit exceeded. Please try again later.")
		default:
			detail(w, http.StatusInternalServerError, "Internal Server Error")
		}
	}) {
		return
	}
	if !emukit.BearerIn(r, s.opts.APIKeys) {
		detail(w, http.StatusUnauthorized, "Invalid or expired API key")
		return
	}
	path := strings.TrimRight(r.URL.Path, "/")
	switch {
	case path == "/api/v1/availability/gpus":
		s.mustGet(w, r, s.availability)
	case path == "/api/v1/availability":
		s.mustGet(w, r, s.legacyAvailability)
	case path == "/api/v1/availability/gpu-summary":
		s.mustGet(w, r, s.gpuSummary)
	case path == "/api/v1/availability/disks":
		s.mustGet(w, r, s.diskAvailability)
	case path == "/api/v1/pods":
		s.byMethod(w, r, map[string]func(){http.MethodGet: func() { s.listPods(w, r) }, http.MethodPost: func() { s.createPod(w, r) }})
	case path == "/api/v1/pods/status":
		s.mustGet(w, r, s.podStatus)
	case strings.HasPrefix(path, "/api/v1/pods/") && !strings.Contains(strings.TrimPrefix(path, "/api/v1/pods/"), "/"):
		id := strings.TrimPrefix(path, "/api/v1/pods/")
		s.byMethod(w, r, map[string]func(){http.MethodGet: func() { s.getPod(w, id) }, http.MethodDelete: func() { s.deletePod(w, id) }})
	case path == "/api/v1/disks":
		s.byMethod(w, r, map[string]func(){http.MethodGet: func() { s.listDisks(w, r) }, http.MethodPost: func() { s.createDisk(w, r) }})
	case strings.HasPrefix(path, "/api/v1/disks/") && !strings.Contains(strings.TrimPrefix(path, "/api/v1/disks/"), "/"):
		id := strings.TrimPrefix(path, "/api/v1/disks/")
		s.byMethod(w, r, map[string]func(){http.MethodGet: func() { s.getDisk(w, id) },
			http.MethodPatch: func() { s.patchDisk(w, r, id) }, http.MethodDelete: func() { s.deleteDisk(w, id) }})
	case path == "/api/v1/ssh_keys":
		s.byMethod(w, r, map[string]func(){http.MethodGet: func() { s.listKeys(w) }, http.MethodPost: func() { s.createKey(w, r) }})
	case strings.HasPrefix(path, "/api/v1/ssh_keys/") && r.Method == http.MethodDelete:
		s.deleteKey(w, strings.TrimPrefix(path, "/api/v1/ssh_keys/"))
	default:
		detail(w, http.StatusNotFound, "Not Found")
	}
}

// mustGet serves r with h if it is a GET, and answers 405 otherwise.
func (s *Server) mustGet(w http.ResponseWriter, r *http.Request, h func(http.ResponseWriter, *http.Request)) {
	s.byMethod(w, r, map[string]func(){http.MethodGet: func() { h(w, r) }})
}

// byMethod serves r with the handler for its method, and answers Prime's 405 when there is none.
func (s *Server) byMethod(w http.ResponseWriter, r *http.Request, handlers map[string]func()) {
	emukit.ByMethod(r.Method, handlers, func() { detail(w, http.StatusMethodNotAllowed, "Method Not Allowed") })
}

// filterItems applies the availability query parameters.
func filterItems(items []Item, q url.Values) []Item {
	var out []Item
	regions := q["regions"]
	for _, it := range sortedItems(items) {
		if v := q.Get("gpu_type"); v != "" && v != it.GPUType {
			continue
		}
		if v := q.Get("gpu_count"); v != "" && v != strconv.Itoa(it.GPUCount) {
			continue
		}
		if v := q.Get("socket"); v != "" && v != it.Socket {
			continue
		}
		if v := q.Get("security"); v != "" && v != it.Security {
			continue
		}
		if v := q.Get("data_center_id"); v != "" && v != it.DataCenter {
			continue
		}
		if v := q.Get("cloud_id"); v != "" && v != it.CloudID {
			continue
		}
		if len(regions) > 0 {
			found := false
			for _, rg := range regions {
				found = found || rg == it.Region
			}
			if !found {
				continue
			}
		}
		out = append(out, it)
	}
	return out
}

// takeEmptyFault consumes one EmptyAvailability fault.
func (s *Server) takeEmptyFault() bool {
	empty := false
	_ = s.Store.With(true, func(st *state) error {
		if st.CloudFaults.EmptyAvailability > 0 {
			st.CloudFaults.EmptyAvailability--
			empty = true
		}
		return nil
	})
	return empty
}

func (s *Server) availability(w http.ResponseWriter, r *http.Request) {
	if s.opts.LegacyOnly {
		detail(w, http.StatusNotFound, "Not Found")
		return
	}
	q := r.URL.Query()
	page, pageSize, ok := s.paging(w, q)
	if !ok {
		return
	}
	if s.takeEmptyFault() {
		writeJSON(w, http.StatusOK, map[string]any{"items": []any{}, "totalCount": 0})
		return
	}
	var (
		items   []Item
		unknown string
	)
	_ = s.Store.With(false, func(st *state) error {
		items = filterItems(st.Catalog, q)
		if ids := q["disks"]; len(ids) > 0 {
			var keep func(Item) bool
			if keep, unknown = s.diskFilter(st, ids, s.opts.Now()); keep != nil {
				items = slices.DeleteFunc(items, func(it Item) bool { return !keep(it) })
			}
		}
		return nil
	})
	if unknown != "" {
		detail(w, http.StatusNotFound, fmt.Sprintf("Disk %s not found", unknown))
		return
	}
	out := []any{}
	for i := (page - 1) * pageSize; i < len(items) && i < page*pageSize; i++ {
		out = append(out, items[i].render(false))
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": out, "totalCount": len(items)})
}

// paging reads the page (from 1) and page_size (1 to MaxPageSize; default MaxPageSize) query
// parameters of the availability listings, answering a bad one with Prime's 422 validation error.
func (s *Server) paging(w http.ResponseWriter, q url.Values) (page, pageSize int, ok bool) {
	page, pageSize = 1, s.opts.MaxPageSize
	if v := q.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			validation(w, []string{"query", "page"}, "Input should be greater than or equal to 1", "greater_than_equal")
			return 0, 0, false
		}
		page = n
	}
	if v := q.Get("page_size"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > s.opts.MaxPageSize {
			validation(w, []string{"query", "page_size"}, fmt.Sprintf("Input should be less than or equal to %d", s.opts.MaxPageSize), "less_than_equal")
			return 0, 0, false
		}
		pageSize = n
	}
	return page, pageSize, true
}

func (s *Server) legacyAvailability(w http.ResponseWriter, r *http.Request) {
	if s.takeEmptyFault() {
		writeJSON(w, http.StatusOK, map[string]any{})
		return
	}
	var items []Item
	_ = s.Store.With(false, func(st *state) error { items = filterItems(st.Catalog, r.URL.Query()); return nil })
	out := map[string][]any{}
	for _, it := range items {
		out[it.GPUType] = append(out[it.GPUType], it.render(true))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) gpuSummary(w http.ResponseWriter, _ *http.Request) {
	var items []Item
	_ = s.Store.With(false, func(st *state) error { items = append(items, st.Catalog...); return nil })
	writeJSON(w, http.StatusOK, summary(items))
}

// diskAvailability answers /availability/disks: one storage offer per provider and place of the
// catalog that prices its disk, paginated like /availability/gpus.
func (s *Server) diskAvailability(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	page, pageSize, ok := s.paging(w, q)
	if !ok {
		return
	}
	var items []Item
	_ = s.Store.With(false, func(st *state) error { items = sortedItems(st.Catalog); return nil })
	all := disks(items)
	out := []any{}
	for i := (page - 1) * pageSize; i < len(all) && i < page*pageSize; i++ {
		out = append(out, all[i])
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": out, "totalCount": len(all)})
}

// createBody is the create request as the emulator reads it (maxPrice may be absent or null).
type createBody struct {
	Pod struct {
		Name         string   `json:"name"`
		CloudID      string   `json:"cloudId"`
		GPUType      string   `json:"gpuType"`
		Socket       string   `json:"socket"`
		GPUCount     int      `json:"gpuCount"`
		DiskSize     int      `json:"diskSize"`
		VCPUs        int      `json:"vcpus"`
		Memory       int      `json:"memory"`
		MaxPrice     *float64 `json:"maxPrice"`
		Image        string   `json:"image"`
		DataCenterID string   `json:"dataCenterId"`
		Country      string   `json:"country"`
		Security     string   `json:"security"`
		SSHKeyID     string   `json:"sshKeyId"`
	} `json:"pod"`
	Provider struct {
		Type string `json:"type"`
	} `json:"provider"`
	Team *struct {
		TeamID string `json:"teamId"`
	} `json:"team"`
	// Disks are the ids of disks to attach (Body_create_pod's disks).
	Disks []string `json:"disks"`
}

func (s *Server) createPod(w http.ResponseWriter, r *http.Request) {
	var b createBody
	raw, ok := decodeBody(w, r, &b)
	if !ok {
		return
	}
	for _, f := range []struct{ name, val string }{{"cloudId", b.Pod.CloudID}, {"gpuType", b.Pod.GPUType}, {"socket", b.Pod.Socket}} {
		if f.val == "" {
			validation(w, []string{"body", "pod", f.name}, "Field required", "missing")
			return
		}
	}
	if b.Pod.GPUCount < 1 {
		validation(w, []string{"body", "pod", "gpuCount"}, "Field required", "missing")
		return
	}
	if b.Provider.Type == "" {
		validation(w, []string{"body", "provider", "type"}, "Field required", "missing")
		return
	}
	if b.Pod.MaxPrice == nil && !s.opts.AllowNullMaxPrice {
		detail(w, http.StatusBadRequest, "Missing field: max_price not specified")
		return
	}
	now := s.opts.Now().UTC()
	var (
		status int
		msg    string
		rec    *podRec
		lost   bool
	)
	err := s.Store.With(true, func(st *state) error {
		f, cf := &st.Faults, &st.CloudFaults
		if cf.PaymentRequired {
			status, msg = http.StatusPaymentRequired, "Insufficient balance. Please add funds to your wallet."
			return nil
		}
		if f.SoldOut {
			status, msg = http.StatusBadRequest, noCapacity
			return nil
		}
		// Without a dataCenterId (offers whose dataCenter is null) the upstream places the pod: an
		// item without a data center is preferred, then the first that matches.
		idx, flipped := -1, false
		for i, it := range st.Catalog {
			if !strings.EqualFold(it.Provider, b.Provider.Type) || it.GPUType != b.Pod.GPUType || it.Socket != b.Pod.Socket || it.GPUCount != b.Pod.GPUCount {
				continue
			}
			if b.Pod.DataCenterID != "" && it.DataCenter != b.Pod.DataCenterID {
				continue
			}
			if b.Pod.Country != "" && it.Country != "" && it.Country != b.Pod.Country {
				continue
			}
			if b.Pod.Security != "" && it.Security != b.Pod.Security {
				continue
			}
			if it.CloudID != b.Pod.CloudID {
				flipped = true
				continue
			}
			if idx < 0 || (b.Pod.DataCenterID == "" && it.DataCenter == "" && st.Catalog[idx].DataCenter != "") {
				idx = i
			}
		}
		if idx < 0 {
			status = http.StatusBadRequest
			if flipped {
				msg = fmt.Sprintf("Cloud ID '%s' is no longer available for provider %s", b.Pod.CloudID, b.Provider.Type)
			} else {
				msg = "Requested configuration is not available"
			}
			return nil
		}
		it := &st.Catalog[idx]
		disks, refusal := s.podDisks(st, b.Disks, *it, now)
		if refusal != "" {
			status, msg = http.StatusBadRequest, refusal
			return nil
		}
		if it.Capacity == 0 {
			status, msg = http.StatusBadRequest, noCapacity
			return nil
		}
		price := it.PodPrice()
		if b.Pod.MaxPrice != nil && *b.Pod.MaxPrice+1e-9 < price {
			status, msg = http.StatusBadRequest, fmt.Sprintf("Current price %s exceeds max price %s", fmtPrice(price), fmtPrice(*b.Pod.MaxPrice))
			return nil
		}
		if it.Capacity > 0 {
			it.Capacity--
		}
		boot := s.opts.BootDuration + time.Duration(cf.SlowBoot)
		rec = &podRec{ID: newID(), Name: b.Pod.Name, CloudID: it.CloudID, GPUType: it.GPUType, Socket: it.Socket, GPUCount: it.GPUCount,
			Provider: it.Provider, DataCenter: it.DataCenter, Slot: it.slot(), Price: price, Spot: it.Spot,
			DiskGB: b.Pod.DiskSize, VCPUs: b.Pod.VCPUs, MemoryGB: b.Pod.Memory, Image: b.Pod.Image, SSHKeyID: b.Pod.SSHKeyID,
			Disks: disks, CreatedAt: now, Boot: int64(boot)}
		if b.Pod.MaxPrice != nil {
			rec.MaxPrice = *b.Pod.MaxPrice
		}
		if rec.DiskGB == 0 {
			rec.DiskGB = it.DiskGB
		}
		// A pod ordered without vcpus or memory gets the offer's defaultCount.
		if rec.VCPUs == 0 {
			rec.VCPUs = it.VCPUs
		}
		if rec.MemoryGB == 0 {
			rec.MemoryGB = it.MemoryGB
		}
		rec.Fail = f.TakeBootFailure()
		lost = f.TakeLostCreate()
		st.Pods = append(st.Pods, rec)
		st.CreateCount++
		st.Creates = append(st.Creates, json.RawMessage(raw))
		if len(st.Creates) > 50 {
			st.Creates = st.Creates[len(st.Creates)-50:]
		}
		return nil
	})
	if err != nil {
		detail(w, http.StatusInternalServerError, err.Error())
		return
	}
	if status != 0 {
		detail(w, status, msg)
		return
	}
	if lost {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte("<html><body><h1>502 Bad Gateway</h1></body></html>"))
		return
	}
	writeJSON(w, http.StatusOK, s.render(rec, now))
}

// noCapacity is Prime's answer to a create for which the upstream has no machine.
const noCapacity = "No capacity available for the requested GPU configuration"

func fmtPrice(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// decodeBody reads a request's JSON body (at most 1 MiB) into v and returns it; a body it cannot read
// or decode is answered with Prime's validation error, and ok is false.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) (raw []byte, ok bool) {
	defer r.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		validation(w, []string{"body"}, "JSON decode error", "json_invalid")
		return nil, false
	}
	if err := json.Unmarshal(raw, v); err != nil {
		validation(w, []string{"body"}, "JSON decode error: "+err.Error(), "json_invalid")
		return nil, false
	}
	return raw, true
}

// podView is a pod's status at one moment.
type podView struct {
	status, install, failure string
	progress                 int
	ssh                      any
	ip                       any
	terminatedAt             any
	gone                     bool
}

func (s *Server) view(p *podRec, now time.Time) podView {
	boot := time.Duration(p.Boot)
	age := now.Sub(p.CreatedAt)
	host := s.opts.SSH.Host
	if p.DeletedAt != nil {
		since := now.Sub(*p.DeletedAt)
		if since < s.opts.DeleteDuration {
			return podView{status: "DELETING", install: "FINISHED", progress: 100, ssh: nil, ip: host}
		}
		end := p.DeletedAt.Add(s.opts.DeleteDuration)
		return podView{status: "TERMINATED", install: "TERMINATED", progress: 100, terminatedAt: end.Format(time.RFC3339Nano),
			gone: since >= s.opts.DeleteDuration+s.opts.TerminatedRetention}
	}
	switch {
	case p.Fail && age >= boot/2:
		return podView{status: "ERROR", install: "ERROR", failure: "Installation failed: the upstream provider could not start the machine", progress: 40}
	case age < boot/4:
		return podView{status: "PROVISIONING", install: "PENDING"}
	case age < boot/2:
		// ACTIVE before the SSH connection is set.
		return podView{status: "ACTIVE", install: "ACTIVE", progress: 50, ip: host}
	case age < boot:
		// Installation finished, but sshConnection is still [null].
		return podView{status: "ACTIVE", install: "FINISHED", progress: 100, ssh: []any{nil}, ip: []any{host}}
	}
	conn := fmt.Sprintf("%s@%s -p %d", s.opts.SSH.User, host, s.opts.SSH.Port)
	var ssh any = conn
	if s.opts.SSHAsList {
		ssh = []any{conn}
	}
	return podView{status: "ACTIVE", install: "FINISHED", progress: 100, ssh: ssh, ip: host}
}

func (s *Server) render(p *podRec, now time.Time) map[string]any {
	v := s.view(p, now)
	var failure any
	if v.failure != "" {
		failure = v.failure
	}
	var spot any
	if p.Spot {
		spot = true
	}
	return map[string]any{
		"id": p.ID, "userId": "emulated-user", "teamId": nil, "walletId": "emulated-wallet", "name": p.Name,
		"type": "HOSTED", "providerType": p.Provider, "status": v.status,
		"installationStatus": v.install, "installationFailure": failure, "installationProgress": v.progress,
		"createdAt": p.CreatedAt.Format(time.RFC3339Nano), "updatedAt": now.Format(time.RFC3339Nano), "terminatedAt": v.terminatedAt,
		"gpuName": p.GPUType, "gpuCount": p.GPUCount, "socket": p.Socket,
		"priceHr": p.Price, "stoppedPriceHr": nil, "provisioningPriceHr": p.Price,
		"environmentType": p.Image, "customTemplateId": nil, "clusterId": nil,
		"primePortMapping": []any{map[string]any{"internal": 22, "external": s.opts.SSH.Port, "protocol": "TCP", "usedBy": "SSH", "description": "SSH"}},
		"sshConnection":    v.ssh, "ip": v.ip,
		"resources":         map[string]any{"memory": p.MemoryGB, "disk": p.DiskGB, "vcpus": p.VCPUs, "shared_disk": nil},
		"attachedResources": s.attachedResources(p, v), "isSpot": spot, "autoRestart": false,
	}
}

func (s *Server) findPod(st *state, id string) *podRec {
	return emukit.Find(st.Pods, func(p *podRec) bool { return p.ID == id })
}

func (s *Server) getPod(w http.ResponseWriter, id string) {
	now := s.opts.Now().UTC()
	var out map[string]any
	_ = s.Store.With(false, func(st *state) error {
		if p := s.findPod(st, id); p != nil && !s.view(p, now).gone {
			out = s.render(p, now)
		}
		return nil
	})
	if out == nil {
		detail(w, http.StatusNotFound, "Pod not found")
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) listPods(w http.ResponseWriter, r *http.Request) {
	offset, limit := pageQuery(r.URL.Query())
	now := s.opts.Now().UTC()
	var live []*podRec
	_ = s.Store.With(false, func(st *state) error {
		for _, p := range st.Pods {
			if s.view(p, now).status != "TERMINATED" {
				live = append(live, p)
			}
		}
		return nil
	})
	// Newest first, as the console shows them.
	sort.SliceStable(live, func(i, j int) bool { return live[i].CreatedAt.After(live[j].CreatedAt) })
	writeList(w, page(live, offset, limit, func(p *podRec) any { return s.render(p, now) }), len(live), offset, limit)
}

// pageQuery reads a list's offset and limit: limit 100 unless a positive number is given, offset 0
// when negative.
func pageQuery(q url.Values) (offset, limit int) {
	offset, _ = strconv.Atoi(q.Get("offset"))
	limit, err := strconv.Atoi(q.Get("limit"))
	if err != nil || limit <= 0 {
		limit = 100
	}
	return max(offset, 0), limit
}

// page renders the items of one page: from offset, at most limit.
func page[T any](items []T, offset, limit int, render func(T) any) []any {
	data := []any{}
	for i := offset; i < len(items) && i < offset+limit; i++ {
		data = append(data, render(items[i]))
	}
	return data
}

// writeList answers a list as Prime pages it: {"data", "total_count", "offset", "limit"}.
func writeList(w http.ResponseWriter, data []any, total, offset, limit int) {
	writeJSON(w, http.StatusOK, map[string]any{"data": data, "total_count": total, "offset": offset, "limit": limit})
}

func (s *Server) podStatus(w http.ResponseWriter, r *http.Request) {
	ids := r.URL.Query()["pod_ids"]
	now := s.opts.Now().UTC()
	data := []any{}
	_ = s.Store.With(false, func(st *state) error {
		for _, id := range ids {
			p := s.findPod(st, id)
			if p == nil {
				continue
			}
			v := s.view(p, now)
			if v.gone {
				continue
			}
			var failure any
			if v.failure != "" {
				failure = v.failure
			}
			data = append(data, map[string]any{"podId": p.ID, "providerType": p.Provider, "status": v.status,
				"sshConnection": v.ssh, "ip": v.ip, "installationStatus": v.install, "installationFailure": failure,
				"installationProgress": v.progress, "priceHr": p.Price})
		}
		return nil
	})
	writeJSON(w, http.StatusOK, map[string]any{"data": data})
}

func (s *Server) deletePod(w http.ResponseWriter, id string) {
	now := s.opts.Now().UTC()
	status := ""
	_ = s.Store.With(true, func(st *state) error {
		p := s.findPod(st, id)
		if p == nil {
			return nil
		}
		v := s.view(p, now)
		switch v.status {
		case "TERMINATED":
			return nil
		case "DELETING":
			status = "DELETING"
			return nil
		}
		t := now
		p.DeletedAt = &t
		status = "DELETING"
		for i := range st.Catalog {
			if st.Catalog[i].slot() == p.Slot && st.Catalog[i].Capacity >= 0 {
				st.Catalog[i].Capacity++
				break
			}
		}
		return nil
	})
	if status == "" {
		detail(w, http.StatusNotFound, "Pod not found")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": status})
}

func (s *Server) renderKey(k keyRec) map[string]any {
	return map[string]any{"id": k.ID, "userId": "emulated-user", "name": k.Name, "publicKey": k.PublicKey,
		"isPrimary": false, "isUserKey": true, "createdAt": k.CreatedAt.Format(time.RFC3339Nano), "updatedAt": k.CreatedAt.Format(time.RFC3339Nano)}
}

func (s *Server) listKeys(w http.ResponseWriter) {
	data := []any{}
	_ = s.Store.With(false, func(st *state) error {
		for _, k := range st.Keys {
			data = append(data, s.renderKey(k))
		}
		return nil
	})
	writeList(w, data, len(data), 0, 100)
}

func (s *Server) createKey(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Name      string `json:"name"`
		PublicKey string `json:"publicKey"`
	}
	if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
		validation(w, []string{"body"}, "JSON decode error", "json_invalid")
		return
	}
	f := strings.Fields(b.PublicKey)
	if len(f) < 2 || !strings.HasPrefix(f[0], "ssh-") && !strings.HasPrefix(f[0], "ecdsa-") && !strings.HasPrefix(f[0], "sk-") {
		detail(w, http.StatusBadRequest, "Invalid SSH public key")
		return
	}
	var out map[string]any
	dup := false
	_ = s.Store.With(true, func(st *state) error {
		for _, k := range st.Keys {
			if kf := strings.Fields(k.PublicKey); len(kf) >= 2 && kf[1] == f[1] {
				dup = true
				return nil
			}
		}
		k := keyRec{ID: newID(), Name: b.Name, PublicKey: b.PublicKey, CreatedAt: s.opts.Now().UTC()}
		st.Keys = append(st.Keys, k)
		out = s.renderKey(k)
		return nil
	})
	if dup {
		detail(w, http.StatusBadRequest, "SSH key already exists")
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) deleteKey(w http.ResponseWriter, id string) {
	found := false
	_ = s.Store.With(true, func(st *state) error {
		for i, k := range st.Keys {
			if k.ID == id {
				st.Keys = append(st.Keys[:i], st.Keys[i+1:]...)
				found = true
				break
			}
		}
		return nil
	})
	if !found {
		detail(w, http.StatusNotFound, "SSH key not found")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "deleted"})
}
