package mithril

import (
	"context"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
)

// Housekeeping: bids whose machine is gone for good.
//
// Mithril keeps a preempted bid: after the preemption window it is Open again and may be allocated a
// new machine later, billed to the account (reference 4.4). hydra wants no replacement (the new machine
// is not provisioned, and no resource knows it), so such a bid must be cancelled. Get and List have
// no side effects, since a refresh during `terraform plan` must not change the cloud: they report the
// instance as an error whose message says the bid is still open (see evaluate), which keeps it in the
// resource's state. Two calls cancel it, and only these:
//
//   - Delete, which cancels the bid it is given whatever its state: the owner's own replacement or
//     destroy of the errored instance is the normal way a gone bid is cancelled.
//   - Create, before placing its bid, cancels the gone bids of the same resource (reapGoneBids): the
//     machines of its earlier creates, for when the owner lost track of one (a create_before_destroy
//     replacement, a state that lost the instance).

// scanned is one bid, read with its instances and evaluated.
type scanned struct {
	bid Bid
	// insts are the bid's instances, past ones included.
	insts []Instance
	inst  cloudprovider.Instance
	// gone says the bid's machine is gone for good while the bid is not cancelled (evaluate).
	gone bool
}

// scan reads the project's bids that match f and that keep accepts, leaving cancelled ones out, with
// their instances (read in chunks of 50 bids), every page of both.
func (b *Backend) scan(ctx context.Context, project string, f BidFilter, keep func(Bid) bool) ([]scanned, error) {
	bids, err := b.client.ListBids(ctx, project, f)
	if err != nil {
		return nil, err
	}
	var kept []Bid
	var fids []string
	for _, bd := range bids {
		if keep(bd) && canonicalBidStatus(bd.Status) != BidTerminated {
			kept = append(kept, bd)
			fids = append(fids, bd.FID)
		}
	}
	byBid := map[string][]Instance{}
	for start := 0; start < len(fids); start += 50 {
		chunk := fids[start:min(start+50, len(fids))]
		insts, err := b.client.ListInstances(ctx, project, InstanceFilter{BidFIDs: chunk})
		if err != nil {
			return nil, err
		}
		for _, in := range insts {
			byBid[in.Bid] = append(byBid[in.Bid], in)
		}
	}
	out := make([]scanned, 0, len(kept))
	for _, bd := range kept {
		inst, gone := b.evaluate(ctx, bd, byBid[bd.FID])
		out = append(out, scanned{bid: bd, insts: byBid[bd.FID], inst: inst, gone: gone})
	}
	return out, nil
}

// live returns the newest bid named name whose machine is not gone, if any.
func live(bids []scanned, name string) (scanned, bool) {
	var best *scanned
	for i := range bids {
		s := &bids[i]
		if s.bid.Name == name && !s.gone && s.inst.Status != cloudprovider.StatusTerminated &&
			(best == nil || s.bid.CreatedAt.After(best.bid.CreatedAt.Time)) {
			best = s
		}
	}
	if best == nil {
		return scanned{}, false
	}
	return *best, true
}

// findLive looks for a live bid named name among the bids kind accepts.
func (b *Backend) findLive(ctx context.Context, project, name string, kind func(Bid) bool) (scanned, bool, error) {
	bids, err := b.scan(ctx, project, BidFilter{Name: name}, func(bd Bid) bool { return bd.Name == name && kind(bd) })
	if err != nil {
		return scanned{}, false, err
	}
	s, ok := live(bids, name)
	return s, ok, nil
}

// reapGoneBids is Create's (and CreateCluster's) housekeeping step. Among the bids kind accepts
// (machines' or clusters', see isClusterBid), it reads those of the resource in its pool (named name,
// or named after the same resource with another ownership token or none, see
// cloudprovider.ParseCloudName) and cancels the ones whose machine is gone for good: preempted, or
// terminated or replaced while the bid is still open. It never touches a bid waiting for its first
// machine, booting, running, paused or in error at the cloud, nor another resource's bid. A failed
// cancel is logged, not returned (Delete, or the next Create, tries again).
//
// It also returns the live bid named name, when there is one (idempotency by name).
func (b *Backend) reapGoneBids(ctx context.Context, project string, pool inventory.Pool, owner cloudprovider.Ownership, name string, kind func(Bid) bool) (scanned, bool, error) {
	resource := owner.Resource
	if resource == "" {
		resource, _, _ = cloudprovider.ParseCloudName(pool, name)
	}
	sameResource := func(bd Bid) bool {
		if !kind(bd) {
			return false
		}
		if bd.Name == name {
			return true
		}
		r, _, ok := cloudprovider.ParseCloudName(pool, bd.Name)
		return ok && resource != "" && r == resource
	}
	bids, err := b.scan(ctx, project, BidFilter{}, sameResource)
	if err != nil {
		return scanned{}, false, err
	}
	for _, s := range bids {
		if !s.gone {
			continue
		}
		if err := b.cancelBid(ctx, s.bid.FID); err != nil {
			if ctx.Err() != nil {
				return scanned{}, false, err
			}
			b.log.Warn("could not cancel an earlier bid of the resource whose machine is gone", "bid", s.bid.FID, "name", s.bid.Name, "error", err)
			continue
		}
		b.log.Info("cancelled an earlier bid of the resource whose machine is gone, so Mithril allocates it no replacement", "bid", s.bid.FID, "name", s.bid.Name, "reason", s.inst.Message)
	}
	s, ok := live(bids, name)
	return s, ok, nil
}
