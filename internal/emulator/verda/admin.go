package verda

import "time"

// SetFaults replaces the active faults (persisted with the state).
func (s *Server) SetFaults(f Faults) error {
	return s.update(func(st *state) error {
		st.Faults = f
		return nil
	})
}

// Faults returns the active faults, with counters as far as they have run down.
func (s *Server) Faults() (Faults, error) {
	var f Faults
	err := s.update(func(st *state) error {
		f = st.Faults
		return nil
	})
	return f, err
}

// CreateCount is how many instances were ever created (lost responses included).
func (s *Server) CreateCount() int {
	n := 0
	_ = s.update(func(st *state) error {
		n = st.Created
		return nil
	})
	return n
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

// LiveInstances lists the instances not yet discontinued, oldest first.
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
	n := 0
	_ = s.update(func(st *state) error {
		n = st.Grants[grantType]
		return nil
	})
	return n
}

// RequestCount is how many requests reached an endpoint, keyed "METHOD /path" with ids replaced by
// {id}, e.g. "POST /instances", "GET /instances/{id}", "POST /oauth2/token". Faulted answers count.
func (s *Server) RequestCount(key string) int {
	n := 0
	_ = s.update(func(st *state) error {
		n = st.Requests[key]
		return nil
	})
	return n
}

// SSHKeyCount is how many SSH keys the account holds.
func (s *Server) SSHKeyCount() int {
	n := 0
	_ = s.update(func(st *state) error {
		n = len(st.SSHKeys)
		return nil
	})
	return n
}
