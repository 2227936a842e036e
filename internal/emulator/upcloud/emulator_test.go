package upcloud

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit/emutest"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

type call struct {
	status int
	header http.Header
	body   map[string]any
	raw    []byte
}

func do(t *testing.T, h http.Handler, method, path string, body any, auth string) call {
	t.Helper()
	var header []string
	switch auth {
	case "":
		header = []string{"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte("u:p"))}
	case "none":
	default:
		header = []string{"Authorization", auth}
	}
	a := emutest.Do(t, h, method, path, body, header...)
	if len(a.Raw) > 0 && a.JSONErr != nil {
		t.Fatalf("%s %s: non-JSON body %q", method, path, a.Raw)
	}
	return call{status: a.Status, header: a.Header, raw: a.Raw, body: a.Body}
}

func testCreate(name string) map[string]any {
	return map[string]any{"server": map[string]any{
		"zone": "fi-hel2", "title": name, "hostname": name, "plan": "GPU-8xCPU-64GB-1xL4", "metadata": "yes",
		"storage_devices": map[string]any{"storage_device": []any{map[string]any{
			"action": "clone", "storage": GPUTemplateUUID, "title": name + "-disk", "size": 50, "tier": "maxiops"}}},
		"login_user": map[string]any{"username": "root", "create_password": "no",
			"ssh_keys": map[string]any{"ssh_key": []any{"ssh-ed25519 AAAAtest"}}},
		"labels": map[string]any{"label": []any{map[string]any{"key": "hydra-name", "value": name}}},
	}}
}

func serverOf(c call) map[string]any { m, _ := c.body["server"].(map[string]any); return m }

func TestStateDirSharedBetweenServers(t *testing.T) {
	dir := t.TempDir()
	clk := backendtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a := New(Options{Options: simulation.Options{StateDir: dir, Now: clk.Now, BootDuration: 10 * time.Second}})
	b := New(Options{Options: simulation.Options{StateDir: dir, Now: clk.Now, BootDuration: time.Hour}}) // the existing state's settings win

	c := do(t, a, "POST", "/1.3/server", testCreate("upcloud-vm-one"), "")
	if c.status != 202 {
		t.Fatalf("create: %d %s", c.status, c.raw)
	}
	uuid := serverOf(c)["uuid"].(string)
	got := do(t, b, "GET", "/1.3/server/"+uuid, nil, "")
	if got.status != 200 || serverOf(got)["state"] != "maintenance" {
		t.Fatalf("B does not see A's server: %d %s", got.status, got.raw)
	}
	clk.Advance(11 * time.Second)
	if st := serverOf(do(t, b, "GET", "/1.3/server/"+uuid, nil, ""))["state"]; st != "started" {
		t.Fatalf("state from stored timestamps: %v", st)
	}
	if a.CreateCount() != 1 || b.CreateCount() != 1 || b.Stock("fi-hel2", "GPU-8xCPU-64GB-1xL4") != 5 {
		t.Errorf("counts: %d %d stock %d", a.CreateCount(), b.CreateCount(), b.Stock("fi-hel2", "GPU-8xCPU-64GB-1xL4"))
	}
	// Faults set through one are seen by the other, and persist.
	if err := a.SetFaults(simulation.Faults{RateLimited: 1, RetryAfterSeconds: 2}); err != nil {
		t.Fatal(err)
	}
	r := do(t, b, "GET", "/1.3/zone", nil, "")
	if r.status != 429 || r.header.Get("Retry-After") != "2" {
		t.Fatalf("fault not shared: %d %v", r.status, r.header)
	}
	if do(t, a, "GET", "/1.3/zone", nil, "").status != 200 {
		t.Error("the storm did not end after one answer")
	}
	// A third server value started later (a new process) still sees everything.
	c3 := New(Options{Options: simulation.Options{StateDir: dir, Now: clk.Now}})
	if list := c3.Servers(); len(list) != 1 || list[0].State != "started" || list[0].Labels["hydra-name"] != "upcloud-vm-one" {
		t.Errorf("servers: %+v", list)
	}
	if _, err := os.Stat(filepath.Join(dir, "state.json")); err != nil {
		t.Error(err)
	}

	// Concurrent creates through both values are all kept (the file lock serialises them).
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			h := http.Handler(a)
			if i%2 == 1 {
				h = b
			}
			if c := do(t, h, "POST", "/1.3/server", testCreate(fmt.Sprintf("upcloud-vm-c%d", i)), ""); c.status != 202 {
				t.Errorf("create %d: %d %s", i, c.status, c.raw)
			}
		}(i)
	}
	wg.Wait()
	if n := a.CreateCount(); n != 5 {
		t.Errorf("create count %d, want 5", n)
	}
	if n := len(b.Servers()); n != 5 {
		t.Errorf("%d servers, want 5", n)
	}
}

func TestQuirks(t *testing.T) {
	clk := backendtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := New(Options{Options: simulation.Options{Now: clk.Now, BootDuration: 10 * time.Second}, StopDuration: 5 * time.Second, Username: "u", Password: "p", Token: "tok"})

	if r := do(t, s, "GET", "/1.3/plan", nil, "none"); r.status != 401 || !strings.Contains(string(r.raw), "AUTHENTICATION_FAILED") {
		t.Errorf("no auth: %d %s", r.status, r.raw)
	}
	if r := do(t, s, "GET", "/1.3/plan", nil, "Bearer tok"); r.status != 200 {
		t.Errorf("bearer: %d", r.status)
	}
	if r := do(t, s, "GET", "/1.3/plan", nil, "Bearer nope"); r.status != 401 {
		t.Errorf("bad bearer: %d", r.status)
	}

	c := do(t, s, "POST", "/1.3/server", testCreate("upcloud-vm-q"), "")
	srv := serverOf(c)
	if c.status != 202 || srv["state"] != "maintenance" || srv["progress"] != "0" || srv["core_number"] != "8" || srv["metadata"] != "yes" {
		t.Fatalf("create: %d %s", c.status, c.raw)
	}
	uuid := srv["uuid"].(string)
	if r := do(t, s, "POST", "/1.3/server/"+uuid+"/stop", map[string]any{"stop_server": map[string]any{"stop_type": "hard", "timeout": "60"}}, ""); r.status != 409 {
		t.Errorf("stop during maintenance: %d", r.status)
	}
	clk.Advance(10 * time.Second)
	if r := do(t, s, "DELETE", "/1.3/server/"+uuid+"/?storages=1", nil, ""); r.status != 409 || !strings.Contains(string(r.raw), "SERVER_STATE_ILLEGAL") {
		t.Errorf("delete while started: %d %s", r.status, r.raw)
	}
	r := do(t, s, "POST", "/1.3/server/"+uuid+"/stop", map[string]any{"stop_server": map[string]any{"stop_type": "hard", "timeout": "60"}}, "")
	if r.status != 200 || serverOf(r)["state"] != "started" {
		t.Errorf("stop answers the old state: %d %v", r.status, serverOf(r)["state"])
	}
	clk.Advance(5 * time.Second)
	if st := serverOf(do(t, s, "GET", "/1.3/server/"+uuid, nil, ""))["state"]; st != "stopped" {
		t.Errorf("after stop: %v", st)
	}
	// Without ?storages=1 the disk stays; the path works without the trailing slash and the /1.3 prefix too.
	if r := do(t, s, "DELETE", "/server/"+uuid, nil, ""); r.status != 204 || len(r.raw) != 0 {
		t.Errorf("delete: %d %s", r.status, r.raw)
	}
	if s.StorageCount() != 1 {
		t.Errorf("disks %d, want the orphan 1", s.StorageCount())
	}
	if r := do(t, s, "GET", "/1.3/server/"+uuid, nil, ""); r.status != 404 || !strings.Contains(string(r.raw), "SERVER_NOT_FOUND") {
		t.Errorf("get after delete: %d %s", r.status, r.raw)
	}
	if r := do(t, s, "GET", "/1.3/server/not-a-uuid", nil, ""); r.status != 400 || !strings.Contains(string(r.raw), "SERVER_INVALID") {
		t.Errorf("invalid uuid: %d %s", r.status, r.raw)
	}
	if r := do(t, s, "GET", "/1.3/nothing-here", nil, ""); r.status != 404 || !strings.Contains(string(r.raw), "ERROR_RESOURCE_NOT_FOUND") {
		t.Errorf("unknown path: %d %s", r.status, r.raw)
	}
	// Prices are per zone, in cents; GPU plans have storage_size 0.
	p := do(t, s, "GET", "/1.3/price", nil, "")
	if !strings.Contains(string(p.raw), `"server_plan_GPU-8xCPU-64GB-1xL40S":{"amount":1,"price":111.1607}`) {
		t.Errorf("price list lacks the L40S plan in cents")
	}
	pl := do(t, s, "GET", "/1.3/plan", nil, "")
	if !strings.Contains(string(pl.raw), `"gpu_amount":1,"gpu_model":"NVIDIA L40S","memory_amount":65536,"name":"GPU-8xCPU-64GB-1xL40S","public_traffic_out":12,"storage_size":0,"storage_tier":null`) {
		t.Errorf("GPU plan shape: %s", pl.raw)
	}
	av := do(t, s, "GET", "/1.3/device/availability", nil, "")
	if z, _ := av.body["fi-hel2"].(map[string]any); z == nil || z["gpu_plans"] == nil {
		t.Errorf("availability: %s", av.raw)
	}
}

// refusal is a request the emulator refuses: to the object uuid, with body, answered with status and
// the error code.
type refusal struct {
	name   string
	uuid   string
	body   any
	status int
	code   string
}

// wantRefused sends each refusal as method to path(uuid) and wants its status and error code.
func wantRefused(t *testing.T, s *Server, method string, path func(uuid string) string, refusals []refusal) {
	t.Helper()
	for _, tc := range refusals {
		if r := do(t, s, method, path(tc.uuid), tc.body, ""); r.status != tc.status || !strings.Contains(string(r.raw), tc.code) {
			t.Errorf("%s: %d %s, want %d %s", tc.name, r.status, r.raw, tc.status, tc.code)
		}
	}
}

// start serves a new emulator with Start on a loopback port for the test's lifetime and returns its
// API's base URL.
func start(t *testing.T) string {
	t.Helper()
	return backendtest.Start(t, New(Options{}).Start)
}

func TestStartServesTheAPI(t *testing.T) {
	base := start(t)
	req, _ := http.NewRequest("GET", base+"/zone", nil)
	req.SetBasicAuth("any", "thing")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasSuffix(base, "/1.3") {
		t.Fatalf("%s: %d", base, resp.StatusCode)
	}
}

func TestFaultsLatencyAndErrors(t *testing.T) {
	s := New(Options{})
	f := Faults{Faults: simulation.Faults{Latency: simulation.Duration(30 * time.Millisecond), ServerErrors: 1}, ServerErrorStatus: 502, Match: "GET /plan"}
	if err := s.SetCloudFaults(f); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if r := do(t, s, "GET", "/1.3/zone", nil, ""); r.status != 200 {
		t.Errorf("unmatched request hit by the fault: %d", r.status)
	}
	if el := time.Since(start); el < 30*time.Millisecond {
		t.Errorf("latency not added: %v", el)
	}
	if r := do(t, s, "GET", "/1.3/plan", nil, ""); r.status != 502 {
		t.Errorf("want 502, got %d", r.status)
	}
	if r := do(t, s, "GET", "/1.3/plan", nil, ""); r.status != 200 {
		t.Errorf("the 5xx storm did not end: %d", r.status)
	}
	if f, err := s.CloudFaults(); err != nil || f.ServerErrors != 0 || time.Duration(f.Latency) != 30*time.Millisecond || f.Match != "GET /plan" {
		t.Errorf("faults %+v %v", f, err)
	}
	// SetFaults (the shared vocabulary) replaces everything, UpCloud's extras included.
	if err := s.SetFaults(simulation.Faults{ServerErrors: 1}); err != nil {
		t.Fatal(err)
	}
	if f, _ := s.CloudFaults(); f.Match != "" || f.ServerErrorStatus != 0 || f.ServerErrors != 1 {
		t.Errorf("faults after SetFaults %+v", f)
	}
	if r := do(t, s, "GET", "/1.3/zone", nil, ""); r.status != 503 || !strings.Contains(string(r.raw), "SERVICE_UNAVAILABLE") {
		t.Errorf("want a 503 in UpCloud's error shape, got %d %s", r.status, r.raw)
	}
}

func TestSlowBoot(t *testing.T) {
	clk := backendtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := New(Options{Options: simulation.Options{Now: clk.Now, BootDuration: 10 * time.Second}})
	if err := s.SetCloudFaults(Faults{SlowBoot: simulation.Duration(5 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	uuid := serverOf(do(t, s, "POST", "/1.3/server", testCreate("upcloud-vm-slow"), ""))["uuid"].(string)
	clk.Advance(11 * time.Second)
	if st := serverOf(do(t, s, "GET", "/1.3/server/"+uuid, nil, ""))["state"]; st != "maintenance" {
		t.Errorf("slow boot over early: %v", st)
	}
	clk.Advance(5 * time.Second)
	if st := serverOf(do(t, s, "GET", "/1.3/server/"+uuid, nil, ""))["state"]; st != "started" {
		t.Errorf("after the slow boot: %v", st)
	}
}

// The SDK's recorded creates send no plan, no login user and a native template: the server is "custom"
// (1 core, 1024 MiB unless core_number and memory_amount say otherwise), and the answer carries the
// one-time password.
func TestCreateCustomServer(t *testing.T) {
	s := New(Options{})
	body := func(mod func(m map[string]any)) map[string]any {
		m := map[string]any{
			"zone": "fi-hel2", "title": "custom", "hostname": "custom.example.com", "metadata": "no", "password_delivery": "none",
			"storage_devices": map[string]any{"storage_device": []any{map[string]any{
				"action": "clone", "storage": DebianNativeTemplateUUID, "title": "disk1", "size": 10, "tier": "maxiops"}}},
		}
		if mod != nil {
			mod(m)
		}
		return map[string]any{"server": m}
	}
	cases := []struct {
		name         string
		mod          func(m map[string]any)
		status       int
		cores, memMi string
		password     bool
		code         string
	}{
		{"defaults", nil, 202, "1", "1024", true, ""},
		{"cores and memory as numbers", func(m map[string]any) { m["core_number"], m["memory_amount"] = 2, 4096 }, 202, "2", "4096", true, ""},
		{"cores and memory as strings", func(m map[string]any) { m["core_number"], m["memory_amount"] = "4", "8192" }, 202, "4", "8192", true, ""},
		{"no password when asked for none", func(m map[string]any) {
			m["login_user"] = map[string]any{"create_password": "no", "ssh_keys": map[string]any{"ssh_key": []any{"ssh-ed25519 AAAAtest"}}}
		}, 202, "1", "1024", false, ""},
		{"explicit custom plan", func(m map[string]any) { m["plan"] = "custom" }, 202, "1", "1024", true, ""},
		{"memory not whole GiB", func(m map[string]any) { m["memory_amount"] = 1500 }, 400, "", "", false, "MEMORY_AMOUNT_INVALID"},
		{"no disk size", func(m map[string]any) {
			m["storage_devices"].(map[string]any)["storage_device"].([]any)[0].(map[string]any)["size"] = 0
		}, 400, "", "", false, "SIZE_MISSING"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := do(t, s, "POST", "/1.3/server", body(tc.mod), "")
			if c.status != tc.status || (tc.code != "" && !strings.Contains(string(c.raw), tc.code)) {
				t.Fatalf("%d %s, want %d %s", c.status, c.raw, tc.status, tc.code)
			}
			if tc.status != 202 {
				return
			}
			srv := serverOf(c)
			if srv["plan"] != "custom" || srv["core_number"] != tc.cores || srv["memory_amount"] != tc.memMi {
				t.Errorf("server %v %v %v", srv["plan"], srv["core_number"], srv["memory_amount"])
			}
			if _, ok := srv["password"]; ok != tc.password {
				t.Errorf("password present %v, want %v", ok, tc.password)
			}
			if p, _ := srv["remote_access_password"].(string); p == "" {
				t.Error("no remote_access_password")
			}
			got := serverOf(do(t, s, "GET", "/1.3/server/"+srv["uuid"].(string), nil, ""))
			if _, ok := got["password"]; ok || got["core_number"] != tc.cores || got["remote_access_password"] != srv["remote_access_password"] {
				t.Errorf("details %v", got)
			}
		})
	}
}

func TestStorages(t *testing.T) {
	clk := backendtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := New(Options{Options: simulation.Options{Now: clk.Now, BootDuration: 10 * time.Second}})
	srv := serverOf(do(t, s, "POST", "/1.3/server", testCreate("upcloud-vm-disk"), ""))
	diskUUID := srv["storage_devices"].(map[string]any)["storage_device"].([]any)[0].(map[string]any)["storage"].(string)

	storages := func() []any {
		t.Helper()
		r := do(t, s, "GET", "/1.3/storage/private", nil, "")
		if r.status != 200 {
			t.Fatalf("private: %d %s", r.status, r.raw)
		}
		return r.body["storages"].(map[string]any)["storage"].([]any)
	}
	l := storages()
	if len(l) != 1 || l[0].(map[string]any)["state"] != "maintenance" || l[0].(map[string]any)["progress"] != "0" || l[0].(map[string]any)["type"] != "normal" {
		t.Fatalf("disk while cloning: %v", l)
	}
	clk.Advance(11 * time.Second)
	if d := storages()[0].(map[string]any); d["state"] != "online" || d["progress"] != nil {
		t.Errorf("disk after boot: %v", d)
	}
	g := do(t, s, "GET", "/1.3/storage/"+diskUUID, nil, "")
	if st := g.body["storage"].(map[string]any); g.status != 200 || st["servers"].(map[string]any)["server"].([]any)[0] != srv["uuid"] {
		t.Errorf("GET disk: %d %s", g.status, g.raw)
	}

	wantRefused(t, s, "POST", func(uuid string) string { return "/1.3/storage/" + uuid + "/templatize" }, []refusal{
		{"unknown storage", "01000000-0000-4000-a000-000000000000", map[string]any{"storage": map[string]any{"title": "t"}}, 404, "STORAGE_NOT_FOUND"},
		{"no title", diskUUID, map[string]any{"storage": map[string]any{}}, 400, "TITLE_INVALID"},
		{"no storage object", diskUUID, map[string]any{"title": "t"}, 400, "STORAGE_INVALID"},
	})
	r := do(t, s, "POST", "/1.3/storage/"+diskUUID+"/templatize", map[string]any{"storage": map[string]any{"title": "Templatized storage"}}, "")
	tmpl := r.body["storage"].(map[string]any)
	if r.status != 201 || tmpl["state"] != "maintenance" || tmpl["type"] != "template" || tmpl["access"] != "private" || tmpl["zone"] != "fi-hel2" || tmpl["size"] != float64(50) {
		t.Fatalf("templatize: %d %s", r.status, r.raw)
	}
	clk.Advance(20 * time.Second)
	got := do(t, s, "GET", "/1.3/storage/"+tmpl["uuid"].(string), nil, "")
	if st := got.body["storage"].(map[string]any); got.status != 200 || st["state"] != "online" || st["title"] != "Templatized storage" {
		t.Errorf("template: %d %s", got.status, got.raw)
	}
	if n := len(storages()); n != 2 {
		t.Errorf("%d private storages, want the disk and the template", n)
	}
	if tl := do(t, s, "GET", "/1.3/storage/template", nil, ""); !strings.Contains(string(tl.raw), "Templatized storage") {
		t.Errorf("the new template is not listed: %s", tl.raw)
	}
	if r := do(t, s, "GET", "/1.3/storage/01000000-0000-4000-a000-000000000000", nil, ""); r.status != 404 || !strings.Contains(string(r.raw), "STORAGE_NOT_FOUND") {
		t.Errorf("unknown storage: %d %s", r.status, r.raw)
	}
	if r := do(t, s, "DELETE", "/1.3/tag/testTag", nil, ""); r.status != 404 || !strings.Contains(string(r.raw), "The tag testTag does not exist.") {
		t.Errorf("tag: %d %s", r.status, r.raw)
	}
}

// The GPU plans name their GPUs as UpCloud writes them, and a GPU server's devices say the same.
func TestCatalogGPUNames(t *testing.T) {
	s := New(Options{Options: simulation.Options{BootDuration: time.Millisecond}})
	pl := do(t, s, "GET", "/1.3/plan", nil, "")
	models := map[string]bool{}
	for _, p := range pl.body["plans"].(map[string]any)["plan"].([]any) {
		if m, ok := p.(map[string]any)["gpu_model"].(string); ok {
			models[m] = true
		}
	}
	for _, want := range []string{ModelL4, ModelL40S, ModelH100, ModelB200} {
		if !models[want] {
			t.Errorf("no plan with gpu_model %q (%v)", want, models)
		}
	}
	body := testCreate("upcloud-vm-h100")
	body["server"].(map[string]any)["plan"] = "GPU-12xCPU-240GB-1xH100"
	c := do(t, s, "POST", "/1.3/server", body, "")
	devs := serverOf(c)["devices"].(map[string]any)["device"].([]any)
	if c.status != 202 || len(devs) != 1 || devs[0].(map[string]any)["model"] != ModelH100 {
		t.Errorf("H100 server: %d %s", c.status, c.raw)
	}
}

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

// object reads a body's one object as encoding/json reads a struct's field (the key in any case),
// numbers kept as json.Number, and answers anything else 400 <KEY>_INVALID.
func TestObject(t *testing.T) {
	type obj struct {
		Size json.Number `json:"size"`
		Any  any         `json:"any"`
	}
	cases := []struct {
		name, key, body string
		// code is the error code of the answer ("": the object is read, its size is size).
		code, msg, size string
	}{
		{name: "object", key: "storage", body: `{"storage": {"size": "10"}}`, size: "10"},
		{name: "number", key: "storage", body: `{"storage": {"size": 20}}`, size: "20"},
		{name: "key in another case", key: "storage", body: `{"Storage": {"size": 30}}`, size: "30"},
		{name: "missing", key: "storage", body: `{"title": "t"}`, code: "STORAGE_INVALID", msg: "The request body is not a valid storage object."},
		{name: "null", key: "server", body: `{"server": null}`, code: "SERVER_INVALID", msg: "The request body is not a valid server object."},
		{name: "not JSON", key: "storage_device", body: `{`, code: "STORAGE_DEVICE_INVALID", msg: "The request body is not a valid storage device object."},
		{name: "not the object's type", key: "storage", body: `{"storage": {"size": [1]}}`, code: "STORAGE_INVALID"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := http.NewRequest(http.MethodPost, "/", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			got, resp, ok := object[obj](r, tc.key)
			if tc.code == "" {
				if !ok || got.Size.String() != tc.size {
					t.Fatalf("got %+v, %v (%s); want size %s", got, ok, resp.body, tc.size)
				}
				return
			}
			if ok || resp.status != http.StatusBadRequest || !strings.Contains(string(resp.body), `"error_code":"`+tc.code+`"`) ||
				!strings.Contains(string(resp.body), tc.msg) {
				t.Errorf("got %+v, %v, %d %s; want 400 %s %q", got, ok, resp.status, resp.body, tc.code, tc.msg)
			}
		})
	}
	// Numbers anywhere in the object stay json.Number.
	r, _ := http.NewRequest(http.MethodPost, "/", strings.NewReader(`{"storage": {"any": 1.50}}`))
	if got, _, ok := object[obj](r, "storage"); !ok || got.Any != json.Number("1.50") {
		t.Errorf("any: %#v, want json.Number 1.50", got)
	}
}
