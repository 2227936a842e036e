package lambda

import (
	"context"
	"strings"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/lambda"
)

// TestVolumeRequests checks what the backend refuses before asking Lambda, and what it sends: only
// file systems (shared_fs), mount paths under Lambda's roots, a file system's default mount point.
func TestVolumeRequests(t *testing.T) {
	f := startEmulator(t, emu.Options{})
	b := f.backend(t, nil)
	ctx := context.Background()
	offer := cheapestH100(t, b)
	for _, req := range []cloudprovider.VolumeRequest{
		{Name: "lambda-vm-blk--abcdefgh", Type: cloudprovider.VolumeBlock, Region: offer.Region},  // Lambda has only file systems
		{Name: strings.Repeat("v", 65), Type: cloudprovider.VolumeSharedFS, Region: offer.Region}, // Lambda allows 64 characters
	} {
		if _, err := b.CreateVolume(ctx, req); err == nil {
			t.Errorf("%s volume %q was created", req.Type, req.Name)
		} else {
			wantKind(t, err, cloudprovider.ErrInvalid)
		}
	}
	if n := f.srv.RequestCount("POST /filesystems"); n != 0 {
		t.Errorf("%d file systems asked for by refused requests", n)
	}
	vol, err := b.CreateVolume(ctx, cloudprovider.VolumeRequest{Name: "lambda-vm-fs--abcdefgh", Type: cloudprovider.VolumeSharedFS, Region: offer.Region, SizeGB: 100})
	if err != nil {
		t.Fatalf("CreateVolume: %v", err)
	}
	if vol.SizeGB != 0 || vol.PricePerMonth != 0 || vol.Owner != (cloudprovider.Ownership{}) {
		t.Errorf("a file system reports size %d, price %v, owner %+v; Lambda states none", vol.SizeGB, vol.PricePerMonth, vol.Owner)
	}
	if _, err := b.CreateVolume(ctx, cloudprovider.VolumeRequest{Name: vol.Name, Type: cloudprovider.VolumeSharedFS, Region: "us-south-1"}); err == nil {
		t.Error("the name of a file system of another region was taken as the same volume")
	} else {
		wantKind(t, err, cloudprovider.ErrInvalid)
	}

	for _, tc := range []struct {
		name, path, want string
	}{
		{"outside the roots", "/mnt/data", ""},
		{"escaping a root", "/data/../etc", ""},
		{"underscore, outside the pattern", "/data/my_ckpt", ""},
		{"default", "", "/lambda/nfs/" + vol.Name},
		{"below a root", "/home/ubuntu/data", "/home/ubuntu/data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst, err := b.CreateWithVolumes(ctx, request(t, offer, "m-"+tc.name[:3], testKey), []cloudprovider.VolumeMount{{VolumeID: vol.ID, MountPath: tc.path}})
			if tc.want == "" {
				wantKind(t, err, cloudprovider.ErrInvalid)
				return
			}
			if err != nil {
				t.Fatalf("CreateWithVolumes: %v", err)
			}
			in, err := b.Client().Instance(ctx, inst.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(in.FileSystemMounts) != 1 || in.FileSystemMounts[0] != (FileSystemMount{FileSystemID: vol.ID, MountPoint: tc.want}) {
				t.Errorf("mounts %+v, want %s at %s", in.FileSystemMounts, vol.ID, tc.want)
			}
		})
	}
	if len(f.srv.Instances()) != 2 {
		t.Errorf("%d instances launched, want the 2 with valid mounts", len(f.srv.Instances()))
	}
}

// TestVolumeAttachment checks where a file system is on a machine: mounted by Lambda at the mount point
// the launch asked, reported as such; a machine launched without it is refused.
func TestVolumeAttachment(t *testing.T) {
	f := startEmulator(t, emu.Options{})
	b := f.backend(t, nil)
	ctx := context.Background()
	offer := cheapestH100(t, b)
	vol, err := b.CreateVolume(ctx, cloudprovider.VolumeRequest{Name: "lambda-vm-fs--abcdefgh", Type: cloudprovider.VolumeSharedFS, Region: offer.Region})
	if err != nil {
		t.Fatal(err)
	}
	with, err := b.CreateWithVolumes(ctx, request(t, offer, "with", testKey), []cloudprovider.VolumeMount{{VolumeID: vol.ID, MountPath: "/data/ckpt"}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := b.Attachment(ctx, with, vol, "/data/ckpt")
	want := cloudprovider.Attachment{VolumeID: vol.ID, Type: cloudprovider.VolumeSharedFS, MountPath: "/data/ckpt", MountedByCloud: true}
	if err != nil || a != want {
		t.Errorf("Attachment: %+v, %v; want %+v", a, err, want)
	}
	without, err := b.Create(ctx, request(t, offer, "without", testKey))
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Attachment(ctx, without, vol, "/data/ckpt")
	wantKind(t, err, cloudprovider.ErrInvalid)
}
