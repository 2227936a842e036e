package upcloud

import (
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendkit"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
)

// stateTable maps UpCloud server states onto hydra's statuses (reference 2.7). "started" is running only
// once a public IPv4 address is known (see mapState). "stopped" is an error for hydra: nothing in hydra
// stops a machine except Delete, which removes it right after, so a stopped server was preempted (spot)
// or stopped outside hydra; it still exists and is billed for disk and address, so it is never reported
// as terminated (that would drop it from Terraform state and leak it).
var stateTable = map[string]controlplane.Status{
	"maintenance": controlplane.StatusPending,
	"started":     controlplane.StatusRunning,
	"stopped":     controlplane.StatusError,
	"error":       controlplane.StatusError,
}

// mapState returns hydra's status for a server state, and a message for error statuses. Unknown states
// are pending (the control plane's create timeout bounds the wait).
func mapState(state string, publicIPv4 string) (controlplane.Status, string) {
	st := backendkit.TableStatus(stateTable, state, publicIPv4 != "")
	switch {
	case st == controlplane.StatusPending:
		return st, ""
	case strings.EqualFold(state, "stopped"):
		return st, "the server is stopped (spot preemption, or stopped outside hydra)"
	case st == controlplane.StatusError:
		return st, "UpCloud reports the server in state error"
	}
	return st, ""
}
