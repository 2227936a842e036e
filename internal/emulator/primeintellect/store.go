package primeintellect

import "github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"

// store keeps the cloud's state in memory, or in StateDir/state.json guarded by an exclusive flock on
// StateDir/state.lock so several processes share one cloud.
type store struct {
	*emukit.Store[state]
	init func() *state
}

func newStore(dir string, init func() *state) *store {
	return &store{Store: emukit.NewStore[state](dir, "state"), init: init}
}

// with runs fn on the current state and saves it when fn returns nil (and write is true).
func (s *store) with(write bool, fn func(st *state) error) error {
	return s.Update(s.init, func(st *state) (bool, error) {
		err := fn(st)
		return write && err == nil, err
	})
}
