package verda

import (
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// The Server is a simulation.Admin (an emukit.StateAdmin), also served under emukit.AdminPath.
var _ simulation.Admin = (*Server)(nil)

type admin = emukit.StateAdmin[state]

// newAdmin is the Server's simulation.Admin. Stats counts the instances and cluster nodes ever created
// (lost create answers included) and lists the live ones (not discontinued), instances oldest first,
// then the nodes of live clusters, with their hostnames as names.
func newAdmin(s *Server) admin {
	return emukit.NewStateAdmin(emukit.AlwaysSaved(s.update), func(st *state) *simulation.Faults { return &st.Faults },
		func(st *state) (int, []simulation.Machine) {
			live := emukit.LiveMachines(sortedInstances(st), func(in *instance) (simulation.Machine, bool) {
				return simulation.Machine{ID: in.ID, Name: in.Hostname}, in.DeletedAt == nil
			})
			for _, n := range liveClusterNodes(st) {
				live = append(live, simulation.Machine{ID: n.ID, Name: n.Hostname})
			}
			return st.Created, live
		})
}

// InstanceInfo is an emulator-side summary of one instance.
type InstanceInfo struct {
	ID           string
	Hostname     string
	InstanceType string
	Location     string
	Spot         bool
	Status       string
	CreatedAt    time.Time
}

// LiveInstances lists the instances not yet discontinued, oldest first, with Verda's status words.
func (s *Server) LiveInstances() []InstanceInfo {
	var out []InstanceInfo
	_ = s.update(func(st *state) error {
		now := s.opts.Now()
		for _, in := range sortedInstances(st) {
			if in.DeletedAt != nil {
				continue
			}
			out = append(out, InstanceInfo{ID: in.ID, Hostname: in.Hostname, InstanceType: in.InstanceType,
				Location: in.Location, Spot: in.IsSpot, Status: s.statusOf(in, now), CreatedAt: in.CreatedAt})
		}
		return nil
	})
	return out
}

// RevokeTokens invalidates every access and refresh token, as if the credentials were rotated
// server-side; clients must start over with a client-credentials grant.
func (s *Server) RevokeTokens() error {
	return s.update(func(st *state) error {
		clear(st.AccessTokens)
		clear(st.RefreshTokens)
		return nil
	})
}

// ExpireAccessTokens makes every access token expire now but keeps refresh tokens valid.
func (s *Server) ExpireAccessTokens() error {
	return s.update(func(st *state) error {
		clear(st.AccessTokens)
		return nil
	})
}

// GrantCount is how many tokens were issued with a grant type ("client_credentials", "refresh_token").
func (s *Server) GrantCount(grantType string) int {
	return emukit.Read(s.update, func(st *state) int { return st.Grants[grantType] })
}

// RequestCount is how many requests reached an endpoint, keyed "METHOD /path" with ids replaced by
// {id}, e.g. "POST /instances", "GET /instances/{id}", "POST /oauth2/token". Faulted answers count;
// admin requests do not.
func (s *Server) RequestCount(key string) int {
	return emukit.Read(s.update, func(st *state) int { return st.Requests[key] })
}

// SSHKeyCount is how many SSH keys the account holds.
func (s *Server) SSHKeyCount() int {
	return emukit.Read(s.update, func(st *state) int { return len(st.SSHKeys) })
}
