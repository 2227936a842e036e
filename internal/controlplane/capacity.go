package controlplane

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// CapacityMiss is an offer whose create failed for lack of capacity: the cloud answered "no
// capacity" (ErrCapacity), or its auction could not be won within bid_timeout. Plans skip the offer
// (every offer of the same cloud, region, instance type and market, whatever its price) until
// At + the provider's capacity_memory.
type CapacityMiss struct {
	// OfferID is the offer that failed; Cloud its cloud.
	OfferID string `json:"offer_id"`
	Cloud   string `json:"cloud"`
	// Reason is what the cloud answered.
	Reason string `json:"reason"`
	// At is when the create failed.
	At time.Time `json:"at"`
}

// capacityMemory is the control plane's memory of CapacityMisses, by stock key.
type capacityMemory struct {
	mu     sync.Mutex
	misses map[string]CapacityMiss
}

// missKey is the stock key of a remembered offer ("" when its ID cannot be read).
func missKey(offerID string) string {
	p, err := ParseOfferID(offerID)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s/%s/%s/%t", p.Pool, p.Region, p.InstanceType, p.Spot)
}

// offerMissKey is missKey of an offer.
func offerMissKey(o cloudprovider.Offer) string {
	return fmt.Sprintf("%s/%s/%s/%t", o.Pool, o.Region, o.InstanceType, o.Spot)
}

// CapacityMemory is how long an offer that failed for lack of capacity is skipped (0: memory off).
func (cp *ControlPlane) CapacityMemory() time.Duration { return cp.opts.CapacityMemory }

// NewCapacityMiss is the miss of offer o now, for why.
func (cp *ControlPlane) NewCapacityMiss(o cloudprovider.Offer, why string) CapacityMiss {
	return CapacityMiss{OfferID: o.ID, Cloud: o.Cloud, Reason: why, At: cp.Now().UTC()}
}

// RememberCapacity makes the following plans of this control plane skip the offers of misses until
// capacity_memory after each failed (a miss already older than that is ignored; with capacity_memory
// 0 nothing is remembered). Callers read the misses from where every run of the configuration can
// read them (the state of the resource whose create failed).
func (cp *ControlPlane) RememberCapacity(misses []CapacityMiss) {
	if cp.opts.CapacityMemory <= 0 || len(misses) == 0 {
		return
	}
	now := cp.Now()
	cp.capacity.mu.Lock()
	defer cp.capacity.mu.Unlock()
	if cp.capacity.misses == nil {
		cp.capacity.misses = map[string]CapacityMiss{}
	}
	for _, m := range misses {
		k := missKey(m.OfferID)
		if k == "" || !m.At.Add(cp.opts.CapacityMemory).After(now) {
			continue
		}
		if old, ok := cp.capacity.misses[k]; !ok || m.At.After(old.At) {
			cp.capacity.misses[k] = m
		}
	}
}

// skipForPlan is skipRemembered in a plan of resource ("hydra_gpu_instance web"): the skip's notice is
// added to notices, and no offer (noun: "offer", "cluster offer") left is a *Refusal.
func (cp *ControlPlane) skipForPlan(offers []cloudprovider.Offer, noun, resource string, notices *[]Notice) ([]cloudprovider.Offer, []string, error) {
	left, skipped, ids := cp.skipRemembered(offers)
	if skipped != nil {
		*notices = append(*notices, *skipped)
	}
	if len(left) == 0 {
		return nil, ids, refuse("", "No GPU "+noun+" left for "+resource, skipped.Detail+"\nNo other "+noun+" matches; "+
			"wait until then, widen clouds or regions, or set the provider's capacity_memory = \"0\" to try them again now.")
	}
	return left, ids, nil
}

// skipRemembered drops from offers (ranked) those whose create recently failed for lack of capacity,
// keeping the order, and returns a notice naming each one skipped, why and until when (nil when none
// was).
func (cp *ControlPlane) skipRemembered(offers []cloudprovider.Offer) ([]cloudprovider.Offer, *Notice, []string) {
	if cp.opts.CapacityMemory <= 0 {
		return offers, nil, nil
	}
	now := cp.Now()
	cp.capacity.mu.Lock()
	defer cp.capacity.mu.Unlock()
	if len(cp.capacity.misses) == 0 {
		return offers, nil, nil
	}
	var kept []cloudprovider.Offer
	var lines, ids []string
	for _, o := range offers {
		m, ok := cp.capacity.misses[offerMissKey(o)]
		until := m.At.Add(cp.opts.CapacityMemory)
		if !ok || !until.After(now) {
			kept = append(kept, o)
			continue
		}
		ids = append(ids, o.ID)
		lines = append(lines, fmt.Sprintf("  %s: its create failed for lack of capacity at %s (%s); skipped until %s",
			o.ID, formatTime(m.At), m.Reason, formatTime(until)))
	}
	if len(lines) == 0 {
		return offers, nil, nil
	}
	sort.Strings(lines)
	return kept, &Notice{Summary: "Skipping offers that recently ran out of capacity",
		Detail: fmt.Sprintf("These offers are still listed, but a create of this resource failed on them for lack of capacity, so "+
			"plans skip them for the provider's capacity_memory (%s):\n%s", cp.opts.CapacityMemory, strings.Join(lines, "\n"))}, ids
}

// cheapestNotSkipped is the first (best-ranked) of offers whose ID is not in skipped.
func cheapestNotSkipped(offers []cloudprovider.Offer, skipped []string) (cloudprovider.Offer, bool) {
	for _, o := range offers {
		if !slices.Contains(skipped, o.ID) {
			return o, true
		}
	}
	return cloudprovider.Offer{}, false
}

// noCapacity tells the caller of Launch of an offer that failed for lack of capacity.
func (r LaunchRequest) noCapacity(o cloudprovider.Offer, why string) {
	if r.NoCapacity != nil {
		r.NoCapacity(o, why)
	}
}
