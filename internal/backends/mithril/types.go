package mithril

// InstanceType is one entry of GET /v2/instance-types. The same name appears once per region, each
// with its own FID.
type InstanceType struct {
	FID            string `json:"fid"`
	Name           string `json:"name"`
	NumCPUs        OptInt `json:"num_cpus"`
	CPUType        string `json:"cpu_type"`
	RAMGB          OptInt `json:"ram_gb"`
	NumGPUs        OptInt `json:"num_gpus"`
	GPUType        string `json:"gpu_type"`
	GPUMemoryGB    OptInt `json:"gpu_memory_gb"`
	GPUSocket      string `json:"gpu_socket"`
	LocalStorageGB OptInt `json:"local_storage_gb"`
	NetworkType    string `json:"network_type,omitempty"`
	IBCount        OptInt `json:"ib_count"`
	BridgeCount    OptInt `json:"bridge_count"`
}

// Auction is one entry of GET /v2/spot/availability: the spot auction of one instance type in one
// region.
type Auction struct {
	FID                  string      `json:"fid"`
	InstanceType         string      `json:"instance_type"`
	Region               string      `json:"region"`
	Capacity             OptInt      `json:"capacity"`
	LastInstancePrice    DollarPrice `json:"last_instance_price"`
	LowestAllocatedPrice DollarPrice `json:"lowest_allocated_price"`
	AdjustableMemory     bool        `json:"adjustable_memory"`
	DefaultImageVersion  string      `json:"default_image_version,omitempty"`
}

// CurrentPrices is GET /v2/pricing/current: every field is integer cents (or a count), possibly null.
type CurrentPrices struct {
	SpotPriceCents          CentPrice `json:"spot_price_cents"`
	ReservedPriceCents      CentPrice `json:"reserved_price_cents"`
	MinimumPriceCents       CentPrice `json:"minimum_price_cents"`
	LowestAllocatedBidCents CentPrice `json:"lowest_allocated_bid_cents"`
	DynamicWinPriceCents    CentPrice `json:"dynamic_win_price_cents"`
	AvailableCapacity       OptInt    `json:"available_capacity"`
	TotalCapacity           OptInt    `json:"total_capacity"`
}

// LaunchSpecification says what a bid's instances boot with.
type LaunchSpecification struct {
	Volumes           []string `json:"volumes"`
	SSHKeys           []string `json:"ssh_keys"`
	StartupScript     string   `json:"startup_script,omitempty"`
	KubernetesCluster string   `json:"kubernetes_cluster,omitempty"`
	ImageVersion      string   `json:"image_version,omitempty"`
	MemoryGB          *int     `json:"memory_gb,omitempty"`
}

// CreateBidRequest is the body of POST /v2/spot/bids.
type CreateBidRequest struct {
	Project             string              `json:"project"`
	Region              string              `json:"region"`
	InstanceType        string              `json:"instance_type"`
	LimitPrice          string              `json:"limit_price"`
	InstanceQuantity    int                 `json:"instance_quantity"`
	Name                string              `json:"name"`
	LaunchSpecification LaunchSpecification `json:"launch_specification"`
	NotificationEmail   string              `json:"notification_email,omitempty"`
}

// Bid statuses.
const (
	BidOpen       = "Open"
	BidAllocated  = "Allocated"
	BidPreempting = "Preempting"
	BidPaused     = "Paused"
	BidTerminated = "Terminated"
	BidRelocating = "Relocating"
)

// Bid is Mithril's BidModel.
type Bid struct {
	FID                 string              `json:"fid"`
	Name                string              `json:"name"`
	Project             string              `json:"project"`
	CreatedBy           string              `json:"created_by"`
	CreatedAt           APITime             `json:"created_at"`
	DeactivatedAt       *APITime            `json:"deactivated_at"`
	LimitPrice          DollarPrice         `json:"limit_price"`
	InstanceQuantity    int                 `json:"instance_quantity"`
	InstanceType        string              `json:"instance_type"`
	Region              string              `json:"region"`
	Instances           []string            `json:"instances"`
	LaunchSpecification LaunchSpecification `json:"launch_specification"`
	Status              string              `json:"status"`
}

// Instance statuses (the OpenAPI enum, plus older values SkyPilot still handles).
const (
	InstNew          = "STATUS_NEW"
	InstConfirmed    = "STATUS_CONFIRMED"
	InstInitializing = "STATUS_INITIALIZING"
	InstStarting     = "STATUS_STARTING"
	InstRunning      = "STATUS_RUNNING"
	InstStopping     = "STATUS_STOPPING"
	InstTerminated   = "STATUS_TERMINATED"
	InstRelocating   = "STATUS_RELOCATING"
	InstPreempting   = "STATUS_PREEMPTING"
	InstPreempted    = "STATUS_PREEMPTED"
	InstReplaced     = "STATUS_REPLACED"
	InstPaused       = "STATUS_PAUSED"
	InstError        = "STATUS_ERROR"
)

// Instance is one machine of a bid (GET /v2/instances).
type Instance struct {
	FID            string  `json:"fid"`
	Name           string  `json:"name"`
	Project        string  `json:"project"`
	CreatedAt      APITime `json:"created_at"`
	CreatedBy      string  `json:"created_by"`
	InstanceType   string  `json:"instance_type"`
	Region         string  `json:"region"`
	Bid            string  `json:"bid"`
	Reservation    string  `json:"reservation"`
	SSHDestination string  `json:"ssh_destination"`
	PrivateIP      string  `json:"private_ip"`
	Status         string  `json:"status"`
}

// InstanceStatus is the answer of GET /v2/instances/{fid}/status: EndTime is when a preempting
// instance stops (nil otherwise).
type InstanceStatus struct {
	FID     string   `json:"fid"`
	Status  string   `json:"status"`
	Bid     string   `json:"bid"`
	EndTime *APITime `json:"end_time"`
}

// SSHKey is one key of GET /v2/ssh-keys.
type SSHKey struct {
	FID        string  `json:"fid"`
	Name       string  `json:"name"`
	Project    string  `json:"project"`
	PublicKey  string  `json:"public_key"`
	CreatedAt  APITime `json:"created_at"`
	Required   bool    `json:"required"`
	PrivateKey string  `json:"private_key,omitempty"`
}

// CreateSSHKeyRequest is the body of POST /v2/ssh-keys.
type CreateSSHKeyRequest struct {
	Project   string `json:"project"`
	Name      string `json:"name"`
	PublicKey string `json:"public_key,omitempty"`
	Required  bool   `json:"required,omitempty"`
}

// Project is one entry of GET /v2/projects.
type Project struct {
	FID       string  `json:"fid"`
	Name      string  `json:"name"`
	CreatedAt APITime `json:"created_at"`
}

// BidFilter narrows GET /v2/spot/bids.
type BidFilter struct {
	Name         string
	Status       string
	InstanceType string
	Region       string
	// PageSize is the limit per page (1-100, default 100).
	PageSize int
}

// InstanceFilter narrows GET /v2/instances.
type InstanceFilter struct {
	BidFIDs  []string
	StatusIn []string
	Region   string
	PageSize int
}

// page is the cursor-paginated envelope {data, next_cursor}.
type page[T any] struct {
	Data       []T     `json:"data"`
	NextCursor *string `json:"next_cursor"`
}
