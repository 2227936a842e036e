package controlplane

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// A cluster offer's ID is a machine offer ID whose instance type is "<nodes>x<instance type>" and whose
// price is the whole cluster's: "<pool>/<region>/<nodes>x<instance type>/<ondemand|spot>@<price>", e.g.
// "sandbox-vm-pool/eu-north-1/4xgpu-h100x8/ondemand@40.00". ParseOfferID reads it as a machine offer of
// instance type "4xgpu-h100x8", so the capacity memory (RememberCapacity, skipRemembered) keeps cluster
// offers apart from machine offers of the same instance type without a key of its own.

// ClusterOfferID builds a cluster offer's ID (see above); co.Pool must be set.
func ClusterOfferID(co cloudprovider.ClusterOffer) string { return OfferID(flatCluster(co)) }

// ParsedClusterOfferID is what a cluster offer ID says; InstanceType is one node's.
type ParsedClusterOfferID struct {
	ParsedOfferID
	Nodes int
}

// ParseClusterOfferID reads an ID built by ClusterOfferID.
func ParseClusterOfferID(id string) (ParsedClusterOfferID, error) {
	p, err := ParseOfferID(id)
	if err != nil {
		return ParsedClusterOfferID{}, fmt.Errorf("%w (a cluster offer's instance type is <nodes>x<instance type>)", err)
	}
	nodes, it, ok := strings.Cut(p.InstanceType, "x")
	n, nerr := strconv.Atoi(nodes)
	if !ok || it == "" || nerr != nil || n < 1 || nodes != strconv.Itoa(n) {
		return ParsedClusterOfferID{}, fmt.Errorf("cluster offer ID %q is not valid: its instance type %q does not start with a node count; "+
			"expected <pool>/<region>/<nodes>x<instance type>/<ondemand|spot>@<price of the whole cluster>", id, p.InstanceType)
	}
	p.InstanceType = it
	return ParsedClusterOfferID{ParsedOfferID: p, Nodes: n}, nil
}

// flatCluster is a cluster offer seen as one machine offer: its instance type "<nodes>x<type>" and
// the whole cluster's price (and ranking price), ID set. Ranking, the capacity memory and the reasons
// other clouds lost (WhyNot) take it as they take a machine offer.
func flatCluster(co cloudprovider.ClusterOffer) cloudprovider.Offer {
	o := co.Offer
	o.InstanceType = fmt.Sprintf("%dx%s", co.Nodes, co.InstanceType)
	o.ID = OfferID(o)
	return o
}

// clusterResult is the cluster offers matching a spec across the asked clouds.
type clusterResult struct {
	// flat are the eligible offers as machine offers (flatCluster), ranked; byID maps their IDs back.
	flat []cloudprovider.Offer
	byID map[string]cloudprovider.ClusterOffer
	// rejections name every asked cloud without an eligible offer, sorted by cloud.
	rejections []Rejection
}

func (r clusterResult) offers() []cloudprovider.ClusterOffer {
	out := make([]cloudprovider.ClusterOffer, len(r.flat))
	for i, o := range r.flat {
		out[i] = r.byID[o.ID]
	}
	return out
}

func (r clusterResult) reasons() map[string]string {
	out := map[string]string{}
	for _, rej := range r.rejections {
		out[rej.Cloud] = rej.Reason
	}
	return out
}

// offerRequest is the machine request a cluster's nodes make, for Validate.
func (s ClusterSpec) offerRequest() OfferRequest {
	return OfferRequest{GPUType: s.GPUType, GPUCount: s.GPUCount, Kind: s.Kind, Clouds: s.Clouds, Regions: s.Regions,
		MaxPricePerHour: s.MaxPricePerHour, AllowSpot: s.Spot == nil || *s.Spot, Volumes: s.Volumes}
}

// interconnect is the asked interconnect (fabric when unset).
func (s ClusterSpec) interconnect() cloudprovider.Interconnect {
	if s.Interconnect == "" {
		return cloudprovider.InterconnectFabric
	}
	return s.Interconnect
}

// shape words a cluster: "4 nodes of 8x h100".
func (s ClusterSpec) shape() string {
	return fmt.Sprintf("%d %s of %dx %s", s.Nodes, plural(s.Nodes, "node", "nodes"), s.GPUCount, s.GPUType)
}

// validateCluster checks a spec against the inventory and the configured clouds, touching no cloud.
func (cp *ControlPlane) validateCluster(spec ClusterSpec) error {
	if spec.Nodes < 1 {
		return &RequestError{Field: "nodes", Msg: fmt.Sprintf("nodes must be at least 1, got %d", spec.Nodes)}
	}
	if ic := spec.interconnect(); ic != cloudprovider.InterconnectFabric && ic != cloudprovider.InterconnectAny {
		return &RequestError{Field: "interconnect", Msg: fmt.Sprintf("unknown interconnect %q; expected %q or %q", ic, cloudprovider.InterconnectFabric, cloudprovider.InterconnectAny)}
	}
	return cp.Validate(spec.offerRequest())
}

// ClusterOffers returns the cluster offers the configured clouds can rent now for spec, eligible only
// (their IDs set, see ClusterOfferID), best first by the whole cluster's ranking price, and why each
// asked cloud without one has none ("no cluster API" for a cloud whose backend has no
// ClusterBackend). A cloud's offer matches when its GPUs per node, node count (exactly), region,
// market and interconnect (a fabric serves either ask) are the spec's; one sold out or above
// max_price_per_hour is not eligible. Errors are *RequestError or *UnconfiguredError.
func (cp *ControlPlane) ClusterOffers(ctx context.Context, spec ClusterSpec) ([]cloudprovider.ClusterOffer, map[string]string, error) {
	res, err := cp.clusterOffers(ctx, spec)
	if err != nil {
		return nil, nil, err
	}
	return res.offers(), res.reasons(), nil
}

func (cp *ControlPlane) clusterOffers(ctx context.Context, spec ClusterSpec) (clusterResult, error) {
	if err := cp.validateCluster(spec); err != nil {
		return clusterResult{}, err
	}
	gpu := cp.inv.GPUs[spec.GPUType]
	var asked []string
	res := clusterResult{byID: map[string]cloudprovider.ClusterOffer{}}
	vp, withVolumes, _ := placeVolumes(spec.Volumes) // validateCluster checked them
	for _, c := range cp.Clouds() {
		if !cloudAllowed(spec.Clouds, c) {
			continue
		}
		_, capable := cp.backends[c].(cloudprovider.ClusterBackend)
		var volumeWhy string
		if withVolumes {
			volumeWhy = cp.volumeRejection(c, vp, true)
		}
		switch {
		case volumeWhy != "":
			res.rejections = append(res.rejections, Rejection{Cloud: c, Reason: volumeWhy})
		case !capable:
			res.rejections = append(res.rejections, Rejection{Cloud: c, Reason: "no cluster API"})
		case !cp.hasPool(c, spec.Kind):
			res.rejections = append(res.rejections, Rejection{Cloud: c, Reason: fmt.Sprintf("no %s pool", spec.Kind)})
		case len(gpu.APINames[c]) == 0:
			res.rejections = append(res.rejections, Rejection{Cloud: c, Reason: fmt.Sprintf("no %s offers (supported_gpus.yml names none of its GPUs %s)", spec.GPUType, spec.GPUType)})
		default:
			asked = append(asked, c)
		}
	}
	answers, errs := concurrently(asked, func(c string) ([]cloudprovider.ClusterOffer, error) { return cp.cloudClusterOffers(ctx, c) })
	for i, c := range asked {
		if errs[i] != nil {
			res.rejections = append(res.rejections, Rejection{Cloud: c, Reason: errs[i].Error()})
			continue
		}
		matched, why := cp.matchClusters(c, answers[i], spec)
		var eligible, ineligible []cloudprovider.ClusterOffer
		for _, co := range matched {
			switch {
			case co.Ineligible != "":
			case co.Available == 0:
				co.Ineligible = "sold out (the cloud has no such cluster to start now)"
			case cloudprovider.AboveCap(co.PricePerHour, spec.MaxPricePerHour):
				co.Ineligible = fmt.Sprintf("%s is above max_price_per_hour %s", co.PricePerHour.PerHour(), spec.MaxPricePerHour.PerHour())
			}
			if co.Ineligible != "" {
				ineligible = append(ineligible, co)
				continue
			}
			eligible = append(eligible, co)
		}
		if len(eligible) == 0 {
			if why == "" {
				why = clusterIneligible(ineligible, spec)
			}
			res.rejections = append(res.rejections, Rejection{Cloud: c, Reason: why})
			continue
		}
		for _, co := range eligible {
			f := flatCluster(co)
			co.ID = f.ID
			if prior, dup := res.byID[f.ID]; dup {
				// The same cluster on another interconnect at the same price: the fabric one serves either ask.
				if co.Interconnect == cloudprovider.InterconnectFabric && prior.Interconnect != cloudprovider.InterconnectFabric {
					res.byID[f.ID] = co
				}
				continue
			}
			res.byID[f.ID] = co
			res.flat = append(res.flat, f)
		}
	}
	Rank(res.flat)
	slices.SortStableFunc(res.rejections, func(a, b Rejection) int { return strings.Compare(a.Cloud, b.Cloud) })
	cp.logger(ctx).Debug("cluster offers gathered", "gpu_type", spec.GPUType, "gpu_count", spec.GPUCount, "nodes", spec.Nodes,
		"interconnect", string(spec.interconnect()), "eligible", len(res.flat), "rejections", len(res.rejections))
	return res, nil
}

// clusterIneligible says why a cloud whose matching cluster offers are all ineligible has none: all
// sold out, the cheapest above the cap, or the first offer's own reason.
func clusterIneligible(offers []cloudprovider.ClusterOffer, spec ClusterSpec) string {
	cheapest := slices.MinFunc(offers, func(a, b cloudprovider.ClusterOffer) int { return cmp.Compare(a.PricePerHour, b.PricePerHour) })
	switch {
	case !slices.ContainsFunc(offers, func(o cloudprovider.ClusterOffer) bool { return o.Available != 0 }):
		return fmt.Sprintf("no capacity for a cluster of %s right now (%d matching %s sold out)", spec.shape(), len(offers), plural(len(offers), "offer", "offers"))
	case cloudprovider.AboveCap(cheapest.PricePerHour, spec.MaxPricePerHour):
		return fmt.Sprintf("cheapest matching cluster costs %s (%dx %s in %s), above max_price_per_hour %s",
			cheapest.PricePerHour.PerHour(), cheapest.Nodes, cheapest.InstanceType, cheapest.Region, spec.MaxPricePerHour.PerHour())
	}
	return "no eligible cluster offer: " + offers[0].Ineligible
}

// matchClusters filters one cloud's cluster offers by the spec and expands them into the cloud's pools
// of the spec's kind (Cloud, Pool set); why says, when none matches, the first requirement no offer met.
// The machine's requirements (GPU type and count, regions, spot) are match's, on the offers seen as
// machine offers (flatCluster); then the cluster's own: spot only, a fabric, the node count.
func (cp *ControlPlane) matchClusters(cloud string, offers []cloudprovider.ClusterOffer, spec ClusterSpec) ([]cloudprovider.ClusterOffer, string) {
	flat := make([]cloudprovider.Offer, len(offers))
	for i, co := range offers {
		flat[i] = flatCluster(co)
	}
	shaped, why := cp.match(cloud, flat, spec.offerRequest())
	if len(shaped) == 0 {
		return nil, why
	}
	inShape := map[string]bool{}
	for _, o := range shaped {
		inShape[o.Region+"/"+o.InstanceType] = true
	}
	maxNodes := map[string]int{} // region -> the most nodes offered there (with the asked shape)
	var nodeCounts []int
	var marketSeen, fabricMissing bool
	var out []cloudprovider.ClusterOffer
	for i, co := range offers {
		switch {
		case !inShape[co.Region+"/"+flat[i].InstanceType]:
			continue
		case spec.Spot != nil && co.Spot != *spec.Spot:
			continue
		}
		marketSeen = true
		if spec.interconnect() == cloudprovider.InterconnectFabric && co.Interconnect != cloudprovider.InterconnectFabric {
			fabricMissing = true
			continue
		}
		fit, ok := fitNodes(co, spec.Nodes)
		if !ok {
			maxNodes[co.Region] = max(maxNodes[co.Region], co.Nodes)
			nodeCounts = append(nodeCounts, co.Nodes)
			continue
		}
		co = fit
		for _, p := range cp.manager.Pools() {
			if p.Pool.Cloud == cloud && p.Pool.Kind == spec.Kind {
				po := co
				po.Cloud, po.Pool = cloud, p.Pool.Name
				out = append(out, po)
			}
		}
	}
	switch {
	case len(out) > 0:
		return out, ""
	case !marketSeen:
		return nil, fmt.Sprintf("only on-demand clusters of %dx %s nodes (spot = true asks for spot)", spec.GPUCount, spec.GPUType)
	case len(maxNodes) == 0 && fabricMissing:
		return nil, fmt.Sprintf("no fabric: its clusters of %dx %s nodes are machines in one region on any network (interconnect = \"any\")", spec.GPUCount, spec.GPUType)
	}
	var small []string
	for _, r := range slices.Sorted(maps.Keys(maxNodes)) {
		if maxNodes[r] > spec.Nodes {
			return nil, fmt.Sprintf("clusters of %s nodes, not %d", intList(nodeCounts), spec.Nodes)
		}
		small = append(small, fmt.Sprintf("at most %d %s in %s", maxNodes[r], plural(maxNodes[r], "node", "nodes"), r))
	}
	return nil, strings.Join(small, "; ")
}

// fitNodes is co as an offer of n nodes: co itself when it has exactly n; for an offer of any count up
// to Nodes (PricePerNode above 0), n nodes at n × PricePerNode, its ranking price scaled alike, and
// one with no node left (sold out) keeps its place as an ineligible offer of n nodes. ok is false
// when the offer cannot have n nodes.
func fitNodes(co cloudprovider.ClusterOffer, n int) (cloudprovider.ClusterOffer, bool) {
	switch {
	case co.PricePerNode <= 0:
		return co, co.Nodes == n
	case co.Nodes == 0:
		co.Ineligible = cmp.Or(co.Ineligible, "sold out (the cloud has no node of it to start now)")
		co.Available = 0
	case co.Nodes < n:
		return co, false
	}
	if co.RankPrice > 0 && co.Nodes > 0 {
		co.RankPrice = co.RankPrice * money.USD(n) / money.USD(co.Nodes)
	}
	co.Nodes, co.PricePerHour = n, co.PricePerNode*money.USD(n)
	return co, true
}

// cloudClusterOffers asks one cloud for its cluster offers, bounded by OfferTimeout; concurrent askers
// share one request.
func (cp *ControlPlane) cloudClusterOffers(ctx context.Context, cloud string) ([]cloudprovider.ClusterOffer, error) {
	cb, ok := cp.backends[cloud].(cloudprovider.ClusterBackend)
	if !ok {
		return nil, errors.New("no cluster API")
	}
	v, err, _ := cp.flight.Do("clusters/"+cloud, func() (any, error) {
		return askCloud(ctx, cp, cloud, "cluster offers", cb.ClusterOffers)
	})
	offers, _ := v.([]cloudprovider.ClusterOffer) // the function above returns only []ClusterOffer
	return offers, err
}
