package emukit

import (
	"context"
	"net/http"

	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// SeededServer is the frame of an emulator whose whole cloud lives in one Seeded state S: its Admin,
// the store, and the handler that serves the API with the admin surface (AdminHandler) beside it. An
// emulator's Server embeds a *SeededServer and so is an http.Handler and an Admin, with Start and
// CreateCount (StateAdmin's); it keeps only its API and its own faults.
type SeededServer[S any] struct {
	StateAdmin[S]
	// Store holds the state; the emulator's API reads and changes it with Store.With.
	Store   *Seeded[S]
	handler http.Handler
}

// NewSeededServer builds the frame: the state lives in dir (empty: in memory) as state.json, seeded by
// seed; faults and machines are NewStateAdmin's; api answers every request outside AdminPath.
func NewSeededServer[S any](dir string, seed func() *S, faults func(st *S) *simulation.Faults,
	machines func(st *S) (created int, live []simulation.Machine), api http.HandlerFunc) *SeededServer[S] {
	s := &SeededServer[S]{Store: NewSeeded(dir, "state", seed)}
	s.StateAdmin = NewStateAdmin(s.Store.With, faults, machines)
	s.handler = WithAdmin(api, s.StateAdmin)
	return s
}

// ServeHTTP answers one request: the admin surface under AdminPath (no credentials, no faults), the
// API everywhere else.
func (s *SeededServer[S]) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.handler.ServeHTTP(w, r)
}

// Start serves the emulator on addr ("127.0.0.1:0" picks a port) and returns its base URL and a
// function that stops it.
func (s *SeededServer[S]) Start(addr string) (baseURL string, stop func(context.Context) error, err error) {
	return Serve(addr, s)
}
