package upcloud

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit/emutest"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

func TestAdminOverHTTP(t *testing.T) {
	s := New(Options{Username: "u", Password: "p"})
	if c := do(t, s, "POST", "/1.3/server", testCreate("upcloud-vm-admin"), ""); c.status != 202 {
		t.Fatalf("create: %d %s", c.status, c.raw)
	}
	// The admin surface (needing no credentials, not hit by the faults it arms) is served at the root
	// and below the API prefix.
	emutest.WantAdmin(t, s, s, simulation.Faults{ServerErrors: 2, Latency: simulation.Duration(time.Millisecond)}, 1, "upcloud-vm-admin")
	g := do(t, s, "GET", "/1.3/_emulator/faults", nil, "none")
	var f simulation.Faults
	if err := json.Unmarshal(g.raw, &f); g.status != 200 || err != nil || f.ServerErrors != 2 || f.Latency != simulation.Duration(time.Millisecond) {
		t.Errorf("GET /1.3/_emulator/faults: %d %s", g.status, g.raw)
	}
	st := do(t, s, "GET", "/1.3/_emulator/stats", nil, "none")
	var stats simulation.Stats
	if err := json.Unmarshal(st.raw, &stats); st.status != 200 || err != nil || stats.Created != 1 || len(stats.Live) != 1 || stats.Live[0].Name != "upcloud-vm-admin" {
		t.Fatalf("stats: %d %s", st.status, st.raw)
	}
	if r := do(t, s, "GET", "/1.3/zone", nil, ""); r.status != 503 {
		t.Errorf("armed 5xx not fired: %d", r.status)
	}
	if f, _ := s.Faults(); f.ServerErrors != 1 {
		t.Errorf("counter did not run down: %+v", f)
	}
}

func TestAdminFaultsOfTheSharedVocabulary(t *testing.T) {
	clk := backendtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := New(Options{Options: simulation.Options{Now: clk.Now, BootDuration: 10 * time.Second}})

	// A lost create answer: the server exists, the answer is a 5xx in UpCloud's shape.
	_ = s.SetFaults(simulation.Faults{LoseCreateResponses: 1, BootFailures: 1})
	c := do(t, s, "POST", "/1.3/server", testCreate("upcloud-vm-lost"), "")
	if c.status != 500 || !strings.Contains(string(c.raw), `"error_code":"INTERNAL_ERROR"`) {
		t.Fatalf("lost create: %d %s", c.status, c.raw)
	}
	st, _ := s.Stats()
	if st.Created != 1 || len(st.Live) != 1 || st.Live[0].Name != "upcloud-vm-lost" {
		t.Fatalf("stats after a lost create: %+v", st)
	}
	// That server also took the boot failure: it ends in "error" after its boot.
	clk.Advance(11 * time.Second)
	if got := serverOf(do(t, s, "GET", "/1.3/server/"+st.Live[0].ID, nil, "")); got["state"] != "error" {
		t.Errorf("boot failure: %v", got["state"])
	}
	if f, _ := s.Faults(); f.LoseCreateResponses != 0 || f.BootFailures != 0 {
		t.Errorf("faults not used up: %+v", f)
	}

	// Sold out: every create fails with UpCloud's no-capacity error, GPU and general plans alike,
	// while stock is still listed.
	_ = s.SetFaults(simulation.Faults{SoldOut: true})
	for _, plan := range []string{"GPU-8xCPU-64GB-1xL4", "2xCPU-4GB"} {
		body := testCreate("upcloud-vm-soldout")
		body["server"].(map[string]any)["plan"] = plan
		if r := do(t, s, "POST", "/1.3/server", body, ""); r.status != 409 || !strings.Contains(string(r.raw), "SERVER_RESOURCES_UNAVAILABLE") {
			t.Errorf("%s while sold out: %d %s", plan, r.status, r.raw)
		}
	}
	if s.Stock("fi-hel2", "GPU-8xCPU-64GB-1xL4") != 5 {
		t.Errorf("stock %d", s.Stock("fi-hel2", "GPU-8xCPU-64GB-1xL4"))
	}
	if st, _ := s.Stats(); st.Created != 1 {
		t.Errorf("sold-out creates made servers: %+v", st)
	}
}

func TestModifyServerLabels(t *testing.T) {
	clk := backendtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := New(Options{Options: simulation.Options{Now: clk.Now, BootDuration: 10 * time.Second}})
	uuid := serverOf(do(t, s, "POST", "/1.3/server", testCreate("upcloud-vm-mod"), ""))["uuid"].(string)

	labels := func(kv ...string) map[string]any {
		var l []any
		for i := 0; i+1 < len(kv); i += 2 {
			l = append(l, map[string]any{"key": kv[i], "value": kv[i+1]})
		}
		return map[string]any{"label": l}
	}
	// During maintenance, as the recorded request: labels plus fields the emulator ignores.
	r := do(t, s, "PUT", "/1.3/server/"+uuid, map[string]any{"server": map[string]any{
		"labels": labels("hydra-name", "upcloud-vm-mod", "hydra-confirmed", "true"), "metadata": "yes", "remote_access_enabled": "no",
	}}, "")
	if r.status != 202 {
		t.Fatalf("modify: %d %s", r.status, r.raw)
	}
	got := serverOf(r)
	if got["uuid"] != uuid || got["title"] != "upcloud-vm-mod" || got["state"] != "maintenance" {
		t.Errorf("modify answered %s", r.raw)
	}
	ls := serverOf(do(t, s, "GET", "/1.3/server/"+uuid, nil, ""))["labels"].(map[string]any)["label"].([]any)
	if len(ls) != 2 || ls[1].(map[string]any)["key"] != "hydra-confirmed" || ls[1].(map[string]any)["value"] != "true" {
		t.Errorf("labels after modify: %v", ls)
	}

	// A title change leaves the labels alone; labels given replace the list.
	if r := do(t, s, "PUT", "/1.3/server/"+uuid, map[string]any{"server": map[string]any{"title": "renamed"}}, ""); r.status != 202 {
		t.Fatalf("title: %d %s", r.status, r.raw)
	}
	if info := s.Servers()[0]; info.Title != "renamed" || len(info.Labels) != 2 {
		t.Errorf("after a title change: %+v", info)
	}
	if r := do(t, s, "PUT", "/1.3/server/"+uuid, map[string]any{"server": map[string]any{"labels": labels()}}, ""); r.status != 202 {
		t.Fatalf("clear labels: %d %s", r.status, r.raw)
	}
	if info := s.Servers()[0]; len(info.Labels) != 0 {
		t.Errorf("labels not replaced: %+v", info.Labels)
	}

	wantRefused(t, s, "PUT", func(uuid string) string { return "/1.3/server/" + uuid }, []refusal{
		{"unknown server", "00000000-0000-4000-a000-000000000000", map[string]any{"server": map[string]any{"title": "x"}}, 404, "SERVER_NOT_FOUND"},
		{"invalid uuid", "nope", map[string]any{"server": map[string]any{"title": "x"}}, 400, "SERVER_INVALID"},
		{"reserved label key", uuid, map[string]any{"server": map[string]any{"labels": labels("_os", "x")}}, 400, "LABEL_INVALID"},
		{"one key twice", uuid, map[string]any{"server": map[string]any{"labels": labels("a", "1", "a", "2")}}, 400, "LABEL_INVALID"},
		{"no server object", uuid, map[string]any{"labels": labels("a", "1")}, 400, "SERVER_INVALID"},
		{"plan change while not stopped", uuid, map[string]any{"server": map[string]any{"plan": "GPU-12xCPU-128GB-1xL4"}}, 409, "SERVER_STATE_ILLEGAL"},
	})
}

func TestListLabelFilters(t *testing.T) {
	s := New(Options{})
	for _, n := range []string{"upcloud-vm-a", "upcloud-vm-b"} {
		do(t, s, "POST", "/1.3/server", testCreate(n), "")
	}
	unlabelled := testCreate("other")
	delete(unlabelled["server"].(map[string]any), "labels")
	do(t, s, "POST", "/1.3/server", unlabelled, "")

	count := func(query url.Values) int {
		t.Helper()
		// The SDK's path, with the trailing slash of the recorded server.list-label-filter.200.json.
		r := do(t, s, "GET", "/1.3/server/?"+query.Encode(), nil, "")
		if r.status != 200 {
			t.Fatalf("list: %d %s", r.status, r.raw)
		}
		return len(r.body["servers"].(map[string]any)["server"].([]any))
	}
	cases := []struct {
		labels []string
		want   int
	}{
		{nil, 3},
		{[]string{"hydra-name"}, 2},
		{[]string{"hydra-name=upcloud-vm-b"}, 1},
		{[]string{"hydra-name", "hydra-name=upcloud-vm-a"}, 1},
		{[]string{"hydra-name=nothing"}, 0},
		{[]string{"other-key"}, 0},
	}
	for _, tc := range cases {
		if n := count(url.Values{"label": tc.labels}); n != tc.want {
			t.Errorf("labels %v: %d servers, want %d", tc.labels, n, tc.want)
		}
	}
}

func TestStartServesTheAdmin(t *testing.T) {
	base := start(t)
	resp, err := http.Get(strings.TrimSuffix(base, APIPrefix) + emukit.AdminPath + "stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st simulation.Stats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || resp.StatusCode != 200 || st.Created != 0 || st.Live == nil {
		t.Fatalf("stats: %d %+v %v", resp.StatusCode, st, err)
	}
}

func TestPagingKnob(t *testing.T) {
	count := func(s *Server, query string) int {
		t.Helper()
		r := do(t, s, "GET", "/1.3/server?"+query, nil, "")
		if r.status != 200 {
			t.Fatalf("list: %d %s", r.status, r.raw)
		}
		return len(r.body["servers"].(map[string]any)["server"].([]any))
	}
	cases := []struct {
		name    string
		opts    Options
		set     *bool // PUT /_emulator/paging before listing
		path    string
		query   string
		want    int
		ignores bool
	}{
		{"honoured by default", Options{}, nil, "", "limit=2&offset=1", 2, false},
		{"offset past the end", Options{}, nil, "", "limit=2&offset=9", 0, false},
		{"ignored by option", Options{IgnorePaging: true}, nil, "", "limit=2&offset=1", 5, true},
		{"ignored by option, labels still filter", Options{IgnorePaging: true}, nil, "", "limit=2&offset=4&label=hydra-name%3Dupcloud-vm-p1", 1, true},
		{"ignored through the admin endpoint", Options{}, ptr(true), PagingPath, "limit=2&offset=1", 5, true},
		{"admin endpoint below the API prefix", Options{}, ptr(true), APIPrefix + PagingPath, "limit=1&offset=3", 5, true},
		{"honoured again through the admin endpoint", Options{IgnorePaging: true}, ptr(false), PagingPath, "limit=2&offset=1", 2, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := New(tc.opts)
			for i := range 5 {
				if c := do(t, s, "POST", "/1.3/server", testCreate(fmt.Sprintf("upcloud-vm-p%d", i)), ""); c.status != 202 {
					t.Fatalf("create: %d %s", c.status, c.raw)
				}
			}
			if tc.set != nil {
				r := do(t, s, "PUT", tc.path, Paging{IgnorePaging: *tc.set}, "none")
				if r.status != 200 || r.body["ignore_paging"] != *tc.set {
					t.Fatalf("PUT %s: %d %s", tc.path, r.status, r.raw)
				}
			}
			if got := count(s, tc.query); got != tc.want {
				t.Errorf("%s: %d servers, want %d", tc.query, got, tc.want)
			}
			g := do(t, s, "GET", PagingPath, nil, "none")
			if g.status != 200 || g.body["ignore_paging"] != tc.ignores || s.IgnoresPaging() != tc.ignores {
				t.Errorf("GET %s: %d %s, IgnoresPaging %v; want %v", PagingPath, g.status, g.raw, s.IgnoresPaging(), tc.ignores)
			}
		})
	}
	s := New(Options{})
	if r := do(t, s, "PUT", PagingPath, "not an object", "none"); r.status != 400 {
		t.Errorf("PUT of a bad body: %d", r.status)
	}
	if r := do(t, s, "POST", PagingPath, Paging{}, "none"); r.status != 405 {
		t.Errorf("POST: %d", r.status)
	}
}

// The knob lives in the state: processes sharing a StateDir see it.
func TestPagingKnobSharedThroughStateDir(t *testing.T) {
	dir := t.TempDir()
	a := New(Options{Options: simulation.Options{StateDir: dir}})
	b := New(Options{Options: simulation.Options{StateDir: dir}})
	if err := a.SetIgnorePaging(true); err != nil {
		t.Fatal(err)
	}
	if !b.IgnoresPaging() {
		t.Error("the other server does not see the knob")
	}
}

func ptr[T any](v T) *T { return &v }
