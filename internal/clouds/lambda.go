package clouds

import (
	"github.com/hashicorp/go-hclog"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/lambda"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emulambda "github.com/hydragpu/terraform-provider-hydra/internal/emulator/lambda"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// Lambda is Lambda's on-demand GPU cloud, reached with a Cloud API key.
var Lambda = &Driver{
	Name:        lambda.CloudName,
	Block:       "lambda",
	Title:       "Lambda",
	Description: "Lambda Cloud, Lambda's on-demand GPU cloud.",
	Settings: []Setting{
		{Key: "api_key", Env: "LAMBDA_API_KEY", Sensitive: true, Doc: "Cloud API key."},
		endpointSetting("Lambda Cloud", lambda.DefaultBaseURL),
	},
	Build: func(s Settings, inv *inventory.Inventory, logger hclog.Logger) (cloudprovider.InstanceManagerBackend, error) {
		if err := s.Require("api_key"); err != nil {
			return nil, err
		}
		return asBackend(lambda.New(lambda.Config{APIKey: s.String("api_key"), BaseURL: s.String("endpoint"), Tuning: s.tuning()}, inv, logger))
	},
	StartEmulator: func(dir string) (Emulator, error) {
		return serve(emulambda.New(emulambda.Options{Options: simulation.Options{StateDir: dir}}).Start, func(url string) Values {
			return Values{"endpoint": url, "api_key": emulambda.DefaultAPIKey}
		})
	},
}
