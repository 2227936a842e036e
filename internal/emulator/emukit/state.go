package emukit

import (
	"slices"
	"sort"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// Seeded is a Store that knows how to make its first state.
type Seeded[S any] struct {
	*Store[S]
	seed func() *S
}

// NewSeeded makes a store in dir (empty: in memory) whose files are name+".json" and name+".lock" and
// whose first state is seed().
func NewSeeded[S any](dir, name string, seed func() *S) *Seeded[S] {
	return &Seeded[S]{Store: NewStore[S](dir, name), seed: seed}
}

// With runs fn on the current state and saves it afterwards when write is true and fn returned nil.
func (s *Seeded[S]) With(write bool, fn func(st *S) error) error {
	return s.Update(s.seed, func(st *S) (bool, error) {
		err := fn(st)
		return write && err == nil, err
	})
}

// StateAdmin is the Admin of an emulator whose faults and machines live in its state S. An emulator
// embeds it, so that its Server is an Admin.
type StateAdmin[S any] struct {
	update   func(write bool, fn func(st *S) error) error
	faults   func(st *S) *simulation.Faults
	machines func(st *S) (created int, live []simulation.Machine)
}

// NewStateAdmin builds the Admin: update runs fn on the state under the store's lock (saving it
// afterwards when write is true; an emulator may save always), faults says where the shared faults
// live in a state, and machines counts the machines ever created and lists the live ones.
func NewStateAdmin[S any](update func(write bool, fn func(st *S) error) error, faults func(st *S) *simulation.Faults,
	machines func(st *S) (created int, live []simulation.Machine)) StateAdmin[S] {
	return StateAdmin[S]{update: update, faults: faults, machines: machines}
}

// SetFaults replaces the armed faults of the shared vocabulary; an emulator's own faults stay as they
// are (persisted with the state, so every process sharing a StateDir sees them).
func (a StateAdmin[S]) SetFaults(f simulation.Faults) error {
	return a.update(true, func(st *S) error { *a.faults(st) = f; return nil })
}

// Faults returns the armed faults of the shared vocabulary, with counters as far as they have run down.
func (a StateAdmin[S]) Faults() (simulation.Faults, error) {
	var f simulation.Faults
	err := a.update(false, func(st *S) error { f = *a.faults(st); return nil })
	return f, err
}

// WithFaults runs fn on the armed faults under the state lock and saves them: for an API that takes a
// fault (or the latency) of a request.
func (a StateAdmin[S]) WithFaults(fn func(f *simulation.Faults)) error {
	return a.update(true, func(st *S) error { fn(a.faults(st)); return nil })
}

// CreateCount is how many machines were ever created, as Stats counts them (0 when the state cannot be
// read).
func (a StateAdmin[S]) CreateCount() int {
	st, _ := a.Stats()
	return st.Created
}

// Stats counts the machines ever created and lists the live ones.
func (a StateAdmin[S]) Stats() (simulation.Stats, error) {
	out := simulation.Stats{Live: []simulation.Machine{}}
	err := a.update(false, func(st *S) error {
		created, live := a.machines(st)
		out.Created = created
		out.Live = append(out.Live, live...)
		return nil
	})
	return out, err
}

// Read returns what get reads from an emulator's state, run through update (which holds the state's
// lock, and may save it): for the emulator's admin counters. It is get's zero value when the state cannot
// be read.
func Read[S, T any](update func(fn func(st *S) error) error, get func(st *S) T) T {
	var v T
	_ = update(func(st *S) error { v = get(st); return nil })
	return v
}

// ByAge lists the records of a map oldest first (by created, then by id).
func ByAge[T any](m map[string]*T, created func(*T) time.Time, id func(*T) string) []*T {
	out := make([]*T, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool {
		if ci, cj := created(out[i]), created(out[j]); !ci.Equal(cj) {
			return ci.Before(cj)
		}
		return id(out[i]) < id(out[j])
	})
	return out
}

// MakeMaps makes each of the maps that is nil (a state file may lack them) an empty one.
func MakeMaps[K comparable, V any](maps ...*map[K]V) {
	for _, m := range maps {
		if *m == nil {
			*m = map[K]V{}
		}
	}
}

// AlwaysSaved adapts an emulator's update, which saves the state after every call, to the update
// NewStateAdmin takes.
func AlwaysSaved[S any](update func(fn func(st *S) error) error) func(write bool, fn func(st *S) error) error {
	return func(_ bool, fn func(st *S) error) error { return update(fn) }
}

// LiveMachines lists the machines of records that live reports alive, in order: the live half of an
// Admin's Stats.
func LiveMachines[T any](records []T, live func(T) (simulation.Machine, bool)) []simulation.Machine {
	var out []simulation.Machine
	for _, r := range records {
		if m, ok := live(r); ok {
			out = append(out, m)
		}
	}
	return out
}

// Count is how many values of m match: for an emulator's free capacity (a type's stock less the live
// machines of that type in a region).
func Count[K comparable, V any](m map[K]V, match func(V) bool) int {
	n := 0
	for _, v := range m {
		if match(v) {
			n++
		}
	}
	return n
}

// Find is the first record of records that match picks, or nil: an emulator's lookup by id in a state
// that keeps its records in a list.
func Find[T any](records []*T, match func(*T) bool) *T {
	if i := slices.IndexFunc(records, match); i >= 0 {
		return records[i]
	}
	return nil
}
