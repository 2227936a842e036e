package atlas

import (
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendkit"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// statuses maps Atlas statuses (API.md) onto hydra's. active is running only with an SSH endpoint;
// terminating stays pending so a caller waiting for termination keeps polling. Unknown words are
// pending.
var statuses = map[string]cloudprovider.Status{
	"provisioning": cloudprovider.StatusPending,
	"booting":      cloudprovider.StatusPending,
	"active":       cloudprovider.StatusRunning,
	"failed":       cloudprovider.StatusError,
	"terminating":  cloudprovider.StatusPending,
	"terminated":   cloudprovider.StatusTerminated,
}

func mapStatus(status string, ssh *cloudprovider.SSHEndpoint) cloudprovider.Status {
	return backendkit.TableStatus(statuses, status, ssh != nil)
}
