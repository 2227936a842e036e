package mithril

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
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
	// DetailLowestAllocated is the lowest limit price currently winning.
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
	// DetailUndercuts names the other cloud's offer the bid undercuts ("cloud region instance-type $X").
	DetailUndercuts = "undercuts"
)

// DefaultWinMarginPercent is how far above the recent winning price a bid must be for hydra to expect
// it to win at once.
const DefaultWinMarginPercent = 10.0

// Ineligibility reason when nothing sets a price.
const reasonNoPrice = "no comparable spot offer to undercut and no max_price_per_hour"

// auctionSignals are an offer's auction facts, in cents, read back from its Details.
type auctionSignals struct {
	lastClearing, spot, lowestAllocated, winPrice, minimum Cents
	capacity                                               OptInt
}

func signalsOf(o controlplane.Offer) auctionSignals {
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
		s.lastClearing = CentsOf(int64(math.Round(o.PricePerHour * 100)))
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
		reqs = append(reqs, requirement{s.lowestAllocated.Amount + 1, fmt.Sprintf("lowest allocated bid %s/h + $0.01", FormatDollars(s.lowestAllocated.Amount))})
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

// PriceBids sets the bid price of each Mithril offer and marks the ones hydra does not expect to win at
// once as Ineligible. It never changes its inputs.
//
// The bid (Offer.PricePerHour, also Details["bid_price"]) is one cent below the cheapest comparable
// spot offer of another cloud (same GPU type and GPU count, eligible, priced) — precisely the largest
// whole-cent amount at or below that price minus $0.01 — and never above the user's max price when it
// is set. With no comparable offer the bid is the max price; with neither, the offer is ineligible.
// All arithmetic is in integer cents.
//
// A bid is placed only if hydra expects it to win at once. The auction must have free capacity (a known
// available capacity of 0 makes the offer ineligible), and the bid must reach every one of these floors:
//
//  1. margin: last winning price × (1 + WinMarginPercent/100), rounded up to a cent, where the last
//     winning price is the higher of last_instance_price and spot_price_cents;
//  2. lowest allocated: lowest_allocated_price + $0.01 (a new bid must beat the lowest winning bid);
//  3. win price: Mithril's dynamic_win_price_cents;
//  4. minimum: the auction's minimum_price_cents.
//
// The strictest floor — the highest — decides (on a tie, the first in this list is named). A bid equal
// to that floor clears. An offer without any price signal is ineligible, since nothing says it would
// win. The last clearing price stays in Details["last_clearing_price"]; the deciding floor is in
// Details["required_price"] and Details["required_by"].
func (b *Backend) PriceBids(own, others []controlplane.Offer, maxPricePerHour float64) []controlplane.Offer {
	return priceBids(own, others, maxPricePerHour, b.margin)
}

func priceBids(own, others []controlplane.Offer, maxPricePerHour, marginPercent float64) []controlplane.Offer {
	out := make([]controlplane.Offer, len(own))
	maxCents := dollarsToCentsFloor(maxPricePerHour)
	for i, o := range own {
		o.Details = cloneDetails(o.Details)
		o.Spot = true
		s := signalsOf(o)
		// Start from the unpriced offer, so pricing an offer twice gives the same answer.
		for _, k := range []string{DetailUndercuts, DetailBidPrice, DetailRequiredPrice, DetailRequiredBy} {
			delete(o.Details, k)
		}
		if s.lastClearing.Valid {
			o.Details[DetailLastClearing] = formatPlain(s.lastClearing.Amount)
			o.PricePerHour = s.lastClearing.Dollars()
		}
		o.Ineligible = ""

		var bid int64
		if cheapest, ok := cheapestComparable(o, others); ok {
			bid = dollarsToCentsFloor(cheapest.PricePerHour) - 1
			o.Details[DetailUndercuts] = fmt.Sprintf("%s %s %s %s/h", cheapest.Cloud, cheapest.Region, cheapest.InstanceType, formatFloatDollars(cheapest.PricePerHour))
			if maxCents > 0 && bid > maxCents {
				bid = maxCents
			}
		} else if maxCents > 0 {
			bid = maxCents
		} else {
			o.Ineligible = reasonNoPrice
			out[i] = o
			continue
		}
		if bid <= 0 {
			o.Ineligible = fmt.Sprintf("bid %s/h is not a price Mithril accepts", FormatDollars(bid))
			out[i] = o
			continue
		}
		o.PricePerHour = float64(bid) / 100
		o.Details[DetailBidPrice] = formatPlain(bid)

		reqs := requirements(s, marginPercent)
		if len(reqs) == 0 {
			o.Ineligible = fmt.Sprintf("bid %s/h: the auction reports no price to judge whether it would win", FormatDollars(bid))
			out[i] = o
			continue
		}
		need := reqs[0]
		for _, r := range reqs[1:] {
			if r.cents > need.cents {
				need = r
			}
		}
		o.Details[DetailRequiredPrice] = formatPlain(need.cents)
		o.Details[DetailRequiredBy] = need.why
		switch {
		case s.capacity.Valid && s.capacity.Value <= 0:
			o.Ineligible = fmt.Sprintf("bid %s/h cannot win at once: the %s auction in %s has no free capacity (%d available)", FormatDollars(bid), o.InstanceType, o.Region, s.capacity.Value)
		case bid < need.cents:
			o.Ineligible = fmt.Sprintf("bid %s/h does not clear: needs at least %s/h (%s)", FormatDollars(bid), FormatDollars(need.cents), need.why)
		}
		out[i] = o
	}
	return out
}

// cheapestComparable returns the cheapest eligible spot offer of another cloud with the same GPU type
// and count; ties break on cloud, region and instance type so the answer is deterministic.
func cheapestComparable(o controlplane.Offer, others []controlplane.Offer) (controlplane.Offer, bool) {
	var cands []controlplane.Offer
	for _, x := range others {
		if x.Cloud == CloudName || !x.Spot || x.Ineligible != "" || x.PricePerHour <= 0 ||
			x.GPUType != o.GPUType || x.GPUCount != o.GPUCount {
			continue
		}
		cands = append(cands, x)
	}
	if len(cands) == 0 {
		return controlplane.Offer{}, false
	}
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if ac, bc := dollarsToCentsFloor(a.PricePerHour), dollarsToCentsFloor(b.PricePerHour); ac != bc {
			return ac < bc
		}
		if a.PricePerHour != b.PricePerHour {
			return a.PricePerHour < b.PricePerHour
		}
		if a.Cloud != b.Cloud {
			return a.Cloud < b.Cloud
		}
		if a.Region != b.Region {
			return a.Region < b.Region
		}
		return a.InstanceType < b.InstanceType
	})
	return cands[0], true
}

// formatFloatDollars writes another cloud's float price with at least two decimals ("$1.90",
// "$1.905").
func formatFloatDollars(d float64) string {
	s := strconv.FormatFloat(d, 'f', -1, 64)
	dot := strings.IndexByte(s, '.')
	switch {
	case dot < 0:
		s += ".00"
	case len(s)-dot == 2:
		s += "0"
	}
	return "$" + s
}

func cloneDetails(d map[string]string) map[string]string {
	out := make(map[string]string, len(d)+6)
	for k, v := range d {
		out[k] = v
	}
	return out
}
