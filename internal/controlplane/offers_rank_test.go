package controlplane

import (
	"strings"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// A preferred cloud is ranked by its RankPrice but bills, and is capped at, its PricePerHour; the
// other clouds are told why they lost in billed dollars.
func TestRankPriceIsAPreferenceNotADiscount(t *testing.T) {
	atlas := cloudprovider.Offer{ID: "a", Cloud: "atlas", Region: "ams1", InstanceType: "l40s.1x", PricePerHour: usd(1.60), RankPrice: usd(0.80)}
	verda := cloudprovider.Offer{ID: "v", Cloud: "verda", Region: "FIN-01", InstanceType: "1L40S", PricePerHour: usd(1.10)}
	up := cloudprovider.Offer{ID: "u", Cloud: "upcloud", Region: "fi-hel2", InstanceType: "GPU-L40S", PricePerHour: usd(1.90)}
	offers := []cloudprovider.Offer{verda, up, atlas}
	Rank(offers)
	if offers[0].ID != "a" || offers[1].ID != "v" || offers[2].ID != "u" {
		t.Fatalf("Rank = %s %s %s, want a v u", offers[0].ID, offers[1].ID, offers[2].ID)
	}
	why := OfferResult{Offers: offers}.WhyNot(offers[0])
	if !strings.Contains(why["verda"], "$0.50/h less than atlas, which is preferred (ranked at $0.80/h)") {
		t.Errorf("verda: %q", why["verda"])
	}
	if !strings.Contains(why["upcloud"], "$0.30/h more than atlas") {
		t.Errorf("upcloud: %q", why["upcloud"])
	}
}
