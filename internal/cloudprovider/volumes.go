package cloudprovider

import (
	"context"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// VolumeType is what kind of storage a volume is.
type VolumeType string

// The volume types.
const (
	// VolumeBlock is a block device attached to one machine at a time.
	VolumeBlock VolumeType = "block"
	// VolumeSharedFS is a file system several machines of one region mount at once.
	VolumeSharedFS VolumeType = "shared_fs"
)

// VolumeRequest asks a backend to create one volume.
type VolumeRequest struct {
	// Name is the full cloud-side name, used verbatim.
	Name   string
	Type   VolumeType
	Region string
	SizeGB int
	// Owner is the ownership record kept with the volume.
	Owner Ownership
}

// Volume is one volume at a cloud, as its backend reports it.
type Volume struct {
	ID     string
	Name   string
	Cloud  string
	Region string
	Type   VolumeType
	SizeGB int
	// AttachedTo are the cloud ids of the machines using the volume.
	AttachedTo []string
	// PricePerMonth is what the cloud bills for it a month (0: the cloud does not say).
	PricePerMonth money.USD
	Owner         Ownership
	CreatedAt     time.Time
}

// VolumeMount asks for a volume on a machine at launch, mounted at MountPath.
type VolumeMount struct {
	VolumeID  string
	MountPath string
}

// Attachment says how a volume appears inside a machine that has it, for the playbooks to mount.
type Attachment struct {
	VolumeID  string
	Type      VolumeType
	MountPath string
	// Device is the block device a block volume appears as. The playbooks make a file system on it only
	// when it holds none, then mount it at MountPath.
	Device string
	// Source and FSType are a network file system's mount source (server:/export) and type (nfs); the
	// playbooks mount it at MountPath.
	Source string
	FSType string
	// Options are the mount options the cloud documents (nconnect=16, say), comma-separated; "" for
	// the defaults.
	Options string
	// MountedByCloud says the cloud mounts the volume at MountPath itself; the playbooks only check it.
	MountedByCloud bool
}

// VolumeAttacher is implemented by every VolumeBackend: it says how a volume appears inside a machine.
type VolumeAttacher interface {
	// Attachment says how volume v appears inside inst, which got it at launch, to be mounted at
	// mountPath. A machine without the volume is ErrInvalid.
	Attachment(ctx context.Context, inst Instance, v Volume, mountPath string) (Attachment, error)
}

// VolumeBackend is implemented by backends whose cloud keeps volumes that outlive machines. Its calls
// follow InstanceManagerBackend's rules (errors classified, no side effects in VolumeTypes, GetVolume
// and ListVolumes, idempotent creates by name, gone is success at delete), and:
//   - a volume is bound to its region: a machine of another region cannot get it (ErrInvalid);
//   - deleting a volume that a machine uses is ErrInvalid, and nothing is deleted;
//   - deleting a machine never deletes its volumes.
type VolumeBackend interface {
	// VolumeTypes lists the types of volume the cloud has, in its regions.
	VolumeTypes(ctx context.Context) (map[VolumeType][]string, error)
	CreateVolume(ctx context.Context, req VolumeRequest) (Volume, error)
	// GetVolume returns the volume with the cloud's id, or ErrNotFound.
	GetVolume(ctx context.Context, id string) (Volume, error)
	// ListVolumes returns the volumes whose name starts with prefix, reading every page.
	ListVolumes(ctx context.Context, prefix string) ([]Volume, error)
	DeleteVolume(ctx context.Context, id string) error
}

// VolumeLauncher is implemented by volume backends that give a machine volumes when it is created
// (some clouds attach volumes only at launch). CreateWithVolumes is Create, with every volume of
// mounts attached to the new machine; a volume of another region is ErrInvalid, and nothing is created.
type VolumeLauncher interface {
	CreateWithVolumes(ctx context.Context, req CreateRequest, mounts []VolumeMount) (Instance, error)
}
