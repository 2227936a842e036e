package backendkit

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// Mounted: volumes in order; an unknown volume and one of another region are ErrInvalid with what is
// wrong; check's error and read's other errors are returned as they are.
func TestMounted(t *testing.T) {
	type vol struct{ id, region string }
	vols := map[string]vol{"a": {"a", "r1"}, "b": {"b", "r1"}, "far": {"far", "r2"}}
	down := errors.New("cloud down")
	read := func(_ context.Context, id string) (vol, error) {
		if id == "down" {
			return vol{}, down
		}
		v, ok := vols[id]
		if !ok {
			return vol{}, cloudprovider.Errorf(cloudprovider.ErrNotFound, "c", "reading", "no %s", id)
		}
		return v, nil
	}
	place := func(v vol) (string, string) { return v.id, v.region }
	refused := errors.New("refused")
	check := func(v vol) error {
		if v.id == "b" {
			return refused
		}
		return nil
	}
	mounts := func(ids ...string) []cloudprovider.VolumeMount {
		var out []cloudprovider.VolumeMount
		for _, id := range ids {
			out = append(out, cloudprovider.VolumeMount{VolumeID: id})
		}
		return out
	}
	got, err := Mounted(context.Background(), "c", "creating", "machine", "r1", mounts("a"), read, place, check)
	if err != nil || len(got) != 1 || got[0].id != "a" {
		t.Fatalf("a: %v %v", got, err)
	}
	for _, tc := range []struct {
		ids  []string
		want string
		is   error
	}{
		{[]string{"a", "x"}, "no volume x", nil},
		{[]string{"far"}, "volume far is in c/r2, the machine's offer in c/r1", nil},
		{[]string{"a", "b"}, "", refused},
		{[]string{"down"}, "", down},
	} {
		_, err := Mounted(context.Background(), "c", "creating", "machine", "r1", mounts(tc.ids...), read, place, check)
		switch {
		case tc.is != nil && !errors.Is(err, tc.is):
			t.Errorf("%v: %v, want %v", tc.ids, err, tc.is)
		case tc.is == nil && (cloudprovider.KindOf(err) != cloudprovider.ErrInvalid || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: %v, want ErrInvalid saying %q", tc.ids, err, tc.want)
		}
	}
}

// ListVolumes keeps the live volumes whose name has the prefix, in the cloud's order; read's error is
// returned.
func TestListVolumes(t *testing.T) {
	type vol struct {
		name string
		gone bool
	}
	all := []vol{{"p-b", false}, {"p-a", true}, {"q-c", false}, {"p-c", false}}
	read := func(context.Context) ([]vol, error) { return all, nil }
	got, err := ListVolumes(context.Background(), "p-", read, func(v vol) string { return v.name },
		func(v vol) bool { return !v.gone }, func(v vol) cloudprovider.Volume { return cloudprovider.Volume{Name: v.name} })
	if err != nil || len(got) != 2 || got[0].Name != "p-b" || got[1].Name != "p-c" {
		t.Errorf("got %+v, %v; want p-b and p-c", got, err)
	}
	down := errors.New("cloud down")
	if _, err := ListVolumes(context.Background(), "p-", func(context.Context) ([]vol, error) { return nil, down },
		func(v vol) string { return v.name }, func(vol) bool { return true }, func(vol) cloudprovider.Volume { return cloudprovider.Volume{} }); !errors.Is(err, down) {
		t.Errorf("read's error: %v", err)
	}
}

// DeleteVolume: a volume gone already or gone meanwhile is success without a delete; one in use is
// refused with inUse's error and not deleted; read's and remove's other errors are returned.
func TestDeleteVolume(t *testing.T) {
	var (
		notFound = cloudprovider.Errorf(cloudprovider.ErrNotFound, "c", "reading", "no volume")
		busy     = errors.New("attached to m1")
		down     = errors.New("cloud down")
		vanished = errors.New("404 on delete")
	)
	for _, tc := range []struct {
		name               string
		readErr, removeErr error
		used               bool
		wantDeleted        bool
		wantRemove         bool
		wantErr            error
	}{
		{name: "unused", wantDeleted: true, wantRemove: true},
		{name: "gone already", readErr: notFound},
		{name: "read fails", readErr: down, wantErr: down},
		{name: "in use", used: true, wantErr: busy},
		{name: "gone meanwhile", removeErr: vanished, wantRemove: true},
		{name: "delete fails", removeErr: down, wantRemove: true, wantErr: down},
	} {
		t.Run(tc.name, func(t *testing.T) {
			removed := false
			read := func(context.Context, string) (string, error) { return "v1", tc.readErr }
			inUse := func(string) error {
				if tc.used {
					return busy
				}
				return nil
			}
			remove := func(_ context.Context, id string) error {
				removed = id == "v1"
				return tc.removeErr
			}
			gone := func(err error) bool { return errors.Is(err, vanished) }
			_, deleted, err := DeleteVolume(context.Background(), "v1", read, inUse, remove, gone)
			if deleted != tc.wantDeleted || removed != tc.wantRemove || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Errorf("deleted %v, removed %v, err %v; want %v, %v, %v", deleted, removed, err, tc.wantDeleted, tc.wantRemove, tc.wantErr)
			}
		})
	}
}
