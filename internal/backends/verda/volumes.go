package verda

import (
	"cmp"
	"context"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendkit"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/verda/verdaapi"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// Verda's volumes (shapes in verdaapi/volumes.go, from the API's volume DTOs as Verda's clients carry
// them): NVMe volumes are hydra's block volumes (HDD ones are read as block too), NVMe_Shared ones its
// shared_fs. Every type is offered in every location; a volume is bound to its location. Volumes carry
// no tags, so the name is the only ownership record. A volume goes to a machine at its create
// (existing_volumes; attaching later needs the machine shut down, which hydra never does to a machine
// it provisioned), and stays when the machine is deleted (Delete sends no volume_ids: Verda detaches
// the data volumes). Verda would delete a volume attached to a shut-down instance; DeleteVolume refuses
// any attached volume itself. A deleted volume sits in Verda's trash for 96 hours, where hydra takes it
// as gone. The price is the volume's monthly_price, converted like instance prices. Every volume is
// created with on_spot_discontinue keep_detached (Verda's default, stated so that a changed default
// never trashes data): a spot machine's create names its volumes by id only (existing_volumes takes no
// policy), so the volume's own policy is where the API allows it.

var (
	_ cloudprovider.VolumeBackend  = (*Backend)(nil)
	_ cloudprovider.VolumeLauncher = (*Backend)(nil)
)

// cloudVolumeType is the Verda type hydra creates for each of its types.
var cloudVolumeType = map[cloudprovider.VolumeType]string{
	cloudprovider.VolumeBlock:    verdaapi.VolumeTypeNVMe,
	cloudprovider.VolumeSharedFS: verdaapi.VolumeTypeNVMeShared,
}

// Volumes lists the volumes not deleted (GET /volumes).
func (c *Client) Volumes(ctx context.Context) ([]verdaapi.Volume, error) {
	return get[[]verdaapi.Volume](ctx, c, "listing volumes", "/volumes", nil)
}

// Volume reads one volume (GET /volumes/{id}).
func (c *Client) Volume(ctx context.Context, id string) (verdaapi.Volume, error) {
	return get[verdaapi.Volume](ctx, c, "reading volume", "/volumes/"+url.PathEscape(id), nil)
}

// CreateVolume creates a volume (POST /volumes) and returns its id, answered as plain text. It is not
// retried on 5xx: a lost answer may hide a created volume.
func (c *Client) CreateVolume(ctx context.Context, req verdaapi.CreateVolumeRequest) (string, error) {
	return c.create(ctx, "creating volume", restclient.Request{Method: http.MethodPost, Path: "/volumes", Body: req, NotIdempotent: true})
}

// VolumeTypes lists the volume types with their prices (GET /volume-types).
func (c *Client) VolumeTypes(ctx context.Context) ([]verdaapi.VolumeType, error) {
	return get[[]verdaapi.VolumeType](ctx, c, "listing volume types", "/volume-types", nil)
}

// VolumeTypes answers block (NVMe) and shared_fs (NVMe_Shared) in every location (within
// Config.Locations) when Verda lists the type.
func (b *Backend) VolumeTypes(ctx context.Context) (map[cloudprovider.VolumeType][]string, error) {
	types, err := b.client.VolumeTypes(ctx)
	if err != nil {
		return nil, err
	}
	locs, err := b.client.Locations(ctx)
	if err != nil {
		return nil, err
	}
	var codes []string
	for _, l := range locs {
		if len(b.cfg.Locations) == 0 || slices.Contains(b.cfg.Locations, l.Code) {
			codes = append(codes, l.Code)
		}
	}
	sort.Strings(codes)
	out := map[cloudprovider.VolumeType][]string{}
	for ht, vt := range cloudVolumeType {
		if slices.ContainsFunc(types, func(t verdaapi.VolumeType) bool { return t.Type == vt }) {
			out[ht] = codes
		}
	}
	return out, nil
}

// CreateVolume creates a volume named req.Name of req.SizeGB GB in location req.Region, or returns the
// one of that name (in another location it is ErrInvalid).
func (b *Backend) CreateVolume(ctx context.Context, req cloudprovider.VolumeRequest) (cloudprovider.Volume, error) {
	const op = "creating volume"
	vt, ok := cloudVolumeType[req.Type]
	switch {
	case req.Name == "":
		return cloudprovider.Volume{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "no volume name")
	case !ok:
		return cloudprovider.Volume{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "Verda has no %q volumes", req.Type)
	case req.SizeGB <= 0:
		return cloudprovider.Volume{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "volume size %d GB", req.SizeGB)
	}
	return b.creates.Volume(ctx, CloudName, req, b.ListVolumes, func(ctx context.Context) (cloudprovider.Volume, error) {
		id, err := b.client.CreateVolume(ctx, verdaapi.CreateVolumeRequest{Type: vt, Name: req.Name, Size: req.SizeGB, LocationCode: req.Region,
			OnSpotDiscontinue: verdaapi.SpotDiscontinueKeepDetached})
		if err != nil {
			return cloudprovider.Volume{}, err
		}
		b.log.Info("volume created", "name", req.Name, "id", id, "type", vt, "location", req.Region)
		vol, err := b.client.Volume(ctx, id)
		if err != nil {
			// The volume exists: a failed read-back must not make the caller create it again; the next
			// Get or List reads it whole.
			b.log.Warn("volume created but not read back", "id", id, "error", err)
			return cloudprovider.Volume{ID: id, Name: req.Name, Cloud: CloudName, Region: req.Region, Type: req.Type, SizeGB: req.SizeGB}, nil //nolint:nilerr // created; see above
		}
		return b.toVolume(vol), nil
	})
}

// GetVolume reads one volume; one Verda does not know or keeps in its trash is ErrNotFound.
func (b *Backend) GetVolume(ctx context.Context, id string) (cloudprovider.Volume, error) {
	v, err := b.readVolume(ctx, id)
	if err != nil {
		return cloudprovider.Volume{}, err
	}
	return b.toVolume(v), nil
}

// readVolume reads a data volume; unknown, trashed and OS volumes are ErrNotFound.
func (b *Backend) readVolume(ctx context.Context, id string) (verdaapi.Volume, error) {
	v, err := b.client.Volume(ctx, id)
	if re, ok := asResponseError(err); ok && re.MessageHas("invalid volume id") {
		err = cloudprovider.NewError(cloudprovider.ErrNotFound, CloudName, "reading volume", re)
	}
	if err == nil && (v.Status == verdaapi.VolumeStatusDeleted || v.DeletedAt != nil || v.IsOSVolume) {
		err = cloudprovider.Errorf(cloudprovider.ErrNotFound, CloudName, "reading volume", "volume %s is %s", id, cmp.Or(v.Status, "an OS volume"))
	}
	return v, err
}

// ListVolumes returns the data volumes whose name starts with prefix.
func (b *Backend) ListVolumes(ctx context.Context, prefix string) ([]cloudprovider.Volume, error) {
	return backendkit.ListVolumes(ctx, prefix, b.client.Volumes, func(v verdaapi.Volume) string { return v.Name },
		func(v verdaapi.Volume) bool { return !v.IsOSVolume && v.Status != verdaapi.VolumeStatusDeleted }, b.toVolume)
}

// attachedTo lists the instances a volume is on.
func attachedTo(v verdaapi.Volume) []string {
	var out []string
	for _, in := range v.Instances {
		if in.ID != "" && !slices.Contains(out, in.ID) && in.Status != StatusDiscontinued {
			out = append(out, in.ID)
		}
	}
	if v.InstanceID != nil && *v.InstanceID != "" && !slices.Contains(out, *v.InstanceID) && len(v.Instances) == 0 {
		out = append(out, *v.InstanceID)
	}
	return out
}

func (b *Backend) toVolume(v verdaapi.Volume) cloudprovider.Volume {
	out := cloudprovider.Volume{ID: v.ID, Name: v.Name, Cloud: CloudName, Region: v.Location, SizeGB: v.Size, AttachedTo: attachedTo(v),
		Type: cloudprovider.VolumeBlock}
	if v.Type == verdaapi.VolumeTypeNVMeShared {
		out.Type = cloudprovider.VolumeSharedFS
	}
	if t, err := time.Parse(time.RFC3339, v.CreatedAt); err == nil {
		out.CreatedAt = t
	}
	if v.MonthlyPrice > 0 {
		price, err := money.Exchange{EURToUSD: b.cfg.EURToUSD}.ToUSD(v.MonthlyPrice, cmp.Or(v.Currency, b.cfg.Currency), false)
		if err == nil {
			out.PricePerMonth = price
		} else {
			b.log.Warn("volume price not read", "id", v.ID, "error", err)
		}
	}
	return out
}

// DeleteVolume deletes a volume to Verda's trash. An attached one is ErrInvalid and stays; one Verda
// does not know or already trashed is success.
func (b *Backend) DeleteVolume(ctx context.Context, id string) error {
	v, deleted, err := backendkit.DeleteVolume(ctx, id, b.readVolume, func(v verdaapi.Volume) error {
		on := attachedTo(v)
		if len(on) == 0 {
			return nil
		}
		return cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, "deleting volume",
			"volume %s is attached to machine %s; delete the machine first", v.Name, strings.Join(on, ", "))
	}, b.client.DeleteVolume, func(err error) bool {
		re, ok := asResponseError(err)
		return cloudprovider.IsNotFound(err) || (ok && re.MessageHas("invalid volume id"))
	})
	if deleted {
		b.log.Info("volume deleted (in Verda's trash for 96 hours)", "id", id, "name", v.Name)
	}
	return err
}

// CreateWithVolumes is Create with the volumes of mounts attached at the create (existing_volumes).
// A volume of another location than the offer's, an unknown one and a block volume already on a machine
// are ErrInvalid, before anything is created. Verda mounts nothing: MountPath is the playbook's.
func (b *Backend) CreateWithVolumes(ctx context.Context, req cloudprovider.CreateRequest, mounts []cloudprovider.VolumeMount) (cloudprovider.Instance, error) {
	const op = "creating instance"
	location := cmp.Or(req.Offer.Details[DetailLocationCode], req.Offer.Region)
	vols, err := b.mounted(ctx, op, "machine", location, mounts, func(v verdaapi.Volume) error {
		if on := attachedTo(v); v.Type != verdaapi.VolumeTypeNVMeShared && len(on) > 0 {
			return cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op,
				"volume %s is attached to machine %s already", v.Name, strings.Join(on, ", "))
		}
		return nil
	})
	if err != nil {
		return cloudprovider.Instance{}, err
	}
	var ids []string
	for _, v := range vols {
		ids = append(ids, v.ID)
	}
	return b.create(ctx, req, ids)
}

// clusterVolumes checks the volumes a cluster in location gets (every node has them) and returns them
// as the create's existing_volumes. An unknown volume, one of another location and a block volume (it is
// on one machine at a time; a cluster has several nodes) are ErrInvalid.
func (b *Backend) clusterVolumes(ctx context.Context, location string, mounts []cloudprovider.VolumeMount) ([]verdaapi.ClusterExistingVolume, error) {
	const op = "creating cluster"
	vols, err := b.mounted(ctx, op, "cluster", location, mounts, func(v verdaapi.Volume) error {
		if v.Type != verdaapi.VolumeTypeNVMeShared {
			return cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op,
				"volume %s is a block volume (%s), on one machine at a time; a cluster's nodes can share only %s volumes",
				v.Name, v.Type, cloudprovider.VolumeSharedFS)
		}
		return nil
	})
	var out []verdaapi.ClusterExistingVolume
	for _, v := range vols {
		out = append(out, verdaapi.ClusterExistingVolume{ID: v.ID})
	}
	return out, err
}

// mounted reads the volumes of mounts for a create in location (backendkit.Mounted).
func (b *Backend) mounted(ctx context.Context, op, subject, location string, mounts []cloudprovider.VolumeMount, check func(verdaapi.Volume) error) ([]verdaapi.Volume, error) {
	return backendkit.Mounted(ctx, CloudName, op, subject, location, mounts, b.readVolume,
		func(v verdaapi.Volume) (string, string) { return v.Name, v.Location }, check)
}
