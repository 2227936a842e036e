package cloudprovider

import (
	"context"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// The abilities below are the contract of clusters and volumes; no backend implements them yet.

// Interconnect is what a cluster's nodes are promised to share.
type Interconnect string

// The interconnects a cluster may ask for.
const (
	// InterconnectFabric: every node on one high-speed fabric (InfiniBand, say), as the cloud promises it.
	InterconnectFabric Interconnect = "fabric"
	// InterconnectAny: the nodes in one region, on whatever network the cloud gives them.
	InterconnectAny Interconnect = "any"
)

// ClusterOffer is a cluster a cloud can rent now: Nodes machines of Offer's shape on Interconnect.
// Offer.PricePerHour is the price of the whole cluster (of Nodes nodes).
type ClusterOffer struct {
	Offer
	// Nodes is how many nodes the cluster has; where PricePerNode is above 0, the most nodes one cluster
	// of the offer can have now.
	Nodes        int
	Interconnect Interconnect
	// PricePerNode, when above 0, says the cloud rents the offer with any count of nodes from 1 to
	// Nodes, at this price per node (n nodes cost n × PricePerNode); a request asks for its count in
	// ClusterRequest.Offer.Nodes. 0 says the cloud rents exactly Nodes (a fixed cluster type).
	PricePerNode money.USD
}

// ClusterRequest asks a backend to start one cluster from a cluster offer.
type ClusterRequest struct {
	// Name is the cluster's full cloud-side name, used verbatim; node names derive from it.
	Name  string
	Pool  inventory.Pool
	Offer ClusterOffer
	// Owner is the ownership record every node and the cluster carry (Confirmed is false at create).
	Owner Ownership
	// MaxPricePerHour is the user's ceiling for the whole cluster (0: none), checked with CheckPriceCap.
	MaxPricePerHour money.USD
	// SSHPublicKeys are authorized_keys lines to install for the login user of every node.
	SSHPublicKeys []string
	// Volumes are the volumes every node gets at launch.
	Volumes []VolumeMount
}

// Cluster is one cluster at a cloud, as its backend reports it.
type Cluster struct {
	// ID is the cloud's own identifier of the cluster.
	ID     string
	Name   string
	Cloud  string
	Region string
	// Status is the cluster's as a whole: running only when every node runs.
	Status      Status
	CloudStatus string
	// Message explains a status (an error's cause, what a pending cluster waits for), when the
	// cloud or backend gives one.
	Message string
	// Nodes are the cluster's machines, each with its own status, address and private address.
	Nodes []ClusterNode
	// PricePerHour is what the cloud bills for the whole cluster per hour.
	PricePerHour money.USD
	// AwaitingAllocation is true while the cloud has accepted the order but not allocated its nodes
	// (an auction bid that has not won; Nodes is empty then), as Instance.AwaitingAllocation: nothing
	// is billed, and the control plane cancels the order after the launch's bid timeout.
	AwaitingAllocation bool
	// Interconnect is what the nodes share, as the cloud promises it (its offers' interconnect).
	Interconnect Interconnect
	// Env are the environment variables the cloud's fabric needs (NCCL_IB_PKEY, say).
	Env       map[string]string
	Owner     Ownership
	CreatedAt time.Time
}

// ClusterNode is one machine of a cluster.
type ClusterNode struct {
	Instance
	// PrivateIP is the node's address on the cluster's network.
	PrivateIP string
}

// ClusterBackend is implemented by backends whose cloud rents several machines on one interconnect as
// one order. Its calls follow InstanceManagerBackend's rules (errors classified, no side effects in
// ClusterOffers, GetCluster and ListClusters, idempotent creates by name, gone is success at delete),
// and:
//   - CreateCluster is all or nothing: a cloud that cannot deliver every node leaves nothing billed
//     (what it started is terminated) and the error is ErrCapacity.
//   - A price above req.MaxPricePerHour at create is ErrCapacity, and nothing is created.
type ClusterBackend interface {
	// ClusterOffers lists the clusters the cloud can rent now, GPUType mapped as in Offers.
	ClusterOffers(ctx context.Context) ([]ClusterOffer, error)
	// CreateCluster orders the cluster and returns once the cloud has accepted the order.
	CreateCluster(ctx context.Context, req ClusterRequest) (Cluster, error)
	// GetCluster returns the cluster with the cloud's id, or ErrNotFound.
	GetCluster(ctx context.Context, id string) (Cluster, error)
	// ListClusters returns the clusters whose name starts with prefix, reading every page.
	ListClusters(ctx context.Context, prefix string) ([]Cluster, error)
	// DeleteCluster starts termination of every node of the cluster.
	DeleteCluster(ctx context.Context, id string) error
}
