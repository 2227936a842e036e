package verdaapi

// Verda's volumes. The shapes are those of the Verda API's volume DTOs as its clients carry them:
// GetVolumePublicResponseDto, CreateVolumePublicDto and PerformVolumeActionPublicDto in the DataCrunch
// client of the Kubernetes cluster autoscaler, the Volume model and VolumesService of Verda's Python
// SDK (verda/volumes/volumes.py: POST /volumes answers the new id as plain text, PUT /volumes takes
// {id, action, ...}, GET /volumes/trash, attach and detach need the instance shut down), and the
// VolumeType of GET /volume-types (price {price_per_month_per_gb, cps_per_gb, currency}, is_shared_fs).

// Volume types Verda names (the Python SDK's volume_types constants; NVMe_Shared is a shared file
// system, is_shared_fs in GET /volume-types).
const (
	VolumeTypeNVMe       = "NVMe"
	VolumeTypeHDD        = "HDD"
	VolumeTypeNVMeShared = "NVMe_Shared"
)

// Volume statuses (the Python SDK's volume_status constants).
const (
	VolumeStatusOrdered  = "ordered"
	VolumeStatusAttached = "attached"
	VolumeStatusDetached = "detached"
	VolumeStatusDeleted  = "deleted"
)

// Volume actions of PUT /volumes (the Python SDK's VolumeActions).
const (
	VolumeActionAttach = "attach"
	VolumeActionDetach = "detach"
	VolumeActionDelete = "delete"
	VolumeActionResize = "resize"
)

// VolumeInstance is one instance a volume is attached to.
type VolumeInstance struct {
	ID           string `json:"id"`
	IP           string `json:"ip,omitempty"`
	InstanceType string `json:"instance_type,omitempty"`
	Status       string `json:"status,omitempty"`
	Hostname     string `json:"hostname,omitempty"`
}

// Volume is one volume (GET /volumes, GET /volumes/{id}, GET /volumes/trash). InstanceID is the
// instance it is attached to (null when detached); Instances lists every one (a shared volume may have
// several). Size is in GB. MonthlyPrice is in Currency.
//
// Target is the device an attached block volume appears as inside its instance, without /dev/ ("vdb";
// the Python SDK: "target device e.g. vda"). For a shared volume (NVMe_Shared) Target is its NFS endpoint
// (nfs.<location>.datacrunch.io:/<pseudo path>, seen on a live account), and the volume carries the
// recipe to mount it: PseudoPath (the export), MountCommand ("mount -t nfs -o nconnect=16
// nfs.fin-01.datacrunch.io:<pseudo path> /mnt/<dir>"), CreateDirectoryCommand and
// FilesystemToFstabCommand (the Go and Python SDKs' Volume, the Python SDK's unit-test fixture; null
// where Verda gives none).
type Volume struct {
	ID           string           `json:"id"`
	InstanceID   *string          `json:"instance_id"`
	Instances    []VolumeInstance `json:"instances"`
	Name         string           `json:"name"`
	CreatedAt    string           `json:"created_at"`
	Status       string           `json:"status"`
	Size         int              `json:"size"`
	IsOSVolume   bool             `json:"is_os_volume"`
	Target       *string          `json:"target"`
	Type         string           `json:"type"`
	Location     string           `json:"location"`
	SSHKeyIDs    []string         `json:"ssh_key_ids"`
	Contract     string           `json:"contract,omitempty"`
	MonthlyPrice float64          `json:"monthly_price"`
	Currency     string           `json:"currency,omitempty"`
	DeletedAt    *string          `json:"deleted_at,omitempty"`

	PseudoPath               *string `json:"pseudo_path,omitempty"`
	MountCommand             *string `json:"mount_command,omitempty"`
	CreateDirectoryCommand   *string `json:"create_directory_command,omitempty"`
	FilesystemToFstabCommand *string `json:"filesystem_to_fstab_command,omitempty"`
}

// CreateVolumeRequest is the body of POST /volumes; InstanceID attaches the new volume to a shut-down
// instance. OnSpotDiscontinue is what becomes of the volume when a spot instance it is on is
// discontinued (one of the SpotDiscontinue values; the Go SDK's VolumeCreateRequest).
type CreateVolumeRequest struct {
	Type              string `json:"type"`
	Name              string `json:"name"`
	Size              int    `json:"size"`
	LocationCode      string `json:"location_code"`
	InstanceID        string `json:"instance_id,omitempty"`
	OnSpotDiscontinue string `json:"on_spot_discontinue,omitempty"`
}

// What becomes of a volume when a spot instance it is on is discontinued (on_spot_discontinue; the Go
// SDK's SpotDiscontinue constants). keep_detached is the default: the Python SDK's changelog (1.20.0,
// the OS volume's policy) says the policy "was always keep_detached" before, and SkyPilot's Verda
// provisioner reads Verda's API notes of 2026-02-03 the same way. A create's existing_volumes are ids
// only: an existing volume's policy is its own, set at POST /volumes.
const (
	SpotDiscontinueKeepDetached      = "keep_detached"
	SpotDiscontinueMoveToTrash       = "move_to_trash"
	SpotDiscontinueDeletePermanently = "delete_permanently"
)

// VolumeActionRequest is the body of PUT /volumes. ID is one id or a list.
type VolumeActionRequest struct {
	ID          []string `json:"id"`
	Action      string   `json:"action"`
	InstanceID  string   `json:"instance_id,omitempty"`
	Size        int      `json:"size,omitempty"`
	IsPermanent bool     `json:"is_permanent,omitempty"`
}

// VolumeTypePrice is a volume type's price per GB and month.
type VolumeTypePrice struct {
	PricePerMonthPerGB float64 `json:"price_per_month_per_gb"`
	CPSPerGB           float64 `json:"cps_per_gb"`
	Currency           string  `json:"currency"`
}

// VolumeType is one entry of GET /volume-types.
type VolumeType struct {
	Type       string          `json:"type"`
	Price      VolumeTypePrice `json:"price"`
	IsSharedFS bool            `json:"is_shared_fs"`
}
