package mithril

import (
	"slices"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/mithril"
)

// TestAttachmentOf checks how a volume appears inside its bid's instance: a File volume bind-mounted
// from /mnt/<name> where Mithril mounts it (or mounted by the cloud when asked there), a Block volume at
// the Flow SDK's device for its place in the launch specification.
func TestAttachmentOf(t *testing.T) {
	file := Volume{FID: "vol_f", Name: "data", Interface: DiskInterfaceFile}
	block := Volume{FID: "vol_b", Name: "scratch", Interface: DiskInterfaceBlock}
	for _, tc := range []struct {
		name    string
		vol     Volume
		idx     int
		path    string
		want    cloudprovider.Attachment
		invalid bool
	}{
		{"file elsewhere", file, 0, "/data", cloudprovider.Attachment{VolumeID: "vol_f", Type: cloudprovider.VolumeSharedFS, MountPath: "/data",
			Source: "/mnt/data", FSType: "none", Options: "bind"}, false},
		{"file where Mithril mounts it", file, 1, "/mnt/data", cloudprovider.Attachment{VolumeID: "vol_f", Type: cloudprovider.VolumeSharedFS,
			MountPath: "/mnt/data", MountedByCloud: true}, false},
		{"first block", block, 0, "/scratch", cloudprovider.Attachment{VolumeID: "vol_b", Type: cloudprovider.VolumeBlock, MountPath: "/scratch", Device: "/dev/vdd"}, false},
		{"third block", block, 2, "/scratch", cloudprovider.Attachment{VolumeID: "vol_b", Type: cloudprovider.VolumeBlock, MountPath: "/scratch", Device: "/dev/vdf"}, false},
		{"past z", block, 23, "/scratch", cloudprovider.Attachment{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := attachmentOf(tc.vol, tc.idx, tc.path)
			if tc.invalid {
				backendtest.WantKind(t, err, cloudprovider.ErrInvalid)
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("attachmentOf: %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// TestVolumeAttachment launches a machine with a File and a Block volume and reads each one's attachment
// from the bid's launch specification; a machine whose bid lacks the volume is refused.
func TestVolumeAttachment(t *testing.T) {
	e := newEnv(t, emu.Options{})
	ctx := t.Context()
	pool := backendtest.Pool(t, CloudName)
	mk := func(name string, typ cloudprovider.VolumeType) cloudprovider.Volume {
		v, err := e.backend.CreateVolume(ctx, cloudprovider.VolumeRequest{Name: "mithril-vm-" + name + "--aaaaaaaa", Type: typ, Region: "us-central1-a", SizeGB: 100})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	shared, block := mk("lib", cloudprovider.VolumeSharedFS), mk("disk", cloudprovider.VolumeBlock)
	o := pricedOffer(t, e, "us-central1-a", "a100-80gb.sxm.1x", "2.00")
	inst, err := e.backend.CreateWithVolumes(ctx, cloudprovider.CreateRequest{Name: "mithril-vm-with--aaaaaaaa", Pool: pool, Offer: o},
		[]cloudprovider.VolumeMount{{VolumeID: shared.ID, MountPath: "/lib"}, {VolumeID: block.ID, MountPath: "/data"}})
	if err != nil {
		t.Fatal(err)
	}
	if a, err := e.backend.Attachment(ctx, inst, shared, "/lib"); err != nil || a.Source != "/mnt/"+shared.Name || a.Options != "bind" || a.MountPath != "/lib" {
		t.Errorf("the File volume: %+v, %v", a, err)
	}
	if a, err := e.backend.Attachment(ctx, inst, block, "/data"); err != nil || a.Device != "/dev/vde" || a.Type != cloudprovider.VolumeBlock {
		t.Errorf("the Block volume (second in the launch specification): %+v, %v", a, err)
	}
	other, err := e.backend.Create(ctx, cloudprovider.CreateRequest{Name: "mithril-vm-bare--aaaaaaaa", Pool: pool, Offer: o})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.backend.Attachment(ctx, other, shared, "/lib")
	backendtest.WantKind(t, err, cloudprovider.ErrInvalid)
}

// TestClusterVolumes places a cluster bid with a File volume: every instance gets it through the bid's
// launch specification and reads it as a bind mount. A Block volume and one of another region are
// refused before any bid is placed.
func TestClusterVolumes(t *testing.T) {
	e := newEnv(t, emu.Options{})
	ctx := t.Context()
	pool := backendtest.Pool(t, CloudName)
	mk := func(name, region string, typ cloudprovider.VolumeType) cloudprovider.Volume {
		v, err := e.backend.CreateVolume(ctx, cloudprovider.VolumeRequest{Name: "mithril-vm-" + name + "--aaaaaaaa", Type: typ, Region: region, SizeGB: 100})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	shared, block, far := mk("lib", "us-central1-a", cloudprovider.VolumeSharedFS), mk("disk", "us-central1-a", cloudprovider.VolumeBlock),
		mk("far", "us-central1-b", cloudprovider.VolumeSharedFS)
	o := sized(clusterOffer(t, e, "us-central1-a", "a100-80gb.sxm.1x"), 2)
	req := func(name string, v cloudprovider.Volume) cloudprovider.ClusterRequest {
		owner := cloudprovider.Ownership{Resource: name, Token: cloudprovider.NewOwnerToken()}
		return cloudprovider.ClusterRequest{Name: cloudprovider.CloudName(pool, name, owner.Token), Pool: pool, Offer: o, Owner: owner,
			SSHPublicKeys: []string{testKey}, Volumes: []cloudprovider.VolumeMount{{VolumeID: v.ID, MountPath: "/data"}}}
	}
	for _, v := range []cloudprovider.Volume{block, far} {
		_, err := e.backend.CreateCluster(ctx, req("refused", v))
		backendtest.WantKind(t, err, cloudprovider.ErrInvalid)
	}
	if n := e.emu.CreateCount(); n != 0 {
		t.Fatalf("refused clusters placed %d bids", n)
	}
	c, err := e.backend.CreateCluster(ctx, req("train", shared))
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.backend.GetVolume(ctx, shared.ID)
	if err != nil || !slices.Equal(got.AttachedTo, []string{c.ID}) {
		t.Fatalf("the File volume is used by %v (%v), want the cluster's bid %s", got.AttachedTo, err, c.ID)
	}
	for _, n := range c.Nodes {
		if a, err := e.backend.Attachment(ctx, n.Instance, got, "/data"); err != nil || a.Source != "/mnt/"+shared.Name || a.Options != "bind" {
			t.Errorf("node %s: %+v, %v", n.Name, a, err)
		}
	}
	// A node known by its instance alone (no cluster id) is found through the bids using the volume.
	e.clock.Advance(bootTime)
	running, err := e.backend.GetCluster(ctx, c.ID)
	if err != nil || len(running.Nodes) != 2 || running.Nodes[1].ID == c.ID {
		t.Fatalf("the cluster: %+v, %v", running, err)
	}
	bare := running.Nodes[1].Instance
	bare.Cluster = ""
	if a, err := e.backend.Attachment(ctx, bare, got, "/data"); err != nil || a.Source != "/mnt/"+shared.Name {
		t.Errorf("node %s without its cluster id: %+v, %v", bare.ID, a, err)
	}
	// The emulator itself refuses a Block volume on a bid of several instances.
	fid := e.emu.InstanceTypeFID("us-central1-a", "a100-80gb.sxm.1x")
	_, err = e.client.CreateBid(ctx, CreateBidRequest{Project: e.project, Region: "us-central1-a", InstanceType: fid, LimitPrice: "$2.00",
		InstanceQuantity: 2, Name: "raw", LaunchSpecification: LaunchSpecification{Volumes: []string{block.ID}, SSHKeys: []string{}}})
	backendtest.WantKind(t, err, cloudprovider.ErrInvalid)
}
