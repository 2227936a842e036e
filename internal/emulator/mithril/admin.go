package mithril

import (
	"fmt"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
)

// Emulator-only helpers for tests and the sandbox. They act on the same state as the API (the state
// dir too).

type admin = emukit.StateAdmin[state]

// newAdmin is the Server's emukit.Admin.
//
// SetFaults replaces the armed shared faults. LoseCreateResponses loses the answers of bid creates
// (POST /v2/spot/bids); SoldOut makes them fail with Mithril's 400 "Insufficient capacity";
// BootFailures ends hydra's next allocated instances in STATUS_ERROR. OwnFaults.OnlyPath narrows the
// 429 and 5xx faults. Faults returns the armed shared faults, with their counters as used so far.
//
// Stats reports hydra's side of the cloud: Created counts the bids the API has accepted (POST
// /v2/spot/bids), ever; Live lists the bids of hydra's projects that are not cancelled (a bid is one
// hydra instance: its FID is Instance.ID and its name the cloud-side name). Other customers' bids are
// left out.
func newAdmin(s *Server) admin {
	return emukit.NewStateAdmin(func(_ bool, fn func(st *state) error) error {
		return s.update(func(st *state, _ time.Time) error { return fn(st) })
	}, func(st *state) *emukit.Faults { return &st.Faults },
		func(st *state) (int, []emukit.Machine) {
			return st.Created, emukit.LiveMachines(st.Bids, func(b *bid) (emukit.Machine, bool) {
				return emukit.Machine{ID: b.FID, Name: b.Name}, b.Project != marketProject && b.Status != bidTerminated
			})
		})
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
	Instances                                        []string
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
				Instances: append([]string(nil), b.Instances...)}
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
				b := &bid{Name: fmt.Sprintf("market-%d", st.Seq+1), Project: marketProject, CreatedBy: "user_market", CreatedAt: now,
					LimitCents: limitCents, Quantity: 1, TypeFID: a.TypeFID, Region: a.Region}
				st.placeBid(b, now)
				fid = b.FID
				return nil
			}
		}
		return fmt.Errorf("no auction for %s in %s", instanceType, region)
	})
	return fid, err
}

// SetCapacity changes an auction's total capacity; bids are allocated or preempted to match.
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
