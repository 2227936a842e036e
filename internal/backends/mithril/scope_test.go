package mithril

import (
	"context"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/mithril"
)

// otherCloud is a second configured cloud with two spot offers of eight H100s, in two regions.
type otherCloud struct {
	cloudprovider.InstanceManagerBackend
}

func (otherCloud) Cloud() string { return "verda" }

func (otherCloud) Offers(context.Context) ([]cloudprovider.Offer, error) {
	offer := func(region, price string) cloudprovider.Offer {
		return cloudprovider.Offer{Cloud: "verda", Region: region, InstanceType: "8H100.80S.176V", GPUType: "h100", CloudGPU: "H100 SXM5 80GB",
			GPUCount: 8, PricePerHour: usd(price), Spot: true, Available: -1}
	}
	return []cloudprovider.Offer{offer("FIN-01", "15"), offer("FIN-03", "20")}, nil
}

// TestBidBasisScope pins which offers a Mithril bid is compared with (the control plane gathers them,
// PriceBids picks the basis): every configured cloud's offers, whatever `clouds` allows, but only
// those that match the rest of the request, so `regions` narrows them. The auction needs $13.24/h to
// win (TestPriceBidsWithoutComparableOffer); the other cloud sells 8x H100 spot at $15 in FIN-01 and
// $20 in FIN-03.
func TestBidBasisScope(t *testing.T) {
	e := newEnv(t, emu.Options{})
	cp := controlplane.New(backendtest.Inventory(t), []cloudprovider.InstanceManagerBackend{e.backend, otherCloud{}}, controlplane.Options{})
	tests := []struct {
		name          string
		clouds        []string
		regions       []string
		wantBid       string
		wantUndercuts string
	}{
		{name: "every cloud, every region", wantBid: "14.99", wantUndercuts: "verda FIN-01 8H100.80S.176V spot $15.00/h"},
		{name: "clouds does not narrow the comparison", clouds: []string{"mithril"}, wantBid: "14.99",
			wantUndercuts: "verda FIN-01 8H100.80S.176V spot $15.00/h"},
		{name: "regions narrows it", regions: []string{"us-central1-a", "FIN-03"}, wantBid: "19.99",
			wantUndercuts: "verda FIN-03 8H100.80S.176V spot $20.00/h"},
		{name: "regions naming only Mithril's leave nothing to compare", clouds: []string{"mithril"}, regions: []string{"us-central1-a"},
			wantBid: "13.24"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := cp.Offers(t.Context(), controlplane.OfferRequest{GPUType: "h100", GPUCount: 8, Kind: "vm", AllowSpot: true,
				Clouds: tc.clouds, Regions: tc.regions, MaxPricePerHour: usd("30")}, false)
			if err != nil {
				t.Fatal(err)
			}
			var bid *cloudprovider.Offer
			for i, o := range append(res.Offers, res.Ineligible...) {
				if o.Cloud == CloudName && o.Region == "us-central1-a" && o.InstanceType == "h100-80gb.sxm.8x" {
					bid = &append(res.Offers, res.Ineligible...)[i]
				}
			}
			if bid == nil {
				t.Fatalf("no Mithril bid in %+v", res)
			}
			if bid.Ineligible != "" || bid.PricePerHour != usd(tc.wantBid) || bid.Details[DetailUndercuts] != tc.wantUndercuts {
				t.Errorf("bid %s undercutting %q (%q), want %s undercutting %q", bid.PricePerHour, bid.Details[DetailUndercuts], bid.Ineligible,
					tc.wantBid, tc.wantUndercuts)
			}
		})
	}
}
