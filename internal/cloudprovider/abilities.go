package cloudprovider

import (
	"context"

	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// A backend does what InstanceManagerBackend asks of every cloud. What only some clouds can do, each
// backend declares by implementing the small interfaces below; the control plane asks with a type
// assertion and never by a cloud's name. A backend that does not implement one says the cloud cannot.

// OwnershipConfirmer is implemented by backends whose cloud can change a machine's metadata after
// creation (labels, tags). ConfirmOwnership records that a Terraform state holds the instance, so that
// Get and List report Owner.Confirmed = true from then on. It is idempotent; a gone instance is
// ErrNotFound.
type OwnershipConfirmer interface {
	ConfirmOwnership(ctx context.Context, id string) error
}

// SSHKeyRequirer is implemented by backends whose cloud refuses to create a machine without at least
// one SSH public key. The control plane rejects such a cloud at plan for a request that would create
// a machine without any key (OfferRequest.WithoutSSHKey), instead of failing at apply.
type SSHKeyRequirer interface {
	RequiresSSHKey() bool
}

// PerMachineLister is implemented by backends whose List costs one API call per machine it lists (it
// lists the servers, then reads each one's details). For them one shared List saves nothing over a Get
// per machine, so the control plane's pollers read each waiting machine with a Get instead.
type PerMachineLister interface {
	ListReadsEachMachine() bool
}

// AuctionBackend is implemented by backends that sell capacity by auction. Once every cloud
// has answered, the control plane hands it the other clouds' offers so it can set each of its offers'
// bid price (PricePerHour) and mark the ones it does not expect to win as Ineligible.
type AuctionBackend interface {
	InstanceManagerBackend
	// PriceBids returns own with prices and eligibility set. others are the other clouds' offers for
	// the same request; maxPricePerHour is the user's ceiling (0: none).
	PriceBids(own, others []Offer, maxPricePerHour money.USD) []Offer
}
