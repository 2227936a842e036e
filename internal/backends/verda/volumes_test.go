package verda

import (
	"context"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/verda"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// TestVolumeTypesAndPrices checks the type each hydra type becomes at Verda and the monthly price read
// back exactly: in dollars as Verda states it, from a euro account converted like instance prices, and
// none where the type states no price.
func TestVolumeTypesAndPrices(t *testing.T) {
	for _, tc := range []struct {
		name, currency string
		typ            cloudprovider.VolumeType
		cloudType      string
		price          money.USD
	}{
		{"block in dollars", "usd", cloudprovider.VolumeBlock, "NVMe", money.MustFromFloat(10)},
		{"shared, no price stated", "usd", cloudprovider.VolumeSharedFS, "NVMe_Shared", 0},
		{"block from a euro account", "eur", cloudprovider.VolumeBlock, "NVMe", money.MustFromFloat(10.80)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := startEmulator(t, emu.Options{Currency: tc.currency})
			b := f.backend(t, nil)
			v, err := b.CreateVolume(context.Background(), cloudprovider.VolumeRequest{Name: "verda-vm-data--abcdefgh", Type: tc.typ, Region: "FIN-01", SizeGB: 50})
			if err != nil {
				t.Fatalf("CreateVolume: %v", err)
			}
			if v.Type != tc.typ || v.SizeGB != 50 || v.PricePerMonth != tc.price {
				t.Errorf("volume %+v, want type %s, 50 GB at %s a month", v, tc.typ, tc.price)
			}
			if vols := f.srv.Volumes(); len(vols) != 1 || vols[0].Type != tc.cloudType {
				t.Errorf("Verda holds %+v, want one %s volume", vols, tc.cloudType)
			}
		})
	}
}

// TestVolumeTrash checks that a deleted volume, kept in Verda's trash, is gone for hydra: GetVolume is
// not found, ListVolumes leaves it out, a second delete succeeds and changes nothing.
func TestVolumeTrash(t *testing.T) {
	f := startEmulator(t, emu.Options{})
	b := f.backend(t, nil)
	ctx := context.Background()
	v, err := b.CreateVolume(ctx, cloudprovider.VolumeRequest{Name: "verda-vm-data--abcdefgh", Type: cloudprovider.VolumeBlock, Region: "FIN-01", SizeGB: 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteVolume(ctx, v.ID); err != nil {
		t.Fatalf("DeleteVolume: %v", err)
	}
	if vols := f.srv.Volumes(); len(vols) != 1 || !vols[0].Trashed {
		t.Fatalf("Verda holds %+v, want the volume in its trash", vols)
	}
	if _, err := b.GetVolume(ctx, v.ID); !cloudprovider.IsNotFound(err) {
		t.Errorf("GetVolume of a trashed volume: %v, want not found", err)
	}
	if list, err := b.ListVolumes(ctx, "verda-vm-"); err != nil || len(list) != 0 {
		t.Errorf("ListVolumes: %+v, %v", list, err)
	}
	if err := b.DeleteVolume(ctx, v.ID); err != nil {
		t.Errorf("a second DeleteVolume: %v", err)
	}
	if vols := f.srv.Volumes(); len(vols) != 1 || !vols[0].Trashed {
		t.Errorf("after a second delete Verda holds %+v", vols)
	}
}
