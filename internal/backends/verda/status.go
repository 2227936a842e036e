package verda

import (
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendkit"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// Verda's instance status words (the union of the SDK enums and the OpenAPI enum).
const (
	StatusNew                 = "new"
	StatusOrdered             = "ordered"
	StatusValidating          = "validating"
	StatusProvisioning        = "provisioning"
	StatusPending             = "pending"
	StatusRunning             = "running"
	StatusOffline             = "offline"
	StatusStartingHibernation = "starting_hibernation"
	StatusHibernating         = "hibernating"
	StatusRestoring           = "restoring"
	StatusDeleting            = "deleting"
	StatusDiscontinued        = "discontinued"
	StatusNotFound            = "notfound"
	StatusNoCapacity          = "no_capacity"
	StatusInstallationFailed  = "installation_failed"
	StatusError               = "error"
	StatusUnknown             = "unknown"
)

// statusTable maps Verda's status words onto hydra's, following the reference's lifecycle mapping.
// hydra has no "stopped": an instance hydra never stopped that is offline or hibernating is reported as
// an error (it cannot be provisioned or used); restoring is on its way back, so it is pending. deleting
// and discontinued are both terminated: billing has stopped and the machine will not come back.
var statusTable = map[string]cloudprovider.Status{
	StatusNew:                 cloudprovider.StatusPending,
	StatusOrdered:             cloudprovider.StatusPending,
	StatusValidating:          cloudprovider.StatusPending,
	StatusPending:             cloudprovider.StatusPending,
	StatusProvisioning:        cloudprovider.StatusPending,
	StatusRestoring:           cloudprovider.StatusPending,
	StatusRunning:             cloudprovider.StatusRunning,
	StatusOffline:             cloudprovider.StatusError,
	StatusStartingHibernation: cloudprovider.StatusError,
	StatusHibernating:         cloudprovider.StatusError,
	StatusDeleting:            cloudprovider.StatusTerminated,
	StatusDiscontinued:        cloudprovider.StatusTerminated,
	StatusNotFound:            cloudprovider.StatusTerminated,
	"not_found":               cloudprovider.StatusTerminated,
	StatusNoCapacity:          cloudprovider.StatusError,
	StatusInstallationFailed:  cloudprovider.StatusError,
	StatusError:               cloudprovider.StatusError,
	StatusUnknown:             cloudprovider.StatusError,
}

// mapStatus maps a Verda status onto hydra's. An instance is running only once it also has an IP;
// before that it is still pending. A word the table does not know is treated as pending, so polling
// goes on (bounded by the caller's timeout) rather than failing on a new status name.
func mapStatus(status string, hasIP bool) (cloudprovider.Status, string) {
	s := backendkit.TableStatus(statusTable, status, hasIP)
	msg := ""
	if s == cloudprovider.StatusError {
		switch strings.ToLower(status) {
		case StatusOffline, StatusStartingHibernation, StatusHibernating:
			msg = "the instance is stopped at Verda (" + status + ")"
		case StatusNoCapacity:
			msg = "Verda had no capacity to start the instance"
		case StatusInstallationFailed:
			msg = "Verda failed to install the operating system"
		default:
			msg = "Verda reports the instance as " + status
		}
	}
	return s, msg
}
