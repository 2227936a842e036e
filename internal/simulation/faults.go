package simulation

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
