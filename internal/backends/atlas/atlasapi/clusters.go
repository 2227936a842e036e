package atlasapi

import "time"

// Interconnects of a cluster (API.md "Clusters").
const (
	// InterconnectFabric: every node on one InfiniBand fabric of the region.
	InterconnectFabric = "fabric"
	// InterconnectAny: the nodes in one region on its ordinary network.
	InterconnectAny = "any"
)

// ClusterOffer is one entry of GET /v1/cluster-offers: clusters of one instance type in one region on
// one interconnect. PricePerHour is one node's list price; a cluster of n nodes costs n times it.
type ClusterOffer struct {
	InstanceType string `json:"instance_type"`
	Region       string `json:"region"`
	Interconnect string `json:"interconnect"`
	Fabric       string `json:"fabric"`
	Spec
	// MaxClusterNodes is the largest cluster Atlas builds here; AvailableNodes how many nodes are free now.
	MaxClusterNodes int `json:"max_cluster_nodes"`
	AvailableNodes  int `json:"available_nodes"`
}

// CreateClusterRequest is the body of POST /v1/clusters: an instance's create with the interconnect
// and the node count. Its MaxPricePerHour caps the whole cluster's list price (0: no cap).
type CreateClusterRequest struct {
	CreateRequest
	Interconnect string `json:"interconnect"`
	NodeCount    int    `json:"node_count"`
}

// Cluster is an Atlas cluster (GET /v1/clusters/{id}); its nodes are instances named <name>-1 ...
// <name>-N. PricePerHour is the whole cluster's; Env are the variables jobs on its network need.
type Cluster struct {
	Resource
	Interconnect string            `json:"interconnect"`
	Fabric       string            `json:"fabric"`
	NodeCount    int               `json:"node_count"`
	PricePerHour float64           `json:"price_per_hour"`
	Labels       map[string]string `json:"labels"`
	Env          map[string]string `json:"env"`
	Nodes        []Instance        `json:"nodes"`
	CreatedAt    time.Time         `json:"created_at"`
	UpdatedAt    time.Time         `json:"updated_at"`
}

// ClusterList is a page of GET /v1/clusters.
type ClusterList struct {
	Clusters      []Cluster `json:"clusters"`
	NextPageToken string    `json:"next_page_token"`
}
