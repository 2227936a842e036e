package verdaapi

import (
	"strconv"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
)

// The instant-cluster shapes below are read from Verda's official SDKs (verda-cloud/verdacloud-sdk-go
// pkg/verda/clusters_types.go and clusters.go; verda-cloud/sdk-python verda/clusters/_clusters.py,
// verda/cluster_types/_cluster_types.py and their unit tests) and docs.verda.com "Instant clusters:
// good to know" (worker nodes named <hostname>-1, <hostname>-2, ...; a partitioned InfiniBand fabric).

// CPU describes processors ("176 CPU").
type CPU struct {
	Description   string `json:"description"`
	NumberOfCores int    `json:"number_of_cores"`
}

// GPU describes accelerators ("1x H100 SXM5 80GB"; 0 GPUs for CPU nodes).
type GPU struct {
	Description  string `json:"description"`
	NumberOfGPUs int    `json:"number_of_gpus"`
}

// Size is a described amount (memory, GPU memory, storage); SizeInGigabytes may be absent.
type Size struct {
	Description     string `json:"description"`
	SizeInGigabytes int    `json:"size_in_gigabytes,omitempty"`
}

// Decimal is a price Verda writes as a decimal string ("45.50"); it reads a string or a number and
// writes a string with at least two decimals.
type Decimal float64

// UnmarshalJSON accepts a number, a numeric string, "" or null (restclient.DecodeNumber).
func (d *Decimal) UnmarshalJSON(b []byte) error {
	v, _, err := restclient.DecodeNumber(b)
	*d = Decimal(v)
	return err
}

// MarshalJSON writes the price as Verda does: a string, two decimals unless it has more.
func (d Decimal) MarshalJSON() ([]byte, error) {
	s := strconv.FormatFloat(float64(d), 'f', 2, 64)
	if v, _ := strconv.ParseFloat(s, 64); v != float64(d) {
		s = strconv.FormatFloat(float64(d), 'f', -1, 64)
	}
	return []byte(strconv.Quote(s)), nil
}

// ClusterType is one entry of GET /cluster-types: a whole cluster's shape (every node alike) and its
// price per hour for the whole cluster ("16H200": 2 nodes of 8 H200, node_details "2x 8 GPU nodes").
type ClusterType struct {
	ID           string   `json:"id"`
	Model        string   `json:"model"`
	Name         string   `json:"name"`
	ClusterType  string   `json:"cluster_type"`
	CPU          CPU      `json:"cpu"`
	GPU          GPU      `json:"gpu"`
	GPUMemory    Size     `json:"gpu_memory"`
	Memory       Size     `json:"memory"`
	PricePerHour Decimal  `json:"price_per_hour"`
	Currency     string   `json:"currency"`
	Manufacturer string   `json:"manufacturer"`
	NodeDetails  []string `json:"node_details"`
	SupportedOS  []string `json:"supported_os"`
}

// ClusterAvailability is one location of GET /cluster-availability: the cluster types deployable
// there now (the shape of /instance-availability's entries).
type ClusterAvailability = LocationAvailability

// ClusterSharedVolumeSpec is the shared file system a new cluster gets (mounted on /home; size in GB):
// a name and a size, as OSVolume.
type ClusterSharedVolumeSpec = OSVolume

// ClusterExistingVolume names a volume to attach to a new cluster.
type ClusterExistingVolume struct {
	ID string `json:"id"`
}

// CreateClusterRequest is the body of POST /clusters. ClusterType, Image, Hostname and LocationCode
// (since 2026-03-23) are required; the answer is {"id": "<cluster id>"}.
type CreateClusterRequest struct {
	ClusterType     string                   `json:"cluster_type"`
	Image           string                   `json:"image"`
	Hostname        string                   `json:"hostname"`
	Description     string                   `json:"description"`
	SSHKeyIDs       []string                 `json:"ssh_key_ids"`
	LocationCode    string                   `json:"location_code,omitempty"`
	Contract        string                   `json:"contract,omitempty"`
	StartupScriptID *string                  `json:"startup_script_id,omitempty"`
	SharedVolume    *ClusterSharedVolumeSpec `json:"shared_volume,omitempty"`
	ExistingVolumes []ClusterExistingVolume  `json:"existing_volumes,omitempty"`
	Tags            []Tag                    `json:"tags,omitempty"`
}

// CreateClusterResponse is the answer of POST /clusters.
type CreateClusterResponse struct {
	ID string `json:"id"`
}

// ClusterWorkerNode is one worker node of a cluster; PublicIP is null until the node runs.
type ClusterWorkerNode struct {
	ID        string  `json:"id"`
	Hostname  string  `json:"hostname"`
	PublicIP  *string `json:"public_ip"`
	PrivateIP *string `json:"private_ip"`
	Status    string  `json:"status"`
}

// ClusterSharedVolume is a shared volume of a cluster.
type ClusterSharedVolume struct {
	ID              string `json:"id"`
	Name            string `json:"name"`
	MountPoint      string `json:"mount_point"`
	SizeInGigabytes int    `json:"size_in_gigabytes"`
}

// Cluster is one cluster of GET /clusters and GET /clusters/{id}. IP is the login node's (jump host)
// address, null until the cluster runs; PricePerHour is the whole cluster's.
type Cluster struct {
	ID              string                `json:"id"`
	IP              *string               `json:"ip"`
	Status          string                `json:"status"`
	CreatedAt       string                `json:"created_at"`
	Hostname        string                `json:"hostname"`
	Description     string                `json:"description"`
	Location        string                `json:"location"`
	ClusterType     string                `json:"cluster_type"`
	Image           string                `json:"image"`
	OSName          string                `json:"os_name,omitempty"`
	PricePerHour    restclient.FlexFloat  `json:"price_per_hour"`
	CPU             CPU                   `json:"cpu"`
	GPU             GPU                   `json:"gpu"`
	GPUMemory       Size                  `json:"gpu_memory"`
	Memory          Size                  `json:"memory"`
	SSHKeyIDs       []string              `json:"ssh_key_ids"`
	Contract        string                `json:"contract,omitempty"`
	StartupScriptID *string               `json:"startup_script_id"`
	WorkerNodes     []ClusterWorkerNode   `json:"worker_nodes"`
	SharedVolumes   []ClusterSharedVolume `json:"shared_volumes"`
	Tags            []Tag                 `json:"tags"`
}

// ClusterAction is one action of PUT /clusters; "discontinue" (the Python SDK's "delete") is the only
// one Verda documents.
type ClusterAction struct {
	Action string `json:"action"`
	ID     string `json:"id"`
}

// ClusterActionsRequest is the body of PUT /clusters.
type ClusterActionsRequest struct {
	Actions []ClusterAction `json:"actions"`
}
