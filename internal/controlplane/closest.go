package controlplane

import (
	"context"
	"fmt"
	"sort"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// Near is an offer that almost matched a request: it would match if one constraint were relaxed.
type Near struct {
	// Relaxed says which constraint, in the request's words ("without max_price_per_hour",
	// "with gpu_count = 2", "in any region", "with spot = true", "in any form factor").
	Relaxed string
	Offer   cloudprovider.Offer
}

func (n Near) String() string {
	return fmt.Sprintf("%s: %s at %s", n.Relaxed, n.Offer.ID, n.Offer.PricePerHour.PerHour())
}

// Closest answers the request with one constraint relaxed at a time and returns the cheapest offer of
// each relaxation that has one: the hint a failed plan gives. At most one offer per relaxation, and at
// most two other GPU counts. Each cloud is asked at most once per process, as Offers asks: a cloud the
// request already asked is answered from that answer, but relaxing clouds (or a request limited to some
// clouds) asks every other configured cloud that offers the GPU type too, once.
func (cp *ControlPlane) Closest(ctx context.Context, req OfferRequest) []Near {
	var out []Near
	try := func(relaxed string, r OfferRequest) {
		res, err := cp.Offers(ctx, r, false)
		if err != nil {
			return
		}
		if best, ok := res.Cheapest(); ok {
			out = append(out, Near{Relaxed: relaxed, Offer: best})
		}
	}
	if req.MaxPricePerHour > 0 {
		r := req
		r.MaxPricePerHour = 0
		try("without max_price_per_hour", r)
	}
	if len(req.Regions) > 0 {
		r := req
		r.Regions = nil
		try("in any region", r)
	}
	if !req.AllowSpot {
		r := req
		r.AllowSpot = true
		try("with spot = true", r)
	}
	if req.FormFactor != "" {
		r := req
		r.FormFactor = ""
		try("in any form factor", r)
	}
	if len(req.Clouds) > 0 {
		r := req
		r.Clouds = nil
		try("on any configured cloud", r)
	}
	for _, n := range cp.otherCounts(ctx, req) {
		r := req
		r.GPUCount = n
		try(fmt.Sprintf("with gpu_count = %d", n), r)
	}
	return out
}

// otherCounts lists up to two GPU counts, nearest to the request's first, that the clouds offer for the
// request's GPU type (from the offers already read).
func (cp *ControlPlane) otherCounts(ctx context.Context, req OfferRequest) []int {
	seen := map[int]bool{}
	for _, c := range cp.Clouds() {
		if !cloudAllowed(req.Clouds, c) {
			continue
		}
		co := cp.cloudOffers(ctx, c, false)
		for _, o := range co.offers {
			if o.GPUType == req.GPUType && o.GPUCount != req.GPUCount && o.GPUCount <= cp.inv.GPUs[req.GPUType].MaxCount {
				seen[o.GPUCount] = true
			}
		}
	}
	var counts []int
	for n := range seen {
		counts = append(counts, n)
	}
	dist := func(n int) int {
		if n > req.GPUCount {
			return n - req.GPUCount
		}
		return req.GPUCount - n
	}
	sort.Slice(counts, func(i, j int) bool {
		if dist(counts[i]) != dist(counts[j]) {
			return dist(counts[i]) < dist(counts[j])
		}
		return counts[i] < counts[j]
	})
	if len(counts) > 2 {
		counts = counts[:2]
	}
	return counts
}
