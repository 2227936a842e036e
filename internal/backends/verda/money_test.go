package verda

import (
	"context"
	"strings"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/verda"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// dollarCloud is a cloud billed in US dollars beside Verda: it offers one H100 at a fixed price and
// creates nothing (the control plane only ranks here).
type dollarCloud struct {
	cloudprovider.InstanceManagerBackend
	price money.USD
}

func (d dollarCloud) Cloud() string { return "lambda" }

func (d dollarCloud) Offers(context.Context) ([]cloudprovider.Offer, error) {
	return []cloudprovider.Offer{{Cloud: "lambda", Region: "us-east-1", InstanceType: "gpu_1x_h100_sxm5", GPUType: "h100",
		CloudGPU: "h100_sxm5", GPUCount: 1, PricePerHour: d.price, Available: 1}}, nil
}

// TestEuroAccountBesideDollarCloud ranks a euro-billed Verda account's H100 (2.34 EUR/h at 1.25 USD per
// EUR: 2.925 USD exactly, billed as 2.93 once rounded up to the cent, the rule UpCloud's euro prices
// follow) against a dollar cloud's H100, and caps it: at the tie the documented tie-break decides
// (equal prices, both direct: cloud name in byte order), below it the dollar offer wins, and a cap of
// 2.925 refuses the converted 2.93 both at plan and at create.
func TestEuroAccountBesideDollarCloud(t *testing.T) {
	catalog := emu.DefaultCatalog()
	for i := range catalog {
		if catalog[i].InstanceType == "1H100.80S.30V" {
			catalog[i].PricePerHour = 2.34
		}
	}
	f := startEmulator(t, emu.Options{Currency: "eur", Catalog: catalog})
	b := f.backend(t, func(c *Config) { c.EURToUSD = 1.25; c.DisableSpot = true })
	verdaPrice := money.MustFromFloat(2.93)

	tests := []struct {
		name       string
		dollar     float64
		cap        float64
		wantCloud  string
		wantPrice  money.USD
		wantVerdaX string // Verda's offer is listed as not eligible with this reason ("" = eligible)
	}{
		// 2.929 is below 2.93: without the round-up Verda's 2.925 would win.
		{name: "dollar offer just below", dollar: 2.929, wantCloud: "lambda", wantPrice: money.MustFromFloat(2.929)},
		// Equal prices: both clouds run their hardware, so the cloud name breaks the tie ("lambda" < "verda").
		{name: "tie", dollar: 2.93, wantCloud: "lambda", wantPrice: verdaPrice},
		{name: "dollar offer just above", dollar: 2.930001, wantCloud: "verda", wantPrice: verdaPrice},
		{name: "cap at the unrounded product", dollar: 3, cap: 2.925, wantVerdaX: "$2.93/h is above max_price_per_hour $2.925/h"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cp := controlplane.New(backendtest.Inventory(t), []cloudprovider.InstanceManagerBackend{b, dollarCloud{price: money.MustFromFloat(tc.dollar)}}, controlplane.Options{})
			req := controlplane.OfferRequest{GPUType: "h100", GPUCount: 1, Kind: "vm", Regions: []string{"FIN-01", "us-east-1"}}
			if tc.cap > 0 {
				req.MaxPricePerHour = money.MustFromFloat(tc.cap)
			}
			res, err := cp.Offers(context.Background(), req, true)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantVerdaX != "" {
				var found bool
				for _, o := range res.Ineligible {
					if o.Cloud == CloudName && o.InstanceType == "1H100.80S.30V" {
						found = true
						if o.PricePerHour != verdaPrice || !strings.Contains(o.Ineligible, tc.wantVerdaX) {
							t.Errorf("Verda's offer: %s, %q; want %s, %q", o.PricePerHour, o.Ineligible, verdaPrice, tc.wantVerdaX)
						}
					}
				}
				for _, o := range res.Offers {
					if o.Cloud == CloudName {
						t.Errorf("Verda's %s at %s is eligible under a cap of %v", o.InstanceType, o.PricePerHour, tc.cap)
					}
				}
				if !found {
					t.Errorf("Verda's offer is not listed as not eligible: %+v", res)
				}
				return
			}
			best, ok := res.Cheapest()
			if !ok || best.Cloud != tc.wantCloud || best.PricePerHour != tc.wantPrice {
				t.Fatalf("cheapest %s at %s, want %s at %s (offers %+v)", best.Cloud, best.PricePerHour, tc.wantCloud, tc.wantPrice, res.Offers)
			}
		})
	}

	// The same rule at create: the catalog read again converts to 2.93, above a cap of 2.925.
	o, ok := backendtest.FindOffer(backendtest.Offers(t, b), "FIN-01", "1H100.80S.30V", false)
	if !ok || o.PricePerHour != verdaPrice {
		t.Fatalf("offer %+v, want %s", o, verdaPrice)
	}
	o.PricePerHour = money.MustFromFloat(2.925) // a quote made before the rule: create must still refuse
	_, err := b.Create(context.Background(), cloudprovider.CreateRequest{Name: "verda-vm-cap", Offer: o, MaxPricePerHour: money.MustFromFloat(2.925)})
	backendtest.WantError(t, err, cloudprovider.ErrCapacity, "1H100.80S.30V now costs $2.93/h, above the maximum $2.925/h")
	if n := f.srv.CreateCount(); n != 0 {
		t.Errorf("created %d instances above the cap", n)
	}
}
