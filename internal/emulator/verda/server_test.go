package verda

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit/emutest"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// clock is a manual clock for the emulator: tests move it instead of sleeping.
type clock = backendtest.Clock

func newClock() *clock { return backendtest.NewClock(time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC)) }

type resp struct {
	status int
	ctype  string
	header http.Header
	body   []byte
}

func (r resp) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
}

func do(t *testing.T, base, method, path, token string, body any) resp {
	t.Helper()
	var header []string
	if token != "" {
		header = []string{"Authorization", "Bearer " + token}
	}
	a := emutest.Fetch(t, base, method, path, body, header...)
	return resp{status: a.Status, ctype: a.Header.Get("Content-Type"), header: a.Header, body: a.Raw}
}

func serve(t *testing.T, s *Server) string {
	t.Helper()
	return backendtest.Serve(t, s) + BasePath
}

type tokenAnswer struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	ExpiresIn    int    `json:"expires_in"`
	TokenType    string `json:"token_type"`
	Scope        string `json:"scope"`
}

func login(t *testing.T, base string) tokenAnswer {
	t.Helper()
	r := do(t, base, "POST", "/oauth2/token", "", map[string]string{
		"grant_type": "client_credentials", "client_id": DefaultClientID, "client_secret": DefaultClientSecret})
	if r.status != 200 {
		t.Fatalf("token: %d %s", r.status, r.body)
	}
	var tok tokenAnswer
	r.json(t, &tok)
	return tok
}

// started serves a new emulator on a manual clock c, whose machines boot in 40 s, and logs in: the
// start of most tests.
func started(t *testing.T) (c *clock, s *Server, base, token string) {
	t.Helper()
	c = newClock()
	s = New(Options{Options: simulation.Options{Now: c.Now, BootDuration: 40 * time.Second}})
	base = serve(t, s)
	return c, s, base, login(t, base).AccessToken
}

func errorBody(t *testing.T, r resp) (string, string) {
	t.Helper()
	var e struct{ Code, Message string }
	r.json(t, &e)
	return e.Code, e.Message
}

func TestTokenEndpoint(t *testing.T) {
	c := newClock()
	base := serve(t, New(Options{Options: simulation.Options{Now: c.Now}, TokenLifetime: time.Hour, RefreshTokenLifetime: 2 * time.Hour}))
	tok := login(t, base)
	if tok.ExpiresIn != 3600 || tok.TokenType != "Bearer" || tok.Scope != "cloud-api-v1" || strings.Count(tok.AccessToken, ".") != 2 || tok.RefreshToken == "" {
		t.Fatalf("token answer %+v", tok)
	}
	tests := []struct {
		name   string
		body   any
		status int
		msg    string
	}{
		{"no grant type", map[string]string{"client_id": DefaultClientID}, 400, "grant_type not specified"},
		{"unsupported grant", map[string]string{"grant_type": "password"}, 400, "unsupported grant type"},
		{"not json", "{oops", 400, "not valid json"},
		{"wrong secret", map[string]string{"grant_type": "client_credentials", "client_id": DefaultClientID, "client_secret": "x"}, 401, "Invalid client credentials"},
		{"unknown refresh token", map[string]string{"grant_type": "refresh_token", "refresh_token": "nope"}, 401, "refresh token"},
		{"form body", url.Values{"grant_type": {"client_credentials"}, "client_id": {DefaultClientID}, "client_secret": {DefaultClientSecret}}, 200, ""},
	}
	for _, tc := range tests {
		r := do(t, base, "POST", "/oauth2/token", "", tc.body)
		if r.status != tc.status {
			t.Errorf("%s: status %d %s", tc.name, r.status, r.body)
			continue
		}
		if tc.msg != "" {
			if _, msg := errorBody(t, r); !strings.Contains(msg, tc.msg) {
				t.Errorf("%s: message %q", tc.name, msg)
			}
		}
	}

	// The access token works until it expires; the refresh token is single use.
	if r := do(t, base, "GET", "/locations", tok.AccessToken, nil); r.status != 200 {
		t.Fatalf("locations: %d", r.status)
	}
	c.Advance(time.Hour)
	r := do(t, base, "GET", "/locations", tok.AccessToken, nil)
	if code, _ := errorBody(t, r); r.status != 401 || code != "unauthorized_request" {
		t.Errorf("expired token: %d %s", r.status, r.body)
	}
	refresh := map[string]string{"grant_type": "refresh_token", "refresh_token": tok.RefreshToken}
	r = do(t, base, "POST", "/oauth2/token", "", refresh)
	var fresh tokenAnswer
	r.json(t, &fresh)
	if r.status != 200 || fresh.AccessToken == tok.AccessToken || fresh.RefreshToken == tok.RefreshToken {
		t.Fatalf("refresh: %d %+v", r.status, fresh)
	}
	if r := do(t, base, "POST", "/oauth2/token", "", refresh); r.status != 401 {
		t.Errorf("refresh token reused: %d", r.status)
	}
	if r := do(t, base, "GET", "/locations", fresh.AccessToken, nil); r.status != 200 {
		t.Errorf("refreshed token refused: %d", r.status)
	}
	if r := do(t, base, "GET", "/locations", "", nil); r.status != 401 {
		t.Errorf("no token: %d", r.status)
	}
}

func TestFormOnlyTokenEndpoint(t *testing.T) {
	base := serve(t, New(Options{TokenFormOnly: true}))
	r := do(t, base, "POST", "/oauth2/token", "", map[string]string{"grant_type": "client_credentials", "client_id": DefaultClientID, "client_secret": DefaultClientSecret})
	if _, msg := errorBody(t, r); r.status != 400 || msg != "grant_type not specified" {
		t.Errorf("JSON accepted: %d %s", r.status, r.body)
	}
}

func TestQuirks(t *testing.T) {
	c, _, base, tok := started(t)

	// String prices.
	r := do(t, base, "GET", "/instance-types", tok, nil)
	if !bytes.Contains(r.body, []byte(`"price_per_hour":"2.65"`)) || !bytes.Contains(r.body, []byte(`"spot_price":"1.15"`)) {
		t.Errorf("prices are not decimal strings: %.300s", r.body)
	}
	r = do(t, base, "GET", "/instance-types/1H100.80S.30V?currency=eur", tok, nil)
	if !bytes.Contains(r.body, []byte(`"currency":"eur"`)) || !bytes.Contains(r.body, []byte(`"price_per_hour":"2.454"`)) {
		t.Errorf("eur: %.300s", r.body)
	}

	// Spot and on-demand availability differ; every spelling of the parameters is accepted.
	type av struct {
		LocationCode   string   `json:"location_code"`
		Availabilities []string `json:"availabilities"`
	}
	for _, tc := range []struct {
		query string
		b200  bool
	}{{"", false}, {"?is_spot=false", false}, {"?is_spot=true", true}, {"?isSpot=true", true}, {"?isSpot=true&locationCode=FIN-01", true}} {
		var list []av
		do(t, base, "GET", "/instance-availability"+tc.query, tok, nil).json(t, &list)
		found := false
		for _, l := range list {
			for _, a := range l.Availabilities {
				found = found || (l.LocationCode == "FIN-01" && a == "1B200.30V")
			}
		}
		if found != tc.b200 {
			t.Errorf("%q: B200 listed = %v", tc.query, found)
		}
	}
	if r := do(t, base, "GET", "/instance-availability/1B200.30V?isSpot=true", tok, nil); string(r.body) != "true" {
		t.Errorf("bare boolean: %s", r.body)
	}

	// SSH keys: plain-text id, both spellings of the path, one key as an array.
	r = do(t, base, "POST", "/sshkeys", tok, map[string]string{"name": "k", "key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPF4C6czNRPamaSIKnQfGObnLSIXdT5+qdAzu7M4ZCwu me"})
	keyID := string(r.body)
	if r.status != 201 || !strings.HasPrefix(r.ctype, "text/plain") || !uuidRE.MatchString(keyID) {
		t.Fatalf("ssh key create: %d %s %q", r.status, r.ctype, r.body)
	}
	var keys []map[string]any
	do(t, base, "GET", "/ssh-keys/"+keyID, tok, nil).json(t, &keys)
	if len(keys) != 1 || keys[0]["id"] != keyID {
		t.Errorf("one key: %+v", keys)
	}

	// Create: plain-text id; ip null until running; os_volume_id null while ordered.
	create := map[string]any{"instance_type": "1H100.80S.30V", "image": "ubuntu-24.04", "hostname": "verda-vm-q",
		"description": "q", "location_code": "FIN-01", "ssh_key_ids": []string{keyID}}
	r = do(t, base, "POST", "/instances", tok, create)
	id := string(r.body)
	if r.status != 200 || !strings.HasPrefix(r.ctype, "text/plain") || !uuidRE.MatchString(id) {
		t.Fatalf("create: %d %s %q", r.status, r.ctype, r.body)
	}
	steps := []struct {
		advance time.Duration
		status  string
		ip      bool
	}{{0, "ordered", false}, {15 * time.Second, "provisioning", false}, {30 * time.Second, "running", true}}
	for _, s := range steps {
		c.Advance(s.advance)
		var in map[string]any
		do(t, base, "GET", "/instances/"+id, tok, nil).json(t, &in)
		if in["status"] != s.status || (in["ip"] != nil) != s.ip || in["location"] != "FIN-01" {
			t.Errorf("after %v: status %v ip %v", s.advance, in["status"], in["ip"])
		}
		if _, isNum := in["price_per_hour"].(float64); !isNum {
			t.Errorf("instance price is not a number: %v", in["price_per_hour"])
		}
	}

	// Delete with a single string id; then forbidden_action.
	r = do(t, base, "PUT", "/instances", tok, map[string]any{"id": id, "action": "delete"})
	if r.status != 202 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	r = do(t, base, "PUT", "/instances", tok, map[string]any{"id": []string{id}, "action": "delete"})
	if code, msg := errorBody(t, r); r.status != 400 || code != "forbidden_action" || msg != "Can't discontinue a discontinued instance" {
		t.Errorf("second delete: %d %s", r.status, r.body)
	}
	// An unknown id, malformed or not, is 400 invalid_request "Invalid instance id" (not 404), for
	// reads and for actions alike.
	for _, unknown := range []string{"not-a-uuid", "00000000-0000-4000-8000-000000000000"} {
		r = do(t, base, "GET", "/instances/"+unknown, tok, nil)
		if code, msg := errorBody(t, r); r.status != 400 || code != "invalid_request" || msg != "Invalid instance id" {
			t.Errorf("GET unknown id %s: %d %s", unknown, r.status, r.body)
		}
		r = do(t, base, "PUT", "/instances", tok, map[string]any{"id": []string{unknown}, "action": "delete"})
		if code, msg := errorBody(t, r); r.status != 400 || code != "invalid_request" || msg != "Invalid instance id" {
			t.Errorf("delete unknown id %s: %d %s", unknown, r.status, r.body)
		}
	}
	// Partly unknown: 207 with a per-instance 400.
	r = do(t, base, "PUT", "/instances", tok, map[string]any{"id": []string{id, "00000000-0000-4000-8000-000000000000"}, "action": "delete"})
	var results []struct {
		InstanceID string `json:"instanceId"`
		Error      string `json:"error"`
		StatusCode int    `json:"statusCode"`
	}
	r.json(t, &results)
	if r.status != 207 || len(results) != 2 || results[1].Error != "Invalid instance id" || results[1].StatusCode != 400 {
		t.Errorf("partial: %d %s", r.status, r.body)
	}
	// Missing location_code.
	delete(create, "location_code")
	r = do(t, base, "POST", "/instances", tok, create)
	if _, msg := errorBody(t, r); r.status != 400 || !strings.Contains(msg, "location_code") {
		t.Errorf("no location: %d %s", r.status, r.body)
	}
	if r := do(t, base, "GET", "/nothing-here", tok, nil); r.status != 404 {
		t.Errorf("unknown path: %d", r.status)
	}
}

func TestDescriptionAndTagsKept(t *testing.T) {
	base := serve(t, New(Options{}))
	tok := login(t, base).AccessToken
	tags := []map[string]string{{"key": "hydra-owner", "value": "abcdefgh"}, {"key": "hydra-resource", "value": "web"}}
	create := map[string]any{"instance_type": "1H100.80S.30V", "image": "ubuntu-24.04", "hostname": "verda-vm-web--abcdefgh",
		"description": "hydra-owner=abcdefgh hydra-resource=web", "location_code": "FIN-01", "tags": tags}
	r := do(t, base, "POST", "/instances", tok, create)
	if r.status != 200 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	id := string(r.body)
	type view struct {
		ID          string              `json:"id"`
		Description string              `json:"description"`
		Tags        []map[string]string `json:"tags"`
	}
	var one view
	do(t, base, "GET", "/instances/"+id, tok, nil).json(t, &one)
	var list []view
	do(t, base, "GET", "/instances", tok, nil).json(t, &list)
	for _, got := range []view{one, list[0]} {
		if got.Description != create["description"] || len(got.Tags) != 2 || got.Tags[0]["key"] != "hydra-owner" || got.Tags[1]["value"] != "web" {
			t.Errorf("instance keeps %+v", got)
		}
	}
	// At most 10 tags; keys are required and unique; description is required.
	many := make([]map[string]string, 11)
	for i := range many {
		many[i] = map[string]string{"key": "k" + string(rune('a'+i)), "value": "v"}
	}
	for _, tc := range []struct {
		name   string
		tags   any
		desc   string
		status int
	}{
		{"eleven tags", many, "d", 400},
		{"empty key", []map[string]string{{"key": "", "value": "v"}}, "d", 400},
		{"duplicate key", []map[string]string{{"key": "a", "value": "1"}, {"key": "a", "value": "2"}}, "d", 409},
		{"no description", nil, "", 400},
	} {
		create["tags"], create["description"] = tc.tags, tc.desc
		if r := do(t, base, "POST", "/instances", tok, create); r.status != tc.status {
			t.Errorf("%s: %d %s", tc.name, r.status, r.body)
		}
	}
}

func TestFaults(t *testing.T) {
	c, s, base, tok := started(t)
	create := map[string]any{"instance_type": "1A100.22V", "image": "ubuntu-24.04", "hostname": "verda-vm-f",
		"description": "d", "location_code": "FIN-01"}

	// Request faults answer in Verda's shapes before anything is done, and run down.
	if err := s.SetFaults(simulation.Faults{RateLimited: 1, RetryAfterSeconds: 7, ServerErrors: 1}); err != nil {
		t.Fatal(err)
	}
	r := do(t, base, "GET", "/locations", tok, nil)
	if r.status != 429 || r.header.Get("Retry-After") != "7" {
		t.Errorf("rate limited: %d %q", r.status, r.header.Get("Retry-After"))
	}
	r = do(t, base, "POST", "/instances", tok, create)
	if code, _ := errorBody(t, r); r.status != 500 || code != "server_error" {
		t.Errorf("5xx: %d %s", r.status, r.body)
	}
	if s.CreateCount() != 0 {
		t.Error("a faulted create was acted on")
	}
	if r := do(t, base, "GET", "/locations", tok, nil); r.status != 200 {
		t.Errorf("after the faults: %d", r.status)
	}
	if f, _ := s.Faults(); f.RateLimited != 0 || f.ServerErrors != 0 || f.RetryAfterSeconds != 7 {
		t.Errorf("counters not run down: %+v", f)
	}

	// Sold out: Verda's own 503 while availability still lists the type.
	if err := s.SetFaults(simulation.Faults{SoldOut: true}); err != nil {
		t.Fatal(err)
	}
	r = do(t, base, "POST", "/instances", tok, create)
	if code, msg := errorBody(t, r); r.status != 503 || code != "service_unavailable" || !strings.HasPrefix(msg, "Not enough resources") {
		t.Errorf("sold out: %d %s", r.status, r.body)
	}
	if r := do(t, base, "GET", "/instance-availability/1A100.22V", tok, nil); string(r.body) != "true" {
		t.Errorf("sold out hid the type from availability: %s", r.body)
	}

	// A lost create answer: 502 (not JSON), but the instance exists.
	if err := s.SetFaults(simulation.Faults{LoseCreateResponses: 1}); err != nil {
		t.Fatal(err)
	}
	if r := do(t, base, "POST", "/instances", tok, create); r.status != 502 {
		t.Errorf("lost create: %d %s", r.status, r.body)
	}
	if st, _ := s.Stats(); st.Created != 1 || len(st.Live) != 1 || st.Live[0].Name != "verda-vm-f" {
		t.Errorf("stats after a lost create: %+v", st)
	}

	// A boot failure ends in status error instead of running; the next machine boots.
	if err := s.SetFaults(simulation.Faults{BootFailures: 1}); err != nil {
		t.Fatal(err)
	}
	bad := string(do(t, base, "POST", "/instances", tok, create).body)
	good := string(do(t, base, "POST", "/instances", tok, create).body)
	c.Advance(time.Minute)
	for id, want := range map[string]string{bad: "error", good: "running"} {
		var in map[string]any
		do(t, base, "GET", "/instances/"+id, tok, nil).json(t, &in)
		if in["status"] != want {
			t.Errorf("instance %s: status %v, want %s", id, in["status"], want)
		}
	}

	// Added latency (a lower bound only).
	if err := s.SetFaults(simulation.Faults{Latency: simulation.Duration(60 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	do(t, base, "GET", "/locations", tok, nil)
	if time.Since(start) < 60*time.Millisecond {
		t.Error("latency not added")
	}
}

// TestAdminHTTP drives the shared admin surface over HTTP, next to the API and without credentials.
func TestAdminHTTP(t *testing.T) {
	s := New(Options{})
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	base := hs.URL + BasePath
	tok := login(t, base).AccessToken
	if r := do(t, base, "POST", "/instances", tok, map[string]any{"instance_type": "1A100.22V", "image": "ubuntu-24.04",
		"hostname": "verda-vm-admin", "description": "d", "location_code": "FIN-01"}); r.status != 200 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	emutest.WantAdmin(t, s, s, simulation.Faults{RateLimited: 1, RetryAfterSeconds: 2}, 1, "verda-vm-admin")
	if got := s.RequestCount("GET /locations"); got != 0 {
		t.Errorf("admin requests reached the API: %d", got)
	}
	if r := do(t, base, "GET", "/locations", tok, nil); r.status != 429 {
		t.Errorf("the fault armed over HTTP did not fire: %d", r.status)
	}
}

// TestSharedStateDir runs two emulators (as two processes would) on one state directory.
func TestSharedStateDir(t *testing.T) {
	dir := t.TempDir()
	c := newClock()
	a := New(Options{Options: simulation.Options{StateDir: dir, Now: c.Now, BootDuration: 40 * time.Second}})
	b := New(Options{Options: simulation.Options{StateDir: dir, Now: c.Now, BootDuration: 40 * time.Second}})
	baseA, baseB := serve(t, a), serve(t, b)

	tok := login(t, baseA).AccessToken // a token from one process works on the other
	r := do(t, baseA, "POST", "/instances", tok, map[string]any{"instance_type": "1H100.80S.30V", "image": "ubuntu-24.04",
		"hostname": "verda-vm-shared", "description": "d", "location_code": "FIN-01"})
	id := string(r.body)
	if r.status != 200 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	c.Advance(time.Minute)
	var in map[string]any
	do(t, baseB, "GET", "/instances/"+id, tok, nil).json(t, &in)
	if in["status"] != "running" || in["hostname"] != "verda-vm-shared" {
		t.Errorf("B sees %+v", in)
	}
	if b.CreateCount() != 1 || len(b.LiveInstances()) != 1 {
		t.Errorf("B counts %d created, %d live", b.CreateCount(), len(b.LiveInstances()))
	}
	// Faults set through one are seen by the other, and persist.
	if err := a.SetFaults(simulation.Faults{RateLimited: 1}); err != nil {
		t.Fatal(err)
	}
	if r := do(t, baseB, "GET", "/locations", tok, nil); r.status != 429 {
		t.Errorf("B ignored A's faults: %d", r.status)
	}
	// Concurrent creates through both never lose an update.
	var wg sync.WaitGroup
	for i, base := range []string{baseA, baseB, baseA, baseB} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			do(t, base, "POST", "/instances", tok, map[string]any{"instance_type": "1A100.22V", "image": "ubuntu-24.04",
				"hostname": "verda-vm-c" + string(rune('0'+i)), "description": "d", "location_code": "FIN-01"})
		}()
	}
	wg.Wait()
	// FIN-01 holds three 1A100.22V: the fourth must have been refused, whichever process served it.
	if got := a.CreateCount(); got != 4 {
		t.Errorf("created %d, want 1 + 3 (capacity 3)", got)
	}
	// A new emulator on the same directory (a restart) sees everything.
	c2 := New(Options{Options: simulation.Options{StateDir: dir, Now: c.Now, BootDuration: 40 * time.Second}})
	if n := len(c2.LiveInstances()); n != 4 {
		t.Errorf("restarted emulator sees %d live instances", n)
	}
}

func TestStart(t *testing.T) {
	s := New(Options{})
	base := backendtest.Start(t, s.Start)
	if !strings.HasSuffix(base, BasePath) {
		t.Errorf("base URL %s", base)
	}
	login(t, base)
}
