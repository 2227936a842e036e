package lambda

import "github.com/hydragpu/terraform-provider-hydra/internal/backends/lambda/lambdaapi"

// The JSON shapes of Lambda's Cloud API v1, as its OpenAPI document describes them. Every successful
// answer wraps its payload in {"data": ...}; every error is {"error": {code, message, suggestion},
// "field_errors": {...}}. Fields hydra does not use (jupyter_token, actions, file systems...) are left out.

// envelope is the {"data": ...} wrapper of every successful answer.
type envelope[T any] struct {
	Data T `json:"data"`
}

// InstanceTypeSpecs are an instance type's hardware. gpus is in newer versions of the API only (not in
// the v1.4.0 document); when it is missing the count is read from the type's name ("gpu_8x_...").
type InstanceTypeSpecs struct {
	VCPUs      int `json:"vcpus"`
	MemoryGiB  int `json:"memory_gib"`
	StorageGiB int `json:"storage_gib"`
	GPUs       int `json:"gpus"`
}

// InstanceType is the hardware and price of one instance type ("gpu_1x_h100_sxm5"). price_cents_per_hour
// is the price of the whole machine in US cents per hour.
type InstanceType struct {
	Name              string            `json:"name"`
	Description       string            `json:"description"`     // "1x H100 (80 GB SXM5)"
	GPUDescription    string            `json:"gpu_description"` // "H100 (80 GB SXM5)"; newer versions only
	PriceCentsPerHour int64             `json:"price_cents_per_hour"`
	Specs             InstanceTypeSpecs `json:"specs"`
}

// Region is one of Lambda's regions (the wire type the emulator shares).
type Region = lambdaapi.Region

// InstanceTypeItem is one entry of GET /instance-types: the type and the regions that can launch it now.
type InstanceTypeItem struct {
	InstanceType                 InstanceType `json:"instance_type"`
	RegionsWithCapacityAvailable []Region     `json:"regions_with_capacity_available"`
}

// Instance is one machine (GET /instances, GET /instances/{id}). Lambda reports no creation time and no
// description; hydra uses the name as the only free field (see Backend). ip is absent (or null) until
// the machine has an address.
type Instance struct {
	ID              string   `json:"id"`
	Name            *string  `json:"name"`
	IP              *string  `json:"ip"`
	PrivateIP       *string  `json:"private_ip"`
	Status          string   `json:"status"`
	SSHKeyNames     []string `json:"ssh_key_names"`
	FileSystemNames []string `json:"file_system_names"`
	// FileSystemMounts are the file systems mounted at launch (volumes.go).
	FileSystemMounts []FileSystemMount `json:"file_system_mounts"`
	Region           Region            `json:"region"`
	InstanceType     InstanceType      `json:"instance_type"`
	Hostname         *string           `json:"hostname"`
}

// name is the instance's name ("" when it has none).
func (in Instance) name() string {
	if in.Name == nil {
		return ""
	}
	return *in.Name
}

// ip is the instance's public address ("" when it has none yet).
func (in Instance) ip() string {
	if in.IP == nil {
		return ""
	}
	return *in.IP
}

// LaunchRequest is the body of POST /instance-operations/launch. Lambda takes exactly one SSH key name;
// more keys reach the machine through UserData (cloud-init). Quantity is 1: the v1.4.0 document bounds
// it to [1, 1], the newest one has no such field (not confirmed that the newest API ignores it rather
// than refusing it). The newest document also has tags, hostname and firewall_rulesets, unused here.
type LaunchRequest struct {
	RegionName       string   `json:"region_name"`
	InstanceTypeName string   `json:"instance_type_name"`
	SSHKeyNames      []string `json:"ssh_key_names"`
	FileSystemNames  []string `json:"file_system_names"`
	Quantity         int      `json:"quantity"`
	Name             string   `json:"name"`
	UserData         string   `json:"user_data,omitempty"`
	// FileSystemMounts mounts file systems by id at a path (volumes.go).
	FileSystemMounts []FileSystemMount `json:"file_system_mounts,omitempty"`
}

// LaunchResult is the answer to a launch: the ids of the machines started (possibly fewer than asked).
type LaunchResult struct {
	InstanceIDs []string `json:"instance_ids"`
}

// TerminateRequest is the body of POST /instance-operations/terminate.
type TerminateRequest struct {
	InstanceIDs []string `json:"instance_ids"`
}

// TerminateResult lists the instances Lambda terminated (possibly not all that were asked).
type TerminateResult struct {
	TerminatedInstances []Instance `json:"terminated_instances"`
}

// SSHKey is a key registered on the account. PrivateKey is set only when Lambda generated the pair
// (POST /ssh-keys without public_key).
type SSHKey struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	PublicKey  string `json:"public_key"`
	PrivateKey string `json:"private_key,omitempty"`
}

// AddSSHKeyRequest is the body of POST /ssh-keys; without PublicKey Lambda generates a key pair.
type AddSSHKeyRequest struct {
	Name      string `json:"name"`
	PublicKey string `json:"public_key,omitempty"`
}

// APIError is the error object of Lambda's error body (the wire type the emulator shares).
type APIError = lambdaapi.APIError

// ErrorBody is Lambda's whole error answer.
type ErrorBody struct {
	Error       APIError            `json:"error"`
	FieldErrors map[string]APIError `json:"field_errors,omitempty"`
}
