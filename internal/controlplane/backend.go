// Package controlplane is hydra's thin control plane: it gathers offers from every eligible pool, ranks
// them by price, and drives an instance from pending to ready through the pool that owns it. It knows
// nothing about Terraform; internal/provider translates between the two.
package controlplane

import (
	"context"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
)

// Status is hydra's view of an instance, the same for every cloud.
type Status string

// The statuses an instance moves through. Backends report only pending, running, terminated and error;
// provisioning and ready are the control plane's own.
const (
	StatusPending      Status = "pending"      // created at the cloud, not up yet
	StatusRunning      Status = "running"      // the cloud says it is up and reachable
	StatusProvisioning Status = "provisioning" // our Ansible run is going
	StatusReady        Status = "ready"        // provisioned, for customers
	StatusTerminated   Status = "terminated"   // gone, also at the cloud
	StatusError        Status = "error"        // the cloud reports a failure, or provisioning failed for good
)

// Offer is something a cloud can rent now.
type Offer struct {
	// ID identifies the offer across plan and apply: "<pool>/<region>/<instance type>" plus "/spot" for
	// spot capacity. Backends leave it empty; the control plane fills it when it expands a cloud's
	// offers into its pools.
	ID string
	// Cloud is the backend's name (Backend.Cloud()).
	Cloud string
	// Pool is filled by the control plane; backends leave it empty.
	Pool string
	// Region is the cloud's own region or location code.
	Region string
	// InstanceType is the cloud's own name for the machine shape (plan, instance type, cloudId...).
	InstanceType string
	// GPUType is hydra's GPU type (inventory), mapped from the cloud's name through api_names.
	GPUType string
	// GPUCount is the number of GPUs in one instance.
	GPUCount int
	// PricePerHour is the price of the whole instance in US dollars per hour.
	PricePerHour float64
	// Spot is true for preemptible capacity.
	Spot bool
	// Available is how many instances the cloud says it can start now; -1 when it does not say.
	Available int
	// ResaleOf names the cloud that really runs the hardware when this offer resells it ("" if direct).
	ResaleOf string
	// Ineligible, when set, says why this offer must not be chosen (for example an auction bid that
	// would not clear). Such offers are shown to users with the reason and never ranked.
	Ineligible string
	// Details carries backend-specific facts that Create needs again or that users should see (for
	// example an upstream cloud id, a bid price, the last clearing price). Keys and values are strings.
	Details map[string]string
}

// SSHEndpoint is where provisioning reaches an instance.
type SSHEndpoint struct {
	Host string
	Port int
	User string
}

// Instance is one machine at a cloud, as its backend reports it.
type Instance struct {
	// ID is the cloud's own identifier.
	ID string
	// Name is the cloud-side name: the pool's prefix followed by the resource's name.
	Name         string
	Cloud        string
	Region       string
	InstanceType string
	GPUType      string
	GPUCount     int
	Spot         bool
	PricePerHour float64
	// Status is the cloud's status mapped onto hydra's (pending, running, terminated or error).
	Status Status
	// CloudStatus is the cloud's own word for the status, for diagnostics.
	CloudStatus string
	// Message explains an error status, when the cloud gives a reason.
	Message string
	// SSH is nil until the cloud reports an address.
	SSH *SSHEndpoint
	// HostKey is the SSH host public key in authorized_keys form when the cloud reports one ("" otherwise;
	// provisioning then trusts the first key it sees and records it).
	HostKey   string
	CreatedAt time.Time
}

// CreateRequest asks a backend to start one instance from an offer.
type CreateRequest struct {
	// Name is the full cloud-side name; it must be used verbatim so the instance can be found again.
	Name  string
	Pool  inventory.Pool
	Offer Offer
	// MaxPricePerHour is the user's ceiling in US dollars per hour (0: none).
	MaxPricePerHour float64
	// SSHPublicKeys are authorized_keys lines to install for the login user.
	SSHPublicKeys []string
}

// InstanceManagerBackend hides one cloud's API behind the operations the control plane needs. It knows
// nothing about Terraform. Errors should be *Error values so callers can tell capacity from auth from
// not-found (see the ErrorKind constants).
type InstanceManagerBackend interface {
	// Cloud names the backend ("verda", "upcloud", ...), as used in pools.yml and api_names.
	Cloud() string
	// Offers lists what the cloud can rent now, for every GPU type the inventory maps for this cloud,
	// with GPUType filled in. The control plane caches the answer once per process and filters it.
	Offers(ctx context.Context) ([]Offer, error)
	// Create starts an instance and returns as soon as the cloud has accepted it (usually pending).
	Create(ctx context.Context, req CreateRequest) (Instance, error)
	// Get returns the instance with the cloud's id, or an *Error of kind ErrNotFound.
	Get(ctx context.Context, id string) (Instance, error)
	// List returns the instances whose name starts with prefix (terminated ones may be left out).
	List(ctx context.Context, prefix string) ([]Instance, error)
	// Delete starts termination. An instance that is already gone yields an *Error of kind ErrNotFound.
	Delete(ctx context.Context, id string) error
}

// AuctionBackend is implemented by backends that sell capacity by auction (Mithril). Once every cloud
// has answered, the control plane hands it the other clouds' offers so it can set each of its offers'
// bid price (PricePerHour) and mark the ones it does not expect to win as Ineligible.
type AuctionBackend interface {
	InstanceManagerBackend
	// PriceBids returns own with prices and eligibility set. others are the other clouds' offers for
	// the same request; maxPricePerHour is the user's ceiling (0: none).
	PriceBids(own, others []Offer, maxPricePerHour float64) []Offer
}
