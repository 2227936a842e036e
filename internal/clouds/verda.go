package clouds

import (
	"github.com/hashicorp/go-hclog"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/verda"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emuverda "github.com/hydragpu/terraform-provider-hydra/internal/emulator/verda"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// Verda (formerly DataCrunch) uses OAuth2 client credentials.
var Verda = &Driver{
	Name:        verda.CloudName,
	Block:       "verda",
	Title:       "Verda",
	Description: "Verda (formerly DataCrunch).",
	Settings: []Setting{
		{Key: "client_id", Env: "VERDA_CLIENT_ID", Sensitive: true, Doc: "OAuth2 client ID."},
		{Key: "client_secret", Env: "VERDA_CLIENT_SECRET", Sensitive: true, Doc: "OAuth2 client secret."},
		endpointSetting("Verda", verda.DefaultBaseURL),
		{Key: "eur_to_usd", Kind: KindFloat, Default: verda.DefaultEURToUSD, Range: AtLeast(0.01),
			Doc: "Exchange rate for accounts billed in euros: hydra's prices are US dollars per hour. Each converted price is rounded up once to the cent, as UpCloud's are."},
	},
	Build: func(s Settings, inv *inventory.Inventory, logger hclog.Logger) (cloudprovider.InstanceManagerBackend, error) {
		if err := s.Require("client_id", "client_secret"); err != nil {
			return nil, err
		}
		return asBackend(verda.New(verda.Config{ClientID: s.String("client_id"), ClientSecret: s.String("client_secret"),
			BaseURL: s.String("endpoint"), EURToUSD: s.Float("eur_to_usd"), Tuning: s.tuning()}, inv, logger))
	},
	StartEmulator: func(dir string) (Emulator, error) {
		return serve(emuverda.New(emuverda.Options{Options: simulation.Options{StateDir: dir}}).Start, func(url string) Values {
			return Values{"endpoint": url, "client_id": emuverda.DefaultClientID, "client_secret": emuverda.DefaultClientSecret}
		})
	},
}
