package createonce

import (
	"context"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// Volume creates the volume req asks for idempotently by its name, the way Do creates instances: under
// the name's lock (a key of its own: a machine and a volume of one name never wait for each other) it
// returns the volume list finds under exactly that name, an ErrInvalid one when that one is in another
// region, or makes it with create; when create's outcome is unknown (UnknownOutcome) it looks once more.
func (g *Group) Volume(ctx context.Context, cloud string, req cloudprovider.VolumeRequest,
	list func(ctx context.Context, prefix string) ([]cloudprovider.Volume, error),
	create func(ctx context.Context) (cloudprovider.Volume, error)) (cloudprovider.Volume, error) {
	const op = "creating volume"
	unlock, err := g.Lock(ctx, "volume:"+req.Name)
	if err != nil {
		return cloudprovider.Volume{}, cloudprovider.NewError(cloudprovider.ErrOther, cloud, op, err)
	}
	defer unlock()
	find := func() (cloudprovider.Volume, bool, error) {
		vols, err := list(ctx, req.Name)
		for _, v := range vols {
			if v.Name != req.Name {
				continue
			}
			if v.Region != req.Region {
				return v, true, cloudprovider.Errorf(cloudprovider.ErrInvalid, cloud, op,
					"a volume named %s already exists in %s, not in %s", req.Name, v.Region, req.Region)
			}
			return v, true, nil
		}
		return cloudprovider.Volume{}, false, err
	}
	if v, ok, err := find(); ok || err != nil {
		return v, err
	}
	v, err := create(ctx)
	if err != nil && UnknownOutcome(ctx, err) {
		if found, ok, ferr := find(); ok && ferr == nil {
			return found, nil // the answer was lost, the volume made
		}
	}
	return v, err
}
