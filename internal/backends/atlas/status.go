package atlas

import (
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
)

// statuses maps Atlas statuses (API.md) onto hydra's. active is running only with an SSH endpoint;
// terminating stays pending so a caller waiting for termination keeps polling. Unknown words are
// pending.
var statuses = map[string]controlplane.Status{
	"provisioning": controlplane.StatusPending,
	"booting":      controlplane.StatusPending,
	"active":       controlplane.StatusRunning,
	"failed":       controlplane.StatusError,
	"terminating":  controlplane.StatusPending,
	"terminated":   controlplane.StatusTerminated,
}

func mapStatus(status string, ssh *controlplane.SSHEndpoint) controlplane.Status {
	st, ok := statuses[strings.ToLower(strings.TrimSpace(status))]
	if !ok {
		return controlplane.StatusPending
	}
	if st == controlplane.StatusRunning && ssh == nil {
		return controlplane.StatusPending
	}
	return st
}
