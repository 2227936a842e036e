package clouds

import (
	"github.com/hashicorp/go-hclog"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/primeintellect"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emuprime "github.com/hydragpu/terraform-provider-hydra/internal/emulator/primeintellect"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// PrimeIntellect is an aggregator. One spelling everywhere: "primeintellect" is its cloud name (in
// `clouds`, api_names and offer IDs), its provider block and the start of its pools' names.
var PrimeIntellect = &Driver{
	Name:        primeintellect.CloudName,
	Block:       "primeintellect",
	Title:       "Prime Intellect",
	Description: "Prime Intellect, an aggregator reselling other clouds' GPUs.",
	Facts:       primeintellect.Facts,
	Settings: []Setting{
		{Key: "api_key", Env: "PRIME_API_KEY", Sensitive: true, Doc: "API key."},
		endpointSetting("Prime Intellect", primeintellect.DefaultBaseURL),
	},
	Build: func(s Settings, inv *inventory.Inventory, logger hclog.Logger) (cloudprovider.InstanceManagerBackend, error) {
		if err := s.Require("api_key"); err != nil {
			return nil, err
		}
		return asBackend(primeintellect.New(primeintellect.Config{APIKey: s.String("api_key"), BaseURL: s.String("endpoint"), Tuning: s.tuning()}, inv, logger))
	},
	StartEmulator: func(dir string) (Emulator, error) {
		return serve(emuprime.New(emuprime.Options{Options: simulation.Options{StateDir: dir}}).Start, func(url string) Values {
			return Values{"endpoint": url, "api_key": emuprime.DefaultAPIKey}
		})
	},
}
