package verda

import (
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/verda/verdaapi"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// order is what an instance and a cluster both keep: what they were created with, and their life
// (statusOf reads it).
type order struct {
	ID           string     `json:"id"`
	Hostname     string     `json:"hostname"`
	Description  string     `json:"description"` // kept and answered as given, like Verda
	Image        string     `json:"image"`
	Location     string     `json:"location"`
	Contract     string     `json:"contract"`
	SSHKeyIDs    []string   `json:"ssh_key_ids"`
	StartupID    *string    `json:"startup_script_id"`
	Tags         []tag      `json:"tags,omitempty"` // kept and answered as given (at most 10)
	IP           string     `json:"ip"`
	PricePerHour float64    `json:"price_per_hour"`
	CreatedAt    time.Time  `json:"created_at"`
	Boot         int64      `json:"boot_ns"`
	FailBoot     bool       `json:"fail_boot"`
	DeletedAt    *time.Time `json:"deleted_at,omitempty"`
}

type instance struct {
	order
	InstanceType string `json:"instance_type"`
	IsSpot       bool   `json:"is_spot"`
	Pricing      string `json:"pricing"`
	OSVolumeID   string `json:"os_volume_id"`
	OSVolumeSize int    `json:"os_volume_size"`
	Offline      bool   `json:"offline"`
}

// tag is a key/value label on an instance (the wire type hydra's client shares).
type tag = verdaapi.Tag

type sshKey struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Key         string    `json:"key"`
	Fingerprint string    `json:"fingerprint"`
	CreatedAt   time.Time `json:"created_at"`
}

// state is the whole emulated cloud.
type state struct {
	Instances map[string]*instance `json:"instances"`
	Clusters  map[string]*cluster  `json:"clusters"`
	// Volumes are the shared volumes of discontinued clusters, detached and still billed (clusters.go).
	Volumes map[string]*detachedVolume `json:"volumes"`
	// DataVolumes are the volumes of /volumes, the trashed ones too (volumes.go).
	DataVolumes   map[string]*volume   `json:"data_volumes"`
	SSHKeys       map[string]*sshKey   `json:"ssh_keys"`
	AccessTokens  map[string]time.Time `json:"access_tokens"`
	RefreshTokens map[string]time.Time `json:"refresh_tokens"`
	// Faults are the armed faults (the shared vocabulary; Verda needs no faults of its own). They live
	// in the state, so with a StateDir every process sharing it sees them.
	Faults   simulation.Faults `json:"faults"`
	Created  int               `json:"created"`
	Grants   map[string]int    `json:"grants"`
	Requests map[string]int    `json:"requests"`
	IPSeq    int               `json:"ip_seq"`
	// ClusterSeq numbers clusters (their private networks).
	ClusterSeq int `json:"cluster_seq"`
}

// init makes the maps a state file may lack.
func (s *state) init() {
	emukit.MakeMaps(&s.Instances)
	emukit.MakeMaps(&s.Clusters)
	emukit.MakeMaps(&s.Volumes)
	emukit.MakeMaps(&s.DataVolumes)
	emukit.MakeMaps(&s.SSHKeys)
	emukit.MakeMaps(&s.AccessTokens, &s.RefreshTokens)
	emukit.MakeMaps(&s.Grants, &s.Requests)
}

// update runs fn on the state: in memory, or loaded from StateDir under an exclusive flock and saved
// back afterwards, so several processes sharing the directory see one cloud.
func (s *Server) update(fn func(st *state) error) error {
	return s.store.Repaired((*state).init, fn)
}
