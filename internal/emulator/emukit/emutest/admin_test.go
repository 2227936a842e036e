package emutest

import (
	"net/http"
	"runtime"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

type adminState struct {
	Faults simulation.Faults `json:"faults"`
	Live   []string          `json:"live"`
}

// adminServer is an emulator with one live machine and no API.
func adminServer() *emukit.SeededServer[adminState] {
	return emukit.NewSeededServer("", func() *adminState { return &adminState{Live: []string{"vm-1"}} },
		func(st *adminState) *simulation.Faults { return &st.Faults },
		func(st *adminState) (int, []simulation.Machine) {
			live := []simulation.Machine{}
			for _, n := range st.Live {
				live = append(live, simulation.Machine{ID: n, Name: n})
			}
			return len(st.Live), live
		},
		func(http.ResponseWriter, *http.Request) {})
}

// leaky answers admin requests and then lets them use up a fault, as a request to the API would.
type leaky struct {
	*emukit.SeededServer[adminState]
}

func (l leaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.SeededServer.ServeHTTP(w, r)
	_ = l.Store.With(true, func(st *adminState) error { st.Faults.Take(500); return nil })
}

func TestWantAdmin(t *testing.T) {
	want := simulation.Faults{ServerErrors: 2, SoldOut: true, Latency: simulation.Duration(1e6)}
	s := adminServer()
	WantAdmin(t, s, s, want, 1, "vm-1")

	for name, check := range map[string]func(tb testing.TB){
		"a live machine missing": func(tb testing.TB) { s := adminServer(); WantAdmin(tb, s, s, want, 1, "vm-2") },
		"created miscounted":     func(tb testing.TB) { s := adminServer(); WantAdmin(tb, s, s, want, 2, "vm-1") },
		"admin uses up faults":   func(tb testing.TB) { s := adminServer(); WantAdmin(tb, leaky{s}, s, want, 1, "vm-1") },
	} {
		ft := &failTB{TB: t}
		done := make(chan struct{})
		go func() { defer close(done); check(ft) }()
		<-done
		if !ft.failed {
			t.Errorf("%s: WantAdmin passed", name)
		}
	}
}

// failTB records a failure instead of failing the test; Fatalf stops its goroutine as it would.
type failTB struct {
	testing.TB
	failed bool
}

func (f *failTB) Errorf(string, ...any) { f.failed = true }
func (f *failTB) Fatalf(string, ...any) { f.failed = true; runtime.Goexit() }
