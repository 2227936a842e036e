package mithril

import (
	"reflect"
	"strings"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
)

func own(details map[string]string) controlplane.Offer {
	return controlplane.Offer{Cloud: CloudName, Region: "us-central1-a", InstanceType: "h100-80gb.sxm.8x", GPUType: "h100", GPUCount: 8,
		PricePerHour: 1.90, Spot: true, Available: -1, Details: details}
}

func other(cloud string, price float64) controlplane.Offer {
	return controlplane.Offer{Cloud: cloud, Region: "fin-01", InstanceType: "8H100", GPUType: "h100", GPUCount: 8, PricePerHour: price, Spot: true, Available: -1}
}

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

func TestPriceBids(t *testing.T) {
	verda := func(p float64) controlplane.Offer { return other("verda", p) }
	tests := []struct {
		name       string
		offer      controlplane.Offer
		others     []controlplane.Offer
		max        float64
		margin     float64
		wantPrice  float64 // 0: not checked
		wantReason string  // "" eligible; else the exact reason, or a prefix ending in "..."
		wantBy     string  // substring of Details[required_by]
	}{
		{name: "undercuts the cheapest comparable spot offer by one cent", offer: own(sig()), others: []controlplane.Offer{verda(2.50), other("upcloud", 2.40)}, margin: 10, wantPrice: 2.39, wantBy: "margin"},
		{name: "tie between two cheapest others", offer: own(sig()), others: []controlplane.Offer{other("verda", 2.40), other("primeintellect", 2.40)}, margin: 10, wantPrice: 2.39},
		{name: "brief example: bid below the margin", offer: own(sig()), others: []controlplane.Offer{verda(1.90)}, margin: 10, wantPrice: 1.89,
			wantReason: "bid $1.89/h does not clear: needs at least $2.09/h (last winning $1.90/h + 10% margin)"},
		{name: "margin edge exactly equal clears", offer: own(sig()), others: []controlplane.Offer{verda(2.10)}, margin: 10, wantPrice: 2.09, wantBy: "margin"},
		{name: "one cent under the margin edge", offer: own(sig()), others: []controlplane.Offer{verda(2.09)}, margin: 10, wantPrice: 2.08,
			wantReason: "bid $2.08/h does not clear: needs at least $2.09/h (last winning $1.90/h + 10% margin)"},
		{name: "margin rounds up to a cent", offer: own(sig(DetailLastClearing, "1.99")), others: []controlplane.Offer{verda(2.19)}, margin: 10, wantPrice: 2.18,
			wantReason: "bid $2.18/h does not clear: needs at least $2.19/h (last winning $1.99/h + 10% margin)"},
		{name: "margin rounds up: exact cent clears", offer: own(sig(DetailLastClearing, "1.99")), others: []controlplane.Offer{verda(2.20)}, margin: 10, wantPrice: 2.19},
		{name: "zero margin: the last winning price itself clears", offer: own(sig()), others: []controlplane.Offer{verda(1.91)}, margin: 0, wantPrice: 1.90},
		{name: "fractional margin", offer: own(sig(DetailLastClearing, "2.00")), others: []controlplane.Offer{verda(2.15)}, margin: 7.5, wantPrice: 2.14,
			wantReason: "bid $2.14/h does not clear: needs at least $2.15/h (last winning $2.00/h + 7.5% margin)"},
		{name: "spot price above last clearing is the winning price", offer: own(sig(DetailSpotPrice, "2.00")), others: []controlplane.Offer{verda(2.20)}, margin: 10, wantPrice: 2.19,
			wantReason: "bid $2.19/h does not clear: needs at least $2.20/h (last winning $2.00/h + 10% margin)"},
		{name: "max price below the cheapest other", offer: own(sig()), others: []controlplane.Offer{verda(2.50)}, max: 2.20, margin: 10, wantPrice: 2.20},
		{name: "max price above the cheapest other", offer: own(sig()), others: []controlplane.Offer{verda(2.50)}, max: 5, margin: 10, wantPrice: 2.49},
		{name: "max price equal to the undercut", offer: own(sig()), others: []controlplane.Offer{verda(2.50)}, max: 2.49, margin: 10, wantPrice: 2.49},
		{name: "max price below the requirement", offer: own(sig()), others: []controlplane.Offer{verda(2.50)}, max: 2.00, margin: 10, wantPrice: 2.00,
			wantReason: "bid $2.00/h does not clear: needs at least $2.09/h (last winning $1.90/h + 10% margin)"},
		{name: "max price with float noise", offer: own(sig()), max: 1.1 + 1.1, margin: 10, wantPrice: 2.20},
		{name: "no comparable offer: bid the max price", offer: own(sig()), max: 3.00, margin: 10, wantPrice: 3.00},
		{name: "no comparable offer and no max price", offer: own(sig()), margin: 10, wantReason: reasonNoPrice},
		{name: "non-comparable offers are ignored", offer: own(sig()), margin: 10, wantReason: reasonNoPrice, others: []controlplane.Offer{
			{Cloud: "verda", GPUType: "h100", GPUCount: 4, PricePerHour: 1, Spot: true},
			{Cloud: "verda", GPUType: "h200", GPUCount: 8, PricePerHour: 1, Spot: true},
			{Cloud: "verda", GPUType: "h100", GPUCount: 8, PricePerHour: 1, Spot: false},
			{Cloud: "verda", GPUType: "h100", GPUCount: 8, PricePerHour: 1, Spot: true, Ineligible: "no"},
			{Cloud: "verda", GPUType: "h100", GPUCount: 8, PricePerHour: 0, Spot: true},
			{Cloud: CloudName, GPUType: "h100", GPUCount: 8, PricePerHour: 3, Spot: true},
		}},
		{name: "float noise in another cloud's price", offer: own(sig()), others: []controlplane.Offer{verda(1.1 + 1.2)}, margin: 10, wantPrice: 2.29},
		{name: "another cloud's price with a fraction of a cent", offer: own(sig()), others: []controlplane.Offer{verda(2.405)}, margin: 10, wantPrice: 2.39},
		{name: "zero capacity", offer: own(sig(DetailAvailableCapacity, "0")), others: []controlplane.Offer{verda(3)}, margin: 10, wantPrice: 2.99,
			wantReason: "bid $2.99/h cannot win at once: the h100-80gb.sxm.8x auction in us-central1-a has no free capacity (0 available)"},
		{name: "zero capacity from Offer.Available", offer: func() controlplane.Offer {
			o := own(sig(DetailAvailableCapacity, ""))
			o.Available = 0
			return o
		}(), others: []controlplane.Offer{verda(3)}, margin: 10, wantReason: "bid $2.99/h cannot win at once: ..."},
		{name: "unknown capacity does not block", offer: own(sig(DetailAvailableCapacity, "")), others: []controlplane.Offer{verda(3)}, margin: 10, wantPrice: 2.99},
		{name: "lowest allocated bid decides", offer: own(sig(DetailLowestAllocated, "2.50")), others: []controlplane.Offer{verda(2.51)}, margin: 10, wantPrice: 2.50,
			wantReason: "bid $2.50/h does not clear: needs at least $2.51/h (lowest allocated bid $2.50/h + $0.01)"},
		{name: "lowest allocated bid beaten by a cent", offer: own(sig(DetailLowestAllocated, "2.50")), others: []controlplane.Offer{verda(2.52)}, margin: 10, wantPrice: 2.51, wantBy: "lowest allocated"},
		{name: "win price decides", offer: own(sig(DetailWinPrice, "2.80", DetailLowestAllocated, "2.00")), others: []controlplane.Offer{verda(2.80)}, margin: 10, wantPrice: 2.79,
			wantReason: "bid $2.79/h does not clear: needs at least $2.80/h (Mithril's current win price $2.80/h)"},
		{name: "win price met exactly", offer: own(sig(DetailWinPrice, "2.80")), others: []controlplane.Offer{verda(2.81)}, margin: 10, wantPrice: 2.80, wantBy: "win price"},
		{name: "minimum price decides", offer: own(sig(DetailMinimumPrice, "3.00")), others: []controlplane.Offer{verda(3.00)}, margin: 10, wantPrice: 2.99,
			wantReason: "bid $2.99/h does not clear: needs at least $3.00/h (auction minimum $3.00/h)"},
		{name: "margin wins a tie with the lowest allocated rule", offer: own(sig(DetailLowestAllocated, "2.08")), others: []controlplane.Offer{verda(3)}, margin: 10, wantPrice: 2.99, wantBy: "margin"},
		{name: "dollar-sign strings in details", offer: own(sig(DetailLastClearing, "$1.90", DetailLowestAllocated, "$2.00")), others: []controlplane.Offer{verda(2.10)}, margin: 10, wantPrice: 2.09, wantBy: "margin"},
		{name: "last clearing taken from PricePerHour when details lack it", offer: own(sig(DetailLastClearing, "")), others: []controlplane.Offer{verda(2.09)}, margin: 10,
			wantReason: "bid $2.08/h does not clear: needs at least $2.09/h (last winning $1.90/h + 10% margin)"},
		{name: "no price signal at all", offer: func() controlplane.Offer {
			o := own(map[string]string{})
			o.PricePerHour = 0
			return o
		}(), others: []controlplane.Offer{verda(2)}, margin: 10, wantPrice: 1.99, wantReason: "bid $1.99/h: the auction reports no price to judge whether it would win"},
		{name: "undercut would be zero", offer: own(sig()), others: []controlplane.Offer{verda(0.01)}, margin: 10, wantReason: "bid $0.00/h is not a price Mithril accepts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.offer
			before := cloneDetails(in.Details)
			got := priceBids([]controlplane.Offer{in}, tt.others, tt.max, tt.margin)
			if len(got) != 1 {
				t.Fatalf("got %d offers", len(got))
			}
			o := got[0]
			if !reflect.DeepEqual(in.Details, before) {
				t.Errorf("input details changed: %v -> %v", before, in.Details)
			}
			switch {
			case tt.wantReason == "" && o.Ineligible != "":
				t.Errorf("ineligible: %s", o.Ineligible)
			case strings.HasSuffix(tt.wantReason, "..."):
				if !strings.HasPrefix(o.Ineligible, strings.TrimSuffix(tt.wantReason, "...")) {
					t.Errorf("reason %q, want prefix %q", o.Ineligible, tt.wantReason)
				}
			case o.Ineligible != tt.wantReason:
				t.Errorf("reason %q, want %q", o.Ineligible, tt.wantReason)
			}
			if tt.wantPrice != 0 {
				if o.PricePerHour != tt.wantPrice {
					t.Errorf("price %v, want %v", o.PricePerHour, tt.wantPrice)
				}
				if o.Details[DetailBidPrice] == "" {
					t.Errorf("no bid_price detail")
				}
			}
			if tt.wantBy != "" && !strings.Contains(o.Details[DetailRequiredBy], tt.wantBy) {
				t.Errorf("required_by %q, want %q", o.Details[DetailRequiredBy], tt.wantBy)
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
	got := priceBids([]controlplane.Offer{a, b}, []controlplane.Offer{other("verda", 2.40), other("primeintellect", 2.40)}, 0, 10)
	if got[0].Region != "us-central1-a" || got[1].Region != "us-central1-b" {
		t.Fatalf("order changed")
	}
	if got[0].Details[DetailUndercuts] != "primeintellect fin-01 8H100 $2.40/h" {
		t.Errorf("undercuts %q", got[0].Details[DetailUndercuts])
	}
	if got[1].Ineligible == "" || got[0].Ineligible != "" {
		t.Errorf("eligibility: %q %q", got[0].Ineligible, got[1].Ineligible)
	}
}
