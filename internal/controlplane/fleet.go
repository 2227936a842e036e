package controlplane

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// Fleet shares the clouds' known stock among the instances planned in one run, so that three
// instances never all take an offer with one machine left. Each instance asks Choose with its offers
// (ranked, as Offers returns them). Instances whose best offer has no stock limit choose it at once.
// The others gather: once no new instance has joined for the fleet's quiet period, the gathered
// instances are served in name order, each taking the best offer that still has stock after the
// instances before it; the rest move on to the next best, deterministically. Stock is counted per cloud
// offer (cloud, region, instance type, market), shared by that cloud's pools.
//
// A Fleet lives as long as one plan (one provider process); choices it makes are pinned by the caller
// like any other.
type Fleet struct {
	quiet time.Duration

	mu      sync.Mutex
	changed chan struct{} // closed and replaced whenever an instance joins or a round is served
	waiting map[string]*fleetEntry
	taken   map[string][]string // stock key -> names that took one, in order
	chosen  map[string]FleetChoice
}

type fleetEntry struct {
	offers []cloudprovider.Offer
	joined time.Time
}

// FleetChoice is what Choose decided for one instance.
type FleetChoice struct {
	// Offer is the chosen offer.
	Offer cloudprovider.Offer
	// Passed lists the better-ranked offers the instance did not get because instances planned before
	// it in this run took their last stock, each with those instances' names.
	Passed []PassedOffer
}

// PassedOffer is a better offer an instance did not get.
type PassedOffer struct {
	Offer cloudprovider.Offer
	// TakenBy are the instances of this run that took its stock, in name order.
	TakenBy []string
}

// NewFleet returns a Fleet that serves a gathered round once no instance has joined for quiet.
func NewFleet(quiet time.Duration) *Fleet {
	return &Fleet{quiet: quiet, changed: make(chan struct{}), waiting: map[string]*fleetEntry{},
		taken: map[string][]string{}, chosen: map[string]FleetChoice{}}
}

func stockKey(o cloudprovider.Offer) string {
	return fmt.Sprintf("%s/%s/%s/%t", o.Cloud, o.Region, o.InstanceType, o.Spot)
}

// Choose returns the offer for the instance name from offers (ranked best first, all eligible). It
// returns ok false when every offer's stock was taken by other instances of this run (the choice then
// lists them in Passed). A name asked again gets the same answer, ok included, whatever offers it
// brings the second time.
func (f *Fleet) Choose(ctx context.Context, name string, offers []cloudprovider.Offer) (FleetChoice, bool, error) {
	if len(offers) == 0 {
		return FleetChoice{}, false, nil
	}
	f.mu.Lock()
	if c, ok := f.chosen[name]; ok {
		f.mu.Unlock()
		return c, c.Offer.ID != "", nil
	}
	if offers[0].Available < 0 || offers[0].StockUnknown {
		// No stock limit on the best offer: nobody can take it away.
		c := FleetChoice{Offer: offers[0]}
		f.chosen[name] = c
		f.mu.Unlock()
		return c, true, nil
	}
	f.waiting[name] = &fleetEntry{offers: offers, joined: time.Now()}
	f.signal()
	for {
		if c, ok := f.chosen[name]; ok {
			f.mu.Unlock()
			return c, c.Offer.ID != "", nil
		}
		// Serve the round once nobody has joined for the quiet period.
		var last time.Time
		for _, e := range f.waiting {
			if e.joined.After(last) {
				last = e.joined
			}
		}
		left := f.quiet - time.Since(last)
		if left <= 0 {
			f.serve()
			continue
		}
		changed := f.changed
		f.mu.Unlock()
		select {
		case <-ctx.Done():
			f.mu.Lock()
			delete(f.waiting, name)
			f.mu.Unlock()
			return FleetChoice{}, false, ctx.Err()
		case <-changed:
		case <-time.After(left):
		}
		f.mu.Lock()
	}
}

// serve decides every waiting instance, in name order. Called with f.mu held.
func (f *Fleet) serve() {
	names := make([]string, 0, len(f.waiting))
	for n := range f.waiting {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		var c FleetChoice
		for _, o := range f.waiting[n].offers {
			k := stockKey(o)
			if o.Available < 0 || o.StockUnknown || len(f.taken[k]) < o.Available {
				c.Offer = o
				f.taken[k] = append(f.taken[k], n)
				break
			}
			c.Passed = append(c.Passed, PassedOffer{Offer: o, TakenBy: append([]string(nil), f.taken[k]...)})
		}
		f.chosen[n] = c // an empty Offer: nothing left
		delete(f.waiting, n)
	}
	f.signal()
}

// signal wakes every waiter. Called with f.mu held.
func (f *Fleet) signal() {
	close(f.changed)
	f.changed = make(chan struct{})
}
