package mithril

import (
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/conformance"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/mithril"
)

func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Harness{Cloud: CloudName, Start: startConformance, Offer: winningBid})
}

// startConformance serves a fresh in-memory emulator on loopback whose bids are allocated at once
// (the default catalog has free capacity), whose machines boot in 300 ms and whose cancelled bids'
// machines terminate at once, and builds the backend against it with the embedded inventory.
func startConformance(t *testing.T) (controlplane.InstanceManagerBackend, emukit.Admin) {
	t.Helper()
	e := emu.New(emu.Options{BootDuration: 300 * time.Millisecond, PreemptionWindow: time.Second})
	tuning := backendtest.Tuning(10*time.Millisecond, 2*time.Second)
	tuning.Timeout = 10 * time.Second
	return backendtest.Must(New(Config{
		APIKey:  emu.DefaultAPIKey,
		Project: emu.DefaultProject,
		BaseURL: backendtest.Start(t, e.Start),
		Tuning:  tuning,
	}, backendtest.Inventory(t), nil))(t), e
}

// winningBid prices every auction with free capacity through PriceBids, against another cloud's
// comparable spot offer at twice the last clearing price plus a dollar (so the bid, a cent below it,
// clears every floor), and picks the cheapest eligible bid. A raw auction offer carries only the last
// clearing price, which is no bid.
func winningBid(t *testing.T, b controlplane.InstanceManagerBackend, offers []controlplane.Offer) controlplane.Offer {
	t.Helper()
	ab, ok := b.(controlplane.AuctionBackend)
	if !ok {
		t.Fatal("the Mithril backend is not an AuctionBackend")
	}
	var best controlplane.Offer
	found := false
	for _, o := range offers {
		if o.Available == 0 {
			continue
		}
		other := controlplane.Offer{Cloud: "conformance", Region: "elsewhere", InstanceType: "comparable", GPUType: o.GPUType, GPUCount: o.GPUCount,
			PricePerHour: 2*o.PricePerHour + 1, Spot: true, Available: -1}
		p := ab.PriceBids([]controlplane.Offer{o}, []controlplane.Offer{other}, 0)[0]
		if p.Ineligible != "" {
			continue
		}
		if !found || p.PricePerHour < best.PricePerHour {
			best, found = p, true
		}
	}
	if !found {
		t.Fatalf("no auction among %d offers takes a winning bid", len(offers))
	}
	return best
}
