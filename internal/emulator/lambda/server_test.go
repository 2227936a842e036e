package lambda

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit/emutest"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// clock is a manual clock for the emulator: tests move it instead of sleeping.
type clock = backendtest.Clock

const testKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPF4C6czNRPamaSIKnQfGObnLSIXdT5+qdAzu7M4ZCwu hydra@test"

func newServer(t *testing.T, opts Options) (*Server, *clock) {
	t.Helper()
	c := backendtest.NewClock(time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC))
	if opts.Now == nil {
		opts.Now = c.Now
	}
	if opts.BootDuration == 0 {
		opts.BootDuration = time.Minute
	}
	if opts.TerminateDuration == 0 {
		opts.TerminateDuration = 10 * time.Second
	}
	if opts.TerminatedRetention == 0 {
		opts.TerminatedRetention = time.Minute
	}
	if opts.LaunchInterval == 0 {
		opts.LaunchInterval = -1 // no pacing, except in the tests of it (limits_test.go)
	}
	return New(opts), c
}

type answer struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

// call sends one request with the default API key ("" for none).
func call(t *testing.T, h http.Handler, method, path string, body any) answer {
	t.Helper()
	return callKey(t, h, method, path, DefaultAPIKey, body)
}

func callKey(t *testing.T, h http.Handler, method, path, key string, body any) answer {
	t.Helper()
	var header []string
	if key != "" {
		header = []string{"Authorization", "Bearer " + key}
	}
	a := emutest.Do(t, h, method, path, body, header...)
	return answer{status: a.Status, header: a.Header, raw: a.Raw, body: a.Body}
}

func (a answer) errCode() string {
	e, _ := a.body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

func (a answer) data() any { return a.body["data"] }

func (a answer) dataMap() map[string]any {
	m, _ := a.body["data"].(map[string]any)
	return m
}

func addKey(t *testing.T, s *Server, name string) {
	t.Helper()
	if a := call(t, s, "POST", BasePath+"/ssh-keys", map[string]any{"name": name, "public_key": testKey}); a.status != 200 {
		t.Fatalf("adding a key: %d %s", a.status, a.raw)
	}
}

func launch(t *testing.T, s *Server, body map[string]any) answer {
	t.Helper()
	full := map[string]any{"region_name": "us-east-1", "instance_type_name": "gpu_1x_h100_sxm5", "ssh_key_names": []string{"k"}, "name": "lambda-vm-x"}
	for k, v := range body {
		if v == nil {
			delete(full, k)
		} else {
			full[k] = v
		}
	}
	return call(t, s, "POST", BasePath+"/instance-operations/launch", full)
}

func launchedID(t *testing.T, a answer) string {
	t.Helper()
	ids, _ := a.dataMap()["instance_ids"].([]any)
	if a.status != 200 || len(ids) != 1 {
		t.Fatalf("launch: %d %s", a.status, a.raw)
	}
	return ids[0].(string)
}

func TestAuth(t *testing.T) {
	s, _ := newServer(t, Options{})
	for _, tc := range []struct {
		key, msg string
	}{{"", "No API key was provided."}, {"wrong", "API key was invalid, expired, or deleted."}} {
		a := callKey(t, s, "GET", BasePath+"/instances", tc.key, nil)
		e, _ := a.body["error"].(map[string]any)
		if a.status != 401 || a.errCode() != "global/invalid-api-key" || e["message"] != tc.msg || e["suggestion"] == "" {
			t.Errorf("key %q: %d %s", tc.key, a.status, a.raw)
		}
	}
	// HTTP basic auth with the key as the user ("curl -u KEY:") works too.
	req := httptest.NewRequest("GET", BasePath+"/instances", nil)
	req.SetBasicAuth(DefaultAPIKey, "")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != `{"data":[]}` {
		t.Errorf("basic auth: %d %s", rec.Code, rec.Body)
	}
	// The admin surface needs no key; unknown paths are 404 in Lambda's shape.
	if a := callKey(t, s, "GET", emukit.AdminPath+"stats", "", nil); a.status != 200 {
		t.Errorf("admin: %d", a.status)
	}
	if a := call(t, s, "GET", BasePath+"/nothing", nil); a.status != 404 || a.errCode() != "global/object-does-not-exist" {
		t.Errorf("unknown path: %d %s", a.status, a.raw)
	}
}

func TestInstanceTypesShape(t *testing.T) {
	s, _ := newServer(t, Options{})
	a := call(t, s, "GET", BasePath+"/instance-types", nil)
	types := a.dataMap()
	if a.status != 200 || len(types) != len(DefaultCatalog()) {
		t.Fatalf("%d %s", a.status, a.raw)
	}
	item := types["gpu_1x_h100_sxm5"].(map[string]any)
	it := item["instance_type"].(map[string]any)
	specs := it["specs"].(map[string]any)
	if it["name"] != "gpu_1x_h100_sxm5" || it["description"] != "1x H100 (80 GB SXM5)" || it["gpu_description"] != "H100 (80 GB SXM5)" ||
		it["price_cents_per_hour"] != 329.0 || specs["gpus"] != 1.0 || specs["vcpus"] != 26.0 || specs["memory_gib"] != 225.0 || specs["storage_gib"] != 2816.0 {
		t.Errorf("instance type: %v", it)
	}
	regions := item["regions_with_capacity_available"].([]any)
	if len(regions) != 2 || regions[0].(map[string]any)["name"] != "us-east-1" || regions[0].(map[string]any)["description"] != "Virginia, USA" {
		t.Errorf("regions: %v", regions)
	}
	// A sold-out type lists no region: an empty list, not null.
	if r, ok := types["gpu_8x_b200_sxm6"].(map[string]any)["regions_with_capacity_available"].([]any); !ok || len(r) != 0 {
		t.Errorf("sold out: %v", types["gpu_8x_b200_sxm6"])
	}
	if !strings.Contains(string(a.raw), `"price_cents_per_hour":329`) {
		t.Error("prices are not whole cents")
	}
}

func TestLaunchValidation(t *testing.T) {
	s, _ := newServer(t, Options{})
	addKey(t, s, "k")
	addKey(t, s, "k2")
	for _, tc := range []struct {
		name  string
		body  map[string]any
		code  string
		field string
	}{
		{"no key", map[string]any{"ssh_key_names": []string{}}, "global/invalid-parameters", "ssh_key_names"},
		{"two keys", map[string]any{"ssh_key_names": []string{"k", "k2"}}, "global/invalid-parameters", "ssh_key_names"},
		{"unknown key", map[string]any{"ssh_key_names": []string{"nope"}}, "global/object-does-not-exist", ""},
		{"long name", map[string]any{"name": strings.Repeat("a", 65)}, "global/invalid-parameters", "name"},
		{"quantity", map[string]any{"quantity": 2}, "global/invalid-parameters", "quantity"},
		{"region", map[string]any{"region_name": "mars-1"}, "global/invalid-parameters", "region_name"},
		{"type", map[string]any{"instance_type_name": "gpu_1x_nope"}, "global/invalid-parameters", "instance_type_name"},
		{"no capacity there", map[string]any{"region_name": "europe-central-1"}, "instance-operations/launch/insufficient-capacity", ""},
		{"file system", map[string]any{"file_system_names": []string{"fs"}}, "global/object-does-not-exist", ""},
	} {
		a := launch(t, s, tc.body)
		if a.status != 400 || a.errCode() != tc.code {
			t.Errorf("%s: %d %s", tc.name, a.status, a.raw)
			continue
		}
		if fe, _ := a.body["field_errors"].(map[string]any); tc.field != "" && fe[tc.field] == nil {
			t.Errorf("%s: no field error for %s: %s", tc.name, tc.field, a.raw)
		}
	}
	if a := call(t, s, "POST", BasePath+"/instance-operations/launch", "{not json"); a.status != 400 || a.errCode() != "global/invalid-parameters" {
		t.Errorf("bad JSON: %d %s", a.status, a.raw)
	}
	if st, _ := s.Stats(); st.Created != 0 {
		t.Errorf("refused launches created %d", st.Created)
	}
	// 64 characters, no quantity (the newer API has none) and no name are all fine; names need not be
	// unique.
	launchedID(t, launch(t, s, map[string]any{"name": strings.Repeat("a", 64), "quantity": nil}))
	launchedID(t, launch(t, s, map[string]any{"name": nil, "quantity": 1}))
	launchedID(t, launch(t, s, map[string]any{"name": strings.Repeat("a", 64), "region_name": "us-south-1"}))
}

func TestLifecycle(t *testing.T) {
	s, c := newServer(t, Options{})
	addKey(t, s, "k")
	id := launchedID(t, launch(t, s, map[string]any{"user_data": "#cloud-config\n"}))

	get := func() map[string]any {
		a := call(t, s, "GET", BasePath+"/instances/"+id, nil)
		if a.status != 200 {
			t.Fatalf("GET: %d %s", a.status, a.raw)
		}
		return a.dataMap()
	}
	in := get()
	if in["status"] != "booting" || in["name"] != "lambda-vm-x" || in["ip"] != nil || in["region"].(map[string]any)["name"] != "us-east-1" ||
		in["instance_type"].(map[string]any)["name"] != "gpu_1x_h100_sxm5" || in["ssh_key_names"].([]any)[0] != "k" {
		t.Errorf("booting: %v", in)
	}
	if _, has := in["ip"]; has {
		t.Error("an instance without an address reports an ip field")
	}
	c.Advance(30 * time.Second)
	if in = get(); in["status"] != "booting" || in["ip"] == nil {
		t.Errorf("half-way: %v", in)
	}
	c.Advance(30 * time.Second)
	if in = get(); in["status"] != "active" || !strings.HasPrefix(in["ip"].(string), "203.0.113.") || in["private_ip"] == nil {
		t.Errorf("booted: %v", in)
	}
	if got := s.Instances(); len(got) != 1 || got[0].UserData != "#cloud-config\n" {
		t.Errorf("user data not kept: %+v", got)
	}
	list := call(t, s, "GET", BasePath+"/instances", nil).data().([]any)
	if len(list) != 1 || list[0].(map[string]any)["id"] != id {
		t.Errorf("list: %v", list)
	}
	// The key is in use while the instance lives.
	keyID := call(t, s, "GET", BasePath+"/ssh-keys", nil).data().([]any)[0].(map[string]any)["id"].(string)
	if a := call(t, s, "DELETE", BasePath+"/ssh-keys/"+keyID, nil); a.status != 400 || a.errCode() != "ssh-keys/key-in-use" {
		t.Errorf("deleting a key in use: %d %s", a.status, a.raw)
	}

	a := call(t, s, "POST", BasePath+"/instance-operations/terminate", map[string]any{"instance_ids": []string{id}})
	done, _ := a.dataMap()["terminated_instances"].([]any)
	if a.status != 200 || len(done) != 1 || done[0].(map[string]any)["status"] != "terminating" {
		t.Errorf("terminate: %d %s", a.status, a.raw)
	}
	if a := call(t, s, "POST", BasePath+"/instance-operations/terminate", map[string]any{"instance_ids": []string{id}}); a.status != 400 || a.errCode() != "global/invalid-parameters" {
		t.Errorf("terminating twice: %d %s", a.status, a.raw)
	}
	if st, _ := s.Stats(); len(st.Live) != 0 || st.Created != 1 {
		t.Errorf("stats after terminate: %+v", st)
	}
	c.Advance(10 * time.Second)
	if in = get(); in["status"] != "terminated" {
		t.Errorf("terminated: %v", in)
	}
	c.Advance(time.Minute)
	if a := call(t, s, "GET", BasePath+"/instances/"+id, nil); a.status != 404 || a.errCode() != "global/object-does-not-exist" {
		t.Errorf("forgotten: %d %s", a.status, a.raw)
	}
	if list := call(t, s, "GET", BasePath+"/instances", nil).data().([]any); len(list) != 0 {
		t.Errorf("list after retention: %v", list)
	}
	if a := call(t, s, "POST", BasePath+"/instance-operations/terminate", map[string]any{"instance_ids": []string{id}}); a.status != 404 {
		t.Errorf("terminating a forgotten instance: %d %s", a.status, a.raw)
	}
	if a := call(t, s, "DELETE", BasePath+"/ssh-keys/"+keyID, nil); a.status != 200 {
		t.Errorf("deleting a free key: %d %s", a.status, a.raw)
	}
	if a := call(t, s, "DELETE", BasePath+"/ssh-keys/"+keyID, nil); a.status != 404 {
		t.Errorf("deleting an unknown key: %d %s", a.status, a.raw)
	}
}

// Capacity is per type and region; a full region leaves regions_with_capacity_available, and a
// terminated machine frees its place.
func TestCapacity(t *testing.T) {
	s, _ := newServer(t, Options{})
	addKey(t, s, "k")
	regionsOf := func() []string {
		item := call(t, s, "GET", BasePath+"/instance-types", nil).dataMap()["gpu_1x_h100_sxm5"].(map[string]any)
		var out []string
		for _, r := range item["regions_with_capacity_available"].([]any) {
			out = append(out, r.(map[string]any)["name"].(string))
		}
		return out
	}
	id := launchedID(t, launch(t, s, map[string]any{"region_name": "us-south-1"}))
	if got := regionsOf(); len(got) != 1 || got[0] != "us-east-1" {
		t.Errorf("after filling us-south-1: %v", got)
	}
	a := launch(t, s, map[string]any{"region_name": "us-south-1"})
	e, _ := a.body["error"].(map[string]any)
	if a.status != 400 || a.errCode() != "instance-operations/launch/insufficient-capacity" || e["message"] != "Not enough capacity to fulfill launch request." {
		t.Errorf("full: %d %s", a.status, a.raw)
	}
	call(t, s, "POST", BasePath+"/instance-operations/terminate", map[string]any{"instance_ids": []string{id}})
	if got := regionsOf(); len(got) != 2 {
		t.Errorf("after terminating: %v", got)
	}
}

func TestFaults(t *testing.T) {
	s, c := newServer(t, Options{})
	addKey(t, s, "k")
	if err := s.SetFaults(simulation.Faults{RateLimited: 1, RetryAfterSeconds: 3, ServerErrors: 1}); err != nil {
		t.Fatal(err)
	}
	a := call(t, s, "GET", BasePath+"/instances", nil)
	// Lambda's edge answers 429 with a plain-text page, not JSON.
	if a.status != 429 || a.header.Get("Retry-After") != "3" || string(a.raw) != "error code: 1015" || !strings.HasPrefix(a.header.Get("Content-Type"), "text/plain") {
		t.Errorf("rate limited: %d %v %s", a.status, a.header, a.raw)
	}
	a = call(t, s, "GET", BasePath+"/instances", nil)
	if a.status != 500 || a.errCode() != "global/unknown" {
		t.Errorf("server error: %d %s", a.status, a.raw)
	}
	if a = call(t, s, "GET", BasePath+"/instances", nil); a.status != 200 {
		t.Errorf("after the faults: %d", a.status)
	}
	if f, _ := s.Faults(); f.RateLimited != 0 || f.ServerErrors != 0 {
		t.Errorf("faults not used up: %+v", f)
	}

	// A lost answer: the instance exists, the client saw a 502 from a proxy.
	_ = s.SetFaults(simulation.Faults{LoseCreateResponses: 1, BootFailures: 1})
	a = launch(t, s, nil)
	if a.status != 502 || !strings.Contains(string(a.raw), "Bad Gateway") {
		t.Errorf("lost answer: %d %s", a.status, a.raw)
	}
	got := s.Instances()
	if len(got) != 1 || got[0].Name != "lambda-vm-x" {
		t.Fatalf("after a lost answer: %+v", got)
	}
	// Its boot fails: unhealthy, never active.
	c.Advance(2 * time.Minute)
	if in := call(t, s, "GET", BasePath+"/instances/"+got[0].ID, nil).dataMap(); in["status"] != "unhealthy" {
		t.Errorf("boot failure: %v", in)
	}

	// Sold out: the catalog still lists capacity, the launch is refused with Lambda's own error.
	_ = s.SetFaults(simulation.Faults{SoldOut: true})
	if item := call(t, s, "GET", BasePath+"/instance-types", nil).dataMap()["gpu_1x_h100_sxm5"].(map[string]any); len(item["regions_with_capacity_available"].([]any)) == 0 {
		t.Error("sold out hides the capacity")
	}
	if a = launch(t, s, nil); a.status != 400 || a.errCode() != "instance-operations/launch/insufficient-capacity" {
		t.Errorf("sold out: %d %s", a.status, a.raw)
	}
	if st, _ := s.Stats(); st.Created != 1 {
		t.Errorf("created %d", st.Created)
	}
	if n := s.RequestCount("POST /instance-operations/launch"); n != 2 {
		t.Errorf("%d launch requests counted", n)
	}
}

func TestSSHKeys(t *testing.T) {
	s, _ := newServer(t, Options{})
	a := call(t, s, "POST", BasePath+"/ssh-keys", map[string]any{"name": "mine", "public_key": testKey + "\n"})
	k := a.dataMap()
	if a.status != 200 || k["name"] != "mine" || k["public_key"] != testKey || len(k["id"].(string)) != 32 || k["private_key"] != nil {
		t.Errorf("add: %d %s", a.status, a.raw)
	}
	for _, tc := range []struct {
		body map[string]any
		code string
	}{
		{map[string]any{"name": "mine", "public_key": testKey}, "global/duplicate"},
		{map[string]any{"name": "other", "public_key": "ssh-ed25519 notbase64"}, "global/invalid-parameters"},
		{map[string]any{"name": "", "public_key": testKey}, "global/invalid-parameters"},
		{map[string]any{"name": strings.Repeat("k", 65), "public_key": testKey}, "global/invalid-parameters"},
	} {
		if a := call(t, s, "POST", BasePath+"/ssh-keys", tc.body); a.status != 400 || a.errCode() != tc.code {
			t.Errorf("%v: %d %s", tc.body, a.status, a.raw)
		}
	}
	// Without a public key Lambda generates the pair and answers the private key, once.
	a = call(t, s, "POST", BasePath+"/ssh-keys", map[string]any{"name": "generated"})
	k = a.dataMap()
	priv, _ := k["private_key"].(string)
	signer, err := ssh.ParsePrivateKey([]byte(priv))
	if a.status != 200 || err != nil {
		t.Fatalf("generate: %d %v %s", a.status, err, a.raw)
	}
	pub, _, _, _, err := ssh.ParseAuthorizedKey([]byte(k["public_key"].(string)))
	if err != nil || !bytes.Equal(pub.Marshal(), signer.PublicKey().Marshal()) {
		t.Errorf("the generated public key does not match its private key: %v", err)
	}
	list := call(t, s, "GET", BasePath+"/ssh-keys", nil).data().([]any)
	if len(list) != 2 || list[1].(map[string]any)["private_key"] != nil {
		t.Errorf("list: %v", list)
	}
}

// Processes sharing a StateDir see one cloud: instances, keys and faults.
func TestStateDirShared(t *testing.T) {
	dir := t.TempDir()
	a := New(Options{Options: simulation.Options{StateDir: dir}})
	b := New(Options{Options: simulation.Options{StateDir: dir}})
	addKey(t, a, "k")
	id := launchedID(t, launch(t, a, nil))
	if got := call(t, b, "GET", BasePath+"/instances/"+id, nil); got.status != 200 {
		t.Errorf("the other process does not see the instance: %d %s", got.status, got.raw)
	}
	if err := b.SetFaults(simulation.Faults{ServerErrors: 1}); err != nil {
		t.Fatal(err)
	}
	if got := call(t, a, "GET", BasePath+"/instances", nil); got.status != 500 {
		t.Errorf("a fault armed in one process does not fire in the other: %d", got.status)
	}
	if st, _ := b.Stats(); st.Created != 1 || len(st.Live) != 1 || st.Live[0].ID != id || st.Live[0].Name != "lambda-vm-x" {
		t.Errorf("stats: %+v", st)
	}
}

// The emulator serves on loopback, with the admin surface next to the API, until stopped.
func TestStartAndAdmin(t *testing.T) {
	s := New(Options{})
	url := backendtest.Start(t, s.Start)
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, BasePath) {
		t.Fatalf("url %q", url)
	}
	root := strings.TrimSuffix(url, BasePath)
	a := emutest.Fetch(t, root, http.MethodPut, emukit.AdminPath+"faults", `{"server_errors": 2}`)
	if f, _ := s.Faults(); a.Status != 200 || f.ServerErrors != 2 {
		t.Errorf("PUT faults: %d %+v", a.Status, f)
	}
	if a := emutest.Fetch(t, url, http.MethodGet, "/instance-types", nil, "Authorization", "Bearer "+DefaultAPIKey); a.Status != 500 {
		t.Errorf("a fault armed over HTTP: %d", a.Status)
	}
	a = emutest.Fetch(t, root, http.MethodGet, emukit.AdminPath+"stats", nil)
	var st simulation.Stats
	a.Decode(t, &st)
	if a.Status != 200 || st.Live == nil {
		t.Errorf("GET stats: %d %+v", a.Status, st)
	}
}
