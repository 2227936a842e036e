package lambda

import (
	"fmt"
	"net/http"
)

// StatusPreempted is the status of an instance Lambda took back (Preempt). It is not in the OpenAPI
// document's InstanceStatus enum; one public client lists it next to the others.
const StatusPreempted = "preempted"

// rateLimited is the answer of Lambda's edge (Cloudflare) to requests over its rate: 429 with a
// plain-text page, not Lambda's JSON error.
func rateLimited() reply {
	return reply{Status: http.StatusTooManyRequests, ContentType: "text/plain; charset=UTF-8", Body: []byte("error code: 1015")}
}

// pace answers a launch request that comes sooner than LaunchInterval after the last one let through
// with the edge's 429 page, before it is authenticated or acted on. Every launch request let through
// counts, whether or not it launches anything (Lambda may refuse it for other reasons).
func (s *Server) pace(st *state, method, path string) (reply, bool) {
	if method != http.MethodPost || path != "/instance-operations/launch" || s.opts.LaunchInterval < 0 {
		return reply{}, false
	}
	now := s.opts.Now()
	if st.LastLaunch != nil && now.Sub(*st.LastLaunch) < s.opts.LaunchInterval {
		return rateLimited(), true
	}
	st.LastLaunch = &now
	return reply{}, false
}

// AccountFaults are account-level refusals of launches, in Lambda's error shapes (the ErrorCode enum of
// its OpenAPI document). They live in the state, so every process sharing a StateDir sees them.
type AccountFaults struct {
	// QuotaExceeded refuses the next N launches with 400 global/quota-exceeded.
	QuotaExceeded int `json:"quota_exceeded,omitempty"`
	// AccountInactive refuses every launch with 403 global/account-inactive until cleared.
	AccountInactive bool `json:"account_inactive,omitempty"`
}

// SetAccountFaults replaces the armed account faults.
func (s *Server) SetAccountFaults(f AccountFaults) error {
	return s.update(func(st *state) error { st.Account = f; return nil })
}

// accountFault answers a launch the account may not make, using up a counted fault.
func accountFault(st *state) (reply, bool) {
	switch {
	case st.Account.AccountInactive:
		return errReply(http.StatusForbidden, "global/account-inactive", "Your account is inactive.",
			"Make sure you have verified your email address and have a valid payment method."), true
	case st.Account.QuotaExceeded > 0:
		st.Account.QuotaExceeded--
		return errReply(http.StatusBadRequest, "global/quota-exceeded", "Quota exceeded.",
			"Contact Support to increase your quota."), true
	}
	return reply{}, false
}

// Preempt takes a running instance back, as Lambda may: it answers status preempted from then on, its
// capacity is free again, and it is forgotten after TerminatedRetention like a terminated one.
func (s *Server) Preempt(id string) error {
	return s.update(func(st *state) error {
		in, ok := st.Instances[id]
		if !ok || in.TerminatedAt != nil {
			return fmt.Errorf("no live instance %s", id)
		}
		now := s.opts.Now()
		in.Preempted, in.TerminatedAt, in.Terminate = true, &now, 0
		return nil
	})
}
