package backendkit

import (
	"context"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

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
