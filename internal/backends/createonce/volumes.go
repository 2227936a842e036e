package createonce

import (
	"context"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// Volume creates the volume req asks for idempotently by its name (Run): under the name's lock (a key
// of its own: a machine and a volume of one name never wait for each other) it returns the volume list
// finds under exactly that name, ErrInvalid when that one is in another region, or makes it with
// create; when create's outcome is unknown (UnknownOutcome) it looks once more.
func (g *Group) Volume(ctx context.Context, cloud string, req cloudprovider.VolumeRequest,
	list func(ctx context.Context, prefix string) ([]cloudprovider.Volume, error),
	create func(ctx context.Context) (cloudprovider.Volume, error)) (cloudprovider.Volume, error) {
	const op = "creating volume"
	v, _, err := Run(ctx, g, StepsOf[cloudprovider.Volume]{Cloud: cloud, Op: op, Name: req.Name, Key: "volume:" + req.Name,
		Find: func(ctx context.Context) (cloudprovider.Volume, bool, error) {
			v, ok, err := cloudprovider.FindNamed(ctx, req.Name, list, func(v cloudprovider.Volume) bool { return v.Name == req.Name }, nil)
			if ok && v.Region != req.Region {
				return v, true, cloudprovider.Errorf(cloudprovider.ErrInvalid, cloud, op,
					"a volume named %s already exists in %s, not in %s", req.Name, v.Region, req.Region)
			}
			return v, ok, err
		},
		Create: create,
	})
	return v, err
}
