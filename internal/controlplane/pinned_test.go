package controlplane

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

func TestCheckPinned(t *testing.T) {
	cp := New(testInventory(t), []cloudprovider.InstanceManagerBackend{&fakeBackend{cloud: "verda"}}, Options{})
	base := OfferRequest{GPUType: "h100", GPUCount: 1, Kind: "vm"}
	p := ParsedOfferID{Pool: "verda-vm-pool", Region: "FIN-01", InstanceType: "1H100", PricePerHour: usd(2.49)}
	spot := p
	spot.Spot = true
	cases := []struct {
		name  string
		p     ParsedOfferID
		req   func(OfferRequest) OfferRequest
		field string
	}{
		{"fits", p, func(r OfferRequest) OfferRequest { return r }, ""},
		{"other kind", p, func(r OfferRequest) OfferRequest { r.Kind = "execlet"; return r }, "kind"},
		{"cloud not allowed", p, func(r OfferRequest) OfferRequest { r.Clouds = []string{"upcloud"}; return r }, "clouds"},
		{"region not allowed", p, func(r OfferRequest) OfferRequest { r.Regions = []string{"FIN-02"}; return r }, "regions"},
		{"spot not allowed", spot, func(r OfferRequest) OfferRequest { return r }, "spot"},
		{"above the cap", p, func(r OfferRequest) OfferRequest { r.MaxPricePerHour = usd(2.48); return r }, "max_price_per_hour"},
		{"at the cap", p, func(r OfferRequest) OfferRequest { r.MaxPricePerHour = usd(2.49); return r }, ""},
		{"unknown pool", ParsedOfferID{Pool: "nope", Region: "x", InstanceType: "y"}, func(r OfferRequest) OfferRequest { return r }, "pool"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := cp.CheckPinned(tc.p, tc.req(base))
			var me *MismatchError
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("CheckPinned = %v, want it to fit", err)
			case tc.field != "" && (!errors.As(err, &me) || me.Field != tc.field):
				t.Fatalf("CheckPinned = %v, want a mismatch on %s", err, tc.field)
			}
		})
	}
}

func TestLaunchOffers(t *testing.T) {
	ctx := context.Background()
	req := OfferRequest{GPUType: "h100", GPUCount: 1, Kind: "vm"}
	newCP := func(price float64) *ControlPlane {
		o := offer("FIN-01", "1H100", 1, price)
		o.Details = map[string]string{"upstream": "u-1"}
		return New(testInventory(t), []cloudprovider.InstanceManagerBackend{&fakeBackend{cloud: "verda", offers: []cloudprovider.Offer{o}}}, Options{})
	}
	const pinned = "verda-vm-pool/FIN-01/1H100/ondemand@2.49"

	got, err := newCP(2.49).LaunchOffers(ctx, req, pinned)
	if err != nil || len(got) != 1 || got[0].ID != pinned || got[0].Details["upstream"] != "u-1" {
		t.Fatalf("pinned at the same price: %+v, %v", got, err)
	}
	if got, err := newCP(1.99).LaunchOffers(ctx, req, pinned); err != nil || got[0].PricePerHour != usd(2.49) {
		t.Fatalf("pinned, now cheaper: %+v, %v (the planned price stands)", got, err)
	}
	var rose *PriceRoseError
	if _, err := newCP(2.50).LaunchOffers(ctx, req, pinned); !errors.As(err, &rose) || rose.Planned != usd(2.49) || rose.Now != usd(2.50) {
		t.Fatalf("pinned, now dearer: %v, want a PriceRoseError", err)
	}
	if got, err := newCP(2.49).LaunchOffers(ctx, req, ""); err != nil || len(got) != 1 {
		t.Fatalf("left to apply: %+v, %v", got, err)
	}
	var none *NoOfferError
	if _, err := newCP(2.49).LaunchOffers(ctx, OfferRequest{GPUType: "h100", GPUCount: 1, Kind: "vm", MaxPricePerHour: usd(1)}, ""); !errors.As(err, &none) {
		t.Fatalf("nothing matches: %v, want a NoOfferError", err)
	}
}

func TestCheckPinnedHardware(t *testing.T) {
	ctx := context.Background()
	l40s := offer("FIN-01", "1L40S", 1, 0.99)
	l40s.GPUType = "l40s"
	pcie := offer("FIN-01", "1H100P", 1, 1.99)
	pcie.FormFactor = cloudprovider.FormFactorPCIe
	cp := New(testInventory(t), []cloudprovider.InstanceManagerBackend{&fakeBackend{cloud: "verda", offers: []cloudprovider.Offer{offer("FIN-01", "1H100", 1, 2.49), l40s, pcie}}}, Options{})
	pinned := func(it string) ParsedOfferID {
		return ParsedOfferID{Pool: "verda-vm-pool", Region: "FIN-01", InstanceType: it, PricePerHour: usd(9)}
	}
	var me *MismatchError
	if _, found, err := cp.CheckPinnedHardware(ctx, pinned("1H100"), OfferRequest{GPUType: "h100", GPUCount: 1, Kind: "vm"}); !found || err != nil {
		t.Errorf("a matching pin: found %v, %v", found, err)
	}
	if _, _, err := cp.CheckPinnedHardware(ctx, pinned("1L40S"), OfferRequest{GPUType: "h100", GPUCount: 1, Kind: "vm"}); !errors.As(err, &me) || me.Field != "gpu_type" {
		t.Errorf("an L40S pinned on h100: %v, want a gpu_type mismatch", err)
	}
	if _, _, err := cp.CheckPinnedHardware(ctx, pinned("1H100"), OfferRequest{GPUType: "h100", GPUCount: 2, Kind: "vm"}); !errors.As(err, &me) || me.Field != "gpu_count" {
		t.Errorf("one GPU pinned on gpu_count 2: %v, want a gpu_count mismatch", err)
	}
	if _, found, err := cp.CheckPinnedHardware(ctx, pinned("9X"), OfferRequest{GPUType: "h100", GPUCount: 1, Kind: "vm"}); found || err != nil {
		t.Errorf("an unlisted instance type: found %v, %v; want not found, no error", found, err)
	}
	if _, _, err := cp.CheckPinnedHardware(ctx, pinned("1H100P"), OfferRequest{GPUType: "h100", GPUCount: 1, Kind: "vm", FormFactor: cloudprovider.FormFactorSXM}); !errors.As(err, &me) || me.Field != "form_factor" || !strings.Contains(me.Msg, `"pcie"`) && !strings.Contains(me.Msg, "pcie") {
		t.Errorf("a PCIe card pinned on form_factor sxm: %v, want a form_factor mismatch naming pcie", err)
	}
	// A price below the cloud's fails at plan, naming the current offer; a price above it (the cloud
	// got cheaper) is no mismatch: apply never pays more than the ID says.
	low := ParsedOfferID{Pool: "verda-vm-pool", Region: "FIN-01", InstanceType: "1H100", PricePerHour: usd(0.01)}
	if _, _, err := cp.CheckPinnedHardware(ctx, low, OfferRequest{GPUType: "h100", GPUCount: 1, Kind: "vm"}); !errors.As(err, &me) || me.Field != "price" ||
		!strings.Contains(me.Msg, "$0.01/h") || !strings.Contains(me.Msg, "$2.49/h") || !strings.Contains(me.Msg, "1H100") {
		t.Errorf("a made-up $0.01/h: %v, want a price mismatch naming both prices and the current offer", err)
	}
	// Listed only in other regions: the region differs, and the current offers are named.
	away := ParsedOfferID{Pool: "verda-vm-pool", Region: "FIN-09", InstanceType: "1H100", PricePerHour: usd(2.49)}
	if _, found, err := cp.CheckPinnedHardware(ctx, away, OfferRequest{GPUType: "h100", GPUCount: 1, Kind: "vm"}); found || !errors.As(err, &me) || me.Field != "region" ||
		!strings.Contains(me.Msg, `region "FIN-09"`) || !strings.Contains(me.Msg, "verda-vm-pool/FIN-01/1H100/ondemand@2.49") {
		t.Errorf("an offer in a region the cloud does not offer it in: found %v, %v; want a region mismatch naming the current offer", found, err)
	}
	high := ParsedOfferID{Pool: "verda-vm-pool", Region: "FIN-01", InstanceType: "1H100", PricePerHour: usd(3)}
	if _, found, err := cp.CheckPinnedHardware(ctx, high, OfferRequest{GPUType: "h100", GPUCount: 1, Kind: "vm"}); !found || err != nil {
		t.Errorf("a pin above the current price: found %v, %v; want no mismatch", found, err)
	}
}
