package clouds

import (
	"github.com/hashicorp/go-hclog"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/atlas"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emuatlas "github.com/hydragpu/terraform-provider-hydra/internal/emulator/atlas"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// Atlas is the in-house cloud.
var Atlas = &Driver{
	Name:  atlas.CloudName,
	Block: "atlas",
	Title: "Atlas",
	Description: "Atlas, the in-house cloud. Its offers carry an artificially low price, so Atlas wins whenever " +
		"it has capacity.",
	Settings: []Setting{
		{Key: "endpoint", Env: "ATLAS_ENDPOINT", Doc: "Base URL of the Atlas API."},
		{Key: "token", Env: "ATLAS_TOKEN", Sensitive: true, Doc: "Bearer token."},
		{Key: "price_factor", Kind: KindFloat, Default: atlas.DefaultPriceFactor, Range: Between(0.01, 10),
			Doc: "Factor applied to Atlas's list prices for ranking only: it makes in-house capacity win, but Atlas bills its list price, which the plan shows in `price_usd_per_hour` (the ranking figure is in `offer_details`) and which `max_price_per_hour` caps."},
	},
	Build: func(s Settings, inv *inventory.Inventory, logger hclog.Logger) (cloudprovider.InstanceManagerBackend, error) {
		if err := s.Require("endpoint", "token"); err != nil {
			return nil, err
		}
		return asBackend(atlas.New(atlas.Config{BaseURL: s.String("endpoint"), Token: s.String("token"),
			PriceFactor: s.Float("price_factor"), Tuning: s.tuning()}, inv, logger))
	},
	StartEmulator: func(dir string) (Emulator, error) {
		return serve(emuatlas.New(emuatlas.Options{Options: simulation.Options{StateDir: dir}}).Start, func(url string) Values {
			return Values{"endpoint": url, "token": emuatlas.DefaultToken}
		})
	},
}
