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

// winningBid prices every auction through PriceBids with nothing comparable and no max price, so each
// bid is exactly what its auction needs to win now (the new bid rule), and picks the cheapest eligible
// bid. Auctions without capacity are listed ineligible by Offers and stay so.
func winningBid(t *testing.T, b controlplane.InstanceManagerBackend, offers []controlplane.Offer) controlplane.Offer {
	t.Helper()
	ab, ok := b.(controlplane.AuctionBackend)
	if !ok {
		t.Fatal("the Mithril backend is not an AuctionBackend")
	}
	var best controlplane.Offer
	found := false
	for _, o := range offers {
		p := ab.PriceBids([]controlplane.Offer{o}, nil, 0)[0]
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
