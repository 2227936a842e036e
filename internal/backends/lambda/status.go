package lambda

import (
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendkit"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// Lambda's instance status words: the InstanceStatus enum of its OpenAPI document (the v1.4.0 document
// lacks terminating).
const (
	StatusBooting     = "booting"
	StatusActive      = "active"
	StatusUnhealthy   = "unhealthy"
	StatusTerminating = "terminating"
	StatusTerminated  = "terminated"
	// StatusPreempted is not in the OpenAPI enum; one public client lists it next to the others. It is
	// mapped in case it appears (not confirmed that Lambda ever sends it).
	StatusPreempted = "preempted"
)

// statusTable maps Lambda's status words onto hydra's. unhealthy is an error: Lambda uses it for a
// machine that failed its boot or a health check, and only a restart (which hydra does not do) brings it
// back. terminating is already terminated for hydra: billing stops and the machine will not come back.
var statusTable = map[string]cloudprovider.Status{
	StatusBooting:     cloudprovider.StatusPending,
	StatusActive:      cloudprovider.StatusRunning,
	StatusUnhealthy:   cloudprovider.StatusError,
	StatusTerminating: cloudprovider.StatusTerminated,
	StatusTerminated:  cloudprovider.StatusTerminated,
	StatusPreempted:   cloudprovider.StatusTerminated,
}

// mapStatus maps a Lambda status onto hydra's, with a message for an error. An active instance is
// running only once it also has an IP (Lambda may report active before the address is filled in);
// before that it is pending. A word the table does not know is pending, so polling goes on (bounded by
// the caller's timeout) rather than failing on a new status name.
func mapStatus(status string, hasIP bool) (cloudprovider.Status, string) {
	s := backendkit.TableStatus(statusTable, status, hasIP)
	if s == cloudprovider.StatusError {
		return s, "Lambda reports the instance as " + status + " (it failed to boot or a health check; Lambda support can say why)"
	}
	return s, ""
}
