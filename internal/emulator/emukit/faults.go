package emukit

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Faults is the one fault vocabulary every emulator understands. Counters run down as faults fire;
// each emulator keeps its Faults with its state, so every process sharing a state directory sees them.
// Cloud-specific faults (a cloud ignoring paging, say) live beside it in that emulator's own options.
type Faults struct {
	// RateLimited answers the next N requests with 429 and a Retry-After of RetryAfterSeconds.
	RateLimited int `json:"rate_limited,omitempty"`
	// RetryAfterSeconds is the Retry-After of a rate-limited answer (default 1).
	RetryAfterSeconds int `json:"retry_after_seconds,omitempty"`
	// ServerErrors answers the next N requests with a 5xx in the cloud's own error shape.
	ServerErrors int `json:"server_errors,omitempty"`
	// LoseCreateResponses makes the next N creates succeed at the cloud but answer with a 5xx, as when
	// a response is lost on its way back.
	LoseCreateResponses int `json:"lose_create_responses,omitempty"`
	// BootFailures makes the next N created machines end in the cloud's error status instead of running.
	BootFailures int `json:"boot_failures,omitempty"`
	// SoldOut makes every create fail with the cloud's own no-capacity error while offers stay listed
	// (capacity gone between plan and apply).
	SoldOut bool `json:"sold_out,omitempty"`
	// Latency delays every answer.
	Latency Duration `json:"latency,omitempty"`
}

// Take fires one armed request fault (rate limit first, then server error) and uses it up. status is 0
// when none is armed; serverStatus is the 5xx the cloud answers with.
func (f *Faults) Take(serverStatus int) (status int, header http.Header) {
	return TakeFault(&f.RateLimited, f.RetryAfterSeconds, &f.ServerErrors, serverStatus)
}

// TakeLostCreate reports whether this create's answer is to be lost, and uses the fault up.
func (f *Faults) TakeLostCreate() bool {
	if f.LoseCreateResponses > 0 {
		f.LoseCreateResponses--
		return true
	}
	return false
}

// TakeBootFailure reports whether the machine being created is to fail its boot, and uses it up.
func (f *Faults) TakeBootFailure() bool {
	if f.BootFailures > 0 {
		f.BootFailures--
		return true
	}
	return false
}

// Duration is a time.Duration written in JSON as a Go duration string ("1.5s").
type Duration time.Duration

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a duration string (or a number of nanoseconds).
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n int64
		if err2 := json.Unmarshal(b, &n); err2 != nil {
			return fmt.Errorf("duration: %w", err)
		}
		*d = Duration(n)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Stats is what every emulator reports about its machines.
type Stats struct {
	// Created counts every machine ever created (a storm of creates must leave 1).
	Created int `json:"created"`
	// Live lists the machines that exist and are not terminated (or terminating).
	Live []Machine `json:"live"`
}

// Machine is one live machine in Stats.
type Machine struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Admin is the control surface every emulator offers tests and users' CI, in Go and over HTTP
// (AdminHandler, mounted at AdminPath).
type Admin interface {
	// SetFaults replaces the armed faults.
	SetFaults(Faults) error
	// Faults returns the armed faults, with counters as far as they have run down.
	Faults() (Faults, error)
	// Stats counts created and live machines.
	Stats() (Stats, error)
}

// AdminPath is where every emulator serves AdminHandler: GET AdminPath+"stats", GET and PUT
// AdminPath+"faults". It needs no credentials; emulators listen on loopback only.
const AdminPath = "/_emulator/"

// writeOr500 answers v as JSON with 200, or err as {"error": ...} with 500 when it is not nil.
func writeOr500(w http.ResponseWriter, v any, err error) {
	if err != nil {
		WriteJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()}, nil)
		return
	}
	WriteJSON(w, http.StatusOK, v, nil)
}

// AdminHandler serves an Admin over HTTP under AdminPath.
func AdminHandler(a Admin) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+AdminPath+"stats", func(w http.ResponseWriter, _ *http.Request) {
		st, err := a.Stats()
		writeOr500(w, st, err)
	})
	mux.HandleFunc("GET "+AdminPath+"faults", func(w http.ResponseWriter, _ *http.Request) {
		f, err := a.Faults()
		writeOr500(w, f, err)
	})
	mux.HandleFunc("PUT "+AdminPath+"faults", func(w http.ResponseWriter, r *http.Request) {
		var f Faults
		if err := json.NewDecoder(r.Body).Decode(&f); err != nil {
			WriteJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()}, nil)
			return
		}
		writeOr500(w, f, a.SetFaults(f))
	})
	return mux
}

// WithAdmin serves AdminHandler(a) under AdminPath and h everywhere else.
func WithAdmin(h http.Handler, a Admin) http.Handler {
	admin := AdminHandler(a)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.URL.Path) >= len(AdminPath) && r.URL.Path[:len(AdminPath)] == AdminPath {
			admin.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}
