package lambda

import (
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

type instance struct {
	ID           string     `json:"id"`
	Name         *string    `json:"name"`
	Region       string     `json:"region"`
	InstanceType string     `json:"instance_type"`
	SSHKeyNames  []string   `json:"ssh_key_names"`
	UserData     string     `json:"user_data,omitempty"`
	IP           string     `json:"ip"`
	PrivateIP    string     `json:"private_ip"`
	JupyterToken string     `json:"jupyter_token"`
	CreatedAt    time.Time  `json:"created_at"`
	Boot         int64      `json:"boot_ns"`
	FailBoot     bool       `json:"fail_boot"`
	TerminatedAt *time.Time `json:"terminated_at,omitempty"`
	Terminate    int64      `json:"terminate_ns"`
	// Preempted instances were taken back by Lambda (Preempt): status preempted, capacity freed.
	Preempted bool `json:"preempted,omitempty"`
	// FileSystems are the file systems mounted at launch (volumes.go).
	FileSystems []fsMount `json:"file_systems,omitempty"`
}

type sshKey struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	PublicKey string    `json:"public_key"`
	CreatedAt time.Time `json:"created_at"`
}

// state is the whole emulated cloud.
type state struct {
	Instances map[string]*instance `json:"instances"`
	SSHKeys   map[string]*sshKey   `json:"ssh_keys"`
	// FileSystems are the account's file systems by id (volumes.go).
	FileSystems map[string]*fileSystem `json:"file_systems"`
	// Faults are the armed faults (the shared vocabulary). They live in the state, so with a StateDir
	// every process sharing it sees them.
	Faults   simulation.Faults `json:"faults"`
	Created  int               `json:"created"`
	Requests map[string]int    `json:"requests"`
	IPSeq    int               `json:"ip_seq"`
	// LastLaunch is when the last launch request arrived (the launch pacing counts requests, as
	// Lambda's edge does, whether or not they launched anything).
	LastLaunch *time.Time `json:"last_launch,omitempty"`
	// Account holds the account faults armed with SetAccountFaults.
	Account AccountFaults `json:"account_faults"`
}

// init makes the maps a state file may lack.
func (s *state) init() {
	emukit.MakeMaps(&s.Instances)
	emukit.MakeMaps(&s.SSHKeys)
	emukit.MakeMaps(&s.FileSystems)
	emukit.MakeMaps(&s.Requests)
}

// update runs fn on the state: in memory, or loaded from StateDir under an exclusive flock and saved
// back afterwards, so several processes sharing the directory see one cloud. Instances terminated longer
// ago than TerminatedRetention are forgotten first, as Lambda forgets them.
func (s *Server) update(fn func(st *state) error) error {
	return s.store.Repaired((*state).init, func(st *state) error {
		now := s.opts.Now()
		for id, in := range st.Instances {
			if s.gone(in, now) {
				delete(st.Instances, id)
			}
		}
		return fn(st)
	})
}

// name is the instance's name ("" when it has none).
func (in *instance) name() string {
	if in.Name == nil {
		return ""
	}
	return *in.Name
}

// sortedInstances lists the instances oldest first.
func sortedInstances(st *state) []*instance {
	return emukit.ByAge(st.Instances, func(in *instance) time.Time { return in.CreatedAt }, func(in *instance) string { return in.ID })
}

// sortedKeys lists the SSH keys oldest first.
func sortedKeys(st *state) []*sshKey {
	return emukit.ByAge(st.SSHKeys, func(k *sshKey) time.Time { return k.CreatedAt }, func(k *sshKey) string { return k.ID })
}
