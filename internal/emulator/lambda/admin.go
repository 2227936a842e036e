package lambda

import (
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// The Server is a simulation.Admin (an emukit.StateAdmin), also served under emukit.AdminPath.
var _ simulation.Admin = (*Server)(nil)

type admin = emukit.StateAdmin[state]

// newAdmin is the Server's simulation.Admin. Stats counts the instances ever launched (lost launch answers
// included) and lists the live ones (not terminating or terminated), oldest first.
func newAdmin(s *Server) admin {
	return emukit.NewStateAdmin(emukit.AlwaysSaved(s.update), func(st *state) *simulation.Faults { return &st.Faults },
		func(st *state) (int, []simulation.Machine) {
			return st.Created, emukit.LiveMachines(sortedInstances(st), func(in *instance) (simulation.Machine, bool) {
				return simulation.Machine{ID: in.ID, Name: in.name()}, in.TerminatedAt == nil
			})
		})
}

// InstanceInfo is an emulator-side summary of one instance.
type InstanceInfo struct {
	ID           string
	Name         string
	Region       string
	InstanceType string
	Status       string
	SSHKeyNames  []string
	UserData     string
}

// Instances lists every instance still known (terminated ones until they are forgotten), oldest first,
// with Lambda's status words.
func (s *Server) Instances() []InstanceInfo {
	var out []InstanceInfo
	_ = s.update(func(st *state) error {
		now := s.opts.Now()
		for _, in := range sortedInstances(st) {
			out = append(out, InstanceInfo{ID: in.ID, Name: in.name(), Region: in.Region, InstanceType: in.InstanceType,
				Status: s.statusWord(in, now), SSHKeyNames: append([]string(nil), in.SSHKeyNames...), UserData: in.UserData})
		}
		return nil
	})
	return out
}

// RequestCount is how many requests reached an endpoint, keyed "METHOD /path" with ids replaced by
// {id}, e.g. "POST /instance-operations/launch", "GET /instances/{id}". Faulted and refused answers
// count; admin requests do not.
func (s *Server) RequestCount(key string) int {
	return emukit.Read(s.update, func(st *state) int { return st.Requests[key] })
}

// SSHKeyNames lists the names of the account's SSH keys, oldest first.
func (s *Server) SSHKeyNames() []string {
	var out []string
	_ = s.update(func(st *state) error {
		for _, k := range sortedKeys(st) {
			out = append(out, k.Name)
		}
		return nil
	})
	return out
}
