package verda

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/verda/verdaapi"
)

// FlexFloat is a number Verda sends either as a decimal string ("3.95") or as a JSON number (0.6).
// null and "" decode to 0.
type FlexFloat = restclient.FlexFloat

// FlexBool is a boolean Verda may send as true/false or as the strings "true"/"false".
type FlexBool bool

// UnmarshalJSON accepts a JSON boolean or a string holding one.
func (v *FlexBool) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		*v = false
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		p, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("verda: %q is not a boolean", s)
		}
		*v = FlexBool(p)
		return nil
	}
	var p bool
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*v = FlexBool(p)
	return nil
}

// TokenResponse is the answer of POST /oauth2/token.
type TokenResponse struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
	Scope        string `json:"scope"`
}

// CPU, GPU and Size are the described amounts of the catalog and of instances (verdaapi's shapes).
type (
	CPU  = verdaapi.CPU
	GPU  = verdaapi.GPU
	Size = verdaapi.Size
)

// InstanceType is one entry of GET /instance-types. Prices are decimal strings in Currency.
type InstanceType struct {
	ID                  string    `json:"id"`
	InstanceType        string    `json:"instance_type"`
	Name                string    `json:"name"`
	DisplayName         *string   `json:"display_name"`
	Model               string    `json:"model"`
	Manufacturer        string    `json:"manufacturer"`
	Description         string    `json:"description"`
	CPU                 CPU       `json:"cpu"`
	GPU                 GPU       `json:"gpu"`
	GPUMemory           Size      `json:"gpu_memory"`
	Memory              Size      `json:"memory"`
	Storage             Size      `json:"storage"`
	PricePerHour        FlexFloat `json:"price_per_hour"`
	SpotPrice           FlexFloat `json:"spot_price"`
	DynamicPrice        FlexFloat `json:"dynamic_price"`
	MaxDynamicPrice     FlexFloat `json:"max_dynamic_price"`
	ServerlessPrice     FlexFloat `json:"serverless_price"`
	ServerlessSpotPrice FlexFloat `json:"serverless_spot_price"`
	Currency            string    `json:"currency"`
	BestFor             []string  `json:"best_for"`
	DeployWarning       *string   `json:"deploy_warning"`
	P2P                 *string   `json:"p2p"`
	SupportedOS         []string  `json:"supported_os"`
}

// Location is one datacenter of GET /locations (the wire type the emulator shares).
type Location = verdaapi.Location

// LocationAvailability is one entry of GET /instance-availability (the wire type the emulator shares).
type LocationAvailability = verdaapi.LocationAvailability

// Image is one OS image of GET /images (the wire type the emulator shares).
type Image = verdaapi.Image

// SSHKey is one key of GET /ssh-keys.
type SSHKey struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Key         string `json:"key"`
	Fingerprint string `json:"fingerprint,omitempty"`
	CreatedAt   string `json:"created_at,omitempty"`
}

// Tag is a key/value label on an instance (the wire type the emulator shares).
type Tag = verdaapi.Tag

// Instance is the instance object of GET /instances and GET /instances/{id}. IP is nil until the
// instance is provisioned; Location (not location_code) holds the location code.
type Instance struct {
	ID              string    `json:"id"`
	IP              *string   `json:"ip"`
	Status          string    `json:"status"`
	CreatedAt       string    `json:"created_at"`
	Hostname        string    `json:"hostname"`
	Description     string    `json:"description"`
	Location        string    `json:"location"`
	LocationCode    string    `json:"location_code,omitempty"` // not sent today; read when location is empty
	InstanceType    string    `json:"instance_type"`
	Image           string    `json:"image"`
	OSName          string    `json:"os_name,omitempty"`
	PricePerHour    FlexFloat `json:"price_per_hour"`
	IsSpot          bool      `json:"is_spot"`
	Contract        string    `json:"contract,omitempty"`
	Pricing         string    `json:"pricing,omitempty"`
	CPU             CPU       `json:"cpu"`
	GPU             GPU       `json:"gpu"`
	GPUMemory       Size      `json:"gpu_memory"`
	Memory          Size      `json:"memory"`
	Storage         Size      `json:"storage"`
	StartupScriptID *string   `json:"startup_script_id"`
	SSHKeyIDs       []string  `json:"ssh_key_ids"`
	OSVolumeID      *string   `json:"os_volume_id"`
	VolumeIDs       []string  `json:"volume_ids"`
	JupyterToken    string    `json:"jupyter_token,omitempty"`
	Tags            []Tag     `json:"tags,omitempty"`
}

// OSVolume sizes the boot volume of a new instance (the wire type the emulator shares).
type OSVolume = verdaapi.OSVolume

// CreateInstanceRequest is the body of POST /instances (the wire type the emulator shares).
type CreateInstanceRequest = verdaapi.CreateInstanceRequest

// InstanceActionRequest is the body of PUT /instances.
type InstanceActionRequest struct {
	ID                []string `json:"id"`
	Action            string   `json:"action"`
	VolumeIDs         []string `json:"volume_ids,omitempty"`
	DeletePermanently bool     `json:"delete_permanently,omitempty"`
}

// ActionResult is one entry of the PUT /instances answer (the wire type the emulator shares).
type ActionResult = verdaapi.ActionResult

// APIError is Verda's error body: {code, message} and sometimes details.
type APIError struct {
	Code    string          `json:"code"`
	Message string          `json:"message"`
	Details json.RawMessage `json:"details,omitempty"`
}

// parsePlainID reads an id answered as plain text, as a JSON string, or (defensively) as a JSON object
// with an id field.
func parsePlainID(body []byte) (string, error) {
	s := strings.TrimSpace(string(body))
	if s == "" {
		return "", fmt.Errorf("empty response: no id")
	}
	switch s[0] {
	case '"':
		var id string
		if err := json.Unmarshal([]byte(s), &id); err != nil {
			return "", fmt.Errorf("unreadable id %q", shortened(s))
		}
		return strings.TrimSpace(id), nil
	case '{':
		var obj struct {
			ID         string `json:"id"`
			InstanceID string `json:"instance_id"`
		}
		if err := json.Unmarshal([]byte(s), &obj); err != nil {
			return "", fmt.Errorf("unreadable id %q", shortened(s))
		}
		if obj.ID != "" {
			return obj.ID, nil
		}
		if obj.InstanceID != "" {
			return obj.InstanceID, nil
		}
		return "", fmt.Errorf("no id in response %q", shortened(s))
	}
	if strings.ContainsAny(s, " \t\n<>") {
		return "", fmt.Errorf("unexpected response %q instead of an id", shortened(s))
	}
	return s, nil
}

// shortened cuts an unexpected answer to 80 bytes for an error message.
func shortened(s string) string {
	const n = 80
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
