package mithril

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// Emulator-only helpers for tests and the sandbox. They act on the same state as the API (the state
// dir too).

type admin = emukit.StateAdmin[state]

// newAdmin is the Server's simulation.Admin.
//
// SetFaults replaces the armed shared faults. LoseCreateResponses loses the answers of bid creates
// (POST /v2/spot/bids); SoldOut makes them fail with Mithril's 400 "Insufficient capacity";
// BootFailures ends hydra's next allocated instances in STATUS_ERROR. OwnFaults.OnlyPath narrows the
// 429 and 5xx faults. Faults returns the armed shared faults, with their counters as used so far.
//
// Stats reports hydra's side of the cloud: Created counts the machines the API has accepted bids for
// (POST /v2/spot/bids), ever: one per one-instance bid, N per bid for N; Live lists the bids of
// hydra's projects that are not cancelled (a one-instance bid is one hydra instance: its FID is
// Instance.ID and its name the cloud-side name) and, for a bid for several, its live instances. Other
// customers' bids are left out.
func newAdmin(s *Server) admin {
	var now time.Time // the state's time, set under the server's lock before fn reads the state
	return emukit.NewStateAdmin(func(_ bool, fn func(st *state) error) error {
		return s.update(func(st *state, t time.Time) error { now = t; return fn(st) })
	}, func(st *state) *simulation.Faults { return &st.Faults },
		func(st *state) (int, []simulation.Machine) { return st.machines(now) })
}

// machines are hydra's machines as Stats counts them: a one-instance bid is one machine from the
// moment it is accepted (its FID and name, as the backend's Instance), and a bid for several (a
// cluster) is that many machines ordered, live while its instances are (their FIDs and names).
func (st *state) machines(now time.Time) (ordered int, live []simulation.Machine) {
	for _, b := range st.Bids {
		if b.Project == marketProject {
			continue
		}
		ordered += max(b.Quantity, 1)
		switch {
		case b.Status == bidTerminated:
		case b.Quantity <= 1:
			live = append(live, simulation.Machine{ID: b.FID, Name: b.Name})
		default:
			for _, fid := range b.Instances {
				if in := st.instanceByFID(fid); in != nil && in.live(now) {
					live = append(live, simulation.Machine{ID: in.FID, Name: in.Name})
				}
			}
		}
	}
	return ordered, live
}

// SetOwnFaults replaces the armed Mithril-only faults.
func (s *Server) SetOwnFaults(f OwnFaults) error {
	return s.update(func(st *state, _ time.Time) error {
		st.Own = f
		return nil
	})
}

// OwnFaults returns the armed Mithril-only faults, with their counters as used so far.
func (s *Server) OwnFaults() (OwnFaults, error) {
	var f OwnFaults
	err := s.update(func(st *state, _ time.Time) error {
		f = st.Own
		return nil
	})
	return f, err
}

// CreateCount is how many bids the API has accepted (POST /v2/spot/bids), ever.
func (s *Server) CreateCount() int {
	n := 0
	_ = s.update(func(st *state, _ time.Time) error {
		n = st.Created
		return nil
	})
	return n
}

// BidInfo is an emulator view of one bid.
type BidInfo struct {
	FID, Name, Project, Region, InstanceType, Status string
	LimitCents                                       int64
	// Quantity is the bid's instance_quantity: how many instances it is allocated at once, or none.
	Quantity  int
	Instances []string
	// InstanceStatuses are the statuses of Instances, in order.
	InstanceStatuses []string
}

// Bids lists the bids of hydra's projects (not the simulated other customers'), cancelled ones included.
func (s *Server) Bids() []BidInfo {
	var out []BidInfo
	_ = s.update(func(st *state, now time.Time) error {
		for _, b := range st.Bids {
			if b.Project == marketProject {
				continue
			}
			info := BidInfo{FID: b.FID, Name: b.Name, Project: b.Project, Region: b.Region, Status: b.Status, LimitCents: b.LimitCents,
				Quantity: b.Quantity, Instances: append([]string(nil), b.Instances...)}
			if a := st.auctionFor(b.TypeFID, b.Region); a != nil {
				info.InstanceType = a.Name
			}
			for _, fid := range b.Instances {
				if in := st.instanceByFID(fid); in != nil {
					info.InstanceStatuses = append(info.InstanceStatuses, in.status(now))
				}
			}
			out = append(out, info)
		}
		return nil
	})
	return out
}

// LiveBids lists hydra's bids that are not cancelled.
func (s *Server) LiveBids() []BidInfo {
	var out []BidInfo
	for _, b := range s.Bids() {
		if b.Status != bidTerminated {
			out = append(out, b)
		}
	}
	return out
}

// InstanceTypeFID returns the FID of an instance type name in a region ("" when not in the catalog).
func (s *Server) InstanceTypeFID(region, name string) string {
	fid := ""
	_ = s.update(func(st *state, _ time.Time) error {
		for _, a := range st.Auctions {
			if a.Region == region && a.Name == name {
				fid = a.TypeFID
			}
		}
		return nil
	})
	return fid
}

// AddMarketBid places another customer's one-instance bid in an auction (limit price in cents) and
// returns its FID. A bid higher than the lowest allocated one in a full auction preempts it.
func (s *Server) AddMarketBid(region, instanceType string, limitCents int64) (string, error) {
	fid := ""
	err := s.update(func(st *state, now time.Time) error {
		for _, a := range st.Auctions {
			if a.Region == region && a.Name == instanceType {
				b := marketBid(fmt.Sprintf("market-%d", st.Seq+1), a, limitCents, now)
				st.placeBid(b, now)
				fid = b.FID
				return nil
			}
		}
		return fmt.Errorf("no auction for %s in %s", instanceType, region)
	})
	return fid, err
}

// SetCapacity changes an auction's total capacity; bids are allocated or preempted to match. Capacity
// 0 holds every bid of the auction Open (see also SetAuction).
func (s *Server) SetCapacity(region, instanceType string, capacity int) error {
	return s.update(func(st *state, now time.Time) error {
		for _, a := range st.Auctions {
			if a.Region == region && a.Name == instanceType {
				a.Capacity = capacity
				st.clear(a, now)
				return nil
			}
		}
		return fmt.Errorf("no auction for %s in %s", instanceType, region)
	})
}

// AuctionsPath is the emulator's own admin endpoint for the spot market, next to the shared ones
// under emukit.AdminPath (no credentials): GET lists the auctions (a JSON array of AuctionInfo), PUT
// changes one (an AuctionChange) and answers with its AuctionInfo as changed; an unknown auction is a
// 404, a negative figure a 400.
const AuctionsPath = emukit.AdminPath + "auctions"

// AuctionChange changes one auction of the spot market, as SetAuction and PUT AuctionsPath apply it.
// Nil fields are left as they are. The auction clears at once: allocated bids that no longer fit are
// preempted, open bids that now win are allocated.
//
// To hold hydra's bids Open (a bid not won in time): {"region": "us-central1-a", "instance_type":
// "a100-80gb.sxm.1x", "capacity": 0} makes the auction allocate nothing (its allocated bids are
// preempted); "market_bids_cents": [5000] instead raises its lowest winning bid to $50.00 (while
// capacity stays free), so that new bids below it are held Open.
type AuctionChange struct {
	// Region and InstanceType (the name, e.g. "h100-80gb.sxm.8x") name the auction.
	Region       string `json:"region"`
	InstanceType string `json:"instance_type"`
	// Capacity is the auction's total capacity in instances; 0 means none (nothing is allocated).
	Capacity *int `json:"capacity,omitempty"`
	// MinimumCents is the reserve price (minimum_price_cents): bids below it stay Open.
	MinimumCents *int64 `json:"minimum_cents,omitempty"`
	// LastPriceCents sets the published last clearing price (last_instance_price, spot_price_cents).
	LastPriceCents *int64 `json:"last_price_cents,omitempty"`
	// MarketBidsCents, when not nil, replaces other customers' bids in the auction: the live ones are
	// cancelled and one one-instance bid per limit price (cents) is placed, ranked by price alone (they
	// are not held below the lowest winning bid). An empty, non-nil list removes them all.
	MarketBidsCents []int64 `json:"market_bids_cents,omitempty"`
}

// AuctionInfo is an emulator view of one auction and its public signals.
type AuctionInfo struct {
	FID          string `json:"fid"`
	Region       string `json:"region"`
	InstanceType string `json:"instance_type"`
	// Capacity is the total capacity, Available what is free now (availability's capacity).
	Capacity  int `json:"capacity"`
	Available int `json:"available_capacity"`
	// MinimumCents, LastPriceCents, LowestWinningCents (0: no bid allocated) and WinPriceCents are the
	// auction's prices in cents, as /v2/pricing/current reports them.
	MinimumCents       int64 `json:"minimum_cents"`
	LastPriceCents     int64 `json:"last_price_cents"`
	LowestWinningCents int64 `json:"lowest_winning_cents"`
	WinPriceCents      int64 `json:"win_price_cents"`
	// MarketBidsCents are other customers' live bids (limit prices), oldest first.
	MarketBidsCents []int64 `json:"market_bids_cents"`
	// OpenBids counts the auction's bids waiting Open (hydra's and the market's), held ones included.
	OpenBids int `json:"open_bids"`
}

// SetAuction's errors: an auction the catalog lacks, a change out of range.
var (
	errNoAuction     = errors.New("no such auction")
	errInvalidChange = errors.New("invalid auction change")
)

// auctionNamed finds an auction by region and instance type name.
func (st *state) auctionNamed(region, instanceType string) *auction {
	for _, a := range st.Auctions {
		if a.Region == region && a.Name == instanceType {
			return a
		}
	}
	return nil
}

func (st *state) auctionInfo(a *auction) AuctionInfo {
	stt := st.stats(a)
	info := AuctionInfo{FID: a.FID, Region: a.Region, InstanceType: a.Name, Capacity: a.Capacity, Available: stt.available,
		MinimumCents: a.MinimumCents, LastPriceCents: a.LastPriceCents, LowestWinningCents: stt.lowestAllocated,
		WinPriceCents: stt.winPrice, MarketBidsCents: []int64{}}
	for _, b := range st.Bids {
		if b.TypeFID != a.TypeFID || b.Region != a.Region {
			continue
		}
		if b.Project == marketProject && b.Status != bidTerminated {
			info.MarketBidsCents = append(info.MarketBidsCents, b.LimitCents)
		}
		if b.Status == bidOpen {
			info.OpenBids++
		}
	}
	return info
}

// Auctions lists the auctions of the spot market with their signals now.
func (s *Server) Auctions() []AuctionInfo {
	var out []AuctionInfo
	_ = s.update(func(st *state, _ time.Time) error {
		for _, a := range st.Auctions {
			out = append(out, st.auctionInfo(a))
		}
		return nil
	})
	return out
}

// SetAuction applies a change to one auction (see AuctionChange) and returns the auction as changed.
func (s *Server) SetAuction(c AuctionChange) (AuctionInfo, error) {
	var info AuctionInfo
	err := s.update(func(st *state, now time.Time) error {
		a := st.auctionNamed(c.Region, c.InstanceType)
		if a == nil {
			return fmt.Errorf("%w for %s in %s", errNoAuction, c.InstanceType, c.Region)
		}
		if (c.Capacity != nil && *c.Capacity < 0) || (c.MinimumCents != nil && *c.MinimumCents < 0) ||
			(c.LastPriceCents != nil && *c.LastPriceCents < 0) || slices.ContainsFunc(c.MarketBidsCents, func(p int64) bool { return p <= 0 }) {
			return fmt.Errorf("%w: capacity and prices must not be negative, and market bids must be above zero", errInvalidChange)
		}
		if c.Capacity != nil {
			a.Capacity = *c.Capacity
		}
		if c.MinimumCents != nil {
			a.MinimumCents = *c.MinimumCents
		}
		if c.MarketBidsCents != nil {
			for _, b := range st.Bids {
				if b.Project == marketProject && b.TypeFID == a.TypeFID && b.Region == a.Region && b.Status != bidTerminated {
					st.terminate(b, now)
				}
			}
			for _, p := range c.MarketBidsCents {
				st.addBid(marketBid(fmt.Sprintf("market-%d", st.Seq+1), a, p, now))
			}
		}
		st.clear(a, now)
		if c.LastPriceCents != nil {
			a.LastPriceCents = *c.LastPriceCents
		}
		info = st.auctionInfo(a)
		return nil
	})
	return info, err
}

// serveAuctions answers GET and PUT AuctionsPath.
func (s *Server) serveAuctions(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		emukit.WriteJSON(w, http.StatusOK, s.Auctions(), nil)
		return
	}
	var c AuctionChange
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&c); err != nil {
		emukit.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()}, nil)
		return
	}
	info, err := s.SetAuction(c)
	if err != nil {
		writeAdminError(w, err, errInvalidChange, http.StatusBadRequest)
		return
	}
	emukit.WriteJSON(w, http.StatusOK, info, nil)
}

// OutbidOnArrival1 is the fault set that keeps hydra's next bid Open until it is cancelled.
func OutbidOnArrival1() OwnFaults { return OwnFaults{OutbidOnArrival: 1} }
