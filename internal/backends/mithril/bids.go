package mithril

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// Keys of Offer.Details set by Offers and PriceBids. Prices are plain decimal dollars per instance-hour
// ("1.90"); capacities are whole numbers.
const (
	// DetailInstanceTypeFID is the region's own FID of the instance type (it_...): Create bids on it.
	DetailInstanceTypeFID = "instance_type_fid"
	// DetailAuctionFID is the spot auction (auc_...).
	DetailAuctionFID = "auction_fid"
	// DetailLastClearing is the auction's last clearing price (last_instance_price): the recent winning
	// price winners paid.
	DetailLastClearing = "last_clearing_price"
	// DetailSpotPrice is /v2/pricing/current's spot_price_cents, the current clearing price.
	DetailSpotPrice = "spot_price"
	// DetailLowestAllocated is the lowest winning bid: the lowest limit price currently allocated
	// (lowest_allocated_price, or lowest_allocated_bid_cents when higher).
	DetailLowestAllocated = "lowest_allocated_price"
	// DetailWinPrice is the price Mithril reports a new bid needs to win now (dynamic_win_price_cents).
	DetailWinPrice = "win_price"
	// DetailMinimumPrice is the auction's reserve (minimum_price_cents).
	DetailMinimumPrice = "minimum_price"
	// DetailAvailableCapacity is how many instances the auction can allocate now.
	DetailAvailableCapacity = "available_capacity"
	// DetailBidPrice is the limit price PriceBids chose (also in Offer.PricePerHour).
	DetailBidPrice = "bid_price"
	// DetailRequiredPrice is the least bid PriceBids expects to win at once, and DetailRequiredBy the
	// rule that set it.
	DetailRequiredPrice = "required_price"
	DetailRequiredBy    = "required_by"
	// DetailUndercuts names the comparable offer of another cloud that is the bid's basis, which the
	// bid undercuts: "<cloud> <region> <instance type> <spot|on-demand> $X/h" (absent when nothing
	// compares).
	DetailUndercuts = "undercuts"
)

// DefaultWinMarginPercent is how far above the recent winning price a bid must be for hydra to expect
// it to win at once.
const DefaultWinMarginPercent = 10.0

// reasonNoSignal is the ineligibility reason when neither the auction nor another cloud gives a price.
const reasonNoSignal = "no price signal: the auction reports no clearing price, winning bid, win price or minimum, " +
	"and no other cloud has a comparable offer to price a bid against"

// reasonNoCapacity says an auction cannot allocate anything now, with its two prices: the last
// clearing price and the lowest winning bid. Offers and PriceBids give the same reason.
func reasonNoCapacity(last, lowest Cents) string {
	l, w := "unknown", "none"
	if last.Valid {
		l = centsToUSD(last.Amount).PerHour()
	}
	if lowest.Valid {
		w = centsToUSD(lowest.Amount).PerHour()
	}
	return fmt.Sprintf("auction has no capacity now (last clearing price %s, lowest winning bid %s)", l, w)
}

// reasonUnmapped is the ineligibility reason of an offer whose GPU the inventory does not map.
func reasonUnmapped(o cloudprovider.Offer) string {
	name := o.CloudGPU
	if name == "" {
		name = o.InstanceType
	}
	return fmt.Sprintf("GPU not in the inventory: supported_gpus.yml maps no GPU type to Mithril's %q", name)
}

// auctionSignals are an offer's auction facts, in cents, read back from its Details.
type auctionSignals struct {
	lastClearing, spot, lowestAllocated, winPrice, minimum Cents
	capacity                                               OptInt
}

func signalsOf(o cloudprovider.Offer) auctionSignals {
	get := func(key string) Cents {
		v, ok := o.Details[key]
		if !ok || v == "" {
			return Cents{}
		}
		c, err := ParseDollars(v)
		if err != nil {
			return Cents{}
		}
		return CentsOf(c)
	}
	s := auctionSignals{
		lastClearing:    get(DetailLastClearing),
		spot:            get(DetailSpotPrice),
		lowestAllocated: get(DetailLowestAllocated),
		winPrice:        get(DetailWinPrice),
		minimum:         get(DetailMinimumPrice),
	}
	if v, ok := o.Details[DetailAvailableCapacity]; ok && v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			s.capacity = OptInt{Value: n, Valid: true}
		}
	} else if o.Available >= 0 {
		s.capacity = OptInt{Value: int64(o.Available), Valid: true}
	}
	if !s.lastClearing.Valid && o.PricePerHour > 0 && o.Details[DetailBidPrice] == "" {
		s.lastClearing = CentsOf(usdToCentsNearest(o.PricePerHour))
	}
	return s
}

// requirement is the least bid that one rule accepts, and how to explain it.
type requirement struct {
	cents int64
	why   string
}

// Requirements returns the least limit price (cents) each auction signal accepts for a bid to win at
// once. See PriceBids for the rules.
func requirements(s auctionSignals, marginPercent float64) []requirement {
	var reqs []requirement
	// The recent winning price: the later of the two clearing prices the API reports, taking the
	// higher when both are known.
	winning := s.lastClearing
	if s.spot.Valid && (!winning.Valid || s.spot.Amount > winning.Amount) {
		winning = s.spot
	}
	if winning.Valid && winning.Amount > 0 {
		bp := int64(math.Round(marginPercent * 100)) // basis points, integer arithmetic from here on
		need := ceilDiv(winning.Amount*(10000+bp), 10000)
		reqs = append(reqs, requirement{need, fmt.Sprintf("last winning %s/h + %s%% margin", FormatDollars(winning.Amount), strconv.FormatFloat(marginPercent, 'f', -1, 64))})
	}
	if s.lowestAllocated.Valid && s.lowestAllocated.Amount > 0 {
		reqs = append(reqs, requirement{s.lowestAllocated.Amount + 1, fmt.Sprintf("lowest winning bid %s/h + $0.01", FormatDollars(s.lowestAllocated.Amount))})
	}
	if s.winPrice.Valid && s.winPrice.Amount > 0 {
		reqs = append(reqs, requirement{s.winPrice.Amount, fmt.Sprintf("Mithril's current win price %s/h", FormatDollars(s.winPrice.Amount))})
	}
	if s.minimum.Valid && s.minimum.Amount > 0 {
		reqs = append(reqs, requirement{s.minimum.Amount, fmt.Sprintf("auction minimum %s/h", FormatDollars(s.minimum.Amount))})
	}
	return reqs
}

func ceilDiv(a, b int64) int64 {
	if a <= 0 {
		return a / b
	}
	return (a + b - 1) / b
}

// PriceBids sets the bid price (the limit price, in whole cents) of each Mithril offer and marks the ones
// hydra does not expect to win at once, or does not want to place, as Ineligible. It never changes its
// inputs, and pricing an offer twice gives the same answer.
//
// What the auction needs. A bid is expected to win at once when it reaches every one of these floors;
// the strictest (the highest) is the least bid that wins, "need" (Details["required_price"], with the
// rule in Details["required_by"]; on a tie the first in this list is named):
//
//  1. margin: last winning price × (1 + WinMarginPercent/100), rounded up to a cent, where the last
//     winning price is the higher of last_instance_price and spot_price_cents;
//  2. lowest winning bid: lowest_allocated_price + $0.01 (a new bid must beat the lowest winning bid);
//  3. win price: Mithril's dynamic_win_price_cents;
//  4. minimum: the auction's minimum_price_cents.
//
// The basis. Comparable offers are the others of another cloud with the same GPU type and GPU count
// that are eligible, priced and not sold out (Available != 0); the control plane passes the offers of
// every configured cloud, also when the request is limited to Mithril. The basis is the cheapest
// comparable spot offer, else the cheapest comparable on-demand offer (named in Details["undercuts"]).
//
// The bid. With a basis, the bid is min(basis − $0.01, max_price_per_hour), in whole cents rounded
// down (a cap of $2.999999 bids at most $2.99), and it must be at least need. Without any comparable
// offer, the bid is need itself — the auction's price signal plus the margin — capped by the max: a
// bid is never the user's max merely because nothing compares. A bid is never above the max.
//
// Ineligible offers, each reason naming the figures that decided:
//   - need above the max, or above the basis less a cent (another cloud is as cheap or cheaper):
//     "bid $X/h does not clear: needs at least $N/h (rule), above max_price_per_hour $M/h" or "...;
//     a winning bid would not undercut <cloud> <region> <type> <kind> $B/h";
//   - no price signal from the auction (none of the four floors) and nothing compares: "no price
//     signal: ..."; with a basis but no signal, the bid is set and marked "bid $X/h: no price signal:
//     ...", since nothing says it would win;
//   - a known available capacity of 0, whatever the bid: "auction has no capacity now (last clearing
//     price $X/h, lowest winning bid $Y/h)", as Offers says;
//   - a bid that would be $0.00;
//   - an offer whose GPU the inventory does not map (GPUType ""): "GPU not in the inventory: ...". It
//     is not priced: its price and Details stay as Offers listed them.
//
// The bid is in Offer.PricePerHour and Details["bid_price"]; the auction's last clearing price stays in
// Details["last_clearing_price"] and its lowest winning bid in Details["lowest_allocated_price"]. All
// arithmetic is in integer cents; prices become money.USD exactly (one cent is money.Cent).
func (b *Backend) PriceBids(own, others []cloudprovider.Offer, maxPricePerHour money.USD) []cloudprovider.Offer {
	return priceBids(own, others, maxPricePerHour, b.margin)
}

func priceBids(own, others []cloudprovider.Offer, maxPricePerHour money.USD, marginPercent float64) []cloudprovider.Offer {
	out := make([]cloudprovider.Offer, len(own))
	for i, o := range own {
		out[i] = priceBid(o, others, maxPricePerHour, marginPercent)
	}
	return out
}

// derivedDetails are the Details keys PriceBids sets; it starts each offer without them.
var derivedDetails = []string{DetailUndercuts, DetailBidPrice, DetailRequiredPrice, DetailRequiredBy}

func priceBid(o cloudprovider.Offer, others []cloudprovider.Offer, maxPricePerHour money.USD, marginPercent float64) cloudprovider.Offer {
	o.Details = cloneDetails(o.Details)
	if o.GPUType == "" {
		// Not hydra's GPU: nothing to bid on and nothing to compare with. Left as Offers listed it.
		o.Ineligible = reasonUnmapped(o)
		return o
	}
	o.Spot = true
	s := signalsOf(o)
	for _, k := range derivedDetails {
		delete(o.Details, k)
	}
	o.Ineligible = ""
	if s.lastClearing.Valid {
		o.Details[DetailLastClearing] = formatPlain(s.lastClearing.Amount)
		o.PricePerHour = s.lastClearing.USD()
	}
	noCapacity := s.capacity.Valid && s.capacity.Value <= 0

	// The ceiling: one cent under the basis, and the user's max, whichever is lower (-1: none).
	ceiling, over := int64(-1), ""
	basis, hasBasis := cheapestComparable(o, others)
	if hasBasis {
		name := describeOffer(basis)
		o.Details[DetailUndercuts] = name
		ceiling, over = usdToCentsFloor(basis.PricePerHour)-1, "; a winning bid would not undercut "+name
	}
	if maxPricePerHour > 0 {
		if m := usdToCentsFloor(maxPricePerHour); ceiling < 0 || m < ceiling {
			ceiling, over = m, ", above max_price_per_hour "+maxPricePerHour.PerHour()
		}
	}

	need, haveNeed := strictest(requirements(s, marginPercent))
	if haveNeed {
		o.Details[DetailRequiredPrice] = formatPlain(need.cents)
		o.Details[DetailRequiredBy] = need.why
	}
	var bid int64
	switch {
	case !haveNeed && !hasBasis:
		o.Ineligible = reasonNoSignal
		if noCapacity {
			o.Ineligible = reasonNoCapacity(s.lastClearing, s.lowestAllocated)
		}
		return o
	case hasBasis:
		bid = ceiling
	default:
		bid = need.cents
		if ceiling >= 0 && bid > ceiling {
			bid = ceiling
		}
	}
	switch {
	case noCapacity:
		o.Ineligible = reasonNoCapacity(s.lastClearing, s.lowestAllocated)
	case bid <= 0:
		o.Ineligible = fmt.Sprintf("bid %s/h is not a price Mithril accepts", FormatDollars(bid))
	case !haveNeed:
		o.Ineligible = fmt.Sprintf("bid %s/h: no price signal: the auction reports no price to judge whether it would win", FormatDollars(bid))
	case bid < need.cents:
		o.Ineligible = fmt.Sprintf("bid %s/h does not clear: needs at least %s/h (%s)%s", FormatDollars(bid), FormatDollars(need.cents), need.why, over)
	}
	if bid > 0 {
		o.PricePerHour = centsToUSD(bid)
		o.Details[DetailBidPrice] = formatPlain(bid)
	}
	return o
}

// strictest returns the highest requirement (the first of equals); ok is false when there is none.
func strictest(reqs []requirement) (requirement, bool) {
	if len(reqs) == 0 {
		return requirement{}, false
	}
	need := reqs[0]
	for _, r := range reqs[1:] {
		if r.cents > need.cents {
			need = r
		}
	}
	return need, true
}

// cheapestComparable returns the basis of a bid: the cheapest comparable spot offer of another cloud
// (same GPU type and count, eligible, priced, not sold out), else the cheapest comparable on-demand
// one. Ties break as everywhere hydra picks among offers (cloudprovider.TieBreak), so the answer is
// deterministic.
func cheapestComparable(o cloudprovider.Offer, others []cloudprovider.Offer) (cloudprovider.Offer, bool) {
	var spot, onDemand []cloudprovider.Offer
	for _, x := range others {
		if x.Cloud == CloudName || x.Ineligible != "" || x.PricePerHour <= 0 || x.Available == 0 || x.GPUType == "" ||
			x.GPUType != o.GPUType || x.GPUCount != o.GPUCount {
			continue
		}
		if x.Spot {
			spot = append(spot, x)
		} else {
			onDemand = append(onDemand, x)
		}
	}
	cands := spot
	if len(cands) == 0 {
		cands = onDemand
	}
	if len(cands) == 0 {
		return cloudprovider.Offer{}, false
	}
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.PricePerHour != b.PricePerHour {
			return a.PricePerHour < b.PricePerHour
		}
		return cloudprovider.TieBreak(a, b)
	})
	return cands[0], true
}

// describeOffer names another cloud's offer: "verda fin-01 8H100 spot $2.40/h".
func describeOffer(x cloudprovider.Offer) string {
	kind := "on-demand"
	if x.Spot {
		kind = "spot"
	}
	return fmt.Sprintf("%s %s %s %s %s", x.Cloud, x.Region, x.InstanceType, kind, x.PricePerHour.PerHour())
}

func cloneDetails(d map[string]string) map[string]string {
	out := make(map[string]string, len(d)+6)
	for k, v := range d {
		out[k] = v
	}
	return out
}
