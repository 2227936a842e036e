package cloudprovider

import (
	"context"
	"errors"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
)

// ProvisionRequest is one provisioning attempt on one instance.
type ProvisionRequest struct {
	Instance Instance
	Pool     inventory.Pool
	// GPUType and GPUCount are what the offer promised; health checks verify them.
	GPUType  string
	GPUCount int
	// HostKey is the pinned SSH host key in authorized_keys form. Empty means trust on first use: the
	// provisioner records the key it saw in ProvisionResult.HostKey.
	HostKey string
	// Vars are the user's extra variables for the playbook (strings, numbers, bools, lists, maps).
	Vars map[string]any
	// Signal is the file the machine's cloud writes on it when it gives notice of an interruption
	// (Facts.Signal; zero: none): the playbooks install a watcher for it.
	Signal InterruptionSignal
	// Volumes are the volumes the machine has, to be mounted (their mount is part of the digest).
	Volumes []Attachment
	// Attempt counts from 1.
	Attempt int
	// Log receives progress lines (task started, ok, failed) as they happen.
	Log func(msg string, fields map[string]any)
}

// VolumesVar is the playbook variable a machine's volumes travel under. A machine's attachments are
// known only once it runs, so the control plane puts what a plan knows of its volumes in the variables
// it digests and passes (ProvisionRequest.Vars): [{"volume_id": <hydra_volume id>, "mount_path": <path>},
// ...], sorted by mount path (a changed mount path changes the digest: provisioned again in place). The
// provisioner hands the playbooks the attachments themselves (ProvisionRequest.Volumes) under the same
// name, and refuses a request whose attachments' mount paths are not the ones the variables list.
const VolumesVar = "hydra_volumes"

// ProvisionResult is what one attempt found.
type ProvisionResult struct {
	// HostKey is the host key the instance presented (and that was checked or trusted).
	HostKey string
	// JumpHostKey is the host key the instance's SSH.Jump presented (checked against SSH.Jump.HostKey,
	// or trusted when that was empty); "" without a jump host. Keep it and pass it back as
	// SSH.Jump.HostKey on every later connection, as HostKey is.
	JumpHostKey string
	// FailedTask and Message summarise a failure (bounded; never the full output).
	FailedTask string
	Message    string
	Duration   time.Duration
}

// Provisioner runs hydra's provisioning on an instance (the Ansible runner, or nothing at all).
type Provisioner interface {
	// Digest identifies the playbook files and variables a pool's machines are provisioned with; a
	// change of digest means provisioning must run again.
	Digest(pool inventory.Pool, vars map[string]any) (string, error)
	// Provision makes one attempt. A *PermanentError (such as a host key mismatch) must not be retried.
	Provision(ctx context.Context, req ProvisionRequest) (ProvisionResult, error)
}

// Preparer is what a Provisioner may also do: get ready to provision (find its tools, say) without
// waiting, so that the work overlaps with a machine's boot. BringUp calls Prepare before it waits for a
// machine to run; a Provisioner that needs nothing ahead of its first Provision does not implement it.
type Preparer interface {
	Prepare()
}

// ClusterCheckNode is one provisioned node of a cluster to check.
type ClusterCheckNode struct {
	ProvisionRequest
	// PrivateIP is the node's address on the cluster's network; peers must reach it.
	PrivateIP string
}

// ClusterCheckRequest asks for the check that a cluster's provisioned nodes can work together.
type ClusterCheckRequest struct {
	Nodes []ClusterCheckNode
	// Fabric asks that every node's high-speed fabric devices be up (the cloud promised a fabric).
	Fabric bool
	// MinBusBandwidthGBps, when above 0, asks for an NCCL all-reduce across the nodes whose average bus
	// bandwidth (GB/s) must reach it.
	MinBusBandwidthGBps float64
	// Env are the variables the cloud's fabric needs (NCCL_IB_PKEY, say), set for the NCCL run.
	Env map[string]string
	Log func(msg string, fields map[string]any)
}

// ClusterCheckResult is what a cluster check found.
type ClusterCheckResult struct {
	// BusBandwidthGBps is the NCCL all-reduce's average bus bandwidth (0 when not asked).
	BusBandwidthGBps float64
	// FailedNode and Message name what failed (empty on success).
	FailedNode string
	Message    string
}

// ClusterChecker is what a Provisioner may also do: check that a cluster's nodes, each provisioned,
// reach one another over the private network, have their fabric up where asked, and pass the NCCL
// bandwidth floor where asked. A failed check is an error naming the node and what failed.
type ClusterChecker interface {
	CheckCluster(ctx context.Context, req ClusterCheckRequest) (ClusterCheckResult, error)
}

// PermanentError marks a provisioning failure that retrying cannot fix (a changed host key, a
// malformed playbook).
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// NoProvisioning is the Provisioner used when provisioning is switched off: the machine is ready as
// soon as the cloud says it runs.
type NoProvisioning struct{}

// Digest is empty: there is nothing to run.
func (NoProvisioning) Digest(inventory.Pool, map[string]any) (string, error) { return "", nil }

// Provision does nothing.
func (NoProvisioning) Provision(_ context.Context, req ProvisionRequest) (ProvisionResult, error) {
	return ProvisionResult{HostKey: req.HostKey}, nil
}

// ErrNoMarker is matched (errors.Is) by Inspector.ReadMarker's error when the machine carries no
// usable provisioning marker.
var ErrNoMarker = errors.New("no provisioning marker")

// ErrHealthUnknown is matched (errors.Is) by Inspector.ProbeHealth's error when the machine's health
// could not be read: unreachable, no marker, or a probe that gave no verdict.
var ErrHealthUnknown = errors.New("health unknown")
