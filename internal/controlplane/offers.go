package controlplane

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// OfferRequest is what a user asks for; every field narrows the offers.
type OfferRequest struct {
	GPUType  string
	GPUCount int
	// Kind is the kind of machine ("vm" or "execlet"); it selects the pools.
	Kind string
	// AllowSpot lets spot (preemptible) offers compete with on-demand ones.
	AllowSpot bool
	// Clouds and Regions, when not empty, are the only ones allowed.
	Clouds  []string
	Regions []string
	// MaxPricePerHour is a ceiling per hour (0: none).
	MaxPricePerHour money.USD
	// WithoutSSHKey is true when the machine would be created with no SSH public key at all (no key
	// configured and provisioning off): clouds that require one (SSHKeyRequirer) are rejected.
	WithoutSSHKey bool
	// FormFactor, when set (FormFactorSXM or FormFactorPCIe), is the only form factor allowed; offers
	// whose cloud does not say their form factor do not match it.
	FormFactor string
	// Volumes are the volumes the machine gets (hydra_volume ids with mount paths): only offers of
	// their cloud and region match, and only clouds that launch machines with volumes.
	Volumes []VolumeUse
}

// Rejection says why one cloud offered nothing for a request.
type Rejection struct {
	Cloud  string
	Reason string
}

// OfferResult is the answer to an OfferRequest.
type OfferResult struct {
	// Offers are the eligible matching offers, cheapest first (see Rank).
	Offers []cloudprovider.Offer
	// Ineligible are matching offers a cloud would not win or honour (Offer.Ineligible says why).
	Ineligible []cloudprovider.Offer
	// Rejections name every asked cloud that has no eligible offer, with the reason, sorted by cloud.
	Rejections []Rejection
	// Unmapped lists, per asked cloud, the GPU names it offers that the inventory does not map (the
	// names to add under api_names in supported_gpus.yml to rent them).
	Unmapped map[string][]string
	// UnknownRegions are the requested regions that no asked cloud's catalog has, whatever the GPU;
	// KnownRegions, set with them, are the regions those catalogs do have, sorted.
	UnknownRegions, KnownRegions []string
}

// Cheapest returns the best offer, if any.
func (r OfferResult) Cheapest() (cloudprovider.Offer, bool) {
	if len(r.Offers) == 0 {
		return cloudprovider.Offer{}, false
	}
	return r.Offers[0], true
}

// WhyNot says, for every asked cloud other than the winner's, why it lost: its cheapest eligible offer
// and how much more it costs, or why it had none. The winner's own cloud's other pools and regions are
// there too, keyed "<pool>/<region>", each with its cheapest offer and how much more it costs.
func (r OfferResult) WhyNot(winner cloudprovider.Offer) map[string]string {
	out := map[string]string{}
	for _, o := range r.Offers {
		if o.Cloud != winner.Cloud || (o.Pool == winner.Pool && o.Region == winner.Region) {
			continue
		}
		key := o.Pool + "/" + o.Region
		if _, seen := out[key]; seen {
			continue
		}
		out[key] = fmt.Sprintf("cheapest offer %s costs %s, %s more", o.InstanceType, o.PricePerHour.PerHour(), (o.PricePerHour - winner.PricePerHour).PerHour())
	}
	for _, o := range r.Offers { // cheapest first: the first offer seen per cloud is its best
		if o.Cloud == winner.Cloud {
			continue
		}
		if _, seen := out[o.Cloud]; seen {
			continue
		}
		if o.PricePerHour >= winner.PricePerHour {
			out[o.Cloud] = fmt.Sprintf("cheapest offer %s in %s costs %s, %s more than %s", o.InstanceType, o.Region,
				o.PricePerHour.PerHour(), (o.PricePerHour - winner.PricePerHour).PerHour(), winner.Cloud)
		} else {
			// The winner bills more but is preferred (ranked by a lower figure).
			out[o.Cloud] = fmt.Sprintf("cheapest offer %s in %s costs %s, %s less than %s, which is preferred (ranked at %s)",
				o.InstanceType, o.Region, o.PricePerHour.PerHour(), (winner.PricePerHour - o.PricePerHour).PerHour(), winner.Cloud,
				winner.RankingPrice().PerHour())
		}
	}
	for _, rej := range r.Rejections {
		if rej.Cloud != winner.Cloud {
			out[rej.Cloud] = rej.Reason
		}
	}
	return out
}

// Explain lists every asked cloud's reason, one line per cloud, for diagnostics.
func (r OfferResult) Explain() string {
	var b strings.Builder
	for _, rej := range r.Rejections {
		fmt.Fprintf(&b, "  - %s: %s\n", rej.Cloud, rej.Reason)
	}
	return strings.TrimRight(b.String(), "\n")
}

// Rank sorts offers with known stock before offers whose stock could not be read (StockUnknown), then
// by ranking price (RankingPrice), compared exactly to the micro-dollar. Equal prices break
// deterministically: direct offers before resold ones (the same hardware through an aggregator), then
// by cloud, pool, region, instance type and ID, each in byte order.
func Rank(offers []cloudprovider.Offer) {
	sort.SliceStable(offers, func(i, j int) bool {
		a, b := offers[i], offers[j]
		if a.StockUnknown != b.StockUnknown {
			return !a.StockUnknown // known stock first, whatever the price
		}
		if pa, pb := a.RankingPrice(), b.RankingPrice(); pa != pb {
			return pa < pb
		}
		return cloudprovider.TieBreak(a, b)
	})
}

// Market words used in offer IDs.
const (
	marketOnDemand = "ondemand"
	marketSpot     = "spot"
)

// OfferID builds an offer's ID, "<pool>/<region>/<instance type>/<ondemand|spot>@<price>", which
// ParseOfferID reads back. The price is the one quoted: LaunchOffers refuses a pinned ID whose offer
// costs more now (*PriceRoseError).
func OfferID(o cloudprovider.Offer) string {
	market := marketOnDemand
	if o.Spot {
		market = marketSpot
	}
	return fmt.Sprintf("%s/%s/%s/%s@%s", o.Pool, o.Region, o.InstanceType, market, o.PricePerHour)
}

// ParsedOfferID is what an offer ID says.
type ParsedOfferID struct {
	Pool         string
	Region       string
	InstanceType string
	Spot         bool
	PricePerHour money.USD
}

// ParseOfferID reads an ID built by OfferID.
func ParseOfferID(id string) (ParsedOfferID, error) {
	bad := func(why string) (ParsedOfferID, error) {
		return ParsedOfferID{}, fmt.Errorf("offer ID %q is not valid: %s; expected <pool>/<region>/<instance type>/<ondemand|spot>@<price>, as hydra_gpu_offer returns it", id, why)
	}
	first := strings.IndexByte(id, '/')
	if first <= 0 {
		return bad("no pool")
	}
	rest := id[first+1:]
	second := strings.IndexByte(rest, '/')
	if second <= 0 {
		return bad("no region")
	}
	last := strings.LastIndexByte(rest, '/')
	if last <= second+1 {
		return bad("no instance type")
	}
	p := ParsedOfferID{Pool: id[:first], Region: rest[:second], InstanceType: rest[second+1 : last]}
	market, price, ok := strings.Cut(rest[last+1:], "@")
	if !ok {
		return bad("no price")
	}
	switch market {
	case marketOnDemand:
	case marketSpot:
		p.Spot = true
	default:
		return bad(fmt.Sprintf("market %q is neither %q nor %q", market, marketOnDemand, marketSpot))
	}
	v, err := money.Parse(price)
	if err != nil {
		return bad(fmt.Sprintf("price %q is not an amount of dollars", price))
	}
	p.PricePerHour = v
	return p, nil
}
