package controlplane

import (
	"context"
	"errors"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// ClusterSpec is what a hydra_gpu_cluster asks for.
type ClusterSpec struct {
	// Name is the resource's name; GPUType and Kind as for a machine.
	Name, GPUType, Kind string
	// GPUCount is the GPUs per node; Nodes the number of nodes.
	GPUCount, Nodes int
	// Clouds and Regions, when not empty, are the only ones allowed.
	Clouds, Regions []string
	// Spot: nil allows either, true only spot, false only on-demand.
	Spot *bool
	// MaxPricePerHour is the ceiling for the whole cluster (0: none).
	MaxPricePerHour money.USD
	// Interconnect is what the nodes must share ("" means fabric).
	Interconnect  cloudprovider.Interconnect
	SSHPublicKeys []string
	// ProvisioningVars are the playbook's extra variables, as for a machine.
	ProvisioningVars map[string]any
	// MinBusBandwidthGBps, when above 0, is nccl_check's floor for the all-reduce's bus bandwidth.
	MinBusBandwidthGBps float64
}

// ClusterPlan is what a plan shows of a new cluster.
type ClusterPlan struct {
	Cloud, Pool, Region, OfferID string
	// PricePerHour is the whole cluster's.
	PricePerHour money.USD
	// OtherClouds says why each other cloud lost (cloud -> reason).
	OtherClouds map[string]string
	Notices     []Notice
}

// ClusterNodeRecord is one node of a cluster as the state holds it.
type ClusterNodeRecord struct {
	ID, Name, SSHHost, SSHUser, PrivateIP, HostKey, Status, Health string
	SSHPort                                                        int
}

// ClusterRecord is a cluster as the state holds it.
type ClusterRecord struct {
	// ID is the cluster's cloud-side name (the resource's id); CloudClusterID the cloud's own id.
	ID, Name, CloudClusterID, Cloud, Pool, Region, OfferID, Status, ProvisioningDigest string
	// PricePerHour is the whole cluster's.
	PricePerHour money.USD
	Nodes        []ClusterNodeRecord
	// Hostfile has one line per node, `<private_ip> slots=<gpu_count>`.
	Hostfile string
	// NCCLEnv are the variables the cloud's fabric needs.
	NCCLEnv map[string]string
	// BusBandwidthGBps is what nccl_check measured (0 when not asked).
	BusBandwidthGBps float64
}

var errClusterNotImplemented = errors.New("not implemented yet")

// ClusterOffers returns the eligible cluster offers across the configured clouds, cheapest (ranking
// price) first, and why each other asked cloud has none (cloud -> reason).
func (cp *ControlPlane) ClusterOffers(ctx context.Context, spec ClusterSpec) ([]cloudprovider.ClusterOffer, map[string]string, error) {
	return nil, nil, errClusterNotImplemented
}

// PlanNewCluster chooses a new cluster's offer, with why each other cloud lost, and counts its price
// in the budget.
func (cp *ControlPlane) PlanNewCluster(ctx context.Context, spec ClusterSpec) (ClusterPlan, error) {
	return ClusterPlan{}, errClusterNotImplemented
}

// PlanClusterChange decides what a plan does to a cluster a state holds (the machines' ChangePlan):
// keep, re-provision in place, or replace.
func (cp *ControlPlane) PlanClusterChange(spec ClusterSpec, prior ClusterRecord) (ChangePlan, error) {
	return ChangePlan{}, errClusterNotImplemented
}

// CreateCluster orders the planned cluster and takes every node to ready, then runs the cluster
// check. save is called as soon as the cloud accepted the order, and at each status change.
func (cp *ControlPlane) CreateCluster(ctx context.Context, spec ClusterSpec, plan ClusterPlan, save func(ClusterRecord)) (ClusterRecord, error) {
	return ClusterRecord{}, errClusterNotImplemented
}

// RefreshCluster reads a cluster back; found is false when the cloud no longer has it.
func (cp *ControlPlane) RefreshCluster(ctx context.Context, rec *ClusterRecord) (found bool, err error) {
	return false, errClusterNotImplemented
}

// ImportCluster reads the cluster `<cloud>/<cluster id>` into a record.
func (cp *ControlPlane) ImportCluster(ctx context.Context, id string) (ClusterRecord, error) {
	return ClusterRecord{}, errClusterNotImplemented
}

// DeleteCluster drains the execlet nodes, deletes the cluster and waits until it is gone.
func (cp *ControlPlane) DeleteCluster(ctx context.Context, rec ClusterRecord, drainTimeout time.Duration) error {
	return errClusterNotImplemented
}
