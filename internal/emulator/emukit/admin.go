package emukit

import (
	"encoding/json"
	"net/http"

	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

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
func AdminHandler(a simulation.Admin) http.Handler {
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
		var f simulation.Faults
		if err := json.NewDecoder(r.Body).Decode(&f); err != nil {
			WriteJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()}, nil)
			return
		}
		writeOr500(w, f, a.SetFaults(f))
	})
	return mux
}

// WithAdmin serves AdminHandler(a) under AdminPath and h everywhere else.
func WithAdmin(h http.Handler, a simulation.Admin) http.Handler {
	admin := AdminHandler(a)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.URL.Path) >= len(AdminPath) && r.URL.Path[:len(AdminPath)] == AdminPath {
			admin.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}
