package clouds

import (
	"github.com/hashicorp/go-hclog"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/mithril"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emumithril "github.com/hydragpu/terraform-provider-hydra/internal/emulator/mithril"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// Mithril sells spot capacity by auction. Its bids are commitments, so it is off by default.
var Mithril = &Driver{
	Name:         mithril.CloudName,
	Block:        "mithril",
	Title:        "Mithril",
	Description:  "Mithril's spot capacity, sold by a sealed second-price auction.",
	OffByDefault: true,
	Settings: []Setting{
		{Key: "api_key", Env: "MITHRIL_API_KEY", Sensitive: true, Doc: "API key."},
		{Key: "project", Env: "MITHRIL_PROJECT", Doc: "Project ID or name."},
		endpointSetting("Mithril", mithril.DefaultBaseURL),
		{Key: "win_margin_percent", Kind: KindFloat, Default: mithril.DefaultWinMarginPercent, Range: Between(0, 1000),
			Doc: "A bid is placed only when it beats the auction's recent winning price by this much (and the " +
				"auction's own signals agree); otherwise the offer is shown as not eligible with both prices."},
	},
	Facts: mithril.Facts,
	Build: func(s Settings, inv *inventory.Inventory, logger hclog.Logger) (cloudprovider.InstanceManagerBackend, error) {
		if err := s.Require("api_key"); err != nil {
			return nil, err
		}
		margin := s.Float("win_margin_percent")
		return asBackend(mithril.New(mithril.Config{APIKey: s.String("api_key"), Project: s.String("project"),
			BaseURL: s.String("endpoint"), WinMarginPercent: &margin, Tuning: s.tuning()}, inv, logger))
	},
	StartEmulator: func(dir string) (Emulator, error) {
		return serve(emumithril.New(emumithril.Options{Options: simulation.Options{StateDir: dir}}).Start, func(url string) Values {
			return Values{"endpoint": url, "api_key": emumithril.DefaultAPIKey, "project": emumithril.DefaultProject}
		})
	},
}
