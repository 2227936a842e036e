package clouds

import (
	"github.com/hashicorp/go-hclog"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/upcloud"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emuupcloud "github.com/hydragpu/terraform-provider-hydra/internal/emulator/upcloud"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// upcloudEmulatorLogin is the sub-account the UpCloud emulator started by emulator_dir accepts.
const upcloudEmulatorLogin = "hydra-emulator"

// UpCloud takes a sub-account's username and password, or an API token.
var UpCloud = &Driver{
	Name:        upcloud.CloudName,
	Block:       "upcloud",
	Title:       "UpCloud",
	Description: "UpCloud (API 1.3), with a sub-account's username and password or an API token.",
	Settings: []Setting{
		{Key: "username", Env: "UPCLOUD_USERNAME", Doc: "API sub-account username."},
		{Key: "password", Env: "UPCLOUD_PASSWORD", Sensitive: true, Doc: "API sub-account password."},
		{Key: "token", Env: "UPCLOUD_TOKEN", Sensitive: true, Doc: "API token (instead of username and password); it wins when both are set."},
		endpointSetting("UpCloud", upcloud.DefaultBaseURL),
		{Key: "eur_to_usd", Kind: KindFloat, Default: upcloud.DefaultEURToUSD, Range: AtLeast(0.01),
			Doc: "Exchange rate for UpCloud's prices, which are euro cents per hour: hydra's prices are US dollars per hour. Each converted price is rounded up once to the cent, as a Verda account billed in euros is."},
		{Key: "template",
			Doc: "The storage template new machines are cloned from (UUID or exact title). Default: the newest public GPU-ready Ubuntu template."},
	},
	Facts: upcloud.Facts,
	Build: func(s Settings, inv *inventory.Inventory, logger hclog.Logger) (cloudprovider.InstanceManagerBackend, error) {
		if err := s.RequireOneOf([]string{"username", "password"}, []string{"token"}); err != nil {
			return nil, err
		}
		cfg := upcloud.Config{Username: s.String("username"), Password: s.String("password"), Token: s.String("token"),
			BaseURL: s.String("endpoint"), EURToUSD: s.Float("eur_to_usd"), Template: s.String("template"), Tuning: s.tuning()}
		if cfg.Token != "" {
			cfg.Username, cfg.Password = "", "" // a token wins over sub-account credentials (from the environment, say)
		}
		return asBackend(upcloud.New(cfg, inv, logger))
	},
	StartEmulator: func(dir string) (Emulator, error) {
		srv := emuupcloud.New(emuupcloud.Options{Options: simulation.Options{StateDir: dir}, Username: upcloudEmulatorLogin, Password: upcloudEmulatorLogin})
		return serve(srv.Start, func(url string) Values {
			return Values{"endpoint": url, "username": upcloudEmulatorLogin, "password": upcloudEmulatorLogin, "token": ""}
		})
	},
}
