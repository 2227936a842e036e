package upcloud

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/upcloud"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// requestLog serves an emulator and keeps every request's method, path with query, and body.
type requestLog struct {
	next http.Handler
	mu   sync.Mutex
	reqs []string
	body map[string][]byte
}

func (l *requestLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	line := r.Method + " " + strings.TrimPrefix(r.URL.RequestURI(), emu.APIPrefix)
	l.mu.Lock()
	l.reqs = append(l.reqs, line)
	if l.body == nil {
		l.body = map[string][]byte{}
	}
	l.body[r.Method+" "+strings.TrimPrefix(r.URL.Path, emu.APIPrefix)] = b
	l.mu.Unlock()
	l.next.ServeHTTP(w, r)
}

func (l *requestLog) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.reqs)
}

// volumeEmulator serves a quick emulator (servers boot in 50 ms, stop in 30 ms) behind a request log and
// returns it with a backend against it.
func volumeEmulator(t *testing.T) (*emu.Server, *requestLog, *Backend) {
	t.Helper()
	srv := emu.New(emu.Options{Options: simulation.Options{BootDuration: 50 * time.Millisecond}, StopDuration: 30 * time.Millisecond,
		HotplugDuration: 30 * time.Millisecond, Username: testUser, Password: testPass})
	log := &requestLog{next: srv}
	return srv, log, newTestBackend(t, backendtest.Serve(t, log)+emu.APIPrefix, nil)
}

// volumeReq asks for a 50 GiB block volume named for resource in zone.
func volumeReq(resource, zone string) cloudprovider.VolumeRequest {
	owner := cloudprovider.Ownership{Resource: resource, Token: "ab12cd34"}
	return cloudprovider.VolumeRequest{Name: "upcloud-vm-" + resource + "--ab12cd34", Type: cloudprovider.VolumeBlock, Region: zone, SizeGB: 50, Owner: owner}
}

// waitRunning polls Get until the server is running.
func waitRunning(t *testing.T, b *Backend, id string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		inst, err := b.Get(context.Background(), id)
		if err == nil && inst.Status == cloudprovider.StatusRunning {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("server %s not running: %+v %v", id, inst, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCreateVolumeRequestShape: POST /storage carries what UpCloud's SDK sends in the recorded
// storagelabels.yaml ({"storage":{"size":"10","tier":"maxiops","title":...,"zone":"fi-hel2",
// "labels":[{"key":"color","value":"green"}]}}): the size as a string, the labels a bare array (hydra's
// name and ownership record), and the volume reads back with them.
func TestCreateVolumeRequestShape(t *testing.T) {
	_, log, b := volumeEmulator(t)
	req := volumeReq("data", "fi-hel2")
	v, err := b.CreateVolume(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Storage map[string]json.RawMessage `json:"storage"`
	}
	if err := json.Unmarshal(log.body["POST /storage"], &body); err != nil {
		t.Fatalf("POST /storage body %s: %v", log.body["POST /storage"], err)
	}
	want := map[string]string{"size": `"50"`, "tier": `"maxiops"`, "title": `"` + req.Name + `"`, "zone": `"fi-hel2"`}
	for k, w := range want {
		if string(body.Storage[k]) != w {
			t.Errorf("storage.%s = %s, want %s", k, body.Storage[k], w)
		}
	}
	var labels []Label
	if err := json.Unmarshal(body.Storage["labels"], &labels); err != nil {
		t.Fatalf("labels are not a bare array: %s", body.Storage["labels"])
	}
	got := map[string]string{}
	for _, l := range labels {
		got[l.Key] = l.Value
	}
	if got[NameLabel] != req.Name || got[cloudprovider.LabelOwner] != "ab12cd34" || got[cloudprovider.LabelResource] != "data" {
		t.Errorf("labels %v", got)
	}
	// 50 GiB x 0.031 cents x 672 h = 1041.6 euro cents = 10.416 EUR x 1.08 = 11.24928, up to 11.25 USD.
	if v.Name != req.Name || v.Region != "fi-hel2" || v.SizeGB != 50 || v.Owner != req.Owner || v.Type != cloudprovider.VolumeBlock ||
		v.PricePerMonth != money.MustFromFloat(11.25) || v.CreatedAt.IsZero() {
		t.Errorf("volume %+v", v)
	}
	if _, err := b.CreateVolume(context.Background(), cloudprovider.VolumeRequest{Name: "x", Type: cloudprovider.VolumeSharedFS, Region: "fi-hel2", SizeGB: 1}); cloudprovider.KindOf(err) != cloudprovider.ErrInvalid {
		t.Errorf("a shared_fs volume: %v, want an invalid-request error", err)
	}
	for _, size := range []int{0, 4097} {
		r := volumeReq("big", "fi-hel2")
		r.SizeGB = size
		if _, err := b.CreateVolume(context.Background(), r); cloudprovider.KindOf(err) != cloudprovider.ErrInvalid {
			t.Errorf("a %d GB volume: %v, want an invalid-request error", size, err)
		}
	}
	types, err := b.VolumeTypes(context.Background())
	if err != nil || len(types) != 1 || !slices.Contains(types[cloudprovider.VolumeBlock], "fi-hel2") || len(types[cloudprovider.VolumeSharedFS]) != 0 {
		t.Errorf("VolumeTypes %v %v: want block in the priced zones and no shared_fs", types, err)
	}
}

// TestStorageMonthly: a volume's month is storage_<tier> (euro cents per GiB-hour, the recorded GET
// /price of 2020) x GiB x 672 h, converted once (euros at 1.08, rounded up to the cent).
func TestStorageMonthly(t *testing.T) {
	var prices PriceList
	if err := json.Unmarshal(loadRecording(t, "price.list.200.json").Response.Body, &prices); err != nil {
		t.Fatal(err)
	}
	b := newTestBackend(t, "http://127.0.0.1:1", nil)
	for _, tc := range []struct {
		zone, tier string
		gib        int
		want       float64
	}{
		{"fi-hel1", "maxiops", 50, 11.25},    // 1041.6 cents -> 11.24928 USD
		{"fi-hel1", "hdd", 100, 10.53},       // 0.0145 x 100 x 672 = 974.4 cents -> 10.52352
		{"de-fra1", "hdd", 1, 0.06},          // 5.2416 cents -> 0.05660928
		{"de-fra1", "maxiops", 4096, 921.55}, // 85327.872 cents = 853.27872 EUR -> 921.5410176 USD
		{"uk-tst1", "maxiops", 50, 0},        // the test zone prices storage at 0
		{"xx-none1", "maxiops", 50, 0},       // no such zone
		{"fi-hel1", "gold", 50, 0},           // no such tier
	} {
		if got := b.storageMonthly(&prices, tc.zone, tc.tier, tc.gib); got != money.MustFromFloat(tc.want) {
			t.Errorf("%d GiB %s in %s: %v a month, want %v", tc.gib, tc.tier, tc.zone, got, tc.want)
		}
	}
	usd := prices
	usd.Prices.Currency = "USD"
	if got := b.storageMonthly(&usd, "fi-hel1", "maxiops", 50); got != money.MustFromFloat(10.416) {
		t.Errorf("a price list in dollars: %v, want 10.416 as written", got)
	}
}

func TestVirtioDevice(t *testing.T) {
	for _, tc := range []struct {
		address, uuid, want string
	}{
		// The recorded attachdetachstorage.yaml's storage, and UpCloud's CSI driver's own example
		// (f67db1ca-825b-40aa-a6f4-390ac6ff1b91 -> virtio-f67db1ca825b40aaa6f4).
		{"virtio:1", "019f3fda-d60d-4744-a69c-9eda9ca28b30", "/dev/disk/by-id/virtio-019f3fdad60d4744a69c"},
		{"virtio:15", "f67db1ca-825b-40aa-a6f4-390ac6ff1b91", "/dev/disk/by-id/virtio-f67db1ca825b40aaa6f4"},
		{"scsi:0:0", "019f3fda-d60d-4744-a69c-9eda9ca28b30", ""},
		{"ide:0:0", "019f3fda-d60d-4744-a69c-9eda9ca28b30", ""},
		{"virtio:1", "0123-4567", ""},
	} {
		got, err := virtioDevice(tc.address, tc.uuid)
		if got != tc.want || (err == nil) != (tc.want != "") {
			t.Errorf("%s %s: %q, %v; want %q", tc.address, tc.uuid, got, err, tc.want)
		}
	}
}

// TestVolumeOutlivesItsMachine: deleting a machine never deletes a volume, whatever the machine's disks
// look like: DELETE ?storages=1 goes only after a read of the server shows no storage but its own disk,
// and when hydra does not recognise the own disk every storage is detached and kept.
func TestVolumeOutlivesItsMachine(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		// make creates the machine with the volume attached and returns its id.
		make func(t *testing.T, b *Backend, vol string) string
		// ownDiskKept: the server's own disk is left (not recognised), not deleted.
		ownDiskKept bool
	}{
		{"hydra's machine", func(t *testing.T, b *Backend, vol string) string {
			offer := offerFor(t, b, "fi-hel2", "GPU-8xCPU-64GB-1xL40S")
			inst, err := b.CreateWithVolumes(ctx, cloudprovider.CreateRequest{Name: "upcloud-vm-m--ab12cd34", Offer: offer, SSHPublicKeys: []string{testKey}},
				[]cloudprovider.VolumeMount{{VolumeID: vol, MountPath: "/data"}})
			if err != nil {
				t.Fatal(err)
			}
			return inst.ID
		}, false},
		{"a machine whose own disk has another title", func(t *testing.T, b *Backend, vol string) string {
			return rawServer(t, b, "disk1", vol)
		}, true},
		{"a machine whose only disk is the volume", func(t *testing.T, b *Backend, vol string) string {
			id := rawServer(t, b, "disk1", vol)
			waitRunning(t, b, id)
			if _, err := b.client.StopServer(ctx, id, "hard", time.Minute); err != nil {
				t.Fatal(err)
			}
			waitState(t, b, id, "stopped")
			if _, err := b.client.DetachStorage(ctx, id, "virtio:0"); err != nil {
				t.Fatal(err)
			}
			return id
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, log, b := volumeEmulator(t)
			vol, err := b.CreateVolume(ctx, volumeReq("data", "fi-hel2"))
			if err != nil {
				t.Fatal(err)
			}
			id := tc.make(t, b, vol.ID)
			waitState(t, b, id, "")
			if err := b.Delete(ctx, id); err != nil {
				t.Fatalf("Delete: %v", err)
			}
			if _, err := b.Get(ctx, id); !cloudprovider.IsNotFound(err) {
				t.Fatalf("the machine after Delete: %v", err)
			}
			got, err := b.GetVolume(ctx, vol.ID)
			if err != nil || len(got.AttachedTo) != 0 {
				t.Fatalf("the volume after its machine's delete: %+v, %v", got, err)
			}
			want := 1 // the volume
			if tc.ownDiskKept {
				want = 2
			}
			if n := srv.StorageCount(); n != want {
				t.Errorf("%d storages left, want %d: %+v", n, want, srv.Storages())
			}
			// storages=1 only after a read of the server that shows no volume.
			lines := log.lines()
			del := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "DELETE /server/"+id) })
			detach := slices.IndexFunc(lines, func(l string) bool { return l == "POST /server/"+id+"/storage/detach" })
			if del < 0 || detach < 0 || detach > del || !slices.ContainsFunc(lines[detach:del], func(l string) bool { return l == "GET /server/"+id }) {
				t.Errorf("requests: detach at %d, delete at %d, want a detach, a read, then the delete: %v", detach, del, lines)
			}
			if err := b.DeleteVolume(ctx, vol.ID); err != nil {
				t.Errorf("DeleteVolume after the machine went: %v", err)
			}
		})
	}
}

// rawServer creates a server outside hydra's Create: its own disk titled title, the storage vol attached.
func rawServer(t *testing.T, b *Backend, title, vol string) string {
	t.Helper()
	cs := CreateServer{Zone: "fi-hel2", Title: "upcloud-vm-raw--ab12cd34", Hostname: "raw", Plan: "GPU-8xCPU-64GB-1xL40S", Metadata: true,
		Labels: Labels{{Key: NameLabel, Value: "upcloud-vm-raw--ab12cd34"}}, LoginUser: &LoginUser{Username: "root"}}
	cs.LoginUser.SSHKeys.SSHKey = []string{testKey}
	cs.StorageDevices.StorageDevice = []CreateStorageDevice{
		{Action: "clone", Storage: emu.GPUTemplateUUID, Title: title, Size: 50, Tier: "maxiops"}, attachDevice(vol)}
	s, err := b.client.CreateServerRequest(context.Background(), cs)
	if err != nil {
		t.Fatal(err)
	}
	return s.UUID
}

// waitState polls the server until its state is want ("": started or stopped).
func waitState(t *testing.T, b *Backend, id, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := b.client.GetServer(context.Background(), id)
		if err == nil && (s.State == want || (want == "" && (s.State == "started" || s.State == "stopped"))) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("server %s not %q: %+v %v", id, want, s, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCreateWithVolumes: the volumes go to the server at its create, on virtio, and appear at their
// by-id path; a volume of another zone, an unknown one, one another machine has, and a plan above the
// price cap are refused before anything is created.
func TestCreateWithVolumes(t *testing.T) {
	ctx := context.Background()
	srv, _, b := volumeEmulator(t)
	offer := offerFor(t, b, "fi-hel2", "GPU-8xCPU-64GB-1xL40S")
	vol, err := b.CreateVolume(ctx, volumeReq("data", "fi-hel2"))
	if err != nil {
		t.Fatal(err)
	}
	far, err := b.CreateVolume(ctx, volumeReq("far", "de-fra1"))
	if err != nil {
		t.Fatal(err)
	}
	mounts := func(ids ...string) []cloudprovider.VolumeMount {
		var out []cloudprovider.VolumeMount
		for _, id := range ids {
			out = append(out, cloudprovider.VolumeMount{VolumeID: id, MountPath: "/data"})
		}
		return out
	}
	req := func(name string, maxPrice money.USD) cloudprovider.CreateRequest {
		return cloudprovider.CreateRequest{Name: name, Offer: offer, SSHPublicKeys: []string{testKey}, MaxPricePerHour: maxPrice}
	}
	for _, tc := range []struct {
		name   string
		mounts []cloudprovider.VolumeMount
		max    money.USD
		want   cloudprovider.ErrorKind
	}{
		{"another zone", mounts(far.ID), 0, cloudprovider.ErrInvalid},
		{"unknown", mounts("0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"), 0, cloudprovider.ErrInvalid},
		{"twice", mounts(vol.ID, vol.ID), 0, cloudprovider.ErrInvalid},
		{"above the price cap", mounts(vol.ID), offer.PricePerHour - money.Cent, cloudprovider.ErrCapacity},
	} {
		if _, err := b.CreateWithVolumes(ctx, req("upcloud-vm-refused--ab12cd34", tc.max), tc.mounts); cloudprovider.KindOf(err) != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
	}
	if st, _ := srv.Stats(); st.Created != 0 {
		t.Fatalf("refused creates made servers: %+v", st)
	}

	inst, err := b.CreateWithVolumes(ctx, req("upcloud-vm-m--ab12cd34", offer.PricePerHour), mounts(vol.ID))
	if err != nil {
		t.Fatal(err)
	}
	if again, err := b.CreateWithVolumes(ctx, req("upcloud-vm-m--ab12cd34", 0), mounts(vol.ID)); err != nil || again.ID != inst.ID {
		t.Errorf("the create again: %+v, %v; want the same machine", again, err)
	}
	if _, err := b.CreateWithVolumes(ctx, req("upcloud-vm-other--ab12cd34", 0), mounts(vol.ID)); cloudprovider.KindOf(err) != cloudprovider.ErrInvalid {
		t.Errorf("a second machine with the attached volume: %v, want an invalid-request error", err)
	}
	got, err := b.GetVolume(ctx, vol.ID)
	if err != nil || !slices.Equal(got.AttachedTo, []string{inst.ID}) {
		t.Errorf("the volume: %+v, %v", got, err)
	}
	att, err := b.Attachment(ctx, inst, got, "/data")
	want := cloudprovider.Attachment{VolumeID: vol.ID, Type: cloudprovider.VolumeBlock, MountPath: "/data",
		Device: "/dev/disk/by-id/virtio-" + strings.ReplaceAll(vol.ID, "-", "")[:20]}
	if err != nil || att != want {
		t.Errorf("Attachment %+v, %v; want %+v", att, err, want)
	}
	if _, err := b.Attachment(ctx, inst, far, "/data"); cloudprovider.KindOf(err) != cloudprovider.ErrInvalid {
		t.Errorf("Attachment of a volume the machine lacks: %v, want an invalid-request error", err)
	}
	if err := b.DeleteVolume(ctx, vol.ID); cloudprovider.KindOf(err) != cloudprovider.ErrInvalid {
		t.Errorf("DeleteVolume of an attached volume: %v", err)
	}
	if n := srv.StorageCount(); n != 3 {
		t.Errorf("%d storages, want the two volumes and the machine's disk", n)
	}
}

// TestOwnDisk: the server's own disk is the one titled "<name>-disk", or its only storage when a read
// shows that storage carries no hydra-name label; a volume is never taken for it.
func TestOwnDisk(t *testing.T) {
	ctx := context.Background()
	_, _, b := volumeEmulator(t)
	vol, err := b.CreateVolume(ctx, volumeReq("data", "fi-hel2"))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := b.client.CreateStorage(ctx, CreateStorage{Size: 10, Title: "by hand", Zone: "fi-hel2"})
	if err != nil {
		t.Fatal(err)
	}
	dev := func(uuid, title string) ServerStorageDevice {
		return ServerStorageDevice{Storage: uuid, StorageTitle: title, Address: "virtio:0"}
	}
	server := func(devs ...ServerStorageDevice) *Server {
		s := &Server{UUID: "00000000-0000-4000-8000-000000000001", Title: "vm", Labels: Labels{{Key: NameLabel, Value: "upcloud-vm-x--ab12cd34"}}}
		s.StorageDevices.StorageDevice = devs
		return s
	}
	for _, tc := range []struct {
		name string
		s    *Server
		want string
	}{
		{"titled", server(dev("a", "upcloud-vm-x--ab12cd34-disk"), dev(vol.ID, vol.Name)), "a"},
		{"titled twice", server(dev("a", "upcloud-vm-x--ab12cd34-disk"), dev("b", "upcloud-vm-x--ab12cd34-disk")), ""},
		{"untitled among several", server(dev("a", "disk1"), dev(vol.ID, vol.Name)), ""},
		{"the only one, unlabelled", server(dev(plain.UUID, "disk1")), plain.UUID},
		{"the only one, a volume", server(dev(vol.ID, "disk1")), ""},
		{"none", server(), ""},
	} {
		if got, err := b.ownDisk(ctx, tc.s); err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

// TestRecordedStorageNotFound: UpCloud's recorded answer to a storage that does not exist (404
// STORAGE_NOT_FOUND) is a volume that is gone: GetVolume says not found, DeleteVolume succeeds.
func TestRecordedStorageNotFound(t *testing.T) {
	rs := &replayServer{x: loadRecording(t, "error.storage-not-found.404.json")}
	b := newTestBackend(t, serveReplay(t, rs), nil)
	const id = "0160e290-c379-4183-9f50-586ac8b41500" // the recorded request's uuid
	if _, err := b.GetVolume(context.Background(), id); !cloudprovider.IsNotFound(err) {
		t.Errorf("GetVolume: %v, want a not-found error", err)
	}
	if err := b.DeleteVolume(context.Background(), id); err != nil {
		t.Errorf("DeleteVolume: %v, want success", err)
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, r := range rs.reqs {
		if r.Method != http.MethodGet || r.URL.Path != "/1.3/storage/"+id {
			t.Errorf("request %s %s; want only reads of the storage (nothing deleted)", r.Method, r.URL.Path)
		}
	}
}
