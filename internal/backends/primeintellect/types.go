package primeintellect

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
)

// The API is young and changes fast, so every type here decodes defensively: numbers may come as
// strings, lists as single values, and anything may be null.

// Number is a JSON number that may also arrive as a string or null. Set is false for null or absent.
type Number struct {
	V   float64
	Set bool
}

// UnmarshalJSON accepts a number, a numeric string, "" or null.
func (n *Number) UnmarshalJSON(b []byte) error {
	v, ok, err := restclient.DecodeNumber(b)
	*n = Number{V: v, Set: ok}
	return err
}

// MarshalJSON writes the number, or null when unset.
func (n Number) MarshalJSON() ([]byte, error) {
	if !n.Set {
		return []byte("null"), nil
	}
	return json.Marshal(n.V)
}

// Int returns the number rounded to an int (0 when unset).
func (n Number) Int() int {
	if !n.Set {
		return 0
	}
	if n.V < 0 {
		return int(n.V - 0.5)
	}
	return int(n.V + 0.5)
}

// StringList is a JSON value that may be a string, a list of strings (possibly holding nulls), or null.
// Prime sends sshConnection and ip in all these forms; nulls and empty strings are dropped.
type StringList []string

// UnmarshalJSON accepts "x", ["x", null], [null], null and "".
func (l *StringList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	*l = nil
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	switch b[0] {
	case '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if s = strings.TrimSpace(s); s != "" {
			*l = StringList{s}
		}
		return nil
	case '[':
		var raw []json.RawMessage
		if err := json.Unmarshal(b, &raw); err != nil {
			return err
		}
		for _, r := range raw {
			var inner StringList
			if err := inner.UnmarshalJSON(r); err != nil {
				return err
			}
			*l = append(*l, inner...)
		}
		return nil
	default:
		// A number or an object: keep its text rather than failing the whole pod.
		*l = StringList{string(b)}
		return nil
	}
}

// First returns the first entry, or "".
func (l StringList) First() string {
	if len(l) == 0 {
		return ""
	}
	return l[0]
}

// Resource is one adjustable part of an offer (disk, vcpu, memory): counts and a price per unit per
// hour. vcpu and memory usually carry only DefaultCount.
type Resource struct {
	MinCount               Number  `json:"minCount"`
	DefaultCount           Number  `json:"defaultCount"`
	MaxCount               Number  `json:"maxCount"`
	PricePerUnit           Number  `json:"pricePerUnit"`
	Step                   Number  `json:"step"`
	DefaultIncludedInPrice *bool   `json:"defaultIncludedInPrice"`
	AdditionalInfo         *string `json:"additionalInfo"`
}

// Prices are an offer's prices for the whole offer (all its GPUs), per hour.
type Prices struct {
	// OnDemand is set on secure_cloud offers.
	OnDemand Number `json:"onDemand"`
	// CommunityPrice is set on community_cloud offers.
	CommunityPrice Number `json:"communityPrice"`
	IsVariable     *bool  `json:"isVariable"`
	Currency       string `json:"currency"`
}

// GPUAvailability is one offer from /api/v1/availability/gpus (or the legacy /availability/).
type GPUAvailability struct {
	// CloudID is the upstream plan token needed to provision; it changes within minutes.
	CloudID          string   `json:"cloudId"`
	GPUType          string   `json:"gpuType"`
	Socket           string   `json:"socket"`
	Provider         string   `json:"provider"`
	Region           string   `json:"region"`
	DataCenter       string   `json:"dataCenter"`
	Country          string   `json:"country"`
	GPUCount         Number   `json:"gpuCount"`
	GPUMemory        Number   `json:"gpuMemory"`
	Disk             Resource `json:"disk"`
	SharedDisk       Resource `json:"sharedDisk"`
	VCPU             Resource `json:"vcpu"`
	Memory           Resource `json:"memory"`
	StockStatus      string   `json:"stockStatus"`
	Security         string   `json:"security"`
	Prices           Prices   `json:"prices"`
	Images           []string `json:"images"`
	IsSpot           *bool    `json:"isSpot"`
	PrepaidTime      Number   `json:"prepaidTime"`
	ProvisioningTime Number   `json:"provisioningTime"`
}

// Spot reports whether the offer is spot capacity (isSpot true; null means on-demand).
func (a GPUAvailability) Spot() bool { return a.IsSpot != nil && *a.IsSpot }

// Security values.
const (
	SecureCloud    = "secure_cloud"
	CommunityCloud = "community_cloud"
)

// BasePrice is the offer's GPU price per hour: onDemand on secure cloud, communityPrice on community
// cloud (falling back to whichever is set). ok is false when the offer has no price.
func (a GPUAvailability) BasePrice() (price float64, ok bool) {
	p := a.Prices
	switch {
	case a.Security == CommunityCloud && p.CommunityPrice.Set:
		return p.CommunityPrice.V, true
	case a.Security != CommunityCloud && p.OnDemand.Set:
		return p.OnDemand.V, true
	case p.OnDemand.Set:
		return p.OnDemand.V, true
	case p.CommunityPrice.Set:
		return p.CommunityPrice.V, true
	}
	return 0, false
}

// DiskSize is the disk (GB) hydra orders with this offer: its default, else its minimum (0 if neither).
func (a GPUAvailability) DiskSize() int {
	if a.Disk.DefaultCount.Set {
		return a.Disk.DefaultCount.Int()
	}
	return a.Disk.MinCount.Int()
}

// DiskPrice is what the ordered disk adds per hour: pricePerUnit × DiskSize when the default disk is
// not included in the price (defaultIncludedInPrice false), else 0.
func (a GPUAvailability) DiskPrice() float64 {
	if a.Disk.DefaultIncludedInPrice == nil || *a.Disk.DefaultIncludedInPrice || !a.Disk.PricePerUnit.Set {
		return 0
	}
	return a.Disk.PricePerUnit.V * float64(a.DiskSize())
}

// TotalPrice is the price of the whole offer per hour (GPU price plus disk where it is not included).
func (a GPUAvailability) TotalPrice() (float64, bool) {
	p, ok := a.BasePrice()
	if !ok {
		return 0, false
	}
	return p + a.DiskPrice(), true
}

// DiskOffer is one entry of GET /api/v1/availability/disks: network storage a provider sells by the
// GB and hour beside its pods. cloudId and dataCenter are often null (read as "").
type DiskOffer struct {
	CloudID     string   `json:"cloudId"`
	Provider    string   `json:"provider"`
	DataCenter  string   `json:"dataCenter"`
	Country     string   `json:"country"`
	Region      string   `json:"region"`
	Spec        Resource `json:"spec"`
	StockStatus string   `json:"stockStatus"`
	Security    string   `json:"security"`
	IsMultinode *bool    `json:"isMultinode"`
}

// AvailabilityPage is the paginated availability answer.
type AvailabilityPage struct {
	Items      []json.RawMessage `json:"items"`
	TotalCount Number            `json:"totalCount"`
}

// PodSpec is the "pod" part of a create request.
type PodSpec struct {
	Name     string `json:"name"`
	CloudID  string `json:"cloudId"`
	GPUType  string `json:"gpuType"`
	Socket   string `json:"socket"`
	GPUCount int    `json:"gpuCount"`
	DiskSize int    `json:"diskSize,omitempty"`
	VCPUs    int    `json:"vcpus,omitempty"`
	Memory   int    `json:"memory,omitempty"`
	// MaxPrice is always a number: some upstreams reject null.
	MaxPrice     float64 `json:"maxPrice"`
	Image        string  `json:"image,omitempty"`
	DataCenterID string  `json:"dataCenterId,omitempty"`
	Country      string  `json:"country,omitempty"`
	Security     string  `json:"security,omitempty"`
	SSHKeyID     string  `json:"sshKeyId,omitempty"`
}

// ProviderRef names the upstream provider in a create request.
type ProviderRef struct {
	Type string `json:"type"`
}

// TeamRef names the team a pod belongs to.
type TeamRef struct {
	TeamID string `json:"teamId"`
}

// CreatePodRequest is the body of POST /api/v1/pods/.
type CreatePodRequest struct {
	Pod      PodSpec     `json:"pod"`
	Provider ProviderRef `json:"provider"`
	// Disks are the ids of disks attached at the create (see disks.go).
	Disks []string `json:"disks,omitempty"`
	Team  *TeamRef `json:"team,omitempty"`
}

// Pod is a pod as GET /api/v1/pods/{id} returns it.
type Pod struct {
	ID                   string     `json:"id"`
	UserID               string     `json:"userId"`
	TeamID               string     `json:"teamId"`
	Name                 string     `json:"name"`
	Type                 string     `json:"type"`
	ProviderType         string     `json:"providerType"`
	Status               string     `json:"status"`
	InstallationStatus   string     `json:"installationStatus"`
	InstallationFailure  string     `json:"installationFailure"`
	InstallationProgress Number     `json:"installationProgress"`
	CreatedAt            string     `json:"createdAt"`
	UpdatedAt            string     `json:"updatedAt"`
	TerminatedAt         string     `json:"terminatedAt"`
	GPUName              string     `json:"gpuName"`
	GPUCount             Number     `json:"gpuCount"`
	Socket               string     `json:"socket"`
	PriceHr              Number     `json:"priceHr"`
	SSHConnection        StringList `json:"sshConnection"`
	IP                   StringList `json:"ip"`
	IsSpot               *bool      `json:"isSpot"`
	EnvironmentType      string     `json:"environmentType"`
	// Resources are the pod's machine: memory (GB), disk (GB), vcpus; numbers or strings.
	Resources PodResources `json:"resources"`
	// DataCenterID is not in the published Pod model; read it when a pod carries it.
	DataCenterID string `json:"dataCenterId"`
	// AttachedResources are the pod's disks (see disks.go).
	AttachedResources []AttachedResource `json:"attachedResources"`
}

// PodResources is a pod's "resources" object: memory (GB), disk (GB), vcpus and shared_disk. Examples
// send the numbers as strings too.
type PodResources struct {
	Memory     Number
	Disk       Number
	VCPUs      Number
	SharedDisk Number
}

// UnmarshalJSON reads the object leniently: null, a value that is no object, and a field that is no
// number leave the fields unset rather than failing the whole pod.
func (r *PodResources) UnmarshalJSON(b []byte) error {
	*r = PodResources{}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil //nolint:nilerr // lenient by design (see above): a value that is no object leaves the fields unset
	}
	for key, dst := range map[string]*Number{"memory": &r.Memory, "disk": &r.Disk, "vcpus": &r.VCPUs, "shared_disk": &r.SharedDisk} {
		if v, ok := raw[key]; ok {
			var n Number
			if n.UnmarshalJSON(v) == nil {
				*dst = n
			}
		}
	}
	return nil
}

// PodStatus is one entry of GET /api/v1/pods/status.
type PodStatus struct {
	PodID                string     `json:"podId"`
	ProviderType         string     `json:"providerType"`
	Status               string     `json:"status"`
	SSHConnection        StringList `json:"sshConnection"`
	IP                   StringList `json:"ip"`
	InstallationStatus   string     `json:"installationStatus"`
	InstallationFailure  string     `json:"installationFailure"`
	InstallationProgress Number     `json:"installationProgress"`
	PriceHr              Number     `json:"priceHr"`
}

// SSHKey is an SSH key registered on the account.
type SSHKey struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	PublicKey string `json:"publicKey"`
	IsPrimary bool   `json:"isPrimary"`
}

// parseTime reads the timestamps Prime sends (RFC 3339, with or without a zone).
func parseTime(s string) time.Time {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}
