package emukit

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

type adminState struct {
	Faults  simulation.Faults
	Own     int
	Created int
	Names   []string
}

func TestSeededAndStateAdmin(t *testing.T) {
	for _, dir := range []string{"", t.TempDir()} {
		st := NewSeeded(dir, "state", func() *adminState { return &adminState{Own: 7} })
		a := NewStateAdmin(st.With, func(s *adminState) *simulation.Faults { return &s.Faults },
			func(s *adminState) (int, []simulation.Machine) {
				var live []simulation.Machine
				for _, n := range s.Names {
					live = append(live, simulation.Machine{ID: "id-" + n, Name: n})
				}
				return s.Created, live
			})
		if err := a.SetFaults(simulation.Faults{ServerErrors: 2, Latency: simulation.Duration(time.Millisecond)}); err != nil {
			t.Fatal(err)
		}
		var own int
		_ = st.With(false, func(s *adminState) error { own = s.Own; return nil })
		if f, err := a.Faults(); err != nil || f.ServerErrors != 2 || own != 7 {
			t.Fatalf("dir %q: faults %+v %v, own %d: the shared faults are replaced, the rest kept", dir, f, err, own)
		}
		if err := a.WithFaults(func(f *simulation.Faults) { f.ServerErrors-- }); err != nil {
			t.Fatal(err)
		}
		if f, _ := a.Faults(); f.ServerErrors != 1 {
			t.Fatalf("dir %q: WithFaults did not keep its change: %+v", dir, f)
		}
		// With saves only a change whose fn succeeded (and only when asked to).
		boom := errors.New("boom")
		if err := st.With(true, func(s *adminState) error { s.Created = 99; return boom }); !errors.Is(err, boom) {
			t.Fatalf("With returned %v", err)
		}
		if dir != "" {
			if stats, _ := a.Stats(); stats.Created != 0 {
				t.Fatalf("a failed change was saved: %+v", stats)
			}
		}
		_ = st.With(true, func(s *adminState) error { s.Created, s.Names = 3, []string{"a", "b"}; return nil })
		stats, err := a.Stats()
		want := simulation.Stats{Created: 3, Live: []simulation.Machine{{ID: "id-a", Name: "a"}, {ID: "id-b", Name: "b"}}}
		if err != nil || !reflect.DeepEqual(stats, want) {
			t.Fatalf("dir %q: stats %+v %v, want %+v", dir, stats, err, want)
		}
		if n := a.CreateCount(); n != 3 {
			t.Fatalf("dir %q: CreateCount = %d, want Stats' 3", dir, n)
		}
		_ = st.With(true, func(s *adminState) error { s.Names = nil; return nil })
		if stats, _ := a.Stats(); stats.Live == nil {
			t.Fatal("Stats.Live must be an empty list, not null")
		}
	}
}

func TestTakeReply(t *testing.T) {
	f := simulation.Faults{RateLimited: 1, RetryAfterSeconds: 3, ServerErrors: 1}
	tooMany := Reply{Status: http.StatusTooManyRequests, Body: []byte("slow")}
	serverErr := func(status int) Reply { return Reply{Status: status, Body: []byte("oops")} }
	rep, ok := TakeReply(&f, http.StatusBadGateway, tooMany, serverErr)
	if !ok || rep.Status != 429 || rep.Header.Get("Retry-After") != "3" || string(rep.Body) != "slow" {
		t.Fatalf("first: %+v %v", rep, ok)
	}
	if rep, ok = TakeReply(&f, http.StatusBadGateway, tooMany, serverErr); !ok || rep.Status != 502 || string(rep.Body) != "oops" {
		t.Fatalf("second: %+v %v", rep, ok)
	}
	if _, ok = TakeReply(&f, http.StatusBadGateway, tooMany, serverErr); ok {
		t.Fatal("no fault is armed any more")
	}
}

func TestLockedAPI(t *testing.T) {
	var latency time.Duration
	api := LockedAPI{
		BasePath: "/v1",
		NotFound: Reply{Status: 404, ContentType: "text/plain", Body: []byte("nope")},
		BadBody:  Reply{Status: 400},
		Answer: func(r *http.Request, path string, body []byte) (Reply, time.Duration, error) {
			if path == "/broken" {
				return Reply{}, 0, errors.New("disk full")
			}
			return Reply{Status: 200, ContentType: "text/plain", Header: http.Header{"X-Path": {path}}, Body: body}, latency, nil
		},
		StateError: func(err error) Reply { return Reply{Status: 500, ContentType: "text/plain", Body: []byte(err.Error())} },
	}
	serve := func(ctx context.Context, method, path, body string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)).WithContext(ctx))
		return rec
	}
	if rec := serve(context.Background(), "POST", "/v1/things/", "hello"); rec.Code != 200 || rec.Body.String() != "hello" ||
		rec.Header().Get("X-Path") != "/things" || rec.Header().Get("Content-Type") != "text/plain" {
		t.Fatalf("answer: %d %q %v", rec.Code, rec.Body, rec.Header())
	}
	if rec := serve(context.Background(), "GET", "/v2/x", ""); rec.Code != 404 || rec.Body.String() != "nope" {
		t.Fatalf("outside the base path: %d %q", rec.Code, rec.Body)
	}
	if rec := serve(context.Background(), "GET", "/v1/broken", ""); rec.Code != 500 || rec.Body.String() != "disk full" {
		t.Fatalf("state error: %d %q", rec.Code, rec.Body)
	}
	latency = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if rec := serve(ctx, "GET", "/v1/x", ""); rec.Body.Len() != 0 || rec.Code != 200 || len(rec.Header()) != 0 {
		t.Fatalf("a client gone during the latency gets nothing written: %d %q", rec.Code, rec.Body)
	}
	// A reply without a body has no Content-Type.
	rec := httptest.NewRecorder()
	Reply{Status: 204, ContentType: "application/json"}.Write(rec)
	if rec.Code != 204 || rec.Header().Get("Content-Type") != "" {
		t.Fatalf("empty reply: %d %v", rec.Code, rec.Header())
	}
}

func TestGate(t *testing.T) {
	f := simulation.Faults{RateLimited: 1, ServerErrors: 1}
	var stateErr error
	withFaults := func(fn func(*simulation.Faults)) error {
		if stateErr != nil {
			return stateErr
		}
		fn(&f)
		return nil
	}
	var failed []int
	fail := func(w http.ResponseWriter, status int, err error) {
		failed = append(failed, status)
		w.WriteHeader(status)
	}
	gate := func() (bool, *httptest.ResponseRecorder) {
		rec := httptest.NewRecorder()
		return Gate(rec, httptest.NewRequest("GET", "/", nil), withFaults, http.StatusServiceUnavailable, fail), rec
	}
	if ok, rec := gate(); ok || rec.Code != 429 || rec.Header().Get("Retry-After") != "1" {
		t.Fatalf("rate limited: %v %d %v", ok, rec.Code, rec.Header())
	}
	if ok, rec := gate(); ok || rec.Code != 503 {
		t.Fatalf("server error: %v %d", ok, rec.Code)
	}
	if ok, _ := gate(); !ok {
		t.Fatal("no fault armed: the request goes on")
	}
	stateErr = errors.New("locked")
	if ok, rec := gate(); ok || rec.Code != 500 {
		t.Fatalf("state error: %v %d", ok, rec.Code)
	}
	if !reflect.DeepEqual(failed, []int{429, 503, 500}) {
		t.Fatalf("fail called with %v", failed)
	}
}

func TestBearer(t *testing.T) {
	req := func(h string) *http.Request {
		r := httptest.NewRequest("GET", "/", nil)
		if h != "" {
			r.Header.Set("Authorization", h)
		}
		return r
	}
	keys := []string{"k1", "k2"}
	for h, want := range map[string]bool{"Bearer k2": true, "Bearer k3": false, "Basic k1": false, "": false, "Bearer ": false} {
		if got := BearerIn(req(h), keys); got != want {
			t.Errorf("BearerIn(%q) = %v, want %v", h, got, want)
		}
	}
}

func TestByAge(t *testing.T) {
	type rec struct {
		id string
		at time.Time
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := map[string]*rec{"c": {"c", t0}, "a": {"a", t0.Add(time.Second)}, "b": {"b", t0}}
	var got []string
	for _, r := range ByAge(m, func(r *rec) time.Time { return r.at }, func(r *rec) string { return r.id }) {
		got = append(got, r.id)
	}
	if !reflect.DeepEqual(got, []string{"b", "c", "a"}) {
		t.Fatalf("order %v", got)
	}
}

func TestServeAt(t *testing.T) {
	url, stop, err := ServeAt("127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.URL.Path) //nolint:errcheck
	}), "/api/v1")
	if err != nil {
		t.Fatal(err)
	}
	defer stop(context.Background()) //nolint:errcheck
	if !strings.HasSuffix(url, "/api/v1") {
		t.Fatalf("base URL %q lacks the prefix", url)
	}
	resp, err := http.Get(url + "/x")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); string(b) != "/api/v1/x" {
		t.Fatalf("served %q", b)
	}
	if _, _, err := ServeAt("256.0.0.1:0", http.NotFoundHandler(), "/v1"); err == nil {
		t.Fatal("a bad address must fail")
	}
}

func TestMakeMaps(t *testing.T) {
	var a, b map[string]int
	c := map[string]int{"kept": 1}
	MakeMaps(&a, &b, &c)
	if a == nil || b == nil || c["kept"] != 1 {
		t.Fatalf("a=%v b=%v c=%v", a, b, c)
	}
}

func TestCount(t *testing.T) {
	m := map[string]int{"a": 1, "b": 2, "c": 3, "d": 4}
	if n := Count(m, func(v int) bool { return v%2 == 0 }); n != 2 {
		t.Fatalf("Count of the even values = %d, want 2", n)
	}
	if n := Count(map[string]int(nil), func(int) bool { return true }); n != 0 {
		t.Fatalf("Count of a nil map = %d, want 0", n)
	}
}

func TestFind(t *testing.T) {
	type rec struct{ id string }
	recs := []*rec{{"a"}, {"b"}, {"b"}}
	if got := Find(recs, func(r *rec) bool { return r.id == "b" }); got != recs[1] {
		t.Fatalf("Find b = %p, want the first b %p", got, recs[1])
	}
	if got := Find(recs, func(r *rec) bool { return r.id == "z" }); got != nil {
		t.Fatalf("Find z = %+v, want nil", got)
	}
}

func TestLiveMachines(t *testing.T) {
	type vm struct {
		id   string
		gone bool
	}
	got := LiveMachines([]vm{{"a", false}, {"b", true}, {"c", false}}, func(v vm) (simulation.Machine, bool) {
		return simulation.Machine{ID: v.id, Name: "n-" + v.id}, !v.gone
	})
	if !reflect.DeepEqual(got, []simulation.Machine{{ID: "a", Name: "n-a"}, {ID: "c", Name: "n-c"}}) {
		t.Fatalf("got %+v", got)
	}
	calls := 0
	update := AlwaysSaved(func(fn func(st *adminState) error) error { calls++; return fn(&adminState{}) })
	if err := update(false, func(*adminState) error { return nil }); err != nil || calls != 1 {
		t.Fatalf("AlwaysSaved: %v, %d calls", err, calls)
	}
}

func TestRead(t *testing.T) {
	st := &adminState{Created: 4, Names: []string{"a"}}
	update := func(fn func(s *adminState) error) error { return fn(st) }
	if n := Read(update, func(s *adminState) int { return s.Created }); n != 4 {
		t.Fatalf("Read = %d, want the state's 4", n)
	}
	broken := func(func(s *adminState) error) error { return errors.New("state unreadable") }
	if names := Read(broken, func(s *adminState) []string { return s.Names }); names != nil {
		t.Fatalf("Read of an unreadable state = %v, want the zero value", names)
	}
}

func TestByMethod(t *testing.T) {
	var got []string
	handlers := map[string]func(){"GET": func() { got = append(got, "get") }, "DELETE": func() { got = append(got, "delete") }}
	for _, m := range []string{"DELETE", "PATCH", "GET"} {
		ByMethod(m, handlers, func() { got = append(got, "405") })
	}
	if want := "delete 405 get"; strings.Join(got, " ") != want {
		t.Fatalf("ran %q, want %q", strings.Join(got, " "), want)
	}
}
