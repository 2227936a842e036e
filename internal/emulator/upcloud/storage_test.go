package upcloud

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// storageBody is a POST /storage body as UpCloud's SDK sends it (size a string, labels a bare array;
// the recorded storagelabels.yaml).
func storageBody(title, zone string, labels ...label) map[string]any {
	ls := []any{}
	for _, l := range labels {
		ls = append(ls, map[string]any{"key": l.Key, "value": l.Value})
	}
	return map[string]any{"storage": map[string]any{"size": "10", "tier": "maxiops", "title": title, "zone": zone, "labels": ls}}
}

func storageOf(c call) map[string]any { m, _ := c.body["storage"].(map[string]any); return m }

// newStorage creates a storage and returns its uuid.
func newStorage(t *testing.T, s *Server, title, zone string, labels ...label) string {
	t.Helper()
	c := do(t, s, "POST", "/1.3/storage", storageBody(title, zone, labels...), "")
	if c.status != http.StatusCreated {
		t.Fatalf("POST /storage: %d %s", c.status, c.raw)
	}
	u, _ := storageOf(c)["uuid"].(string)
	return u
}

// devicesOf lists a server answer's storage devices as storage uuid -> address.
func devicesOf(t *testing.T, srv map[string]any) map[string]string {
	t.Helper()
	sd, _ := srv["storage_devices"].(map[string]any)
	list, _ := sd["storage_device"].([]any)
	out := map[string]string{}
	for _, x := range list {
		d, _ := x.(map[string]any)
		u, _ := d["storage"].(string)
		a, _ := d["address"].(string)
		out[u] = a
	}
	return out
}

func TestStorageCreateAndList(t *testing.T) {
	s := New(Options{})
	c := do(t, s, "POST", "/1.3/storage", storageBody("data", "fi-hel2", label{"hydra-name", "upcloud-vm-data--ab12cd34"}), "")
	st := storageOf(c)
	if c.status != http.StatusCreated || st["state"] != "online" || st["type"] != "normal" || st["access"] != "private" ||
		st["size"] != float64(10) || st["zone"] != "fi-hel2" || st["tier"] != "maxiops" {
		t.Fatalf("create: %d %s", c.status, c.raw)
	}
	servers, _ := st["servers"].(map[string]any)
	if list, ok := servers["server"].([]any); !ok || len(list) != 0 {
		t.Errorf("a new storage's servers: %v", st["servers"])
	}
	if ls, ok := st["labels"].([]any); !ok || len(ls) != 1 {
		t.Errorf("a storage's labels are a bare array: %v", st["labels"])
	}
	uuid, _ := st["uuid"].(string)
	newStorage(t, s, "other", "fi-hel2", label{"color", "red"})

	for _, tc := range []struct {
		path string
		want int
	}{
		{"/1.3/storage?label=hydra-name", 1},
		{"/1.3/storage?label=hydra-name%3Dupcloud-vm-data--ab12cd34", 1},
		{"/1.3/storage?label=hydra-name%3Dother", 0},
		{"/1.3/storage/private?label=color", 1},
		{"/1.3/storage/private/normal", 2},
		{"/1.3/storage/normal?label=nothing", 0},
	} {
		c := do(t, s, "GET", tc.path, nil, "")
		wrap, _ := c.body["storages"].(map[string]any)
		list, _ := wrap["storage"].([]any)
		if c.status != http.StatusOK || len(list) != tc.want {
			t.Errorf("GET %s: %d, %d storages, want %d: %s", tc.path, c.status, len(list), tc.want, c.raw)
		}
	}
	if c := do(t, s, "GET", "/1.3/storage/"+uuid, nil, ""); c.status != http.StatusOK || storageOf(c)["title"] != "data" {
		t.Errorf("GET /storage/{uuid}: %d %s", c.status, c.raw)
	}

	wantRefused(t, s, "POST", func(string) string { return "/1.3/storage" }, []refusal{
		{name: "no size", body: map[string]any{"storage": map[string]any{"title": "x", "zone": "fi-hel2"}}, status: 400, code: "SIZE_MISSING"},
		{name: "too big", body: map[string]any{"storage": map[string]any{"size": 5000, "title": "x", "zone": "fi-hel2"}}, status: 400, code: "SIZE_INVALID"},
		{name: "bad tier", body: map[string]any{"storage": map[string]any{"size": 10, "tier": "ssd", "title": "x", "zone": "fi-hel2"}}, status: 400, code: "TIER_INVALID"},
		{name: "no title", body: map[string]any{"storage": map[string]any{"size": 10, "zone": "fi-hel2"}}, status: 400, code: "TITLE_MISSING"},
		{name: "unknown zone", body: map[string]any{"storage": map[string]any{"size": 10, "title": "x", "zone": "xx-nowhere1"}}, status: 404, code: "ZONE_NOT_FOUND"},
		{name: "reserved label", body: storageBody("x", "fi-hel2", label{"_os", "x"}), status: 400, code: "LABEL_INVALID"},
	})
}

// TestStorageAttachDetachRule: virtio disks attach to and detach from a started server, which is in
// maintenance for a while after; ide only on a stopped one; a storage of another zone, or one a server
// has, does not attach; an attached storage is not deleted.
func TestStorageAttachDetachRule(t *testing.T) {
	clk := backendtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := New(Options{Options: simulation.Options{Now: clk.Now, BootDuration: time.Second}, HotplugDuration: 2 * time.Second, StopDuration: time.Second})
	srv := serverOf(do(t, s, "POST", "/1.3/server", testCreate("vm1"), ""))
	id, _ := srv["uuid"].(string)
	data := newStorage(t, s, "data", "fi-hel2")
	elsewhere := newStorage(t, s, "far", "de-fra1")
	attach := func(storage, address string) call {
		return do(t, s, "POST", "/1.3/server/"+id+"/storage/attach",
			map[string]any{"storage_device": map[string]any{"type": "disk", "address": address, "storage": storage}}, "")
	}
	// In maintenance (booting) the server takes no disk.
	if c := attach(data, "virtio"); c.status != http.StatusConflict || !contains(c.raw, "SERVER_STATE_ILLEGAL") {
		t.Fatalf("attach while booting: %d %s", c.status, c.raw)
	}
	clk.Advance(2 * time.Second)
	if c := attach(data, "ide"); c.status != http.StatusConflict || !contains(c.raw, "IDE_HOTPLUG_UNSUPPORTED") {
		t.Errorf("ide attach to a started server: %d %s", c.status, c.raw)
	}
	if c := attach(elsewhere, "virtio"); c.status != http.StatusConflict || !contains(c.raw, "ZONE_MISMATCH") {
		t.Errorf("attach of another zone's storage: %d %s", c.status, c.raw)
	}
	c := attach(data, "virtio")
	if c.status != http.StatusOK || devicesOf(t, serverOf(c))[data] != "virtio:1" {
		t.Fatalf("hot-plug attach: %d %s", c.status, c.raw)
	}
	if got := serverOf(do(t, s, "GET", "/1.3/server/"+id, nil, ""))["state"]; got != "maintenance" {
		t.Errorf("right after a hot-plug the server is %v, want maintenance", got)
	}
	if c := do(t, s, "GET", "/1.3/storage/"+data, nil, ""); !contains(c.raw, id) {
		t.Errorf("the storage does not name its server: %s", c.raw)
	}
	if c := do(t, s, "DELETE", "/1.3/storage/"+data, nil, ""); c.status != http.StatusConflict || !contains(c.raw, "STORAGE_ATTACHED") {
		t.Errorf("delete of an attached storage: %d %s", c.status, c.raw)
	}
	clk.Advance(3 * time.Second)
	srv2 := serverOf(do(t, s, "POST", "/1.3/server", testCreate("vm2"), ""))
	id2, _ := srv2["uuid"].(string)
	clk.Advance(2 * time.Second)
	if c := do(t, s, "POST", "/1.3/server/"+id2+"/storage/attach",
		map[string]any{"storage_device": map[string]any{"address": "virtio", "storage": data}}, ""); c.status != http.StatusConflict || !contains(c.raw, "STORAGE_ATTACHED") {
		t.Errorf("attach of a storage another server has: %d %s", c.status, c.raw)
	}
	detach := func(address string) call {
		return do(t, s, "POST", "/1.3/server/"+id+"/storage/detach", map[string]any{"storage_device": map[string]any{"address": address}}, "")
	}
	if c := detach("virtio:1"); c.status != http.StatusOK || devicesOf(t, serverOf(c))[data] != "" {
		t.Fatalf("hot-plug detach: %d %s", c.status, c.raw)
	}
	clk.Advance(3 * time.Second)
	if c := detach("virtio:1"); c.status != http.StatusConflict || !contains(c.raw, "DEVICE_ADDRESS_NOT_IN_USE") {
		t.Errorf("second detach: %d %s", c.status, c.raw)
	}
	// Stopped, the server takes an ide disk.
	do(t, s, "POST", "/1.3/server/"+id+"/stop", map[string]any{"stop_server": map[string]any{"stop_type": "hard"}}, "")
	clk.Advance(2 * time.Second)
	if c := attach(data, "ide"); c.status != http.StatusOK || devicesOf(t, serverOf(c))[data] != "ide:0:0" {
		t.Errorf("ide attach to a stopped server: %d %s", c.status, c.raw)
	}
	if c := detach("ide:0:0"); c.status != http.StatusOK {
		t.Errorf("ide detach from a stopped server: %d %s", c.status, c.raw)
	}
	if c := do(t, s, "DELETE", "/1.3/storage/"+data, nil, ""); c.status != http.StatusNoContent {
		t.Errorf("delete of a detached storage: %d %s", c.status, c.raw)
	}
	if c := do(t, s, "DELETE", "/1.3/storage/"+data, nil, ""); c.status != http.StatusNotFound || !contains(c.raw, "STORAGE_NOT_FOUND") {
		t.Errorf("second delete: %d %s", c.status, c.raw)
	}
}

// TestStorageAtCreateAndServerDelete: a create attaches storages after its clone; deleting the server
// with ?storages=1 deletes every storage it has, without it leaves them detached.
func TestStorageAtCreateAndServerDelete(t *testing.T) {
	for _, tc := range []struct {
		name     string
		query    string
		wantKept bool
	}{
		{"storages=1 deletes them all", "?storages=1", false},
		{"a plain delete keeps them", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := backendtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			s := New(Options{Options: simulation.Options{Now: clk.Now, BootDuration: time.Second}, StopDuration: time.Second})
			a, b := newStorage(t, s, "a", "fi-hel2"), newStorage(t, s, "b", "fi-hel2")
			body := testCreate("vm")
			devs := body["server"].(map[string]any)["storage_devices"].(map[string]any)
			devs["storage_device"] = append(devs["storage_device"].([]any),
				map[string]any{"action": "attach", "storage": a, "address": "virtio", "type": "disk"},
				map[string]any{"action": "attach", "storage": b})
			c := do(t, s, "POST", "/1.3/server", body, "")
			got := devicesOf(t, serverOf(c))
			if c.status != http.StatusAccepted || got[a] != "virtio:1" || got[b] != "virtio:2" || len(got) != 3 {
				t.Fatalf("create with attached storages: %d %v %s", c.status, got, c.raw)
			}
			id, _ := serverOf(c)["uuid"].(string)
			clk.Advance(2 * time.Second)
			do(t, s, "POST", "/1.3/server/"+id+"/stop", map[string]any{"stop_server": map[string]any{"stop_type": "hard"}}, "")
			clk.Advance(2 * time.Second)
			if c := do(t, s, "DELETE", "/1.3/server/"+id+"/"+tc.query, nil, ""); c.status != http.StatusNoContent {
				t.Fatalf("delete: %d %s", c.status, c.raw)
			}
			for _, u := range []string{a, b} {
				c := do(t, s, "GET", "/1.3/storage/"+u, nil, "")
				kept := c.status == http.StatusOK
				if kept != tc.wantKept {
					t.Errorf("storage %s after the delete: %d %s", u, c.status, c.raw)
				}
				if kept && contains(c.raw, id) {
					t.Errorf("a kept storage still names the deleted server: %s", c.raw)
				}
			}
			if n, want := s.StorageCount(), map[bool]int{true: 3, false: 0}[tc.wantKept]; n != want {
				t.Errorf("%d storages left, want %d (the server's own disk goes with storages=1 only)", n, want)
			}
		})
	}
	s := New(Options{})
	other := newStorage(t, s, "far", "de-fra1")
	body := testCreate("vm")
	devs := body["server"].(map[string]any)["storage_devices"].(map[string]any)
	devs["storage_device"] = append(devs["storage_device"].([]any), map[string]any{"action": "attach", "storage": other})
	if c := do(t, s, "POST", "/1.3/server", body, ""); c.status != http.StatusConflict || !contains(c.raw, "ZONE_MISMATCH") {
		t.Errorf("create with another zone's storage: %d %s", c.status, c.raw)
	}
	if st, _ := s.Stats(); st.Created != 0 || len(st.Live) != 0 {
		t.Errorf("a refused create made a server: %+v", st)
	}
}

// contains reports whether an answer's body holds s.
func contains(raw []byte, s string) bool { return strings.Contains(string(raw), s) }

// recordedStorage is testdata/storage-recorded.json: storage exchanges of UpCloud's SDK recordings.
type recordedStorage struct {
	Exchanges []struct {
		Source struct {
			Path             string `json:"path"`
			InteractionIndex int    `json:"interaction_index"`
		} `json:"source"`
		Request struct {
			Method string         `json:"method"`
			URL    string         `json:"url"`
			Body   map[string]any `json:"body"`
		} `json:"request"`
		Response struct {
			Status int            `json:"status"`
			Body   map[string]any `json:"body"`
		} `json:"response"`
	} `json:"exchanges"`
}

// keysOf is the keys of an object.
func keysOf(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// sameKeys wants got to have exactly the recorded keys, but for those extra (newer answers') and
// those missing (what the emulator does not keep).
func sameKeys(t *testing.T, what string, recorded, got map[string]any, extra, missing []string) {
	t.Helper()
	for _, k := range keysOf(recorded) {
		if _, ok := got[k]; !ok && !slices.Contains(missing, k) {
			t.Errorf("%s: the emulator's answer lacks the recorded %q (has %v)", what, k, keysOf(got))
		}
	}
	for _, k := range keysOf(got) {
		if _, ok := recorded[k]; !ok && !slices.Contains(extra, k) {
			t.Errorf("%s: the emulator's answer has %q, the recording does not (%v)", what, k, keysOf(recorded))
		}
	}
}

// TestStorageAnswersHaveTheRecordedShape sends the recorded storage requests of UpCloud's SDK
// (create, label listing, attach, detach, delete) to the emulator and holds its answers to the
// recorded status and keys. The emulator keeps no backup rules; its server devices carry labels and
// storage_encrypted, as the 2025 recordings' devices do (server.create-2025.202.json).
func TestStorageAnswersHaveTheRecordedShape(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "storage-recorded.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec recordedStorage
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatal(err)
	}
	clk := backendtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := New(Options{Options: simulation.Options{Now: clk.Now, BootDuration: time.Second}, StopDuration: time.Second})
	srv := serverOf(do(t, s, "POST", "/1.3/server", testCreate("vm"), ""))
	server, _ := srv["uuid"].(string)
	clk.Advance(2 * time.Second)
	ids := map[string]string{}
	for _, x := range rec.Exchanges {
		what := fmt.Sprintf("%s #%d %s %s", x.Source.Path, x.Source.InteractionIndex, x.Request.Method, x.Request.URL)
		u, err := url.Parse(x.Request.URL)
		if err != nil {
			t.Fatal(err)
		}
		if id := PathUUID(u.Path); id != "" && ids[id] == "" {
			ids[id] = server // the recordings' only uuid not made here is their server's
		}
		body := x.Request.Body
		if sd, ok := body["storage_device"].(map[string]any); ok && sd["storage"] != nil {
			recorded := sd["storage"].(string)
			if ids[recorded] == "" {
				ids[recorded] = newStorage(t, s, "Test storage", "fi-hel2") // made in an exchange not kept
			}
			sd["storage"] = ids[recorded]
		}
		clk.Advance(3 * time.Second) // past the maintenance of a hot-plug before
		c := do(t, s, x.Request.Method, ReplayURL("", u.Path, u.RawQuery, ids), body, "")
		if c.status != x.Response.Status {
			t.Fatalf("%s: %d %s, recorded %d", what, c.status, c.raw, x.Response.Status)
		}
		switch {
		case x.Response.Body["storage"] != nil:
			got, want := storageOf(c), x.Response.Body["storage"].(map[string]any)
			ids[want["uuid"].(string)] = got["uuid"].(string)
			sameKeys(t, what, want, got, nil, []string{"backup_rule"})
		case x.Response.Body["storages"] != nil:
			wl := x.Response.Body["storages"].(map[string]any)["storage"].([]any)
			gw, _ := c.body["storages"].(map[string]any)
			gl, _ := gw["storage"].([]any)
			if len(gl) != len(wl) {
				t.Fatalf("%s: %d storages, recorded %d", what, len(gl), len(wl))
			}
			for i := range wl {
				sameKeys(t, what, wl[i].(map[string]any), gl[i].(map[string]any), nil, nil)
			}
		case x.Response.Body["server"] != nil:
			wd := x.Response.Body["server"].(map[string]any)["storage_devices"].(map[string]any)["storage_device"].([]any)
			gs, _ := serverOf(c)["storage_devices"].(map[string]any)
			gd, _ := gs["storage_device"].([]any)
			if len(gd) != len(wd) {
				t.Fatalf("%s: %d devices, recorded %d: %s", what, len(gd), len(wd), c.raw)
			}
			for i := range wd {
				sameKeys(t, what, wd[i].(map[string]any), gd[i].(map[string]any), []string{"labels", "storage_encrypted"}, nil)
			}
		}
	}
}
