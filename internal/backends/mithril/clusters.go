package mithril

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// Clusters: one spot bid for N instances.
//
// A Mithril cluster is one bid with instance_quantity N >= 2 (POST /v2/spot/bids). Mithril allocates
// a bid all or nothing: "Bids are all-or-nothing in that it will only convert to an Allocation if all
// quantities of instances will be successful in the market" (docs.mlfoundry.com, "Using spot
// instances"); until then the bid is Open with no instances and nothing is billed. hydra places no
// cluster bid its auction cannot fill now (ErrCapacity, nothing placed); one that still does not win
// at once (capacity taken meanwhile, a bid held below the lowest winning bid) is a pending cluster
// with AwaitingAllocation and no nodes, which the control plane cancels after its bid timeout. A
// bid cannot be resized: UpdateBidRequest (PATCH /v2/spot/bids/{fid}, Mithril's OpenAPI document) has
// limit_price, paused, volumes and memory_gb only, and SkyPilot's Mithril provisioner refuses to add
// instances to an existing cluster.
//
// Interconnect: "any" only. Mithril promises interconnected nodes for reservations, not for spot bids:
// its compute overview (docs.mithril.ai/compute-and-storage/compute-overview) says "Reservations give
// you guaranteed access to interconnected nodes" and offers spot orders as "burst capacity". The
// catalog's network_type ("InfiniBand") and ib_count describe one instance type's network cards, not
// a fabric shared by the instances of one bid, so no Mithril offer is a "fabric" one.
//
// Cluster bids are told apart from machines' bids by their quantity (isClusterBid): CreateCluster
// places only bids of 2 or more instances and Create only bids of one. The cluster's id is the bid's
// FID, its name the bid's; node i (1-based, in the bid's order of instances) is named "<bid name>-<i>",
// its Instance.ID is the instance's FID and its Instance.Cluster the bid's FID.

var _ cloudprovider.ClusterBackend = (*Backend)(nil)

// isClusterBid says whether a bid is a cluster's (2 or more instances); isMachineBid is its opposite.
func isClusterBid(bd Bid) bool { return bd.InstanceQuantity > 1 }

func isMachineBid(bd Bid) bool { return !isClusterBid(bd) }

// DetailPricePerNode is a cluster offer's price of one node (the bid per instance, as a decimal dollar
// amount), under the key the sandbox's cluster offers use too.
const DetailPricePerNode = "price_per_node"

// reasonFewNodes is the ineligibility reason of an auction that cannot allocate two instances now.
func reasonFewNodes(n int) string {
	return fmt.Sprintf("auction can allocate %d instances now; a cluster needs at least 2", n)
}

// ClusterOffers lists one cluster offer per spot auction (see Offers): Nodes is the number of instances
// the auction can allocate now (its available capacity), Offer.Available the same, and a bid may ask
// for any count up to it. The bid per instance is what the auction needs to win now (PriceBids with
// nothing to compare and no max: the auction's signals plus the win margin): PricePerNode, also in
// Details["bid_price"] and Details["price_per_node"]; Offer.PricePerHour is Nodes times it. Every
// offer is spot and Interconnect "any" (see above). Auctions that cannot allocate 2 instances, or
// whose bid would not be placed, are listed ineligible with the reason, never dropped.
func (b *Backend) ClusterOffers(ctx context.Context) ([]cloudprovider.ClusterOffer, error) {
	offers, err := b.Offers(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]cloudprovider.ClusterOffer, 0, len(offers))
	for _, o := range offers {
		nodes := max(o.Available, 0)
		p := priceBid(o, nil, 0, b.margin)
		bid, _ := ParseDollars(p.Details[DetailBidPrice])
		if bid <= 0 {
			bid = usdToCentsFloor(p.PricePerHour)
		}
		if bid > 0 {
			p.Details[DetailPricePerNode] = centsToUSD(bid).String()
		}
		p.PricePerHour = centsToUSD(bid) * money.USD(nodes)
		p.Available = nodes
		if p.Ineligible == "" && nodes < 2 {
			p.Ineligible = reasonFewNodes(nodes)
		}
		out = append(out, cloudprovider.ClusterOffer{Offer: p, Nodes: nodes, Interconnect: cloudprovider.InterconnectAny, PricePerNode: centsToUSD(bid)})
	}
	return out, nil
}

// perInstance is a cluster offer's bid per instance: PricePerNode when set (ClusterOffers sets it),
// else Details["bid_price"] (PriceBids' key), else the whole price divided by Nodes.
func perInstance(o cloudprovider.ClusterOffer) money.USD {
	if o.PricePerNode > 0 {
		return o.PricePerNode
	}
	if c, err := ParseDollars(o.Details[DetailBidPrice]); err == nil && c > 0 {
		return centsToUSD(c)
	}
	if o.Nodes <= 0 {
		return 0
	}
	return o.PricePerHour / money.USD(o.Nodes)
}

// CreateCluster places one bid for req.Offer.Nodes instances at the offer's bid per instance (see
// perInstance) and returns at once: pending, and AwaitingAllocation while the bid is Open. In order:
//
//  1. Requests that cannot become a cluster bid are refused before any call (ErrInvalid): fewer than
//     2 nodes (one instance is a machine), a fabric interconnect (Mithril promises none for spot),
//     and whatever Create refuses (checkBid). A bid whose whole price (per instance, whole cents,
//     times the nodes) is above req.MaxPricePerHour is ErrCapacity, and nothing is placed.
//  2. The bid is placed once by name, as Create's is (placeOnce): a live cluster bid named req.Name
//     is returned as it is, earlier cluster bids of the resource whose machines are gone for good are
//     cancelled, and an unknown outcome is settled by looking the name up once more.
//  3. Before a new bid is placed, an auction that cannot allocate all the nodes now is ErrCapacity
//     (fillable), and nothing is placed.
func (b *Backend) CreateCluster(ctx context.Context, req cloudprovider.ClusterRequest) (cloudprovider.Cluster, error) {
	const op = "placing cluster bid"
	o := req.Offer
	if o.Nodes < 2 {
		return cloudprovider.Cluster{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op,
			"a Mithril cluster is one bid for 2 or more instances, not %d", o.Nodes)
	}
	if o.Interconnect == cloudprovider.InterconnectFabric {
		return cloudprovider.Cluster{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op,
			"Mithril promises no fabric for the instances of a spot bid (interconnected nodes are a reservation's)")
	}
	price, err := checkBid(op, req.Name, o.Offer, perInstance(o), o.Nodes, req.MaxPricePerHour)
	if err != nil {
		return cloudprovider.Cluster{}, err
	}
	volumes, err := b.clusterVolumes(ctx, o.Region, req.Volumes) // volumes.go
	if err != nil {
		return cloudprovider.Cluster{}, err
	}
	bid, insts, err := b.placeOnce(ctx, order{op: op, name: req.Name, pool: req.Pool, owner: req.Owner, offer: o.Offer,
		publicKeys: req.SSHPublicKeys, quantity: o.Nodes, price: price, kind: isClusterBid, whole: true, volumes: volumes})
	if err != nil {
		return cloudprovider.Cluster{}, err
	}
	c := b.clusterOf(ctx, bid, insts)
	if c.Status == cloudprovider.StatusTerminated {
		c.Status = cloudprovider.StatusPending
	}
	if c.Owner.Token == "" {
		c.Owner = req.Owner
		for i := range c.Nodes {
			c.Nodes[i].Owner = req.Owner
		}
	}
	return c, nil
}

// fillable refuses a bid for quantity instances of the instance type fid that its auction cannot
// allocate now (/v2/pricing/current's available_capacity): ErrCapacity, nothing placed. An unknown
// capacity, or prices that cannot be read (but for a refused key), leave the decision to the bid.
func (b *Backend) fillable(ctx context.Context, op, fid string, o cloudprovider.Offer, quantity int) error {
	p, err := b.client.CurrentPricing(ctx, fid, o.Region)
	switch {
	case cloudprovider.KindOf(err) == cloudprovider.ErrAuth:
		return err
	case err != nil:
		b.log.Warn("no current capacity for a cluster bid; placing it", "instance_type", o.InstanceType, "region", o.Region, "error", err)
		return nil
	case p.AvailableCapacity.Valid && p.AvailableCapacity.Value < int64(quantity):
		return cloudprovider.Errorf(cloudprovider.ErrCapacity, CloudName, op, "%s can allocate %d %s instances now, not %d (a bid is allocated all or nothing): nothing was placed",
			o.Region, max(p.AvailableCapacity.Value, 0), o.InstanceType, quantity)
	}
	return nil
}

// GetCluster reads the cluster bid with that FID and its instances. A bid of one instance is a
// machine, not a cluster: ErrNotFound. It has no side effects (a cluster whose machines are gone for
// good is reported as an error and left as it is; DeleteCluster cancels it).
func (b *Backend) GetCluster(ctx context.Context, id string) (cloudprovider.Cluster, error) {
	bid, insts, err := b.bidWithInstances(ctx, id)
	if err != nil {
		return cloudprovider.Cluster{}, err
	}
	if !isClusterBid(bid) {
		return cloudprovider.Cluster{}, cloudprovider.Errorf(cloudprovider.ErrNotFound, CloudName, "reading cluster", "bid %s is for one instance, not a cluster", id)
	}
	c := b.clusterOf(ctx, bid, insts)
	b.clusterInterruptions(ctx, &c, bid, insts)
	return c, nil
}

// bidWithInstances reads one bid and its instances, past ones included.
func (b *Backend) bidWithInstances(ctx context.Context, id string) (Bid, []Instance, error) {
	bid, err := b.client.GetBid(ctx, id)
	if err != nil {
		return Bid{}, nil, err
	}
	project := bid.Project
	if project == "" {
		if project, err = b.projectFID(ctx); err != nil {
			return Bid{}, nil, err
		}
	}
	insts, err := b.client.ListInstances(ctx, project, InstanceFilter{BidFIDs: []string{bid.FID}})
	return bid, insts, err
}

// ListClusters returns the cluster bids whose name starts with prefix, cancelled ones left out, with
// their nodes, reading every page. No side effects.
func (b *Backend) ListClusters(ctx context.Context, prefix string) ([]cloudprovider.Cluster, error) {
	project, err := b.projectFID(ctx)
	if err != nil {
		return nil, err
	}
	bids, err := b.scan(ctx, project, BidFilter{}, func(bd Bid) bool { return isClusterBid(bd) && strings.HasPrefix(bd.Name, prefix) })
	if err != nil {
		return nil, err
	}
	out := make([]cloudprovider.Cluster, len(bids))
	for i, s := range bids {
		out[i] = b.clusterOf(ctx, s.bid, s.insts)
	}
	return out, nil
}

// DeleteCluster cancels the cluster's bid, which terminates every instance of it; gone (404) or
// already cancelled is success (see Delete).
func (b *Backend) DeleteCluster(ctx context.Context, id string) error {
	return b.Delete(ctx, id)
}

// clusterOf maps a cluster bid and its instances onto a cluster. The bid as a whole is judged as a
// machine's bid is (evaluate): cancelled, preempted (the bid Preempting, or any instance preempted),
// paused, or Open without instances (pending, AwaitingAllocation). Otherwise the nodes are the bid's
// current instances, each judged alone (running once it has an ssh_destination), and the cluster is
// running only when all of the bid's quantity run, in error when any node is, pending otherwise. The
// price is the whole cluster's: the limit price times the quantity.
func (b *Backend) clusterOf(ctx context.Context, bid Bid, insts []Instance) cloudprovider.Cluster {
	whole, _ := b.evaluate(ctx, bid, insts)
	c := cloudprovider.Cluster{
		ID:                 bid.FID,
		Name:               bid.Name,
		Cloud:              CloudName,
		Region:             whole.Region,
		Status:             whole.Status,
		CloudStatus:        canonicalBidStatus(bid.Status),
		Message:            whole.Message,
		PricePerHour:       bid.LimitPrice.USD() * money.USD(max(bid.InstanceQuantity, 1)),
		AwaitingAllocation: whole.AwaitingAllocation,
		Interconnect:       cloudprovider.InterconnectAny, // a spot bid's instances are promised no fabric
		Owner:              b.ownerOf(bid.Name),
		CreatedAt:          bid.CreatedAt.Time,
	}
	c.Nodes = b.nodes(ctx, bid, insts, c.Owner)
	if whole.Status == cloudprovider.StatusTerminated || whole.Status == cloudprovider.StatusError ||
		whole.AwaitingAllocation || canonicalBidStatus(bid.Status) == BidTerminated {
		return c
	}
	running := 0
	c.Status, c.Message = cloudprovider.StatusPending, ""
	for _, n := range c.Nodes {
		switch n.Status {
		case cloudprovider.StatusError:
			c.Status, c.Message = cloudprovider.StatusError, n.Name+": "+n.Message
			return c
		case cloudprovider.StatusRunning:
			running++
		}
	}
	switch {
	case running == bid.InstanceQuantity:
		c.Status = cloudprovider.StatusRunning
	case len(c.Nodes) < bid.InstanceQuantity:
		c.Message = fmt.Sprintf("bid allocated: %d of %d instances reported", len(c.Nodes), bid.InstanceQuantity)
	default:
		c.Message = fmt.Sprintf("%d of %d instances running", running, bid.InstanceQuantity)
	}
	return c
}

// nodes are a cluster bid's current instances, in the bid's order (bid.instances), each judged as a
// machine of its own. An instance the bid names but the instance list does not show yet is pending.
func (b *Backend) nodes(ctx context.Context, bid Bid, insts []Instance, owner cloudprovider.Ownership) []cloudprovider.ClusterNode {
	byFID := make(map[string]Instance, len(insts))
	for _, in := range insts {
		byFID[in.FID] = in
	}
	out := make([]cloudprovider.ClusterNode, 0, len(bid.Instances))
	for i, fid := range bid.Instances {
		in, ok := byFID[fid]
		if !ok {
			in = Instance{FID: fid, Bid: bid.FID, Status: InstNew}
		}
		inst, _ := b.evaluate(ctx, bid, []Instance{in})
		inst.ID = fid
		inst.Name = bid.Name + "-" + strconv.Itoa(i+1)
		inst.Cluster = bid.FID
		inst.Owner = owner
		inst.AwaitingAllocation = false
		if !in.CreatedAt.IsZero() {
			inst.CreatedAt = in.CreatedAt.Time
		}
		out = append(out, cloudprovider.ClusterNode{Instance: inst, PrivateIP: strings.TrimSpace(in.PrivateIP)})
	}
	return out
}

// nodesOf are a scanned cluster bid's nodes as machines, for List.
func (b *Backend) nodesOf(ctx context.Context, s scanned) []cloudprovider.Instance {
	c := b.clusterOf(ctx, s.bid, s.insts)
	out := make([]cloudprovider.Instance, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Instance
	}
	return out
}

// ownerOf reads the ownership record from a cloud-side name of one of the inventory's Mithril pools
// (the cluster's name; its nodes carry the same record). Empty when no pool's prefix starts it.
func (b *Backend) ownerOf(name string) cloudprovider.Ownership {
	pool, ok := b.inv.PoolForInstance(name)
	if !ok || pool.Cloud != CloudName {
		return cloudprovider.Ownership{}
	}
	resource, token, ok := cloudprovider.ParseCloudName(pool, name)
	if !ok || token == "" {
		return cloudprovider.Ownership{}
	}
	return cloudprovider.Ownership{Resource: resource, Token: token}
}

// instanceBid returns the bid an instance belongs to (GET /v2/instances/{fid}/status).
func (c *Client) instanceBid(ctx context.Context, fid string) (string, error) {
	if err := checkFID(fid); err != nil {
		return "", cloudprovider.NewError(cloudprovider.ErrNotFound, CloudName, "reading instance", err)
	}
	type bidOnly struct {
		Bid string `json:"bid"`
	}
	out, err := get[bidOnly](ctx, c, "reading instance "+fid, "/v2/instances/"+url.PathEscape(fid)+"/status", nil)
	if err != nil {
		return "", err
	}
	return out.Bid, nil
}

// nodeIDPrefix starts the FIDs of instances: the ids of cluster nodes (a machine's id is its bid's).
const nodeIDPrefix = "inst_"

// getNode is Get of a cluster node by its instance FID: the node as GetCluster reports it, or
// ErrNotFound when its bid no longer has it.
func (b *Backend) getNode(ctx context.Context, id string) (cloudprovider.Instance, error) {
	bidFID, err := b.client.instanceBid(ctx, id)
	if err != nil {
		return cloudprovider.Instance{}, err
	}
	c, err := b.GetCluster(ctx, bidFID)
	if err != nil {
		return cloudprovider.Instance{}, err
	}
	for _, n := range c.Nodes {
		if n.ID == id {
			return n.Instance, nil
		}
	}
	return cloudprovider.Instance{}, cloudprovider.Errorf(cloudprovider.ErrNotFound, CloudName, "reading node", "instance %s is no longer a node of cluster bid %s", id, bidFID)
}

// refuseNodeDelete is Delete of a cluster node: a bid cannot shrink, so a node goes only with its
// cluster (DeleteCluster).
func refuseNodeDelete(id string) error {
	return cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, "cancelling bid",
		"%s is a node of a cluster bid, which cannot be resized: delete the cluster", id)
}
