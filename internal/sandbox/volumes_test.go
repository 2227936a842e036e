package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox/simhost"
)

// volumeRequest asks for a volume of resource name (its cloud-side name carries a token).
func volumeRequest(name string, typ cloudprovider.VolumeType, region string, sizeGB int) cloudprovider.VolumeRequest {
	owner := cloudprovider.Ownership{Resource: name, Token: cloudprovider.OwnerToken(name, 0)}
	return cloudprovider.VolumeRequest{Name: "sbx-vm-" + name + "--" + owner.Token, Type: typ, Region: region, SizeGB: sizeGB, Owner: owner}
}

func mustVolume(t *testing.T, b *Backend, req cloudprovider.VolumeRequest) cloudprovider.Volume {
	t.Helper()
	v, err := b.CreateVolume(context.Background(), req)
	if err != nil {
		t.Fatalf("CreateVolume(%s): %v", req.Name, err)
	}
	return v
}

func TestVolumeTypesFromCatalog(t *testing.T) {
	both := []cloudprovider.VolumeType{cloudprovider.VolumeBlock, cloudprovider.VolumeSharedFS}
	tests := []struct {
		name  string
		extra []CatalogEntry
		want  map[string][]cloudprovider.VolumeType // region -> types
	}{
		{name: "the default catalog: both types everywhere",
			want: map[string][]cloudprovider.VolumeType{"sbx-eu-1": both, "sbx-us-1": both, "sbx-ap-1": both}},
		{name: "a region naming one type has only it",
			extra: []CatalogEntry{{Region: "sbx-eu-1", VolumeType: "shared_fs", PricePerGBMonth: 0.2}},
			want:  map[string][]cloudprovider.VolumeType{"sbx-eu-1": {cloudprovider.VolumeSharedFS}, "sbx-us-1": both, "sbx-ap-1": both}},
		{name: "none: a region without volumes",
			extra: []CatalogEntry{{Region: "sbx-ap-1", VolumeType: VolumeNone}, {Region: "sbx-us-1", VolumeType: "block"}},
			want:  map[string][]cloudprovider.VolumeType{"sbx-eu-1": both, "sbx-us-1": {cloudprovider.VolumeBlock}}},
		{name: "a region with volumes only",
			extra: []CatalogEntry{{Region: "sbx-storage-1", VolumeType: "block", PricePerGBMonth: 0.1}},
			want:  map[string][]cloudprovider.VolumeType{"sbx-eu-1": both, "sbx-us-1": both, "sbx-ap-1": both, "sbx-storage-1": {cloudprovider.VolumeBlock}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBackend(t, t.TempDir(), time.Millisecond)
			if err := b.SetCatalog(append(DefaultCatalog(), tc.extra...)); err != nil {
				t.Fatal(err)
			}
			types, err := b.VolumeTypes(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][]cloudprovider.VolumeType{}
			for _, typ := range both {
				for _, r := range types[typ] {
					got[r] = append(got[r], typ)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("volume types by region: %v, want %v", got, tc.want)
			}
			// The offers are the GPU entries' only.
			offers, err := b.Offers(context.Background())
			if err != nil || len(offers) == 0 {
				t.Fatalf("Offers: %d, %v", len(offers), err)
			}
			for _, o := range offers {
				if o.InstanceType == "" {
					t.Errorf("a volume entry is offered as a machine: %+v", o)
				}
			}
		})
	}
}

func TestCreateVolume(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t, t.TempDir(), time.Millisecond)
	if err := b.SetCatalog(append(DefaultCatalog(),
		CatalogEntry{Region: "sbx-eu-1", VolumeType: "shared_fs", PricePerGBMonth: 0.2},
		CatalogEntry{Region: "sbx-ap-1", VolumeType: VolumeNone})); err != nil {
		t.Fatal(err)
	}
	refused := []struct {
		name string
		req  cloudprovider.VolumeRequest
		msg  string
	}{
		{"type the region lacks", volumeRequest("a", cloudprovider.VolumeBlock, "sbx-eu-1", 10), "sandbox has no block volumes in sbx-eu-1; it has: shared_fs"},
		{"region without volumes", volumeRequest("b", cloudprovider.VolumeSharedFS, "sbx-ap-1", 10), "sandbox has no shared_fs volumes in sbx-ap-1; it has: no volumes"},
		{"unknown region", volumeRequest("c", cloudprovider.VolumeBlock, "sbx-mars-1", 10), `no region "sbx-mars-1"`},
		{"unknown type", volumeRequest("d", "tape", "sbx-us-1", 10), `volume type "tape"`},
		{"no size", volumeRequest("e", cloudprovider.VolumeBlock, "sbx-us-1", 0), "size 0 GB"},
		{"no name", cloudprovider.VolumeRequest{Type: cloudprovider.VolumeBlock, Region: "sbx-us-1", SizeGB: 1}, "no name"},
	}
	for _, tc := range refused {
		_, err := b.CreateVolume(ctx, tc.req)
		if cloudprovider.KindOf(err) != cloudprovider.ErrInvalid || err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want an invalid-request error saying %q", tc.name, err, tc.msg)
		}
	}
	if vs, err := b.Volumes(); err != nil || len(vs) != 0 {
		t.Fatalf("refused creates left volumes: %+v, %v", vs, err)
	}

	// Priced where the catalog says, exactly; unpriced elsewhere; the store is made.
	priced := mustVolume(t, b, volumeRequest("priced", cloudprovider.VolumeSharedFS, "sbx-eu-1", 50))
	if want := 10 * money.Dollar; priced.PricePerMonth != want {
		t.Errorf("50 GB at $0.20 a GB-month: %s a month, want %s", priced.PricePerMonth, want)
	}
	free := mustVolume(t, b, volumeRequest("free", cloudprovider.VolumeBlock, "sbx-us-1", 50))
	if free.PricePerMonth != 0 || free.Owner.Token != cloudprovider.OwnerToken("free", 0) || free.Owner.Resource != "free" {
		t.Errorf("an unpriced volume: %+v", free)
	}
	if fi, err := os.Stat(simhost.StoreData(b.VolumeDir(free.ID))); err != nil || !fi.IsDir() {
		t.Errorf("the volume's store: %v", err)
	}
	if again, err := b.CreateVolume(ctx, volumeRequest("free", cloudprovider.VolumeBlock, "sbx-us-1", 50)); err != nil || again.ID != free.ID {
		t.Errorf("a second create of the name: %+v, %v; want %s", again, err, free.ID)
	}

	// A state holding it confirms its ownership record.
	if err := b.ConfirmOwnership(ctx, free.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := b.GetVolume(ctx, free.ID); err != nil || !got.Owner.Confirmed {
		t.Errorf("after ConfirmOwnership: %+v, %v", got.Owner, err)
	}
	if err := b.ConfirmOwnership(ctx, "sbxv-nope"); !cloudprovider.IsNotFound(err) {
		t.Errorf("ConfirmOwnership of an unknown id: %v, want a not-found error", err)
	}
}

// TestVolumeAttachments: a machine gets its volumes at create and Attachment says how they appear in
// it; a block volume is on one machine at a time, a shared one on several; a volume in use is not
// deleted; a machine's delete leaves its volumes.
func TestVolumeAttachments(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t, t.TempDir(), time.Millisecond)
	o := offerFor(t, b, "h100", 1)
	block := mustVolume(t, b, volumeRequest("block", cloudprovider.VolumeBlock, o.Region, 20))
	shared := mustVolume(t, b, volumeRequest("shared", cloudprovider.VolumeSharedFS, o.Region, 20))
	create := func(name string, mounts ...cloudprovider.VolumeMount) (cloudprovider.Instance, error) {
		return b.CreateWithVolumes(ctx, cloudprovider.CreateRequest{Name: "sbx-vm-" + name, Offer: o}, mounts)
	}
	a, err := create("a", cloudprovider.VolumeMount{VolumeID: block.ID, MountPath: "/data"}, cloudprovider.VolumeMount{VolumeID: shared.ID, MountPath: "/shared"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		v    cloudprovider.Volume
		path string
		want cloudprovider.Attachment
	}{
		{block, "/data", cloudprovider.Attachment{VolumeID: block.ID, Type: cloudprovider.VolumeBlock, MountPath: "/data", Device: "/dev/disk/by-id/hydra-sbx-" + block.ID}},
		{shared, "/shared", cloudprovider.Attachment{VolumeID: shared.ID, Type: cloudprovider.VolumeSharedFS, MountPath: "/shared", Source: "sbx-nfs:/volumes/" + shared.ID, FSType: "nfs"}},
	} {
		got, err := b.Attachment(ctx, a, tc.v, tc.path)
		if err != nil || got != tc.want {
			t.Errorf("Attachment of %s: %+v, %v; want %+v", tc.v.Name, got, err, tc.want)
		}
	}

	// A block volume in use goes to no second machine, and nothing is created; a shared one does.
	before := mustRecords(t, b)
	for _, tc := range []struct {
		name   string
		mounts []cloudprovider.VolumeMount
		msg    string
	}{
		{"block in use", []cloudprovider.VolumeMount{{VolumeID: block.ID, MountPath: "/data"}}, "is attached to sbx-vm-a (" + a.ID + ")"},
		{"unknown", []cloudprovider.VolumeMount{{VolumeID: "sbxv-nope", MountPath: "/data"}}, "volume sbxv-nope not found"},
		{"twice", []cloudprovider.VolumeMount{{VolumeID: shared.ID, MountPath: "/x"}, {VolumeID: shared.ID, MountPath: "/y"}}, "asked for twice"},
		{"one path", []cloudprovider.VolumeMount{{VolumeID: shared.ID, MountPath: "/x"}, {VolumeID: block.ID, MountPath: "/x"}}, "two volumes asked at /x"},
		{"relative", []cloudprovider.VolumeMount{{VolumeID: shared.ID, MountPath: "data"}}, "is not absolute"},
	} {
		_, err := create("refused", tc.mounts...)
		if cloudprovider.KindOf(err) != cloudprovider.ErrInvalid || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want an invalid-request error saying %q", tc.name, err, tc.msg)
		}
	}
	if after := mustRecords(t, b); len(after) != len(before) {
		t.Errorf("refused creates left %d machines", len(after)-len(before))
	}
	c, err := create("c", cloudprovider.VolumeMount{VolumeID: shared.ID, MountPath: "/shared"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Attachment(ctx, c, block, "/data"); cloudprovider.KindOf(err) != cloudprovider.ErrInvalid {
		t.Errorf("Attachment of a volume the machine did not get: %v, want an invalid-request error", err)
	}
	if got, err := b.GetVolume(ctx, shared.ID); err != nil || !reflect.DeepEqual(got.AttachedTo, []string{a.ID, c.ID}) {
		t.Errorf("the shared volume is attached to %v, %v; want %v", got.AttachedTo, err, []string{a.ID, c.ID})
	}

	// In use: not deleted, and the message names the machine.
	err = b.DeleteVolume(ctx, block.ID)
	if cloudprovider.KindOf(err) != cloudprovider.ErrInvalid || !strings.Contains(err.Error(), "sbx-vm-a") {
		t.Errorf("DeleteVolume of a volume in use: %v", err)
	}
	if err := os.WriteFile(filepath.Join(simhost.StoreData(b.VolumeDir(block.ID)), "x"), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The machine's delete frees the block volume at once (a stopping machine has let it go) and
	// leaves its data; the next machine gets it.
	if err := b.Delete(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := b.GetVolume(ctx, block.ID); err != nil || len(got.AttachedTo) != 0 {
		t.Errorf("the block volume after its machine's delete: %+v, %v", got, err)
	}
	if _, err := create("d", cloudprovider.VolumeMount{VolumeID: block.ID, MountPath: "/data"}); err != nil {
		t.Errorf("a new machine with the freed block volume: %v", err)
	}
	if data, err := os.ReadFile(filepath.Join(simhost.StoreData(b.VolumeDir(block.ID)), "x")); err != nil || string(data) != "kept" {
		t.Errorf("the volume's data after its machine's delete: %q, %v", data, err)
	}
}

// TestClusterVolumes: every node of a cluster gets the cluster's volumes; a block volume goes to a
// cluster of one node only.
func TestClusterVolumes(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t, t.TempDir(), time.Millisecond)
	o := clusterOffer(t, b, "h100", 8, "sbx-eu-1", cloudprovider.InterconnectAny, 2)
	shared := mustVolume(t, b, volumeRequest("shared", cloudprovider.VolumeSharedFS, "sbx-eu-1", 100))
	block := mustVolume(t, b, volumeRequest("block", cloudprovider.VolumeBlock, "sbx-eu-1", 100))
	elsewhere := mustVolume(t, b, volumeRequest("elsewhere", cloudprovider.VolumeSharedFS, "sbx-us-1", 100))
	for _, tc := range []struct {
		name string
		v    cloudprovider.Volume
		msg  string
	}{
		{"block on two nodes", block, "attaches to one machine, not 2 nodes"},
		{"another region", elsewhere, "is in sbx-us-1, the machine in sbx-eu-1"},
	} {
		_, err := b.CreateCluster(ctx, cloudprovider.ClusterRequest{Name: "sbx-vm-refused", Offer: o,
			Volumes: []cloudprovider.VolumeMount{{VolumeID: tc.v.ID, MountPath: "/data"}}})
		if cloudprovider.KindOf(err) != cloudprovider.ErrInvalid || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want an invalid-request error saying %q", tc.name, err, tc.msg)
		}
	}
	if recs := mustRecords(t, b); len(recs) != 0 {
		t.Fatalf("refused cluster creates placed %d nodes", len(recs))
	}
	c, err := b.CreateCluster(ctx, cloudprovider.ClusterRequest{Name: "sbx-vm-train", Offer: o,
		Volumes: []cloudprovider.VolumeMount{{VolumeID: shared.ID, MountPath: "/shared"}}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, n := range c.Nodes {
		ids = append(ids, n.ID)
		a, err := b.Attachment(ctx, n.Instance, shared, "/shared")
		if err != nil || a.Source != NFSSource(shared.ID) {
			t.Errorf("node %s: Attachment %+v, %v", n.Name, a, err)
		}
	}
	if got, err := b.GetVolume(ctx, shared.ID); err != nil || !slices.Equal(got.AttachedTo, ids) || len(ids) != 2 {
		t.Errorf("the shared volume is attached to %v, %v; want the nodes %v", got.AttachedTo, err, ids)
	}
	o1 := clusterOffer(t, b, "h100", 8, "sbx-eu-1", cloudprovider.InterconnectAny, 1)
	if _, err := b.CreateCluster(ctx, cloudprovider.ClusterRequest{Name: "sbx-vm-solo", Offer: o1,
		Volumes: []cloudprovider.VolumeMount{{VolumeID: block.ID, MountPath: "/data"}}}); err != nil {
		t.Errorf("a one-node cluster with a block volume: %v", err)
	}
	if err := b.DeleteCluster(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := b.GetVolume(ctx, shared.ID); err != nil || len(got.AttachedTo) != 0 {
		t.Errorf("the shared volume after its cluster's delete: %+v, %v", got, err)
	}
}

// TestMachineWithVolumes: a real machine (SSHMachines) created with volumes has them: the block
// device links to the volume's store, and the stand-ins find both volumes.
func TestMachineWithVolumes(t *testing.T) {
	ctx := context.Background()
	b := newRealBackend(t, 50*time.Millisecond)
	o := offerFor(t, b, "h100", 1)
	block := mustVolume(t, b, volumeRequest("block", cloudprovider.VolumeBlock, o.Region, 20))
	shared := mustVolume(t, b, volumeRequest("shared", cloudprovider.VolumeSharedFS, o.Region, 20))
	inst, err := b.CreateWithVolumes(ctx, cloudprovider.CreateRequest{Name: "sbx-vm-vols", Offer: o},
		[]cloudprovider.VolumeMount{{VolumeID: block.ID, MountPath: "/data"}, {VolumeID: shared.ID, MountPath: "/shared"}})
	if err != nil {
		t.Fatal(err)
	}
	b.WaitBooting()
	time.Sleep(60 * time.Millisecond)
	if got, err := b.Get(ctx, inst.ID); err != nil || got.Status != cloudprovider.StatusRunning {
		t.Fatalf("Get: %+v, %v", got, err)
	}
	dir := b.MachineDir(inst.ID)
	link, err := os.Readlink(filepath.Join(dir, "root", BlockDevice(block.ID)))
	if err != nil || link != filepath.Join(b.VolumeDir(block.ID), "device") {
		t.Errorf("the machine's block device links to %q, %v; want the store's device", link, err)
	}
	var listed []simhost.Volume
	if err := readJSON(filepath.Join(dir, "volumes.json"), &listed); err != nil {
		t.Fatal(err)
	}
	want := []simhost.Volume{
		{ID: block.ID, Device: BlockDevice(block.ID), SizeGB: 20, Store: b.VolumeDir(block.ID)},
		{ID: shared.ID, Source: NFSSource(shared.ID), SizeGB: 20, Store: b.VolumeDir(shared.ID)},
	}
	for i := range want {
		abs, err := filepath.Abs(want[i].Store)
		if err != nil {
			t.Fatal(err)
		}
		want[i].Store = abs
	}
	if !reflect.DeepEqual(listed, want) {
		t.Errorf("the machine's volumes: %+v, want %+v", listed, want)
	}
}
