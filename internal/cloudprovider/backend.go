package cloudprovider

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// Status is hydra's view of an instance, the same for every cloud.
type Status string

// The statuses a machine moves through: pending, running, provisioning, ready; or terminated, or
// error. Backends report only pending, running, terminated and error (Instance.Status); provisioning
// and ready are the control plane's own (Record.Status, set by BringUp, Refresh and Import).
const (
	StatusPending      Status = "pending"      // created at the cloud, not up yet
	StatusRunning      Status = "running"      // the cloud says it is up (SSH may not answer yet)
	StatusProvisioning Status = "provisioning" // our Ansible run is going
	StatusReady        Status = "ready"        // provisioned, for customers
	StatusTerminated   Status = "terminated"   // gone, also at the cloud
	StatusError        Status = "error"        // the cloud reports a failure, or provisioning failed for good
)

// Offer is something a cloud can rent now.
type Offer struct {
	// ID identifies the offer across plan and apply, price included:
	// "<pool>/<region>/<instance type>/<ondemand|spot>@<price>" (see OfferID and ParseOfferID). Backends
	// leave it empty; the control plane fills it when it expands a cloud's offers into its pools.
	ID string
	// Cloud is the backend's name (Backend.Cloud()).
	Cloud string
	// Pool is filled by the control plane; backends leave it empty.
	Pool string
	// Region is the cloud's own region or location code.
	Region string
	// InstanceType is the cloud's own name for the machine shape (plan, instance type, cloudId...).
	InstanceType string
	// GPUType is hydra's GPU type (inventory), mapped from the cloud's name through api_names. It is ""
	// for a GPU the inventory does not map: such offers are reported (see CloudGPU), never ranked.
	GPUType string
	// CloudGPU is the cloud's own name for the GPU, exactly as its API wrote it (the name api_names must
	// list for the cloud). Backends fill it on every offer, mapped or not.
	CloudGPU string
	// GPUCount is the number of GPUs in one instance.
	GPUCount int
	// Hardware is what the cloud says of the machine beyond GPU type and count.
	Hardware
	// PricePerHour is the price the cloud bills for the whole instance per hour, exactly. The cap
	// (max_price_per_hour) applies to it, and plans show it.
	PricePerHour money.USD
	// RankPrice, when above 0, is the figure the offer is ranked by instead of PricePerHour: a
	// preference, not a discount: a preferred cloud is ranked by a lower figure but bills its list price.
	RankPrice money.USD
	// Spot is true for preemptible capacity.
	Spot bool
	// Available is how many instances the cloud says it can start now; -1 when it does not say.
	Available int
	// StockUnknown is true when the cloud has a stock figure but it could not be read this time (its
	// availability call failed). Such offers rank behind every offer with known stock and are marked
	// so in the plan, so a sold-out offer never silently beats one in stock elsewhere.
	StockUnknown bool
	// ResaleOf names the cloud that really runs the hardware when this offer resells it ("" if direct).
	ResaleOf string
	// Ineligible, when set, says why this offer must not be chosen (for example an auction bid that
	// would not clear). Such offers are shown to users with the reason and never ranked.
	Ineligible string
	// Details carries backend-specific facts that Create needs again or that users should see (for
	// example an upstream cloud id, a bid price, the last clearing price). Keys and values are strings.
	Details map[string]string
}

// Form factors: how the GPUs sit in the machine. SXM modules (NVLink between all GPUs of a board)
// outperform PCIe cards of the same name for multi-GPU work and cost more.
const (
	FormFactorSXM  = "sxm"
	FormFactorPCIe = "pcie"
)

// FormFactors are the form factors a request may require.
var FormFactors = []string{FormFactorSXM, FormFactorPCIe}

// Hardware is what a buyer weighs beyond the GPU type and count. A zero value means the cloud did not
// say (for FormFactor: ""), never "none".
type Hardware struct {
	// FormFactor is FormFactorSXM or FormFactorPCIe ("" when the cloud does not say).
	FormFactor string
	// GPUMemoryGB is the memory of one GPU, in GB.
	GPUMemoryGB int
	// VCPUs is the number of virtual CPUs of the whole machine.
	VCPUs int
	// MemoryGB is the machine's RAM, in GB.
	MemoryGB int
}

// SSHEndpoint is where provisioning reaches an instance.
type SSHEndpoint struct {
	Host string
	Port int
	User string
	// Jump, when set, is the host to reach this endpoint through (a cluster's login node when the
	// nodes have no public SSH): provisioning logs in to Jump with the same key and forwards a TCP
	// connection from there to Host:Port. Nil: Host:Port is dialled directly.
	Jump *SSHEndpoint
	// HostKey is this endpoint's SSH host key in authorized_keys form where the cloud reports one, or
	// the key pinned on first use. Read for a Jump only (a machine's own is Instance.HostKey and
	// ProvisionRequest.HostKey); "" trusts the jump's first key (ProvisionResult.JumpHostKey says it).
	HostKey string
}

// Ownership is the record hydra keeps at the cloud with every machine it creates. It ties the machine
// to exactly one resource instance, so that no resource ever adopts, changes or deletes another's machine.
//
// The cloud-side name always carries it (see CloudName: "<pool prefix><resource>--<token>"); a backend
// whose cloud has labels, tags or a description field stores it there too (OwnerLabels), and a backend
// whose cloud can change that metadata after creation implements OwnershipConfirmer.
type Ownership struct {
	// Resource is the resource's name (hydra_gpu_instance.name), without the pool prefix.
	Resource string
	// Token is random, chosen when the create starts and kept in the resource's state. Two resources
	// never share one, so two resources never share a machine.
	Token string
	// Confirmed says a completed create, a refresh or an import has recorded at the cloud that a
	// Terraform state holds the machine. Meaningful only where the backend implements
	// OwnershipConfirmer; elsewhere it stays false.
	Confirmed bool
}

// Instance is one machine at a cloud, as its backend reports it.
type Instance struct {
	// ID is the cloud's own identifier.
	ID string
	// Name is the cloud-side name, exactly as given in CreateRequest.Name.
	Name         string
	Cloud        string
	Region       string
	InstanceType string
	GPUType      string
	GPUCount     int
	// Hardware is filled where the cloud reports it for a machine (zero values otherwise).
	Hardware
	Spot bool
	// PricePerHour is what the cloud bills for the machine per hour, as it reports it (0: not
	// reported); a refresh records it as the machine's price.
	PricePerHour money.USD
	// Status is the cloud's status mapped onto hydra's (pending, running, terminated or error).
	Status Status
	// CloudStatus is the cloud's own word for the status, for diagnostics.
	CloudStatus string
	// Message explains an error status, when the cloud gives a reason.
	Message string
	// AwaitingAllocation is true while the cloud has accepted the request but not allocated capacity
	// for it yet (an auction bid that has not won). Nothing is billed then. Launch cancels such a
	// request after LaunchRequest.BidTimeout.
	AwaitingAllocation bool
	// SSH is nil until the cloud reports an address.
	SSH *SSHEndpoint
	// HostKey is the SSH host public key in authorized_keys form when the cloud reports one ("" otherwise;
	// provisioning then trusts the first key it sees and records it).
	HostKey   string
	CreatedAt time.Time
	// Cluster is the cloud's id of the cluster the machine is a node of ("" for a machine of its own).
	Cluster string
	// Interruption is set while the cloud's notice that it takes a spot machine back runs, and after it
	// did (nil otherwise).
	Interruption *Interruption
	// Owner is the ownership record as the cloud keeps it. A backend that stores the record in the
	// cloud's metadata fills it from there; otherwise the pool manager fills Resource and Token from
	// the name. Token is "" for a machine hydra did not create (or created before ownership records).
	Owner Ownership
}

// CreateRequest asks a backend to start one instance from an offer.
type CreateRequest struct {
	// Name is the full cloud-side name; it must be used verbatim so the instance can be found again.
	Name  string
	Pool  inventory.Pool
	Offer Offer
	// Owner is the ownership record to keep with the machine (Confirmed is false at create). Backends
	// whose cloud has labels, tags or a description store OwnerLabels(Owner) there.
	Owner Ownership
	// MaxPricePerHour is the user's ceiling per hour (0: none).
	MaxPricePerHour money.USD
	// SSHPublicKeys are authorized_keys lines to install for the login user.
	SSHPublicKeys []string
}

// InstanceManagerBackend hides one cloud's API behind the operations the control plane needs. It knows
// nothing about Terraform. Every error it returns is an *Error whose Kind says what the caller can do
// (ErrCapacity: try another offer; ErrQuota, ErrAuth, ErrInvalid: stop and tell the user; ErrNotFound:
// the object is gone; ErrOther: unknown outcome, look before retrying). The conformance suite
// (internal/backends/conformance) checks every rule below against each cloud's emulator.
type InstanceManagerBackend interface {
	// Cloud names the backend: its cloud's lower-case name, as used in pools.yml and api_names.
	Cloud() string
	// Offers lists what the cloud can rent now, with GPUType filled in for every GPU the inventory maps
	// for this cloud. A GPU product the inventory cannot map is not dropped: it is returned with GPUType
	// "" and CloudGPU set, so the control plane can report it (Unmapped) and nobody is left wondering
	// why a cloud offers nothing. The control plane caches the answer once per process and filters it.
	// Offers has no side effects at the cloud.
	Offers(ctx context.Context) ([]Offer, error)
	// Create starts an instance and returns as soon as the cloud has accepted it (usually pending).
	//   - The instance carries req.Name verbatim and the ownership record req.Owner.
	//   - Idempotent by name: a create whose name already exists at the cloud (a retried request, or
	//     concurrent creates of one name) returns that instance; the cloud never holds two live
	//     instances of one name because of hydra.
	//   - An offer whose price is now above req.MaxPricePerHour (when set) is ErrCapacity, and nothing
	//     is created: the same as an offer that sold out.
	//   - A response lost after the cloud accepted the create is ErrOther; the instance is then found
	//     by List(req.Name).
	Create(ctx context.Context, req CreateRequest) (Instance, error)
	// Get returns the instance with the cloud's id, or ErrNotFound. It has no side effects at the cloud.
	Get(ctx context.Context, id string) (Instance, error)
	// List returns the instances whose name starts with prefix (terminated ones may be left out). It
	// has no side effects at the cloud and reads every page.
	List(ctx context.Context, prefix string) ([]Instance, error)
	// Delete starts termination of the instance with the cloud's id. An instance that is already gone
	// (or terminating) is success: Delete returns nil.
	Delete(ctx context.Context, id string) error
}

// Ownership labels: the key/value pairs a backend stores with a machine where its cloud has labels,
// tags or a description ("hydra-owner=<token>,hydra-resource=<name>,hydra-confirmed=false").
const (
	LabelManagedBy = "hydra-managed-by"
	LabelOwner     = "hydra-owner"
	LabelResource  = "hydra-resource"
	LabelConfirmed = "hydra-confirmed"
)

// OwnerLabels returns the ownership record as labels, in a fixed order.
func OwnerLabels(o Ownership) [][2]string {
	return [][2]string{
		{LabelManagedBy, "hydra"},
		{LabelOwner, o.Token},
		{LabelResource, o.Resource},
		{LabelConfirmed, strconv.FormatBool(o.Confirmed)},
	}
}

// OwnerFromLabels reads an ownership record back from labels; ok is false when they hold none.
func OwnerFromLabels(get func(key string) (string, bool)) (o Ownership, ok bool) {
	token, ok := get(LabelOwner)
	if !ok || token == "" {
		return Ownership{}, false
	}
	o.Token = token
	o.Resource, _ = get(LabelResource)
	c, _ := get(LabelConfirmed)
	o.Confirmed = c == "true"
	return o, true
}

// OwnerDescription encodes the record for clouds whose only free-text field is a description:
// "hydra-owner=<token> hydra-resource=<name> hydra-confirmed=<bool>".
func OwnerDescription(o Ownership) string {
	parts := make([]string, 0, 4)
	for _, kv := range OwnerLabels(o) {
		parts = append(parts, kv[0]+"="+kv[1])
	}
	return strings.Join(parts, " ")
}

// OwnerFromDescription is the inverse of OwnerDescription (other words in the text are ignored).
func OwnerFromDescription(desc string) (Ownership, bool) {
	kv := map[string]string{}
	for _, f := range strings.Fields(desc) {
		if k, v, ok := strings.Cut(f, "="); ok {
			kv[k] = v
		}
	}
	return OwnerFromLabels(func(k string) (string, bool) { v, ok := kv[k]; return v, ok })
}

// RankingPrice is the figure an offer is ranked by: RankPrice when set, else the billed price.
func (o Offer) RankingPrice() money.USD {
	if o.RankPrice > 0 {
		return o.RankPrice
	}
	return o.PricePerHour
}

// TieBreak orders two offers of equal price, the same way wherever hydra picks among offers (the control
// plane's ranking, and an auction backend's choice of the offer its bid is based on): direct offers before resold ones (the same
// hardware through an aggregator), then by cloud, pool, region, instance type and ID, each in byte
// order. It reports whether a comes first.
func TieBreak(a, b Offer) bool {
	if (a.ResaleOf == "") != (b.ResaleOf == "") {
		return a.ResaleOf == ""
	}
	if a.Cloud != b.Cloud {
		return a.Cloud < b.Cloud
	}
	if a.Pool != b.Pool {
		return a.Pool < b.Pool
	}
	if a.Region != b.Region {
		return a.Region < b.Region
	}
	if a.InstanceType != b.InstanceType {
		return a.InstanceType < b.InstanceType
	}
	return a.ID < b.ID
}
