// Package verdaapi holds the Verda API's wire types that hydra's client (internal/backends/verda) and
// the Verda emulator (internal/emulator/verda) share: one definition of each JSON shape, so the two
// can never drift apart.
package verdaapi

// Location is one datacenter of GET /locations.
type Location struct {
	Code        string `json:"code"`
	Name        string `json:"name"`
	CountryCode string `json:"country_code"`
}

// LocationAvailability is one entry of GET /instance-availability: the instance types deployable now
// in one location.
type LocationAvailability struct {
	LocationCode   string   `json:"location_code"`
	Availabilities []string `json:"availabilities"`
}

// Image is one OS image of GET /images.
type Image struct {
	ID        string   `json:"id"`
	ImageType string   `json:"image_type"`
	Name      string   `json:"name"`
	IsDefault bool     `json:"is_default"`
	IsCluster bool     `json:"is_cluster"`
	Details   []string `json:"details"`
	Category  string   `json:"category"`
}

// Tag is a key/value label on an instance.
type Tag struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// OSVolume sizes the boot volume of a new instance.
type OSVolume struct {
	Name string `json:"name"`
	Size int    `json:"size"`
}

// CreateInstanceRequest is the body of POST /instances. InstanceType, Image, Hostname, Description and
// LocationCode are required.
type CreateInstanceRequest struct {
	InstanceType    string    `json:"instance_type"`
	Image           string    `json:"image"`
	Hostname        string    `json:"hostname"`
	Description     string    `json:"description"`
	LocationCode    string    `json:"location_code"`
	SSHKeyIDs       []string  `json:"ssh_key_ids"`
	OSVolume        *OSVolume `json:"os_volume,omitempty"`
	StartupScriptID *string   `json:"startup_script_id,omitempty"`
	IsSpot          bool      `json:"is_spot"`
	Contract        string    `json:"contract,omitempty"`
	Pricing         string    `json:"pricing,omitempty"`
	Tags            []Tag     `json:"tags,omitempty"`
	// ExistingVolumes are volume ids attached at the create (volumes.go).
	ExistingVolumes []string `json:"existing_volumes,omitempty"`
}

// ActionResult is one entry of the PUT /instances answer (202 or 207).
type ActionResult struct {
	Action     string `json:"action"`
	InstanceID string `json:"instanceId"`
	Status     string `json:"status"`
	Error      string `json:"error,omitempty"`
	StatusCode int    `json:"statusCode,omitempty"`
}
