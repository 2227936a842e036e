package mithril

import (
	"reflect"
	"strings"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// usd reads an exact amount of dollars ("2.39").
func usd(s string) money.USD {
	u, err := money.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

func own(details map[string]string) cloudprovider.Offer {
	return cloudprovider.Offer{Cloud: CloudName, Region: "us-central1-a", InstanceType: "h100-80gb.sxm.8x", GPUType: "h100", GPUCount: 8,
		PricePerHour: usd("1.90"), Spot: true, Available: -1, Details: details}
}

func other(cloud, price string) cloudprovider.Offer {
	return cloudprovider.Offer{Cloud: cloud, Region: "fin-01", InstanceType: "8H100", GPUType: "h100", GPUCount: 8, PricePerHour: usd(price), Spot: true, Available: -1}
}

func onDemand(cloud, price string) cloudprovider.Offer {
	o := other(cloud, price)
	o.Spot = false
	return o
}

// sig is an auction's signals: last clearing $1.90 and 3 free instances unless changed ("" deletes).
func sig(kv ...string) map[string]string {
	m := map[string]string{DetailLastClearing: "1.90", DetailAvailableCapacity: "3"}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			delete(m, kv[i])
			continue
		}
		m[kv[i]] = kv[i+1]
	}
	return m
}

func offers(o ...cloudprovider.Offer) []cloudprovider.Offer { return o }

func TestPriceBids(t *testing.T) {
	verda := func(p string) cloudprovider.Offer { return other("verda", p) }
	const margin = "last winning $1.90/h + 10% margin"
	noSignal := func() cloudprovider.Offer {
		o := own(map[string]string{})
		o.PricePerHour = 0
		return o
	}
	tests := []struct {
		name       string
		offer      cloudprovider.Offer
		others     []cloudprovider.Offer
		max        money.USD
		margin     float64
		wantPrice  money.USD // the bid; 0: no bid is set
		wantReason string    // "" eligible; else the exact reason
		wantBy     string    // substring of Details[required_by]
		wantBasis  string    // Details[undercuts], exactly ("" none)
	}{
		// The basis: the cheapest comparable spot offer, else on-demand; the bid is a cent under it.
		{name: "spot basis: a cent under the cheapest comparable spot offer", offer: own(sig()), others: offers(verda("2.50"), other("upcloud", "2.40")), margin: 10,
			wantPrice: usd("2.39"), wantBy: "margin", wantBasis: "upcloud fin-01 8H100 spot $2.40/h"},
		{name: "tie between two cheapest others", offer: own(sig()), others: offers(other("verda", "2.40"), other("primeintellect", "2.40")), margin: 10,
			wantPrice: usd("2.39"), wantBasis: "primeintellect fin-01 8H100 spot $2.40/h"},
		{name: "spot is the basis even when on-demand is cheaper", offer: own(sig()), others: offers(verda("2.50"), onDemand("upcloud", "2.20")), margin: 10,
			wantPrice: usd("2.49"), wantBasis: "verda fin-01 8H100 spot $2.50/h"},
		{name: "on-demand basis when no spot compares", offer: own(sig()), others: offers(onDemand("verda", "2.60"), onDemand("upcloud", "2.40")), margin: 10,
			wantPrice: usd("2.39"), wantBasis: "upcloud fin-01 8H100 on-demand $2.40/h"},
		{name: "on-demand basis below what the auction needs", offer: own(sig()), others: offers(onDemand("upcloud", "2.00")), margin: 10, wantPrice: usd("1.99"),
			wantReason: "bid $1.99/h does not clear: needs at least $2.09/h (" + margin + "); a winning bid would not undercut upcloud fin-01 8H100 on-demand $2.00/h",
			wantBasis:  "upcloud fin-01 8H100 on-demand $2.00/h"},
		{name: "another cloud is cheaper than a winning bid", offer: own(sig()), others: offers(verda("1.90")), margin: 10, wantPrice: usd("1.89"),
			wantReason: "bid $1.89/h does not clear: needs at least $2.09/h (" + margin + "); a winning bid would not undercut verda fin-01 8H100 spot $1.90/h",
			wantBasis:  "verda fin-01 8H100 spot $1.90/h"},
		{name: "margin edge exactly equal clears", offer: own(sig()), others: offers(verda("2.10")), margin: 10, wantPrice: usd("2.09"), wantBy: "margin", wantBasis: "verda fin-01 8H100 spot $2.10/h"},
		{name: "one cent under the margin edge", offer: own(sig()), others: offers(verda("2.09")), margin: 10, wantPrice: usd("2.08"),
			wantReason: "bid $2.08/h does not clear: needs at least $2.09/h (" + margin + "); a winning bid would not undercut verda fin-01 8H100 spot $2.09/h",
			wantBasis:  "verda fin-01 8H100 spot $2.09/h"},
		{name: "margin rounds up to a cent", offer: own(sig(DetailLastClearing, "1.99")), others: offers(verda("2.19")), margin: 10, wantPrice: usd("2.18"),
			wantReason: "bid $2.18/h does not clear: needs at least $2.19/h (last winning $1.99/h + 10% margin); a winning bid would not undercut verda fin-01 8H100 spot $2.19/h",
			wantBasis:  "verda fin-01 8H100 spot $2.19/h"},
		{name: "margin rounds up: exact cent clears", offer: own(sig(DetailLastClearing, "1.99")), others: offers(verda("2.20")), margin: 10, wantPrice: usd("2.19"), wantBasis: "verda fin-01 8H100 spot $2.20/h"},
		{name: "zero margin: the last winning price itself clears", offer: own(sig()), others: offers(verda("1.91")), margin: 0, wantPrice: usd("1.90"), wantBasis: "verda fin-01 8H100 spot $1.91/h"},
		{name: "fractional margin", offer: own(sig(DetailLastClearing, "2.00")), others: offers(verda("2.15")), margin: 7.5, wantPrice: usd("2.14"),
			wantReason: "bid $2.14/h does not clear: needs at least $2.15/h (last winning $2.00/h + 7.5% margin); a winning bid would not undercut verda fin-01 8H100 spot $2.15/h",
			wantBasis:  "verda fin-01 8H100 spot $2.15/h"},
		{name: "spot price above last clearing is the winning price", offer: own(sig(DetailSpotPrice, "2.00")), others: offers(verda("2.20")), margin: 10, wantPrice: usd("2.19"),
			wantReason: "bid $2.19/h does not clear: needs at least $2.20/h (last winning $2.00/h + 10% margin); a winning bid would not undercut verda fin-01 8H100 spot $2.20/h",
			wantBasis:  "verda fin-01 8H100 spot $2.20/h"},
		{name: "another cloud's price with a fraction of a cent", offer: own(sig()), others: offers(verda("2.405")), margin: 10, wantPrice: usd("2.39"), wantBasis: "verda fin-01 8H100 spot $2.405/h"},
		{name: "another cloud's price a micro-dollar above a cent", offer: own(sig()), others: offers(verda("2.400001"), other("upcloud", "2.40")), margin: 10, wantPrice: usd("2.39"), wantBasis: "upcloud fin-01 8H100 spot $2.40/h"},

		// The max caps the bid, in whole cents rounded down.
		{name: "max below the basis", offer: own(sig()), others: offers(verda("2.50")), max: usd("2.20"), margin: 10, wantPrice: usd("2.20"), wantBasis: "verda fin-01 8H100 spot $2.50/h"},
		{name: "max above the basis", offer: own(sig()), others: offers(verda("2.50")), max: usd("5"), margin: 10, wantPrice: usd("2.49"), wantBasis: "verda fin-01 8H100 spot $2.50/h"},
		{name: "max equal to the undercut", offer: own(sig()), others: offers(verda("2.50")), max: usd("2.49"), margin: 10, wantPrice: usd("2.49"), wantBasis: "verda fin-01 8H100 spot $2.50/h"},
		{name: "a cap of $2.999999 bids $2.99", offer: own(sig()), others: offers(verda("5.00")), max: usd("2.999999"), margin: 10, wantPrice: usd("2.99"), wantBasis: "verda fin-01 8H100 spot $5.00/h"},
		{name: "max below what the auction needs, with a basis", offer: own(sig()), others: offers(verda("2.50")), max: usd("2.00"), margin: 10, wantPrice: usd("2.00"),
			wantReason: "bid $2.00/h does not clear: needs at least $2.09/h (" + margin + "), above max_price_per_hour $2.00/h", wantBasis: "verda fin-01 8H100 spot $2.50/h"},
		{name: "a cap a micro-dollar below the need", offer: own(sig(DetailMinimumPrice, "3.00")), max: usd("2.999999"), margin: 10, wantPrice: usd("2.99"),
			wantReason: "bid $2.99/h does not clear: needs at least $3.00/h (auction minimum $3.00/h), above max_price_per_hour $2.999999/h"},
		{name: "a cap below one cent", offer: own(sig()), max: usd("0.009999"), margin: 10, wantReason: "bid $0.00/h is not a price Mithril accepts"},

		// Nothing comparable: the bid is what the auction needs, capped by the max; never the max itself.
		{name: "no comparable offer: the price signal plus the margin, not the max", offer: own(sig()), max: usd("3.00"), margin: 10, wantPrice: usd("2.09"), wantBy: "margin"},
		{name: "no comparable offer and no max", offer: own(sig()), margin: 10, wantPrice: usd("2.09"), wantBy: "margin"},
		{name: "no comparable offer: the lowest winning bid decides", offer: own(sig(DetailLowestAllocated, "2.50")), max: usd("9"), margin: 10, wantPrice: usd("2.51"), wantBy: "lowest winning bid"},
		{name: "no comparable offer: need equal to the max", offer: own(sig()), max: usd("2.09"), margin: 10, wantPrice: usd("2.09")},
		{name: "no comparable offer: need above the max", offer: own(sig()), max: usd("2.08"), margin: 10, wantPrice: usd("2.08"),
			wantReason: "bid $2.08/h does not clear: needs at least $2.09/h (" + margin + "), above max_price_per_hour $2.08/h"},
		{name: "non-comparable offers are ignored", offer: own(sig()), margin: 10, wantPrice: usd("2.09"), others: offers(
			cloudprovider.Offer{Cloud: "verda", GPUType: "h100", GPUCount: 4, PricePerHour: usd("1"), Spot: true, Available: -1},
			cloudprovider.Offer{Cloud: "verda", GPUType: "h200", GPUCount: 8, PricePerHour: usd("1"), Spot: true, Available: -1},
			cloudprovider.Offer{Cloud: "verda", GPUType: "h100", GPUCount: 4, PricePerHour: usd("1"), Spot: false, Available: -1},
			cloudprovider.Offer{Cloud: "verda", GPUType: "h100", GPUCount: 8, PricePerHour: usd("1"), Spot: true, Available: -1, Ineligible: "no"},
			cloudprovider.Offer{Cloud: "verda", GPUType: "h100", GPUCount: 8, PricePerHour: usd("1"), Spot: true, Available: 0},
			cloudprovider.Offer{Cloud: "verda", GPUType: "h100", GPUCount: 8, PricePerHour: 0, Spot: true, Available: -1},
			cloudprovider.Offer{Cloud: CloudName, GPUType: "h100", GPUCount: 8, PricePerHour: usd("1"), Spot: true, Available: -1},
		)},
		{name: "no price signal and nothing compares", offer: noSignal(), margin: 10, wantReason: reasonNoSignal},
		{name: "no price signal and nothing compares, with a max", offer: noSignal(), max: usd("5"), margin: 10, wantReason: reasonNoSignal},
		{name: "no price signal, with a basis", offer: noSignal(), others: offers(verda("2")), margin: 10, wantPrice: usd("1.99"),
			wantReason: "bid $1.99/h: no price signal: the auction reports no price to judge whether it would win", wantBasis: "verda fin-01 8H100 spot $2.00/h"},

		// No capacity now: ineligible whatever the bid, with both prices.
		{name: "zero capacity", offer: own(sig(DetailAvailableCapacity, "0")), others: offers(verda("3")), margin: 10, wantPrice: usd("2.99"),
			wantReason: "auction has no capacity now (last clearing price $1.90/h, lowest winning bid none)", wantBasis: "verda fin-01 8H100 spot $3.00/h"},
		{name: "zero capacity with a lowest winning bid", offer: own(sig(DetailAvailableCapacity, "0", DetailLowestAllocated, "2.50")), margin: 10, wantPrice: usd("2.51"),
			wantReason: "auction has no capacity now (last clearing price $1.90/h, lowest winning bid $2.50/h)"},
		{name: "zero capacity from Offer.Available", offer: func() cloudprovider.Offer {
			o := own(sig(DetailAvailableCapacity, ""))
			o.Available = 0
			return o
		}(), others: offers(verda("3")), margin: 10, wantPrice: usd("2.99"),
			wantReason: "auction has no capacity now (last clearing price $1.90/h, lowest winning bid none)", wantBasis: "verda fin-01 8H100 spot $3.00/h"},
		{name: "zero capacity without any price", offer: func() cloudprovider.Offer {
			o := noSignal()
			o.Details[DetailAvailableCapacity] = "0"
			return o
		}(), margin: 10, wantReason: "auction has no capacity now (last clearing price unknown, lowest winning bid none)"},
		{name: "unknown capacity does not block", offer: own(sig(DetailAvailableCapacity, "")), others: offers(verda("3")), margin: 10, wantPrice: usd("2.99"), wantBasis: "verda fin-01 8H100 spot $3.00/h"},

		// The auction's other floors.
		{name: "lowest winning bid decides", offer: own(sig(DetailLowestAllocated, "2.50")), others: offers(verda("2.51")), margin: 10, wantPrice: usd("2.50"),
			wantReason: "bid $2.50/h does not clear: needs at least $2.51/h (lowest winning bid $2.50/h + $0.01); a winning bid would not undercut verda fin-01 8H100 spot $2.51/h",
			wantBasis:  "verda fin-01 8H100 spot $2.51/h"},
		{name: "lowest winning bid beaten by a cent", offer: own(sig(DetailLowestAllocated, "2.50")), others: offers(verda("2.52")), margin: 10, wantPrice: usd("2.51"), wantBy: "lowest winning bid", wantBasis: "verda fin-01 8H100 spot $2.52/h"},
		{name: "win price decides", offer: own(sig(DetailWinPrice, "2.80", DetailLowestAllocated, "2.00")), others: offers(verda("2.80")), margin: 10, wantPrice: usd("2.79"),
			wantReason: "bid $2.79/h does not clear: needs at least $2.80/h (Mithril's current win price $2.80/h); a winning bid would not undercut verda fin-01 8H100 spot $2.80/h",
			wantBasis:  "verda fin-01 8H100 spot $2.80/h"},
		{name: "win price met exactly", offer: own(sig(DetailWinPrice, "2.80")), others: offers(verda("2.81")), margin: 10, wantPrice: usd("2.80"), wantBy: "win price", wantBasis: "verda fin-01 8H100 spot $2.81/h"},
		{name: "minimum price decides", offer: own(sig(DetailMinimumPrice, "3.00")), others: offers(verda("3.00")), margin: 10, wantPrice: usd("2.99"),
			wantReason: "bid $2.99/h does not clear: needs at least $3.00/h (auction minimum $3.00/h); a winning bid would not undercut verda fin-01 8H100 spot $3.00/h",
			wantBasis:  "verda fin-01 8H100 spot $3.00/h"},
		{name: "margin wins a tie with the lowest winning bid rule", offer: own(sig(DetailLowestAllocated, "2.08")), others: offers(verda("3")), margin: 10, wantPrice: usd("2.99"), wantBy: "margin", wantBasis: "verda fin-01 8H100 spot $3.00/h"},
		{name: "dollar-sign strings in details", offer: own(sig(DetailLastClearing, "$1.90", DetailLowestAllocated, "$2.00")), others: offers(verda("2.10")), margin: 10, wantPrice: usd("2.09"), wantBy: "margin", wantBasis: "verda fin-01 8H100 spot $2.10/h"},
		{name: "last clearing taken from PricePerHour when details lack it", offer: own(sig(DetailLastClearing, "")), others: offers(verda("2.09")), margin: 10, wantPrice: usd("2.08"),
			wantReason: "bid $2.08/h does not clear: needs at least $2.09/h (" + margin + "); a winning bid would not undercut verda fin-01 8H100 spot $2.09/h",
			wantBasis:  "verda fin-01 8H100 spot $2.09/h"},
		{name: "undercut would be zero", offer: own(sig()), others: offers(verda("0.01")), margin: 10, wantReason: "bid $0.00/h is not a price Mithril accepts", wantBasis: "verda fin-01 8H100 spot $0.01/h"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.offer
			before := cloneDetails(in.Details)
			got := priceBids([]cloudprovider.Offer{in}, tt.others, tt.max, tt.margin)
			if len(got) != 1 {
				t.Fatalf("got %d offers", len(got))
			}
			o := got[0]
			if !reflect.DeepEqual(in.Details, before) {
				t.Errorf("input details changed: %v -> %v", before, in.Details)
			}
			if o.Ineligible != tt.wantReason {
				t.Errorf("reason %q, want %q", o.Ineligible, tt.wantReason)
			}
			bid := o.Details[DetailBidPrice]
			switch {
			case tt.wantPrice == 0 && bid != "":
				t.Errorf("bid_price %q set, want none", bid)
			case tt.wantPrice != 0 && (o.PricePerHour != tt.wantPrice || bid != tt.wantPrice.String()):
				t.Errorf("price %s (bid_price %q), want %s", o.PricePerHour, bid, tt.wantPrice)
			}
			if bid != "" {
				if o.PricePerHour%money.Cent != 0 {
					t.Errorf("bid %s is not whole cents", o.PricePerHour)
				}
				if tt.max > 0 && o.PricePerHour > tt.max {
					t.Errorf("bid %s above the max %s", o.PricePerHour, tt.max)
				}
			}
			if tt.wantBy != "" && !strings.Contains(o.Details[DetailRequiredBy], tt.wantBy) {
				t.Errorf("required_by %q, want %q", o.Details[DetailRequiredBy], tt.wantBy)
			}
			if o.Details[DetailUndercuts] != tt.wantBasis {
				t.Errorf("undercuts %q, want %q", o.Details[DetailUndercuts], tt.wantBasis)
			}
			if !o.Spot {
				t.Errorf("not spot")
			}
			if lc := tt.offer.Details[DetailLastClearing]; lc != "" {
				want, _ := ParseDollars(lc)
				if o.Details[DetailLastClearing] != formatPlain(want) {
					t.Errorf("last_clearing_price %q, want %q", o.Details[DetailLastClearing], formatPlain(want))
				}
			}
			// Pricing twice gives the same answer.
			again := priceBids(got, tt.others, tt.max, tt.margin)
			if !reflect.DeepEqual(again, got) {
				t.Errorf("not idempotent:\n%+v\n%+v", got[0], again[0])
			}
		})
	}
}

func TestPriceBidsKeepsOrderAndTies(t *testing.T) {
	a, b := own(sig()), own(sig(DetailAvailableCapacity, "0"))
	b.Region = "us-central1-b"
	got := priceBids([]cloudprovider.Offer{a, b}, offers(other("verda", "2.40"), other("primeintellect", "2.40")), 0, 10)
	if got[0].Region != "us-central1-a" || got[1].Region != "us-central1-b" {
		t.Fatalf("order changed")
	}
	if got[0].Details[DetailUndercuts] != "primeintellect fin-01 8H100 spot $2.40/h" {
		t.Errorf("undercuts %q", got[0].Details[DetailUndercuts])
	}
	if got[1].Ineligible == "" || got[0].Ineligible != "" {
		t.Errorf("eligibility: %q %q", got[0].Ineligible, got[1].Ineligible)
	}
}

func TestCentsToUSD(t *testing.T) {
	for _, tt := range []struct {
		in         money.USD
		floor, nea int64
	}{
		{usd("2.999999"), 299, 300}, {usd("3"), 300, 300}, {usd("2.405"), 240, 241}, {usd("2.404999"), 240, 240}, {usd("0.009999"), 0, 1}, {0, 0, 0}, {-money.Cent, 0, 0},
	} {
		if f, n := usdToCentsFloor(tt.in), usdToCentsNearest(tt.in); f != tt.floor || n != tt.nea {
			t.Errorf("%s: floor %d nearest %d, want %d %d", tt.in, f, n, tt.floor, tt.nea)
		}
	}
	if CentsOf(1203).USD() != usd("12.03") || (Cents{}).USD() != 0 || centsToUSD(1) != money.Cent {
		t.Errorf("cents to USD")
	}
}
