// Package atlasapi holds the Atlas API's wire types that hydra's client (internal/backends/atlas) and
// the Atlas emulator (internal/emulator/atlas) share: one definition of each JSON shape, so the two can
// never drift apart.
package atlasapi

import "time"

// Offer is one entry of GET /v1/offers: an instance type in a region with its list price and how many
// instances can start now.
type Offer struct {
	InstanceType string `json:"instance_type"`
	Region       string `json:"region"`
	Spec
	// Available is how many more instances can start now (0: sold out).
	Available int `json:"available"`
}

// Spec is what an offer and a cluster offer say of one machine of their instance type: its GPUs
// (gpu_model as nvidia-smi prints it), CPUs, memory, disk and list price per hour.
type Spec struct {
	GPUModel     string  `json:"gpu_model"`
	GPUCount     int     `json:"gpu_count"`
	GPUMemoryGB  int     `json:"gpu_memory_gb"`
	VCPUs        int     `json:"vcpus"`
	MemoryGB     int     `json:"memory_gb"`
	DiskGB       int     `json:"disk_gb"`
	PricePerHour float64 `json:"price_per_hour"`
	Currency     string  `json:"currency"`
}

// CreateRequest is the body of POST /v1/instances, and the first part of POST /v1/clusters's.
type CreateRequest struct {
	Name          string            `json:"name"`
	InstanceType  string            `json:"instance_type"`
	Region        string            `json:"region"`
	SSHPublicKeys []string          `json:"ssh_public_keys"`
	Labels        map[string]string `json:"labels,omitempty"`
	// MaxPricePerHour caps the list price (0: no cap); above it Atlas answers 422 price_above_max and
	// creates nothing.
	MaxPricePerHour float64 `json:"max_price_per_hour,omitempty"`
}

// SSH is where an instance accepts SSH.
type SSH struct {
	Host string `json:"host"`
	Port int    `json:"port"`
	User string `json:"user"`
}

// Instance is an Atlas instance (GET /v1/instances/{id}). A node of a cluster names its cluster
// (ClusterID) and has its address on the cluster's network (PrivateIP); both are empty otherwise.
type Instance struct {
	Resource
	GPUModel     string  `json:"gpu_model"`
	GPUCount     int     `json:"gpu_count"`
	PricePerHour float64 `json:"price_per_hour"`
	// Labels are the instance's labels ({} when none).
	Labels    map[string]string `json:"labels"`
	SSH       *SSH              `json:"ssh"`
	HostKey   string            `json:"host_key"`
	ClusterID string            `json:"cluster_id,omitempty"`
	PrivateIP string            `json:"private_ip,omitempty"`
	CreatedAt time.Time         `json:"created_at"`
	UpdatedAt time.Time         `json:"updated_at"`
}

// Resource is what an instance and a cluster both say first: the id, the name, the status (the same
// words for both) and why, the instance type and the region.
type Resource struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	Status        string `json:"status"`
	StatusMessage string `json:"status_message"`
	InstanceType  string `json:"instance_type"`
	Region        string `json:"region"`
}
