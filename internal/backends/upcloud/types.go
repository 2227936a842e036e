package upcloud

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
)

// YesNo is UpCloud's boolean: the strings "yes" and "no" on the wire. Real JSON booleans, "true"/"false",
// "1"/"0", "on"/"off" and null are accepted too when parsing; it is always written as "yes" or "no".
type YesNo bool

// MarshalJSON writes "yes" or "no".
func (b YesNo) MarshalJSON() ([]byte, error) {
	if b {
		return []byte(`"yes"`), nil
	}
	return []byte(`"no"`), nil
}

// UnmarshalJSON reads "yes"/"no" (and the tolerated variants).
func (b *YesNo) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if string(data) == "null" {
		*b = false
		return nil
	}
	var s string
	if len(data) > 0 && data[0] == '"' {
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
	} else {
		s = string(data)
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "yes", "true", "1", "on":
		*b = true
	case "no", "false", "0", "off", "":
		*b = false
	default:
		return fmt.Errorf("upcloud: %q is not a yes/no value", s)
	}
	return nil
}

// FlexInt is an integer that UpCloud sends either as a JSON number or as a string ("1024"). Null and ""
// read as 0. Numbers too large for int64 (seen in hand-written fixtures) saturate rather than fail.
type FlexInt int64

// UnmarshalJSON reads a number or a numeric string.
func (n *FlexInt) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	s := string(data)
	if s == "null" {
		*n = 0
		return nil
	}
	if len(data) > 0 && data[0] == '"' {
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		s = strings.TrimSpace(s)
		if s == "" {
			*n = 0
			return nil
		}
	}
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		*n = FlexInt(v)
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("upcloud: %q is not a number", s)
	}
	switch {
	case f >= 9.2e18:
		*n = FlexInt(int64(^uint64(0) >> 1))
	case f <= -9.2e18:
		*n = FlexInt(-int64(^uint64(0)>>1) - 1)
	default:
		*n = FlexInt(int64(f))
	}
	return nil
}

// FlexFloat is a decimal that may arrive as a JSON number or a string ("111.1607"). Null and "" read as 0.
type FlexFloat = restclient.FlexFloat

// Zone is one entry of GET /zone.
type Zone struct {
	ID          string `json:"id"`
	Description string `json:"description"`
	Public      YesNo  `json:"public"`
	ParentZone  string `json:"parent_zone,omitempty"`
}

// ZoneList is the body of GET /zone: {"zones":{"zone":[...]}}.
type ZoneList struct {
	Zones struct {
		Zone []Zone `json:"zone"`
	} `json:"zones"`
}

// Plan is one entry of GET /plan. GPU plans carry GPUAmount and GPUModel and have StorageSize 0.
type Plan struct {
	Name             string  `json:"name"`
	CoreNumber       FlexInt `json:"core_number"`
	MemoryAmount     FlexInt `json:"memory_amount"` // MiB
	StorageSize      FlexInt `json:"storage_size"`  // GiB; 0 for GPU plans
	StorageTier      *string `json:"storage_tier"`  // null for GPU plans
	PublicTrafficOut FlexInt `json:"public_traffic_out"`
	GPUAmount        FlexInt `json:"gpu_amount,omitempty"`
	GPUModel         string  `json:"gpu_model,omitempty"`
	// CurrentOffering is "no" for retired plans; nil when the answer does not say (older API answers).
	CurrentOffering *YesNo `json:"current_offering,omitempty"`
	Family          string `json:"family,omitempty"`
}

// PlanList is the body of GET /plan: {"plans":{"plan":[...]}}.
type PlanList struct {
	Plans struct {
		Plan []Plan `json:"plan"`
	} `json:"plans"`
}

// PriceItem is one priced item of a zone: Price is in euro cents per Amount units per hour.
type PriceItem struct {
	Amount FlexInt   `json:"amount"`
	Price  FlexFloat `json:"price"`
}

// ZonePrices is one zone of GET /price: its name and one item per priced thing, keyed as the API keys them
// ("server_plan_<PLAN NAME>", "storage_maxiops", ...).
type ZonePrices struct {
	Name  string
	Items map[string]PriceItem
}

// UnmarshalJSON splits the zone's "name" from its priced items; keys whose values are not item objects
// are ignored.
func (z *ZonePrices) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	z.Items = make(map[string]PriceItem, len(raw))
	for k, v := range raw {
		if k == "name" {
			if err := json.Unmarshal(v, &z.Name); err != nil {
				return fmt.Errorf("upcloud: price zone name: %w", err)
			}
			continue
		}
		v = bytes.TrimSpace(v)
		if len(v) == 0 || v[0] != '{' {
			continue
		}
		var it PriceItem
		if err := json.Unmarshal(v, &it); err != nil {
			return fmt.Errorf("upcloud: price item %s: %w", k, err)
		}
		z.Items[k] = it
	}
	return nil
}

// PlanPriceKey is the key of a plan's price in a zone's price object.
func PlanPriceKey(plan string) string { return "server_plan_" + plan }

// PriceList is the body of GET /price: {"prices":{"zone":[...]}} (a live dump also shows
// "currency":"EUR" next to "zone"; it is read when present).
type PriceList struct {
	Prices struct {
		Currency string       `json:"currency,omitempty"`
		Zone     []ZonePrices `json:"zone"`
	} `json:"prices"`
}

// DeviceAvailability is the body of GET /device/availability: zone -> GPU plans in stock.
type DeviceAvailability map[string]ZoneDevices

// ZoneDevices is one zone of GET /device/availability.
type ZoneDevices struct {
	GPUPlans map[string]struct {
		Amount FlexInt `json:"amount"`
	} `json:"gpu_plans"`
}

// Account is the body of GET /account (the fields hydra looks at).
type Account struct {
	Account struct {
		Credits        FlexFloat           `json:"credits"`
		Username       string              `json:"username"`
		ResourceLimits map[string]*FlexInt `json:"resource_limits"`
	} `json:"account"`
}

// Storage is a storage or template summary (GET /storage/template, /storage/private, /storage/{uuid}).
type Storage struct {
	UUID         string    `json:"uuid"`
	Title        string    `json:"title"`
	Access       string    `json:"access"`
	Type         string    `json:"type"`
	State        string    `json:"state"`
	Size         FlexInt   `json:"size"`
	Tier         string    `json:"tier,omitempty"`
	Zone         string    `json:"zone,omitempty"`
	License      FlexFloat `json:"license"`
	TemplateType string    `json:"template_type,omitempty"`
	Created      string    `json:"created,omitempty"`
	Progress     FlexInt   `json:"progress,omitempty"`
	Labels       Labels    `json:"labels,omitempty"`
}

// StorageList is the body of the storage list endpoints: {"storages":{"storage":[...]}}.
type StorageList struct {
	Storages struct {
		Storage []Storage `json:"storage"`
	} `json:"storages"`
}

// StorageDetails is the body of GET /storage/{uuid}: {"storage":{...}}.
type StorageDetails struct {
	Storage Storage `json:"storage"`
}

// Label is one key/value label.
type Label struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Labels is UpCloud's label list. Servers wrap it ({"label":[...]}); storage devices use a bare array.
// Both forms are read; it is written wrapped.
type Labels []Label

// MarshalJSON writes {"label":[...]}.
func (l Labels) MarshalJSON() ([]byte, error) {
	list := []Label(l)
	if list == nil {
		list = []Label{}
	}
	return json.Marshal(struct {
		Label []Label `json:"label"`
	}{list})
}

// UnmarshalJSON reads {"label":[...]} or a bare array.
func (l *Labels) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if string(data) == "null" {
		*l = nil
		return nil
	}
	if len(data) > 0 && data[0] == '[' {
		var list []Label
		if err := json.Unmarshal(data, &list); err != nil {
			return err
		}
		*l = list
		return nil
	}
	var w struct {
		Label []Label `json:"label"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*l = w.Label
	return nil
}

// Get returns the value of the label with that key.
func (l Labels) Get(key string) (string, bool) {
	for _, x := range l {
		if x.Key == key {
			return x.Value, true
		}
	}
	return "", false
}

// IPAddress is one address of a server.
type IPAddress struct {
	Access   string `json:"access,omitempty"` // public, utility, private
	Address  string `json:"address,omitempty"`
	Family   string `json:"family,omitempty"` // IPv4, IPv6
	Floating *YesNo `json:"floating,omitempty"`
}

// IPAddresses is {"ip_address":[...]}.
type IPAddresses struct {
	IPAddress []IPAddress `json:"ip_address"`
}

// Interface is one network interface of a server.
type Interface struct {
	Index       FlexInt     `json:"index,omitempty"`
	Type        string      `json:"type"`
	IPAddresses IPAddresses `json:"ip_addresses"`
	MAC         string      `json:"mac,omitempty"`
	Network     string      `json:"network,omitempty"`
	Bootable    *YesNo      `json:"bootable,omitempty"`
}

// Networking is a server's {"interfaces":{"interface":[...]}}.
type Networking = interfaces[Interface]

// interfaces is {"interfaces":{"interface":[...]}}, a server's networking or a create request's.
type interfaces[T any] struct {
	Interfaces struct {
		Interface []T `json:"interface"`
	} `json:"interfaces"`
}

// ServerStorageDevice is one disk attached to a server (server details).
type ServerStorageDevice struct {
	Storage          string  `json:"storage"`
	StorageSize      FlexInt `json:"storage_size"`
	StorageTier      string  `json:"storage_tier,omitempty"`
	StorageTitle     string  `json:"storage_title,omitempty"`
	Address          string  `json:"address,omitempty"`
	Type             string  `json:"type,omitempty"`
	BootDisk         string  `json:"boot_disk,omitempty"`
	PartOfPlan       *YesNo  `json:"part_of_plan,omitempty"`
	StorageEncrypted *YesNo  `json:"storage_encrypted,omitempty"`
	Labels           Labels  `json:"labels,omitempty"`
}

// Device is an attached device (GPUs: Type "gpu", Model "NVIDIA L40S").
type Device struct {
	Model    string `json:"model"`
	Type     string `json:"type"`
	Serial   string `json:"serial,omitempty"`
	Metadata struct {
		Cores  FlexInt `json:"cores,omitempty"`
		Memory FlexInt `json:"memory,omitempty"` // GB
	} `json:"metadata"`
}

// Server is a server as GET /server/{uuid}, POST /server, /stop and /start return it (the list endpoint
// returns the same object without addresses, storage and devices). Numbers may be strings.
type Server struct {
	UUID         string      `json:"uuid"`
	Title        string      `json:"title"`
	Hostname     string      `json:"hostname"`
	Zone         string      `json:"zone"`
	Plan         string      `json:"plan"`
	State        string      `json:"state"`
	Progress     FlexInt     `json:"progress,omitempty"`
	CoreNumber   FlexInt     `json:"core_number"`
	MemoryAmount FlexInt     `json:"memory_amount"`
	Created      FlexInt     `json:"created,omitempty"` // epoch seconds
	Host         json.Number `json:"host,omitempty"`
	License      FlexFloat   `json:"license"`
	Metadata     *YesNo      `json:"metadata,omitempty"`
	Firewall     string      `json:"firewall,omitempty"`
	Username     string      `json:"username,omitempty"`
	Labels       Labels      `json:"labels,omitempty"`
	Tags         struct {
		Tag []string `json:"tag"`
	} `json:"tags"`
	IPAddresses    IPAddresses `json:"ip_addresses"`
	Networking     Networking  `json:"networking"`
	StorageDevices struct {
		StorageDevice []ServerStorageDevice `json:"storage_device"`
	} `json:"storage_devices"`
	Devices struct {
		Device []Device `json:"device"`
	} `json:"devices"`
	PlanIPv4Bytes       FlexInt `json:"plan_ipv4_bytes,omitempty"`
	RemoteAccessEnabled *YesNo  `json:"remote_access_enabled,omitempty"`
	RemoteAccessPort    FlexInt `json:"remote_access_port,omitempty"`
	// The one-time "password" and "remote_access_password" fields are deliberately not decoded, so a
	// credential never lands in a struct that might be logged.
}

// PublicIPv4 returns the server's public IPv4 address ("" while none is known): the ip_addresses entry
// with access public and family IPv4, else a public interface's IPv4 address.
func (s *Server) PublicIPv4() string {
	for _, a := range s.IPAddresses.IPAddress {
		if strings.EqualFold(a.Access, "public") && strings.EqualFold(a.Family, "IPv4") && a.Address != "" {
			return a.Address
		}
	}
	for _, itf := range s.Networking.Interfaces.Interface {
		if !strings.EqualFold(itf.Type, "public") {
			continue
		}
		for _, a := range itf.IPAddresses.IPAddress {
			if strings.EqualFold(a.Family, "IPv4") && a.Address != "" {
				return a.Address
			}
		}
	}
	return ""
}

// ServerDetails is the body of single-server answers: {"server":{...}}.
type ServerDetails struct {
	Server Server `json:"server"`
}

// ServerList is the body of GET /server: {"servers":{"server":[...]}}.
type ServerList struct {
	Servers struct {
		Server []Server `json:"server"`
	} `json:"servers"`
}

// CreateStorageDevice is one disk in a create request: action "clone" (a template onto a new disk of
// Title, Size and Tier) or "attach" (an existing storage, at Address, as Type; storage.go).
type CreateStorageDevice struct {
	Action  string `json:"action"`
	Storage string `json:"storage"`
	Title   string `json:"title,omitempty"`
	Size    int    `json:"size,omitempty"`
	Tier    string `json:"tier,omitempty"`
	Address string `json:"address,omitempty"`
	Type    string `json:"type,omitempty"`
}

// LoginUser configures the login user and its SSH keys.
type LoginUser struct {
	Username       string `json:"username,omitempty"`
	CreatePassword YesNo  `json:"create_password"`
	SSHKeys        struct {
		SSHKey []string `json:"ssh_key"`
	} `json:"ssh_keys"`
}

// CreateInterface is one interface in a create request.
type CreateInterface struct {
	Type        string `json:"type"`
	IPAddresses struct {
		IPAddress []CreateIP `json:"ip_address"`
	} `json:"ip_addresses"`
}

// CreateIP asks for one address of a family ("IPv4", "IPv6") on an interface.
type CreateIP struct {
	Family string `json:"family"`
}

// CreateServer is the body of POST /server (inside {"server": ...}).
type CreateServer struct {
	Zone                string `json:"zone"`
	Title               string `json:"title"`
	Hostname            string `json:"hostname"`
	Plan                string `json:"plan,omitempty"`
	Metadata            YesNo  `json:"metadata"`
	PasswordDelivery    string `json:"password_delivery,omitempty"`
	RemoteAccessEnabled YesNo  `json:"remote_access_enabled"`
	StorageDevices      struct {
		StorageDevice []CreateStorageDevice `json:"storage_device"`
	} `json:"storage_devices"`
	LoginUser  *LoginUser        `json:"login_user,omitempty"`
	Labels     Labels            `json:"labels,omitempty"`
	Networking *CreateNetworking `json:"networking,omitempty"`
	UserData   string            `json:"user_data,omitempty"`
}

// ModifyServer is the body of PUT /server/{uuid} (inside {"server": ...}). Only the fields set are
// sent; Labels, when set, replaces the server's whole label list (as in the recorded
// server.modify.202.json, which resends every label).
type ModifyServer struct {
	Title    string  `json:"title,omitempty"`
	Hostname string  `json:"hostname,omitempty"`
	Labels   *Labels `json:"labels,omitempty"`
}

// CreateNetworking is the networking part of a create request.
type CreateNetworking = interfaces[CreateInterface]

// StopServer is the body of POST /server/{uuid}/stop: {"stop_server":{...}}; Timeout is seconds as a string.
type StopServer struct {
	StopServer struct {
		StopType string `json:"stop_type"`
		Timeout  string `json:"timeout,omitempty"`
	} `json:"stop_server"`
}

// ErrorBody is the classic error shape: {"error":{"error_code":..., "error_message":...}}.
type ErrorBody struct {
	Error struct {
		Code    string `json:"error_code"`
		Message string `json:"error_message"`
	} `json:"error"`
}

// Problem is the RFC 7807 application/problem+json error shape of newer endpoints.
type Problem struct {
	Type          string  `json:"type"`
	Title         string  `json:"title"`
	Status        FlexInt `json:"status"`
	CorrelationID string  `json:"correlation_id,omitempty"`
	InvalidParams []struct {
		Name   string `json:"name"`
		Reason string `json:"reason"`
	} `json:"invalid_params,omitempty"`
}
