package emutest

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// WantAdmin checks the admin surface h serves under emukit.AdminPath, asked without credentials: PUT
// faults arms want (a.Faults and GET faults then say want), GET stats counts created machines and
// names the live ones in order, and neither request uses up a fault.
func WantAdmin(t testing.TB, h http.Handler, a simulation.Admin, want simulation.Faults, created int, live ...string) {
	t.Helper()
	if put := Do(t, h, http.MethodPut, emukit.AdminPath+"faults", want); put.Status != http.StatusOK {
		t.Fatalf("PUT faults: %d %s", put.Status, put.Raw)
	}
	if f, err := a.Faults(); err != nil || f != want {
		t.Fatalf("faults after PUT: %+v (%v), want %+v", f, err, want)
	}
	var f simulation.Faults
	if g := Do(t, h, http.MethodGet, emukit.AdminPath+"faults", nil); g.Status != http.StatusOK || json.Unmarshal(g.Raw, &f) != nil || f != want {
		t.Errorf("GET faults: %d %s, want %+v", g.Status, g.Raw, want)
	}
	var st simulation.Stats
	s := Do(t, h, http.MethodGet, emukit.AdminPath+"stats", nil)
	if err := json.Unmarshal(s.Raw, &st); s.Status != http.StatusOK || err != nil || st.Created != created || st.Live == nil || len(st.Live) != len(live) {
		t.Fatalf("GET stats: %d %s, want %d created and live %q", s.Status, s.Raw, created, live)
	}
	for i, name := range live {
		if st.Live[i].Name != name {
			t.Errorf("GET stats: live machine %d is %q, want %q", i, st.Live[i].Name, name)
		}
	}
	if f, _ := a.Faults(); f != want {
		t.Errorf("the admin requests used up faults: %+v, want %+v", f, want)
	}
}
