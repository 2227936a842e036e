package primeintellect

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/primeintellect"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// diskReq asks for a block disk in a data center.
func diskReq(name, region string, size int) cloudprovider.VolumeRequest {
	return cloudprovider.VolumeRequest{Name: name, Type: cloudprovider.VolumeBlock, Region: region, SizeGB: size}
}

// TestVolumeTypesAndCreate: block volumes in every data center that sells disks (a place without a data
// center, or a provider without disk prices, gives none); what is refused before asking Prime; a disk
// created from the place's provider, priced per month from its priceHr, and found again by name.
func TestVolumeTypesAndCreate(t *testing.T) {
	e := newEnv(t, emu.Options{})
	b := e.backend(t, nil)
	ctx := context.Background()
	types, err := b.VolumeTypes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(types) != 1 || len(types[cloudprovider.VolumeBlock]) == 0 {
		t.Fatalf("volume types %v, want block only", types)
	}
	regions := types[cloudprovider.VolumeBlock]
	for _, want := range []string{"US-KS-2", "FIN-01", "NORWAY-1"} {
		if !slices.Contains(regions, want) {
			t.Errorf("no block volumes in %s: %v", want, regions)
		}
	}
	// lambdalabs' us-east-1 prices no disk; runpod's null data center cannot be matched to an offer.
	for _, not := range []string{"us-east-1", "united_states", "US", ""} {
		if slices.Contains(regions, not) {
			t.Errorf("block volumes in %q: %v", not, regions)
		}
	}

	for _, tc := range []struct {
		name string
		req  cloudprovider.VolumeRequest
	}{
		{"shared_fs", cloudprovider.VolumeRequest{Name: "pi-vm-a--abcdefgh", Type: cloudprovider.VolumeSharedFS, Region: "US-KS-2", SizeGB: 10}},
		{"no size", diskReq("pi-vm-a--abcdefgh", "US-KS-2", 0)},
		{"no disks there", diskReq("pi-vm-a--abcdefgh", "us-east-1", 10)},
		{"too large", diskReq("pi-vm-a--abcdefgh", "US-KS-2", 100000)},
		{"no name", diskReq("", "US-KS-2", 10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := b.CreateVolume(ctx, tc.req)
			wantKind(t, err, cloudprovider.ErrInvalid)
		})
	}
	if n := len(e.emu.Disks()); n != 0 {
		t.Fatalf("refused creates made %d disks", n)
	}

	v, err := b.CreateVolume(ctx, diskReq("pi-vm-data--abcdefgh", "US-KS-2", 50))
	if err != nil {
		t.Fatal(err)
	}
	// runpod sells disks in US-KS-2 at 0.00014 $/GB/h: 50 GB × 0.00014 × 730 h.
	if want := money.MustFromFloat(50 * 0.00014 * HoursPerMonth); v.PricePerMonth != want {
		t.Errorf("price %v a month, want %v", v.PricePerMonth, want)
	}
	if v.Region != "US-KS-2" || v.SizeGB != 50 || v.Type != cloudprovider.VolumeBlock || v.Owner != (cloudprovider.Ownership{}) {
		t.Errorf("volume %+v", v)
	}
	if d := e.emu.Disks(); len(d) != 1 || d[0].Provider != "runpod" || d[0].DataCenter != "US-KS-2" {
		t.Errorf("disks at the emulator %+v", d)
	}
	again, err := b.CreateVolume(ctx, diskReq("pi-vm-data--abcdefgh", "US-KS-2", 50))
	if err != nil || again.ID != v.ID {
		t.Errorf("a second create of the name: %+v %v", again, err)
	}
	_, err = b.CreateVolume(ctx, diskReq("pi-vm-data--abcdefgh", "FIN-01", 50))
	wantKind(t, err, cloudprovider.ErrInvalid)
}

// TestCreateWithDisks: a pod created with a disk names it in `disks` and is placed co-located with it
// (the availability read carries disks=); a disk of another data center or provider, or an unknown one,
// is refused before any pod is created.
func TestCreateWithDisks(t *testing.T) {
	e := newEnv(t, emu.Options{})
	b, offers := e.backendOffers(t, nil)
	ctx := context.Background()
	i := slices.IndexFunc(offers, func(o cloudprovider.Offer) bool {
		return o.Region == "US-KS-2" && o.Details[DetailProvider] == "runpod" && o.GPUCount == 1 && !o.Spot
	})
	if i < 0 {
		t.Fatal("no runpod offer in US-KS-2")
	}
	ks2 := offers[i]
	fin := findOffer(t, offers, "datacrunch", "H100_80GB", 1, false)
	disk, err := b.CreateVolume(ctx, diskReq("pi-vm-data--abcdefgh", "US-KS-2", 20))
	if err != nil {
		t.Fatal(err)
	}
	finDisk, err := b.CreateVolume(ctx, diskReq("pi-vm-fin--abcdefgh", "FIN-01", 20))
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name  string
		offer cloudprovider.Offer
		disk  string
	}{
		{"other data center", fin, disk.ID},
		{"other data center the other way", ks2, finDisk.ID},
		{"unknown disk", ks2, "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := b.CreateWithVolumes(ctx, createReq(tc.offer, "pi-vm-x--abcdefgh"), []cloudprovider.VolumeMount{{VolumeID: tc.disk, MountPath: "/data"}})
			wantKind(t, err, cloudprovider.ErrInvalid)
		})
	}
	// Another provider in the disk's data center: the offer's region matches, its provider does not.
	other := ks2
	other.Details = map[string]string{}
	for k, v := range ks2.Details {
		other.Details[k] = v
	}
	other.Details[DetailProvider] = "hyperstack"
	_, err = b.CreateWithVolumes(ctx, createReq(other, "pi-vm-y--abcdefgh"), []cloudprovider.VolumeMount{{VolumeID: disk.ID}})
	wantKind(t, err, cloudprovider.ErrInvalid)
	if n := len(e.emu.Pods()); n != 0 || e.Requests("POST /api/v1/pods") != 0 {
		t.Fatalf("refused launches made %d pods", n)
	}

	inst, err := b.CreateWithVolumes(ctx, createReq(ks2, "pi-vm-ok--abcdefgh"), []cloudprovider.VolumeMount{{VolumeID: disk.ID, MountPath: "/data"}})
	if err != nil {
		t.Fatal(err)
	}
	reqs := e.emu.CreateRequests()
	var body struct {
		Disks []string `json:"disks"`
	}
	if err := json.Unmarshal(reqs[len(reqs)-1], &body); err != nil || !slices.Equal(body.Disks, []string{disk.ID}) {
		t.Errorf("the create named disks %v (%v), want [%s]", body.Disks, err, disk.ID)
	}
	if q := (AvailabilityFilter{GPUType: "A100_80GB", Disks: []string{"a", "b"}}).query(); !slices.Equal(q["disks"], []string{"a", "b"}) {
		t.Errorf("the availability query %v does not repeat disks", q)
	}
	got, err := b.GetVolume(ctx, disk.ID)
	if err != nil || !slices.Equal(got.AttachedTo, []string{inst.ID}) {
		t.Errorf("the disk after the launch: %+v %v", got, err)
	}
	err = b.DeleteVolume(ctx, disk.ID)
	wantKind(t, err, cloudprovider.ErrInvalid)
	if _, err := b.GetVolume(ctx, disk.ID); err != nil {
		t.Errorf("a refused delete lost the disk: %v", err)
	}

	// Mounted by Prime at /workspace once the pod runs, whatever path was asked.
	_, err = b.Attachment(ctx, inst, got, "/data")
	wantKind(t, err, cloudprovider.ErrOther)
	e.clock.Advance(time.Minute)
	a, err := b.Attachment(ctx, inst, got, "/data")
	if err != nil || a != (cloudprovider.Attachment{VolumeID: disk.ID, Type: cloudprovider.VolumeBlock, MountPath: "/workspace", MountedByCloud: true}) {
		t.Errorf("attachment %+v %v", a, err)
	}
	_, err = b.Attachment(ctx, inst, finDisk, "/data")
	wantKind(t, err, cloudprovider.ErrInvalid)
}

// TestAttachment reads attachedResources as Prime's document shapes them.
func TestAttachment(t *testing.T) {
	const id = "d-1"
	for _, tc := range []struct {
		name      string
		resources string
		want      cloudprovider.Attachment
		fails     bool
		kind      cloudprovider.ErrorKind // of the error, when it fails
	}{
		{"mounted", `[{"resourceType":"DISK","id":"d-1","status":"MOUNTED","mountPath":"/mnt/disk","size":"50"}]`,
			cloudprovider.Attachment{VolumeID: id, Type: cloudprovider.VolumeBlock, MountPath: "/mnt/disk", MountedByCloud: true}, false, 0},
		{"mounted at the default", `[{"resourceType":"DISK","id":"d-1","status":"MOUNTED"}]`,
			cloudprovider.Attachment{VolumeID: id, Type: cloudprovider.VolumeBlock, MountPath: "/workspace", MountedByCloud: true}, false, 0},
		{"attached as a device", `[{"resourceType":"DISK","id":"d-1","status":"ATTACHED","resourcePath":"/dev/vdb"}]`,
			cloudprovider.Attachment{VolumeID: id, Type: cloudprovider.VolumeBlock, MountPath: "/data", Device: "/dev/vdb"}, false, 0},
		{"attached, no device", `[{"resourceType":"DISK","id":"d-1","status":"ATTACHED"}]`, cloudprovider.Attachment{}, true, cloudprovider.ErrOther},
		{"unattached", `[{"resourceType":"DISK","id":"d-1","status":"UNATTACHED"}]`, cloudprovider.Attachment{}, true, cloudprovider.ErrOther},
		{"another disk", `[{"resourceType":"DISK","id":7,"status":"MOUNTED"}]`, cloudprovider.Attachment{}, true, cloudprovider.ErrInvalid},
		{"none", `null`, cloudprovider.Attachment{}, true, cloudprovider.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p Pod
			if err := json.Unmarshal([]byte(`{"id":"p","attachedResources":`+tc.resources+`}`), &p); err != nil {
				t.Fatal(err)
			}
			got, err := attachment(p.AttachedResources, p.ID, id, "/data")
			if tc.fails {
				wantKind(t, err, tc.kind)
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %+v %v, want %+v", got, err, tc.want)
			}
		})
	}
}

// TestRecordedDiskPlaces serves Prime's recorded /availability/disks answer: block volumes in the
// recorded data centers (runpod's US-WA-1, hyperstack's NORWAY-1, crusoecloud's eu-iceland1-a), none
// for dc_roan's place without a data center; a disk asked in NORWAY-1 is created from hyperstack there.
func TestRecordedDiskPlaces(t *testing.T) {
	disks := loadRecorded(t, "capture.availability-disks.200.json")
	var created []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch path := strings.TrimRight(r.URL.Path, "/"); {
		case path == disks.Request.Path:
			_, _ = w.Write(disks.Response.Body)
		case r.Method == http.MethodPost && path == "/api/v1/disks":
			// A minimal APIDiskConfig: the recorded place's price, 50 GB at 0.000097 $/GB/h.
			created, _ = io.ReadAll(r.Body)
			_, _ = w.Write([]byte(`{"id":"9b1c","name":"pi-vm-d--abcdefgh","status":"PROVISIONING","providerType":"hyperstack","size":50,` +
				`"info":{"country":"NO","dataCenterId":"NORWAY-1"},"priceHr":0.00485,"pods":[],"clusters":[],"userId":"u"}`))
		case r.Method == http.MethodGet && path == "/api/v1/disks":
			_, _ = w.Write([]byte(`{"data":[],"total_count":0,"offset":0,"limit":100}`))
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"detail":"Not Found"}`))
		}
	}))
	t.Cleanup(srv.Close)
	cfg := Config{APIKey: "k", BaseURL: srv.URL, Tuning: backendtest.Unlimited}
	b := backendtest.Must(New(cfg, backendtest.Inventory(t), nil))(t)
	types, err := b.VolumeTypes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := types[cloudprovider.VolumeBlock]; len(types) != 1 || !slices.Equal(got, []string{"NORWAY-1", "US-WA-1", "eu-iceland1-a"}) {
		t.Fatalf("volume types %v", types)
	}
	v, err := b.CreateVolume(context.Background(), diskReq("pi-vm-d--abcdefgh", "NORWAY-1", 50))
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(created, &body); err != nil {
		t.Fatal(err)
	}
	want := `{"disk":{"dataCenterId":"NORWAY-1","country":"NO","name":"pi-vm-d--abcdefgh","size":50},"provider":{"type":"hyperstack"}}`
	var wantBody map[string]any
	_ = json.Unmarshal([]byte(want), &wantBody)
	if !reflect.DeepEqual(body, wantBody) {
		t.Errorf("create body %s, want %s", created, want)
	}
	if v.ID != "9b1c" || v.Region != "NORWAY-1" || v.PricePerMonth != money.MustFromFloat(0.00485*HoursPerMonth) {
		t.Errorf("volume %+v", v)
	}
}
