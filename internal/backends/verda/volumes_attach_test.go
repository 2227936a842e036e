package verda

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/verda/verdaapi"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/verda"
)

func strp(s string) *string { return &s }

// TestSharedMount reads a shared volume's NFS source and options the ways Verda gives them: its
// mount_command (the Python SDK's fixture, the dashboard's sudo form), else an endpoint target, else the
// pseudo path on the location's NFS host; nothing when it gives none.
func TestSharedMount(t *testing.T) {
	for _, tc := range []struct {
		name         string
		v            verdaapi.Volume
		source, opts string
	}{
		{"SDK fixture", verdaapi.Volume{MountCommand: strp("mount -t nfs -o nconnect=16 nfs.fin-01.datacrunch.io:volume-nxC2tf9F /mnt/volume")},
			"nfs.fin-01.datacrunch.io:volume-nxC2tf9F", "nconnect=16"},
		{"dashboard, sudo", verdaapi.Volume{MountCommand: strp("sudo mount -t nfs -o nconnect=16 nfs.fin-02.datacrunch.io:/bio-shared-G523CVN6KYMH /mnt/bio")},
			"nfs.fin-02.datacrunch.io:/bio-shared-G523CVN6KYMH", "nconnect=16"},
		{"no options", verdaapi.Volume{MountCommand: strp("mount -t nfs nfs.fin-02.datacrunch.io:/models /mnt/hf-models")},
			"nfs.fin-02.datacrunch.io:/models", ""},
		{"endpoint target", verdaapi.Volume{Target: strp("nfs.fin-03.datacrunch.io:/lib-1a2b3c4d")}, "nfs.fin-03.datacrunch.io:/lib-1a2b3c4d", DefaultNFSOptions},
		{"pseudo path", verdaapi.Volume{PseudoPath: strp("/share-1"), Location: "FIN-03"}, "nfs.fin-03.datacrunch.io:/share-1", DefaultNFSOptions},
		{"a device target is no source", verdaapi.Volume{Target: strp("vdb")}, "", ""},
		{"nothing", verdaapi.Volume{}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if src, opts := sharedMount(tc.v); src != tc.source || opts != tc.opts {
				t.Errorf("sharedMount: %q, %q; want %q, %q", src, opts, tc.source, tc.opts)
			}
		})
	}
}

// TestVolumeAttachment launches a machine with two block volumes and a shared one and reads how each
// appears inside it: the block volumes as the disks Verda names in their targets (vdb, vdc), the shared
// one as the NFS export and options of its mount command. A machine without the volume is refused.
func TestVolumeAttachment(t *testing.T) {
	ctx := context.Background()
	f := startEmulator(t, emu.Options{})
	b := f.backend(t, nil)
	mk := func(name string, typ cloudprovider.VolumeType) cloudprovider.Volume {
		v, err := b.CreateVolume(ctx, cloudprovider.VolumeRequest{Name: "verda-vm-" + name + "--abcdefgh", Type: typ, Region: "FIN-01", SizeGB: 20})
		if err != nil {
			t.Fatalf("CreateVolume %s: %v", name, err)
		}
		return v
	}
	first, second, shared := mk("one", cloudprovider.VolumeBlock), mk("two", cloudprovider.VolumeBlock), mk("lib", cloudprovider.VolumeSharedFS)
	inst, err := b.CreateWithVolumes(ctx, createRequest(t, b, "vols", "FIN-01", "1H100.80S.30V", false),
		[]cloudprovider.VolumeMount{{VolumeID: first.ID, MountPath: "/data"}, {VolumeID: second.ID, MountPath: "/scratch"}, {VolumeID: shared.ID, MountPath: "/lib"}})
	if err != nil {
		t.Fatalf("CreateWithVolumes: %v", err)
	}
	for _, tc := range []struct {
		v     cloudprovider.Volume
		path  string
		check func(a cloudprovider.Attachment) bool
	}{
		{first, "/data", func(a cloudprovider.Attachment) bool {
			return a.Type == cloudprovider.VolumeBlock && a.Device == "/dev/vdb" && a.Source == "" && !a.MountedByCloud
		}},
		{second, "/scratch", func(a cloudprovider.Attachment) bool { return a.Device == "/dev/vdc" }},
		{shared, "/lib", func(a cloudprovider.Attachment) bool {
			return a.Type == cloudprovider.VolumeSharedFS && a.Device == "" && a.FSType == "nfs" && a.Options == "nconnect=16" &&
				strings.HasPrefix(a.Source, "nfs.fin-01.datacrunch.io:/"+shared.Name+"-")
		}},
	} {
		a, err := b.Attachment(ctx, inst, tc.v, tc.path)
		if err != nil {
			t.Errorf("Attachment of %s: %v", tc.v.Name, err)
			continue
		}
		if a.VolumeID != tc.v.ID || a.MountPath != tc.path || !tc.check(a) {
			t.Errorf("Attachment of %s: %+v", tc.v.Name, a)
		}
	}
	other, err := b.Create(ctx, createRequest(t, b, "bare", "FIN-01", "1H100.80S.30V", false))
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Attachment(ctx, other, first, "/data")
	wantKind(t, err, cloudprovider.ErrInvalid)
}

// TestSpotVolumeKeptDetached checks that every volume hydra creates carries on_spot_discontinue
// keep_detached, so that when Verda takes a spot machine back its volume stays, detached, with its
// data; a volume whose policy is move_to_trash (made by another client) goes to the trash instead.
func TestSpotVolumeKeptDetached(t *testing.T) {
	ctx := context.Background()
	f := startEmulator(t, emu.Options{})
	b := f.backend(t, nil)
	kept, err := b.CreateVolume(ctx, cloudprovider.VolumeRequest{Name: "verda-vm-kept--abcdefgh", Type: cloudprovider.VolumeBlock, Region: "FIN-01", SizeGB: 20})
	if err != nil {
		t.Fatal(err)
	}
	trashedID, err := b.Client().CreateVolume(ctx, verdaapi.CreateVolumeRequest{Type: verdaapi.VolumeTypeNVMe, Name: "verda-vm-other--abcdefgh", Size: 20,
		LocationCode: "FIN-01", OnSpotDiscontinue: verdaapi.SpotDiscontinueMoveToTrash})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Client().CreateVolume(ctx, verdaapi.CreateVolumeRequest{Type: verdaapi.VolumeTypeNVMe, Name: "bad-policy", Size: 20,
		LocationCode: "FIN-01", OnSpotDiscontinue: "keep"}); err == nil {
		t.Error("Verda took an unknown on_spot_discontinue")
	}
	inst, err := b.CreateWithVolumes(ctx, createRequest(t, b, "spot", "FIN-01", "1H100.80S.30V", true),
		[]cloudprovider.VolumeMount{{VolumeID: kept.ID, MountPath: "/data"}, {VolumeID: trashedID, MountPath: "/other"}})
	if err != nil {
		t.Fatal(err)
	}
	policy := map[string]string{}
	for _, v := range f.srv.Volumes() {
		policy[v.ID] = v.OnSpotDiscontinue
	}
	if policy[kept.ID] != verdaapi.SpotDiscontinueKeepDetached {
		t.Errorf("hydra's volume carries on_spot_discontinue %q, want keep_detached", policy[kept.ID])
	}
	if err := f.srv.DiscontinueSpot(inst.ID); err != nil {
		t.Fatal(err)
	}
	got, err := b.GetVolume(ctx, kept.ID)
	if err != nil || len(got.AttachedTo) != 0 {
		t.Errorf("hydra's volume after the spot machine was taken back: %+v, %v; want it kept, detached", got, err)
	}
	if _, err := b.GetVolume(ctx, trashedID); !cloudprovider.IsNotFound(err) {
		t.Errorf("the move_to_trash volume after the spot machine was taken back: %v, want it in the trash", err)
	}
	// The replacement gets the kept volume, as its first disk after the OS volume.
	next, err := b.CreateWithVolumes(ctx, createRequest(t, b, "spot", "FIN-01", "1H100.80S.30V", true),
		[]cloudprovider.VolumeMount{{VolumeID: kept.ID, MountPath: "/data"}})
	if err != nil {
		t.Fatalf("the replacement with the kept volume: %v", err)
	}
	if a, err := b.Attachment(ctx, next, got, "/data"); err != nil || a.Device != "/dev/vdb" {
		t.Errorf("the kept volume on the replacement: %+v, %v", a, err)
	}
}

// TestClusterVolumes creates a cluster with a shared volume: it goes in existing_volumes, every node
// lists it and reads it as an NFS mount, and it outlives the cluster. A block volume and a volume of
// another location are refused before anything is created.
func TestClusterVolumes(t *testing.T) {
	ctx := context.Background()
	f := startEmulator(t, emu.Options{})
	b := f.backend(t, nil)
	o := clusterOffer(t, b, "16H200")
	mk := func(name, region string, typ cloudprovider.VolumeType) cloudprovider.Volume {
		v, err := b.CreateVolume(ctx, cloudprovider.VolumeRequest{Name: "verda-vm-" + name + "--abcdefgh", Type: typ, Region: region, SizeGB: 20})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	shared, block, far := mk("lib", "FIN-03", cloudprovider.VolumeSharedFS), mk("blk", "FIN-03", cloudprovider.VolumeBlock), mk("far", "FIN-01", cloudprovider.VolumeSharedFS)
	for _, tc := range []struct {
		name string
		v    cloudprovider.Volume
	}{{"block", block}, {"other location", far}} {
		req := clusterReq(t, o, "c-"+strings.ReplaceAll(tc.name, " ", "-"))
		req.Volumes = []cloudprovider.VolumeMount{{VolumeID: tc.v.ID, MountPath: "/data"}}
		_, err := b.CreateCluster(ctx, req)
		wantKind(t, err, cloudprovider.ErrInvalid)
	}
	if list, err := b.ListClusters(ctx, ""); err != nil || len(list) != 0 {
		t.Fatalf("refused clusters left %d at Verda (%v)", len(list), err)
	}
	req := clusterReq(t, o, "train")
	req.Volumes = []cloudprovider.VolumeMount{{VolumeID: shared.ID, MountPath: "/data"}}
	c, err := b.CreateCluster(ctx, req)
	if err != nil {
		t.Fatalf("CreateCluster: %v", err)
	}
	got, err := b.GetVolume(ctx, shared.ID)
	if err != nil || len(got.AttachedTo) != len(c.Nodes) || len(c.Nodes) != 2 {
		t.Fatalf("the shared volume is on %v (%v), want the cluster's %d nodes", got.AttachedTo, err, len(c.Nodes))
	}
	for _, n := range c.Nodes {
		if !slices.Contains(got.AttachedTo, n.ID) {
			t.Errorf("node %s does not list the volume", n.Name)
		}
		a, err := b.Attachment(ctx, n.Instance, got, "/data")
		if err != nil || a.FSType != "nfs" || !strings.HasPrefix(a.Source, "nfs.fin-03.datacrunch.io:/") || a.MountPath != "/data" {
			t.Errorf("node %s: %+v, %v", n.Name, a, err)
		}
	}
	// A volume neither on the node nor among its cluster's shared volumes is refused.
	_, err = b.Attachment(ctx, c.Nodes[0].Instance, block, "/data")
	wantKind(t, err, cloudprovider.ErrInvalid)
	if err := b.DeleteCluster(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	left, err := b.GetVolume(ctx, shared.ID)
	if err != nil || len(left.AttachedTo) != 0 {
		t.Errorf("the shared volume after the cluster's delete: %+v, %v; want it kept, detached", left, err)
	}
}
