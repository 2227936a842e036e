package mithril

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
)

// PreemptionsPath is the emulator's admin endpoint for preemption notices (no credentials): POST with a
// PreemptionChange preempts a bid with notice or wins it back, and answers with the bid's BidInfo; an
// unknown bid is a 404, a bid in no state for the action a 409.
const PreemptionsPath = emukit.AdminPath + "preemptions"

// PreemptionChange is one action of PreemptionsPath.
type PreemptionChange struct {
	// Bid is the bid's FID.
	Bid string `json:"bid"`
	// Action is "preempt" (Preempt) or "win_back" (WinBack).
	Action string `json:"action"`
	// Window is the notice for "preempt" (0: the emulator's PreemptionWindow, Mithril's 5 minutes).
	Window time.Duration `json:"window_ns,omitempty"`
}

var (
	errNoBid       = errors.New("no such bid")
	errWrongStatus = errors.New("bid not in a status for this action")
)

// Preempt gives one of hydra's allocated bids Mithril's preemption notice now, as another customer
// outbidding it would: the bid goes Preempting and its live instances STATUS_PREEMPTING, with end_time
// (GET /v2/instances/{fid}/status) now plus window (0: Options.PreemptionWindow). Once the window ends
// the instances are STATUS_PREEMPTED and the bid Open again, unless WinBack came first.
func (s *Server) Preempt(fid string, window time.Duration) error {
	return s.update(func(st *state, now time.Time) error {
		b, err := st.bidIn(fid, bidAllocated)
		if err == nil {
			st.preemptFor(b, now, window)
		}
		return err
	})
}

// bidIn finds a bid that must be in status (errNoBid, errWrongStatus otherwise).
func (st *state) bidIn(fid, status string) (*bid, error) {
	b := st.bidByFID(fid)
	if b == nil {
		return nil, fmt.Errorf("%w: %s", errNoBid, fid)
	}
	if b.Status != status {
		return nil, fmt.Errorf("%w: bid %s is %s, not %s", errWrongStatus, fid, b.Status, status)
	}
	return b, nil
}

// WinBack ends a bid's preemption notice as the bid winning its capacity back within the window: the bid
// is Allocated again and its instances STATUS_RUNNING (end_time gone). The auction's next clearing may
// preempt it again if other bids still outrank it.
func (s *Server) WinBack(fid string) error {
	return s.update(func(st *state, now time.Time) error {
		b, err := st.bidIn(fid, bidPreempting)
		if err != nil {
			return err
		}
		b.Status, b.PreemptAt = bidAllocated, nil
		for _, ifid := range b.Instances {
			if in := st.instanceByFID(ifid); in != nil && in.PreemptingAt != nil {
				in.PreemptingAt, in.PreemptedAt = nil, nil
			}
		}
		return nil
	})
}

// servePreemptions answers POST PreemptionsPath.
func (s *Server) servePreemptions(w http.ResponseWriter, r *http.Request) {
	var c PreemptionChange
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&c); err != nil {
		emukit.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()}, nil)
		return
	}
	var err error
	switch c.Action {
	case "preempt":
		err = s.Preempt(c.Bid, c.Window)
	case "win_back":
		err = s.WinBack(c.Bid)
	default:
		emukit.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": `action must be "preempt" or "win_back"`}, nil)
		return
	}
	if err != nil {
		writeAdminError(w, err, errWrongStatus, http.StatusConflict)
		return
	}
	for _, b := range s.Bids() {
		if b.FID == c.Bid {
			emukit.WriteJSON(w, http.StatusOK, b, nil)
			return
		}
	}
	emukit.WriteJSON(w, http.StatusNotFound, map[string]string{"error": "bid gone"}, nil)
}

// writeAdminError answers an admin request that failed: 404 for an unknown object (errNoBid,
// errNoAuction), status for an error wrapping refused, 500 otherwise.
func writeAdminError(w http.ResponseWriter, err error, refused error, status int) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, errNoBid), errors.Is(err, errNoAuction):
		code = http.StatusNotFound
	case errors.Is(err, refused):
		code = status
	}
	emukit.WriteJSON(w, code, map[string]string{"error": err.Error()}, nil)
}
