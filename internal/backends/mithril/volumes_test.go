package mithril

import (
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/mithril"
)

// TestVolumeOutlivesPreemption checks Mithril's promise that a volume survives its machine's
// preemption and termination: the volume stays with the preempted bid, Mithril refuses to delete it
// while a bid uses it, and once the bid is cancelled the volume is free and deletes.
func TestVolumeOutlivesPreemption(t *testing.T) {
	e := newEnv(t, emu.Options{})
	ctx := t.Context()
	vol, err := e.backend.CreateVolume(ctx, cloudprovider.VolumeRequest{Name: "mithril-vm-data--aaaaaaaa", Type: cloudprovider.VolumeBlock, Region: "us-central1-a", SizeGB: 100})
	if err != nil {
		t.Fatalf("CreateVolume: %v", err)
	}
	o := pricedOffer(t, e, "us-central1-a", "a100-80gb.sxm.1x", "2.00")
	inst, err := e.backend.CreateWithVolumes(ctx, cloudprovider.CreateRequest{Name: "mithril-vm-spot--aaaaaaaa", Pool: backendtest.Pool(t, CloudName), Offer: o},
		[]cloudprovider.VolumeMount{{VolumeID: vol.ID, MountPath: "/data"}})
	if err != nil {
		t.Fatalf("CreateWithVolumes: %v", err)
	}
	e.clock.Advance(bootTime)
	if err := e.emu.Preempt(inst.ID, time.Minute); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * time.Minute)
	if got, err := e.backend.Get(ctx, inst.ID); err != nil || got.Interruption == nil {
		t.Fatalf("the preempted machine: %+v, %v", got, err)
	}
	got, err := e.backend.GetVolume(ctx, vol.ID)
	if err != nil || got.SizeGB != 100 || len(got.AttachedTo) != 1 || got.AttachedTo[0] != inst.ID {
		t.Fatalf("the volume after the preemption: %+v, %v", got, err)
	}
	// Mithril itself refuses deleting a volume in use (hydra's DeleteVolume refuses before asking).
	backendtest.WantKind(t, e.client.DeleteVolume(ctx, vol.ID), cloudprovider.ErrInvalid)
	backendtest.WantKind(t, e.backend.DeleteVolume(ctx, vol.ID), cloudprovider.ErrInvalid)

	if err := e.backend.Delete(ctx, inst.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := e.backend.GetVolume(ctx, vol.ID); err != nil || len(got.AttachedTo) != 0 {
		t.Fatalf("the volume after its bid's cancel: %+v, %v", got, err)
	}
	if err := e.backend.DeleteVolume(ctx, vol.ID); err != nil {
		t.Fatalf("DeleteVolume: %v", err)
	}
	if vols := e.emu.Volumes(); len(vols) != 1 || !vols[0].Deleted {
		t.Errorf("Mithril holds %+v, want the volume deleted", vols)
	}
}

// TestVolumeRequestsRefused checks the requests refused before any call: names Mithril's pattern
// refuses (lowercase letters, digits and dashes, at most 64), a type it lacks, no size.
func TestVolumeRequestsRefused(t *testing.T) {
	e := newEnv(t, emu.Options{})
	long := "a"
	for len(long) <= 64 {
		long += "a"
	}
	for _, req := range []cloudprovider.VolumeRequest{
		{Name: "Mithril-vm-data--aaaaaaaa", Type: cloudprovider.VolumeBlock, SizeGB: 1},
		{Name: "mithril-vm-my_data--aaaaaaaa", Type: cloudprovider.VolumeBlock, SizeGB: 1},
		{Name: "mithril-vm-data-", Type: cloudprovider.VolumeBlock, SizeGB: 1},
		{Name: long, Type: cloudprovider.VolumeBlock, SizeGB: 1},
		{Name: "mithril-vm-data", Type: "tape", SizeGB: 1},
		{Name: "mithril-vm-data", Type: cloudprovider.VolumeSharedFS},
	} {
		req.Region = "us-central1-a"
		_, err := e.backend.CreateVolume(t.Context(), req)
		if cloudprovider.KindOf(err) != cloudprovider.ErrInvalid || err == nil {
			t.Errorf("%+v: %v, want an invalid-request error", req, err)
		}
	}
	if n := len(e.emu.Volumes()); n != 0 {
		t.Errorf("refused requests made %d volumes", n)
	}
}
