package emukit

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

func TestSeededServer(t *testing.T) {
	type st struct {
		Faults  simulation.Faults
		Created int
	}
	s := NewSeededServer(t.TempDir(), func() *st { return &st{Created: 2} },
		func(s *st) *simulation.Faults { return &s.Faults },
		func(s *st) (int, []simulation.Machine) {
			return s.Created, []simulation.Machine{{ID: "m1", Name: "one"}}
		},
		func(w http.ResponseWriter, r *http.Request) {
			WriteJSON(w, http.StatusTeapot, map[string]string{"api": r.URL.Path}, nil)
		})
	if n := s.CreateCount(); n != 2 {
		t.Fatalf("CreateCount = %d, want the seeded 2", n)
	}
	_ = s.Store.With(true, func(x *st) error { x.Created++; return nil })
	if n := s.CreateCount(); n != 3 {
		t.Fatalf("CreateCount after a saved create = %d, want 3", n)
	}
	base, stop, err := s.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stop(t.Context()) }()
	resp, err := http.Get(base + "/v1/things")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusTeapot {
		t.Fatalf("an API path answered %d, want the API's 418", resp.StatusCode)
	}
	resp, err = http.Get(base + AdminPath + "stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var stats simulation.Stats
	if err := json.NewDecoder(resp.Body).Decode(&stats); err != nil || stats.Created != 3 || len(stats.Live) != 1 {
		t.Fatalf("admin stats %+v (%v), want Created 3 and one live machine", stats, err)
	}
}
