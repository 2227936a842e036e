package backendkit

import (
	"context"
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// ListVolumes is the body of ListVolumes for clouds that answer every volume at once: read asks the
// cloud for them (its error is returned as it is); those live and whose name starts with prefix are
// mapped onto hydra's by convert, in the cloud's order (nil when none is).
func ListVolumes[T any](ctx context.Context, prefix string, read func(context.Context) ([]T, error), name func(T) string,
	live func(T) bool, convert func(T) cloudprovider.Volume) ([]cloudprovider.Volume, error) {
	all, err := read(ctx)
	if err != nil {
		return nil, err
	}
	var out []cloudprovider.Volume
	for _, v := range all {
		if live(v) && strings.HasPrefix(name(v), prefix) {
			out = append(out, convert(v))
		}
	}
	return out, nil
}

// Mounted reads the volume of each mount, in order, for something created in region (subject names it
// in the message: "machine", "cluster"): a volume read does not find, and one whose place is another
// region, are ErrInvalid (cloud, op); so is any error check returns. read's other errors are returned
// as they are.
func Mounted[V any](ctx context.Context, cloud, op, subject, region string, mounts []cloudprovider.VolumeMount,
	read func(context.Context, string) (V, error), place func(V) (name, region string), check func(V) error) ([]V, error) {
	out := make([]V, 0, len(mounts))
	for _, m := range mounts {
		v, err := read(ctx, m.VolumeID)
		if cloudprovider.IsNotFound(err) {
			return nil, cloudprovider.Errorf(cloudprovider.ErrInvalid, cloud, op, "no volume %s", m.VolumeID)
		}
		if err != nil {
			return nil, err
		}
		if name, r := place(v); r != region {
			return nil, cloudprovider.Errorf(cloudprovider.ErrInvalid, cloud, op,
				"volume %s is in %s/%s, the %s's offer in %s/%s", name, cloud, r, subject, cloud, region)
		}
		if err := check(v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// DeleteVolume is the body of DeleteVolume for clouds where hydra refuses to delete a volume in use:
// read reads the volume (ErrNotFound: gone already, success); inUse returns the error that refuses it
// while something uses it (nil: unused), and then nothing is deleted; remove deletes it, and an error
// gone says means the volume went meanwhile (success). It returns the volume read and whether remove
// deleted it, for the caller's log.
func DeleteVolume[V any](ctx context.Context, id string, read func(context.Context, string) (V, error), inUse func(V) error,
	remove func(context.Context, string) error, gone func(error) bool) (v V, deleted bool, err error) {
	v, err = read(ctx, id)
	switch {
	case cloudprovider.IsNotFound(err):
		return v, false, nil
	case err != nil:
		return v, false, err
	}
	if err := inUse(v); err != nil {
		return v, false, err
	}
	if err := remove(ctx, id); err != nil {
		if gone(err) {
			return v, false, nil
		}
		return v, false, err
	}
	return v, true, nil
}
