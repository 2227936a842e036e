package mithril

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendkit"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// Mithril's volumes. The shapes are those of Mithril's Compute API OpenAPI document (the Volumes tag:
// VolumeModel, CreateVolumeRequest, GET/POST /v2/volumes, DELETE /v2/volumes/{volume_fid}): Block
// volumes are hydra's block volumes, File ones its shared_fs. A volume is bound to its region, goes to
// a bid's machine through launch_specification.volumes (CreateWithVolumes), and survives the bid's
// termination and preemption (Mithril's docs). It lists the bids using it: AttachedTo are those bids'
// FIDs, hydra's machine ids. Volumes carry no labels, so the name is the only ownership record, and
// Mithril states no price for them in the API (PricePerMonth 0). Deleting one in use is refused by
// Mithril and, before that, by DeleteVolume.

var (
	_ cloudprovider.VolumeBackend  = (*Backend)(nil)
	_ cloudprovider.VolumeLauncher = (*Backend)(nil)
)

// Mithril's disk interfaces (CreateVolumeRequest.disk_interface, VolumeModel.interface).
const (
	DiskInterfaceBlock = "Block"
	DiskInterfaceFile  = "File"
)

var diskInterfaces = map[cloudprovider.VolumeType]string{
	cloudprovider.VolumeBlock:    DiskInterfaceBlock,
	cloudprovider.VolumeSharedFS: DiskInterfaceFile,
}

// volumeNameRE is the name pattern of CreateVolumeRequest (at most 64 characters).
var volumeNameRE = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)

// Volume is a VolumeModel.
type Volume struct {
	FID          string            `json:"fid"`
	Name         string            `json:"name"`
	Region       string            `json:"region"`
	CreatedAt    APITime           `json:"created_at"`
	DeletedAt    *APITime          `json:"deleted_at"`
	CapacityGB   int               `json:"capacity_gb"`
	Project      string            `json:"project"`
	Interface    string            `json:"interface"`
	Bids         []string          `json:"bids"`
	Reservations []string          `json:"reservations"`
	Attachments  map[string]string `json:"attachments"`
}

// CreateVolumeRequest is the body of POST /v2/volumes.
type CreateVolumeRequest struct {
	Name          string `json:"name"`
	Project       string `json:"project"`
	DiskInterface string `json:"disk_interface"`
	Region        string `json:"region"`
	SizeGB        int    `json:"size_gb"`
}

// Volumes lists the project's volumes that are not deleted (GET /v2/volumes).
func (c *Client) Volumes(ctx context.Context, project string) ([]Volume, error) {
	return get[[]Volume](ctx, c, "listing volumes", "/v2/volumes", url.Values{"project": {project}})
}

// CreateVolume creates a volume (POST /v2/volumes; 201 with the volume). It is never retried after a
// 5xx or a lost answer.
func (c *Client) CreateVolume(ctx context.Context, req CreateVolumeRequest) (Volume, error) {
	return call[Volume](ctx, c, "creating volume", restclient.Request{Method: http.MethodPost, Path: "/v2/volumes", Body: req, NotIdempotent: true})
}

// DeleteVolume deletes a volume (DELETE /v2/volumes/{fid}; 204).
func (c *Client) DeleteVolume(ctx context.Context, fid string) error {
	if err := checkFID(fid); err != nil {
		return cloudprovider.NewError(cloudprovider.ErrNotFound, CloudName, "deleting volume", err)
	}
	_, err := c.rc.Do(ctx, restclient.Request{Method: http.MethodDelete, Path: "/v2/volumes/" + url.PathEscape(fid)})
	return classify("deleting volume "+fid, err)
}

// VolumeTypes answers block (Block) and shared_fs (File) in every region that has a spot auction.
func (b *Backend) VolumeTypes(ctx context.Context) (map[cloudprovider.VolumeType][]string, error) {
	auctions, err := b.client.SpotAvailability(ctx)
	if err != nil {
		return nil, err
	}
	var regions []string
	for _, a := range auctions {
		if a.Region != "" && !slices.Contains(regions, a.Region) {
			regions = append(regions, a.Region)
		}
	}
	sort.Strings(regions)
	return map[cloudprovider.VolumeType][]string{cloudprovider.VolumeBlock: regions, cloudprovider.VolumeSharedFS: regions}, nil
}

// CreateVolume creates a volume named req.Name of req.SizeGB GB in region req.Region, or returns the one
// of that name (in another region it is ErrInvalid). A name Mithril would refuse is ErrInvalid first.
func (b *Backend) CreateVolume(ctx context.Context, req cloudprovider.VolumeRequest) (cloudprovider.Volume, error) {
	const op = "creating volume"
	iface, ok := diskInterfaces[req.Type]
	switch {
	case len(req.Name) > 64 || !volumeNameRE.MatchString(req.Name):
		return cloudprovider.Volume{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op,
			"volume name %q: Mithril takes at most 64 lowercase letters, digits and dashes, starting with a letter", req.Name)
	case !ok:
		return cloudprovider.Volume{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "Mithril has no %q volumes", req.Type)
	case req.SizeGB <= 0:
		return cloudprovider.Volume{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "volume size %d GB", req.SizeGB)
	}
	project, err := b.projectFID(ctx)
	if err != nil {
		return cloudprovider.Volume{}, err
	}
	return b.creates.Volume(ctx, CloudName, req, b.ListVolumes, func(ctx context.Context) (cloudprovider.Volume, error) {
		v, err := b.client.CreateVolume(ctx, CreateVolumeRequest{Name: req.Name, Project: project, DiskInterface: iface, Region: req.Region, SizeGB: req.SizeGB})
		if err != nil {
			return cloudprovider.Volume{}, err
		}
		b.log.Info("volume created", "name", v.Name, "fid", v.FID, "region", v.Region)
		return toVolume(v), nil
	})
}

// GetVolume reads one volume (from the project's list: the API has no call for one); a deleted or
// unknown one is ErrNotFound.
func (b *Backend) GetVolume(ctx context.Context, id string) (cloudprovider.Volume, error) {
	v, err := b.volume(ctx, id)
	if err != nil {
		return cloudprovider.Volume{}, err
	}
	return toVolume(v), nil
}

func (b *Backend) volume(ctx context.Context, fid string) (Volume, error) {
	project, err := b.projectFID(ctx)
	if err != nil {
		return Volume{}, err
	}
	all, err := b.client.Volumes(ctx, project)
	if err != nil {
		return Volume{}, err
	}
	for _, v := range all {
		if v.FID == fid && v.DeletedAt == nil {
			return v, nil
		}
	}
	return Volume{}, cloudprovider.Errorf(cloudprovider.ErrNotFound, CloudName, "reading volume", "no volume %s", fid)
}

// ListVolumes returns the volumes whose name starts with prefix.
func (b *Backend) ListVolumes(ctx context.Context, prefix string) ([]cloudprovider.Volume, error) {
	project, err := b.projectFID(ctx)
	if err != nil {
		return nil, err
	}
	return backendkit.ListVolumes(ctx, prefix, func(ctx context.Context) ([]Volume, error) { return b.client.Volumes(ctx, project) },
		func(v Volume) string { return v.Name }, func(v Volume) bool { return v.DeletedAt == nil }, toVolume)
}

func toVolume(v Volume) cloudprovider.Volume {
	out := cloudprovider.Volume{ID: v.FID, Name: v.Name, Cloud: CloudName, Region: v.Region, SizeGB: v.CapacityGB,
		Type: cloudprovider.VolumeBlock, CreatedAt: v.CreatedAt.Time, AttachedTo: slices.Clone(v.Bids)}
	if v.Interface == DiskInterfaceFile {
		out.Type = cloudprovider.VolumeSharedFS
	}
	return out
}

// DeleteVolume deletes a volume. One a bid uses is ErrInvalid and stays (Mithril refuses it too); an
// unknown or deleted one is success.
func (b *Backend) DeleteVolume(ctx context.Context, id string) error {
	v, deleted, err := backendkit.DeleteVolume(ctx, id, b.volume, func(v Volume) error {
		if len(v.Bids) == 0 {
			return nil
		}
		return cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, "deleting volume",
			"volume %s is used by bid %s; delete the machine first", v.Name, strings.Join(v.Bids, ", "))
	}, b.client.DeleteVolume, cloudprovider.IsNotFound)
	if deleted {
		b.log.Info("volume deleted", "fid", id, "name", v.Name)
	}
	return err
}

// CreateWithVolumes is Create with the volumes of mounts in the bid's launch_specification.volumes. A
// volume of another region than the offer's, an unknown one and a Block volume another bid uses are
// ErrInvalid, before any bid is placed. Mithril mounts nothing at a path: MountPath is the playbook's.
func (b *Backend) CreateWithVolumes(ctx context.Context, req cloudprovider.CreateRequest, mounts []cloudprovider.VolumeMount) (cloudprovider.Instance, error) {
	const op = "placing bid"
	fids, err := b.mountedFIDs(ctx, op, "machine", req.Offer.Region, mounts, func(v Volume) error {
		if v.Interface == DiskInterfaceBlock && len(v.Bids) > 0 {
			return cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op,
				"block volume %s is used by bid %s already", v.Name, strings.Join(v.Bids, ", "))
		}
		return nil
	})
	if err != nil {
		return cloudprovider.Instance{}, err
	}
	return b.create(ctx, req, fids)
}

// clusterVolumes checks the volumes a cluster bid in region gives every instance and returns their FIDs
// for its launch_specification.volumes. An unknown volume, one of another region and a Block volume (a
// block device is on one instance; a cluster bid has several) are ErrInvalid, before any bid is placed.
func (b *Backend) clusterVolumes(ctx context.Context, region string, mounts []cloudprovider.VolumeMount) ([]string, error) {
	const op = "placing cluster bid"
	return b.mountedFIDs(ctx, op, "cluster", region, mounts, func(v Volume) error {
		if v.Interface != DiskInterfaceFile {
			return cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op,
				"volume %s is a block volume, on one machine at a time; a cluster's nodes can share only %s (File) volumes", v.Name, cloudprovider.VolumeSharedFS)
		}
		return nil
	})
}

// mountedFIDs is the FIDs of the volumes of mounts for a bid in region (backendkit.Mounted).
func (b *Backend) mountedFIDs(ctx context.Context, op, subject, region string, mounts []cloudprovider.VolumeMount, check func(Volume) error) ([]string, error) {
	vols, err := backendkit.Mounted(ctx, CloudName, op, subject, region, mounts, b.volume,
		func(v Volume) (string, string) { return v.Name, v.Region }, check)
	var fids []string
	for _, v := range vols {
		fids = append(fids, v.FID)
	}
	return fids, err
}
