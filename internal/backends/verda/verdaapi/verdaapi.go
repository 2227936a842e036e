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
