// Package mithril emulates the subset of Mithril's v2 REST API hydra uses: the spot auctions (a sealed
// second-price auction per region and instance type, with allocation, clearing price and preemption
// when outbid), bids, instances, SSH keys and projects, with Mithril's quirks: FIDs with prefixes,
// "$X.XX" price strings, integer cents on /v2/pricing/current, cursor pagination, FastAPI 422 errors,
// {"detail": ...} error bodies and 404 on unknown bids.
//
// Faults are the shared vocabulary (simulation.Faults, armed through SetFaults or PUT /_emulator/faults)
// plus Mithril's own (OwnFaults: preemptions, slow boots, the 5xx status, faults limited to one path);
// the spot market's moves are AddMarketBid, SetCapacity and SetAuction. Stats counts hydra's bids (a
// hydra instance is one bid): GET /_emulator/stats.
//
// The auction. Bids are ranked by limit price and the top ones that fit the capacity win; winners pay
// the highest losing limit price, the next clearing price. As at Mithril, a bid stays Open (no
// instance) when its limit is below the auction's minimum, when the auction has no capacity, or when it
// is placed below the lowest winning bid (lowest_allocated_price): a new bid must beat the lowest
// winning bid to be allocated, even with capacity free, and waits Open until the lowest winning bid
// falls to its limit. A bid preempted by a higher one goes Open again after the preemption window and
// is allocated anew when capacity frees up.
//
// Bids for several instances (instance_quantity N, hydra's clusters) are allocated all or nothing, as
// Mithril documents ("Bids are all-or-nothing in that it will only convert to an Allocation if all
// quantities of instances will be successful in the market", docs.mlfoundry.com, "Using spot
// instances"): the bid wins only when all N fit the capacity, and then gets N instances at once (each
// with an ssh_destination and a private_ip once running); otherwise it stays Open with none, and
// lower bids that fit may win meanwhile. A bid cannot be resized: Mithril's UpdateBidRequest (PATCH)
// has limit_price, paused, volumes and memory_gb only, and FastAPI's models ignore fields they lack, so
// the emulator's PATCH (limit_price and paused) leaves an instance_quantity sent there unapplied.
//
// Holding a bid Open, to test a bid not won in time: the default catalog has a full auction
// (h100-80gb.sxm.8x in us-central1-b: its two slots held by other customers' bids at $12.00 and $12.20,
// so capacity 0 now), and any bid placed below an auction's lowest winning bid waits (h100-80gb.sxm.8x
// in us-central1-a: below $12.50). The admin knob is SetAuction, over HTTP PUT /_emulator/auctions
// (AuctionsPath) with a JSON AuctionChange: {"region": "us-central1-a", "instance_type":
// "a100-80gb.sxm.1x", "capacity": 0} leaves the auction no capacity (every bid waits Open; allocated
// ones are preempted), and "market_bids_cents": [5000] replaces other customers' bids so that the
// lowest winning bid is $50.00. GET /_emulator/auctions lists the auctions and their signals.
package mithril

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// DefaultAPIKey is the key the emulator accepts when Options.APIKeys is empty.
const DefaultAPIKey = "fkey_emulator0000000000"

// DefaultProject is the project name the emulator creates when Options.Projects is empty.
const DefaultProject = "hydra"

// Options configure an emulator.
type Options struct {
	// Options are the options every emulator has (state directory, boot duration, clock).
	// Options.BootDuration is how long an allocated instance stays STATUS_NEW/STATUS_STARTING before
	// STATUS_RUNNING with an ssh_destination (default 20s).
	simulation.Options
	// Catalog is the spot market (nil: DefaultCatalog()).
	Catalog []Offering
	// StopDuration is how long a cancelled bid's instance stays STATUS_STOPPING (default 0: it is
	// STATUS_TERMINATED at once).
	StopDuration time.Duration
	// PreemptionWindow is how long an outbid bid stays Preempting before its instance is preempted
	// (default 5 minutes, as Mithril documents).
	PreemptionWindow time.Duration
	// APIKeys are the accepted Bearer keys (default DefaultAPIKey).
	APIKeys []string
	// Projects are the project names the keys see (default DefaultProject); ProjectFID gives their FIDs.
	Projects []string
	// SSHDestination, when set, is the ssh_destination of every running instance (e.g. "127.0.0.1:2222"
	// for a loopback sshd; "{private_ip}:2222" puts each instance's own private address in it, for one
	// sshd per node); otherwise each instance gets an address of 203.0.113.0/24.
	SSHDestination string
	// PrivateNet is the first two octets of instances' private addresses, <PrivateNet>.<n/256>.<n%256>
	// for the n-th instance (default "10.0"; "127.103" gives loopback addresses a local sshd can
	// listen on).
	PrivateNet string
}

// OwnFaults are the misbehaviours only Mithril has, beside the shared fault vocabulary (simulation.Faults:
// 429 storms, 5xx answers, lost bid creates, boot failures, sold-out auctions, latency). Like those,
// they persist in the state dir, and counters go down as they fire. The spot market's own moves (another
// customer outbidding hydra, an auction's capacity changing) are AddMarketBid and SetCapacity.
type OwnFaults struct {
	// Preemptions preempts the next N of hydra's allocated bids, as another customer outbidding them
	// would: the bid goes Preempting and its instance STATUS_PREEMPTING for the preemption window, after
	// which the instance is STATUS_PREEMPTED and the bid Open again (Mithril may allocate it anew).
	Preemptions int `json:"preemptions,omitempty"`
	// OutbidOnArrival keeps the next N of hydra's new bids Open until they are cancelled, as when other
	// customers' higher bids take the auction's capacity the moment a bid arrives (a bid that does not
	// win in time).
	OutbidOnArrival int `json:"outbid_on_arrival,omitempty"`
	// SlowBoot is added to the boot of instances allocated while it is set.
	SlowBoot simulation.Duration `json:"slow_boot,omitempty"`
	// ServerErrorStatus is the status of the shared ServerErrors and LoseCreateResponses answers
	// (default 502, Mithril's "Upstream service failure").
	ServerErrorStatus int `json:"server_error_status,omitempty"`
	// OnlyPath limits the shared 429 and 5xx faults to requests whose "METHOD /path" starts with it,
	// e.g. "POST /v2/spot/bids".
	OnlyPath string `json:"only_path,omitempty"`
}

// Server is the emulator, an http.Handler.
type Server struct {
	admin   // the shared fault vocabulary and machine counts (admin.go)
	opts    Options
	mu      sync.Mutex
	store   *emukit.Store[state]
	mux     *http.ServeMux
	handler http.Handler
}

var _ simulation.Admin = (*Server)(nil)

// New builds an emulator.
func New(opts Options) *Server {
	opts.Catalog = emukit.Seed(opts.Catalog, DefaultCatalog)
	opts.Options = opts.WithDefaults(20 * time.Second)
	opts.PreemptionWindow = cmp.Or(opts.PreemptionWindow, 5*time.Minute)
	opts.PrivateNet = cmp.Or(opts.PrivateNet, "10.0")
	opts.APIKeys = emukit.Keys(opts.APIKeys, DefaultAPIKey)
	opts.Projects = emukit.Keys(opts.Projects, DefaultProject)
	s := &Server{opts: opts, store: emukit.NewStore[state](opts.StateDir, "state")}
	s.admin = newAdmin(s)
	s.routes()
	api := emukit.WithAdmin(s.mux, s)
	s.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == AuctionsPath && (r.Method == http.MethodGet || r.Method == http.MethodPut) {
			s.serveAuctions(w, r)
			return
		}
		if r.URL.Path == PreemptionsPath && r.Method == http.MethodPost {
			s.servePreemptions(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
	return s
}

// ProjectFID returns the FID the emulator gives a project name.
func ProjectFID(name string) string { return stableFID("proj_", "project/"+name) }

// Start serves the emulator on addr ("127.0.0.1:0" picks a port) and returns its base URL and a
// function that stops it.
func (s *Server) Start(addr string) (baseURL string, stop func(context.Context) error, err error) {
	return emukit.Serve(addr, s)
}

func (s *Server) now() time.Time { return s.opts.Now().UTC() }

// update runs fn on the state, advanced to now, under the lock; the state is saved afterwards.
func (s *Server) update(fn func(st *state, now time.Time) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	return s.store.Update(func() *state { return newState(s.opts, now) }, func(st *state) (bool, error) {
		st.advance(now)
		return true, fn(st, now)
	})
}

// apiError is an answer with a status and a body.
type apiError struct {
	status int
	body   any
	header http.Header
}

func (e *apiError) Error() string { return fmt.Sprintf("HTTP %d", e.status) }

func detail(status int, msg string) *apiError {
	return &apiError{status: status, body: map[string]any{"detail": msg}}
}

// validation is a FastAPI HTTPValidationError item.
type validation struct {
	Type  string `json:"type"`
	Loc   []any  `json:"loc"`
	Msg   string `json:"msg"`
	Input any    `json:"input"`
	Ctx   any    `json:"ctx,omitempty"`
}

func invalid(items ...validation) *apiError {
	return &apiError{status: http.StatusUnprocessableEntity, body: map[string]any{"detail": items}}
}

func missing(loc ...any) validation {
	return validation{Type: "missing", Loc: loc, Msg: "Field required"}
}

type handler func(r *http.Request, st *state, now time.Time, user string) (int, any, error)

func (s *Server) routes() {
	m := http.NewServeMux()
	h := func(pattern string, fn handler) { m.Handle(pattern, s.wrap(fn)) }
	h("GET /v2/me", s.me)
	h("GET /v2/projects", s.projects)
	h("GET /v2/instance-types", s.instanceTypes)
	h("GET /v2/spot/availability", s.availability)
	h("GET /v2/pricing/current", s.pricing)
	h("POST /v2/spot/bids", s.createBid)
	h("GET /v2/spot/bids", s.listBids)
	h("GET /v2/spot/bids/{fid}", s.getBid)
	h("GET /v2/spot/bids/{fid}/status", s.bidStatus)
	h("PATCH /v2/spot/bids/{fid}", s.patchBid)
	h("DELETE /v2/spot/bids/{fid}", s.cancelBid)
	h("GET /v2/instances", s.listInstances)
	h("GET /v2/instances/{fid}/status", s.instanceStatus)
	h("GET /v2/ssh-keys", s.listKeys)
	h("POST /v2/ssh-keys", s.createKey)
	h("DELETE /v2/ssh-keys/{fid}", s.deleteKey)
	h("GET /v2/volumes", s.listVolumes) // volumes.go
	h("POST /v2/volumes", s.createVolume)
	h("DELETE /v2/volumes/{fid}", s.deleteVolume)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"detail": "Not Found"}, nil)
	})
	s.mux = m
}

// ServeHTTP answers one request: the API, and the emulator's admin surface under emukit.AdminPath
// ("/_emulator/"): the shared emukit.AdminHandler and the spot market's AuctionsPath.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.handler.ServeHTTP(w, r)
}

func (s *Server) wrap(fn handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var latency time.Duration
		_ = s.update(func(st *state, _ time.Time) error { latency = time.Duration(st.Faults.Latency); return nil })
		if !simulation.Delay(r.Context(), latency) {
			return
		}
		var status int
		var body any
		err := s.update(func(st *state, now time.Time) error {
			if fe := st.takeFault(r); fe != nil {
				return fe
			}
			user, aerr := s.authenticate(r)
			if aerr != nil {
				return aerr
			}
			var err error
			status, body, err = fn(r, st, now, user)
			return err
		})
		var ae *apiError
		switch {
		case errors.As(err, &ae):
			writeJSON(w, ae.status, ae.body, ae.header)
		case err != nil:
			writeJSON(w, http.StatusInternalServerError, map[string]string{"detail": "Internal Server Error: " + err.Error()}, nil)
		case status == http.StatusNoContent:
			w.WriteHeader(status)
		default:
			writeJSON(w, status, body, nil)
		}
	})
}

// serverErrorStatus is the 5xx the emulator answers with for a server error fault.
func (st *state) serverErrorStatus() int {
	return cmp.Or(st.Own.ServerErrorStatus, http.StatusBadGateway)
}

// takeFault uses up one 429 or 5xx fault matching the request, if any.
func (st *state) takeFault(r *http.Request) *apiError {
	if p := st.Own.OnlyPath; p != "" && !strings.HasPrefix(r.Method+" "+r.URL.Path, p) {
		return nil
	}
	status, header := st.Faults.Take(st.serverErrorStatus())
	switch {
	case status == http.StatusTooManyRequests:
		return &apiError{status: status, body: map[string]string{"detail": "Too many requests"}, header: header}
	case status != 0:
		return detail(status, "Upstream service failure")
	}
	return nil
}

func (s *Server) authenticate(r *http.Request) (string, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", detail(http.StatusUnauthorized, "Not authenticated")
	}
	scheme, key, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", detail(http.StatusUnauthorized, "Invalid authentication credentials")
	}
	for _, k := range s.opts.APIKeys {
		if key == k {
			return "user_" + stableFID("", "user/"+k)[:12], nil
		}
	}
	return "", detail(http.StatusUnauthorized, "Invalid API key")
}

func writeJSON(w http.ResponseWriter, status int, body any, header http.Header) {
	emukit.WriteJSON(w, status, body, header)
}
