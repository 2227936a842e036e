package upcloud

import (
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendkit"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// stateTable maps UpCloud server states onto hydra's statuses (reference 2.7). "started" is running only
// once a public IPv4 address is known (see mapState). "stopped" is an error for hydra: nothing in hydra
// stops a machine except Delete, which removes it right after, so a stopped server was preempted (spot)
// or stopped outside hydra; it still exists and is billed for disk and address, so it is never reported
// as terminated (that would drop it from Terraform state and leak it).
var stateTable = map[string]cloudprovider.Status{
	"maintenance": cloudprovider.StatusPending,
	"started":     cloudprovider.StatusRunning,
	"stopped":     cloudprovider.StatusError,
	"error":       cloudprovider.StatusError,
}

// mapState returns hydra's status for a server state, and a message for error statuses. Unknown states
// are pending (the control plane's create timeout bounds the wait).
func mapState(state string, publicIPv4 string) (cloudprovider.Status, string) {
	st := backendkit.TableStatus(stateTable, state, publicIPv4 != "")
	switch {
	case st == cloudprovider.StatusPending:
		return st, ""
	case strings.EqualFold(state, "stopped"):
		return st, "the server is stopped (spot preemption, or stopped outside hydra)"
	case st == cloudprovider.StatusError:
		return st, "UpCloud reports the server in state error"
	}
	return st, ""
}
