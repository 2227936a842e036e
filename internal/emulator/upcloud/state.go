package upcloud

import (
	"slices"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// Faults are the armed faults: the shared vocabulary every emulator understands (simulation.Faults:
// 429 storms, 5xx answers, lost create answers, boot failures, sold out, latency) and UpCloud's own
// extras. They live in the state, so with a StateDir every process sharing the directory sees them.
// Counters count down as they fire.
type Faults struct {
	simulation.Faults
	// Match limits RateLimited and ServerErrors to requests whose "METHOD /path" (path without the
	// /1.3 prefix) starts with it, e.g. "POST /server". Empty: every request.
	Match string `json:"match,omitempty"`
	// ServerErrorStatus is the status ServerErrors answer with (default 503).
	ServerErrorStatus int `json:"server_error_status,omitempty"`
	// SlowBoot adds to the boot duration of servers created while it is set.
	SlowBoot simulation.Duration `json:"slow_boot,omitempty"`
}

type label struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type server struct {
	UUID         string        `json:"uuid"`
	Title        string        `json:"title"`
	Hostname     string        `json:"hostname"`
	Zone         string        `json:"zone"`
	Plan         string        `json:"plan"`
	Created      time.Time     `json:"created"`
	BootStart    time.Time     `json:"boot_start"`
	BootDuration time.Duration `json:"boot_duration"`
	FailBoot     bool          `json:"fail_boot"`
	StopAt       *time.Time    `json:"stop_at,omitempty"`
	StopDuration time.Duration `json:"stop_duration"`
	Labels       []label       `json:"labels"`
	SSHKeys      []string      `json:"ssh_keys"`
	Username     string        `json:"username"`
	Metadata     bool          `json:"metadata"`
	PublicIPv4   string        `json:"public_ipv4"`
	PublicIPv6   string        `json:"public_ipv6"`
	UtilityIPv4  string        `json:"utility_ipv4"`
	Host         int64         `json:"host"`
	Storage      string        `json:"storage"`
	StorageSize  int           `json:"storage_size"`
	StorageTier  string        `json:"storage_tier"`
	StorageTitle string        `json:"storage_title"`
	Template     string        `json:"template"`
	// Cores and MemoryMiB are a "custom" server's (a create without a plan); 0 means the plan's.
	Cores     int `json:"cores,omitempty"`
	MemoryMiB int `json:"memory_mib,omitempty"`
	// RemoteAccessPassword is the VNC password every server answer carries (remote access stays off).
	RemoteAccessPassword string `json:"remote_access_password,omitempty"`
	// BusyUntil ends the "maintenance" a disk attached to or detached from the started server began
	// (storage.go).
	BusyUntil *time.Time `json:"busy_until,omitempty"`
}

type disk struct {
	UUID    string    `json:"uuid"`
	Title   string    `json:"title"`
	Zone    string    `json:"zone"`
	Size    int       `json:"size"`
	Tier    string    `json:"tier"`
	Created time.Time `json:"created"`
	// Labels are a storage's labels (POST /storage, storage.go); a server's disk has none.
	Labels []label `json:"labels,omitempty"`
	// Server and Address say where the disk is attached ("" when detached): a server's own disk at
	// virtio:0 from its create, other storages where attach put them (storage.go).
	Server  string `json:"server,omitempty"`
	Address string `json:"address,omitempty"`
}

// state is the whole emulated cloud. With a StateDir it is the JSON file state.json.
type state struct {
	Zones        []Zone                    `json:"zones"`
	Plans        []Plan                    `json:"plans"`
	Templates    []Template                `json:"templates"`
	Stock        map[string]map[string]int `json:"stock"` // zone -> plan -> free
	Servers      map[string]*server        `json:"servers"`
	Disks        map[string]*disk          `json:"disks"`
	Faults       Faults                    `json:"faults"`
	CreateCount  int                       `json:"create_count"`
	Seq          int64                     `json:"seq"`
	BootDuration time.Duration             `json:"boot_duration"`
	StopDuration time.Duration             `json:"stop_duration"`
	// HotplugDuration is how long a started server stays in "maintenance" after a disk is attached or
	// detached (Options.HotplugDuration).
	HotplugDuration time.Duration `json:"hotplug_duration,omitempty"`
	// IgnorePaging makes GET /server ignore limit and offset (see Options.IgnorePaging).
	IgnorePaging bool `json:"ignore_paging,omitempty"`
}

func newState(o Options) *state {
	st := &state{
		Zones:        o.Zones,
		Plans:        o.Plans,
		Templates:    o.Templates,
		Stock:        map[string]map[string]int{},
		Servers:      map[string]*server{},
		Disks:        map[string]*disk{},
		BootDuration: o.BootDuration,
		StopDuration: o.StopDuration,
		IgnorePaging: o.IgnorePaging,
		// HotplugDuration: see Options.HotplugDuration.
		HotplugDuration: o.HotplugDuration,
	}
	for _, p := range o.Plans {
		if p.GPUAmount == 0 {
			continue
		}
		for z, zo := range p.Zones {
			if st.Stock[z] == nil {
				st.Stock[z] = map[string]int{}
			}
			st.Stock[z][p.Name] = zo.Stock
		}
	}
	return st
}

// find is the first element of list that match accepts.
func find[T any](list []T, match func(T) bool) (T, bool) {
	if i := slices.IndexFunc(list, match); i >= 0 {
		return list[i], true
	}
	var none T
	return none, false
}

func (st *state) plan(name string) (Plan, bool) {
	return find(st.Plans, func(p Plan) bool { return p.Name == name })
}

// serverPlan is the plan a server runs: its catalog plan, or for "custom" servers (created without a
// plan) one made of its own cores and memory.
func (st *state) serverPlan(v *server) Plan {
	p, ok := st.plan(v.Plan)
	if !ok {
		p = Plan{Name: v.Plan}
	}
	if v.Cores > 0 {
		p.Cores = v.Cores
	}
	if v.MemoryMiB > 0 {
		p.MemoryMiB = v.MemoryMiB
	}
	return p
}

func (st *state) zone(id string) (Zone, bool) {
	return find(st.Zones, func(z Zone) bool { return z.ID == id })
}

func (st *state) template(uuid string) (Template, bool) {
	return find(st.Templates, func(t Template) bool { return t.UUID == uuid })
}

// serverState computes a server's state and progress from wall-clock timestamps only.
func serverState(s *server, now time.Time) (string, int) {
	bootEnd := s.BootStart.Add(s.BootDuration)
	if now.Before(bootEnd) {
		p := 0
		if s.BootDuration > 0 {
			p = int(100 * now.Sub(s.BootStart) / s.BootDuration)
		}
		return "maintenance", min(max(p, 0), 99)
	}
	if s.FailBoot {
		return "error", 0
	}
	if s.BusyUntil != nil && now.Before(*s.BusyUntil) {
		return "maintenance", 50
	}
	if s.StopAt != nil {
		if !now.Before(s.StopAt.Add(s.StopDuration)) {
			return "stopped", 0
		}
	}
	return "started", 0
}

// fill makes the maps a state file may lack.
func (st *state) fill() {
	emukit.MakeMaps(&st.Servers)
	emukit.MakeMaps(&st.Disks)
	emukit.MakeMaps(&st.Stock)
}

// templateOfDisk returns the uuid of the template a server's disk was cloned from ("" if none).
func (st *state) templateOfDisk(disk string) string {
	for _, v := range st.Servers {
		if v.Storage == disk {
			return v.Template
		}
	}
	return ""
}
