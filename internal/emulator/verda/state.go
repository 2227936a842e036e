package verda

import (
	"time"
)

// Faults are failures switched on at runtime (SetFaults). They live in the state, so with a StateDir
// every process sharing it sees them. Counters (RateLimitStorm, ServerErrors, LoseCreateResponses)
// count down by one per request they hit.
type Faults struct {
	// Latency is added to every answer.
	Latency time.Duration
	// Match, when set, limits RateLimitStorm and ServerErrors to requests whose "METHOD /path" (path
	// without /v1) contains it, e.g. "POST /instances".
	Match string
	// RateLimitStorm answers the next N matching requests with 429 and a Retry-After header.
	RateLimitStorm int
	// RetryAfterSeconds is the Retry-After the 429s carry (default 1).
	RetryAfterSeconds int
	// ServerErrors answers the next N matching requests with ServerErrorStatus before acting on them.
	ServerErrors int
	// ServerErrorStatus is the status of those answers (default 500).
	ServerErrorStatus int
	// LoseCreateResponses makes the next N instance creates succeed but answer 502 (a response lost
	// on its way back): the instance exists although the client saw an error.
	LoseCreateResponses int
	// SlowBoot is added to the boot duration of instances created while it is set.
	SlowBoot time.Duration
	// CapacityGone makes every create answer 503 "Not enough resources...", although availability
	// still lists the type (capacity gone between offer and create).
	CapacityGone bool
	// BootFailure makes instances created while it is set end in status "error" instead of running.
	BootFailure bool
}

type instance struct {
	ID           string     `json:"id"`
	Hostname     string     `json:"hostname"`
	Description  string     `json:"description"`
	InstanceType string     `json:"instance_type"`
	Image        string     `json:"image"`
	Location     string     `json:"location"`
	IsSpot       bool       `json:"is_spot"`
	Contract     string     `json:"contract"`
	Pricing      string     `json:"pricing"`
	SSHKeyIDs    []string   `json:"ssh_key_ids"`
	StartupID    *string    `json:"startup_script_id"`
	OSVolumeID   string     `json:"os_volume_id"`
	OSVolumeSize int        `json:"os_volume_size"`
	IP           string     `json:"ip"`
	PricePerHour float64    `json:"price_per_hour"`
	CreatedAt    time.Time  `json:"created_at"`
	Boot         int64      `json:"boot_ns"`
	FailBoot     bool       `json:"fail_boot"`
	Offline      bool       `json:"offline"`
	DeletedAt    *time.Time `json:"deleted_at,omitempty"`
	Tags         []tag      `json:"tags,omitempty"`
}

type tag struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type sshKey struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Key         string    `json:"key"`
	Fingerprint string    `json:"fingerprint"`
	CreatedAt   time.Time `json:"created_at"`
}

// state is the whole emulated cloud.
type state struct {
	Instances     map[string]*instance `json:"instances"`
	SSHKeys       map[string]*sshKey   `json:"ssh_keys"`
	AccessTokens  map[string]time.Time `json:"access_tokens"`
	RefreshTokens map[string]time.Time `json:"refresh_tokens"`
	Faults        Faults               `json:"faults"`
	Created       int                  `json:"created"`
	Grants        map[string]int       `json:"grants"`
	Requests      map[string]int       `json:"requests"`
	IPSeq         int                  `json:"ip_seq"`
}

func newState() *state {
	s := &state{}
	s.init()
	return s
}

func (s *state) init() {
	if s.Instances == nil {
		s.Instances = map[string]*instance{}
	}
	if s.SSHKeys == nil {
		s.SSHKeys = map[string]*sshKey{}
	}
	if s.AccessTokens == nil {
		s.AccessTokens = map[string]time.Time{}
	}
	if s.RefreshTokens == nil {
		s.RefreshTokens = map[string]time.Time{}
	}
	if s.Grants == nil {
		s.Grants = map[string]int{}
	}
	if s.Requests == nil {
		s.Requests = map[string]int{}
	}
}

// update runs fn on the state: in memory, or loaded from StateDir under an exclusive flock and saved
// back afterwards, so several processes sharing the directory see one cloud.
func (s *Server) update(fn func(st *state) error) error {
	return s.store.Update(newState, func(st *state) (bool, error) {
		st.init()
		return true, fn(st)
	})
}
