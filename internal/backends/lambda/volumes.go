package lambda

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// Lambda's file systems are hydra's shared_fs volumes. The shapes are those of Lambda's OpenAPI
// document (v1.10.0): the Filesystem schema, GET /file-systems, POST /filesystems {name, region},
// DELETE /filesystems/{id} ({"deleted_ids": [...]}), and the launch request's file_system_mounts
// [{file_system_id, mount_point}]. A file system has no size (it grows as it fills) and no price in the
// API (Volume.SizeGB and PricePerMonth stay 0); it has no labels, so its name is its only ownership
// record. It is attached only at launch (CreateWithVolumes), and Lambda lists no instances on it: a
// volume's AttachedTo are the live instances whose file_system_mounts name it.

var (
	_ cloudprovider.VolumeBackend  = (*Backend)(nil)
	_ cloudprovider.VolumeLauncher = (*Backend)(nil)
)

// FileSystem is one of Lambda's file systems (the OpenAPI document's Filesystem).
type FileSystem struct {
	ID         string    `json:"id"`
	Name       string    `json:"name"`
	MountPoint string    `json:"mount_point"`
	Created    time.Time `json:"created"`
	IsInUse    bool      `json:"is_in_use"`
	Region     Region    `json:"region"`
	BytesUsed  *int64    `json:"bytes_used,omitempty"`
}

// FileSystemMount mounts a file system at a launch (the launch request's file_system_mounts, echoed
// in the instance's).
type FileSystemMount struct {
	FileSystemID string `json:"file_system_id"`
	MountPoint   string `json:"mount_point"`
}

// CreateFileSystemRequest is the body of POST /filesystems.
type CreateFileSystemRequest struct {
	Name   string `json:"name"`
	Region string `json:"region"`
}

// MountRoots are where Lambda mounts a file system given by id: a mount path is one of them or below
// one (the launch request's file_system_mounts).
var MountRoots = []string{"/home", "/lambda/nfs", "/data"}

// FileSystems lists the account's file systems (GET /file-systems; no paging in the document).
func (c *Client) FileSystems(ctx context.Context) ([]FileSystem, error) {
	return do[[]FileSystem](ctx, c, "listing file systems", restclient.Request{Method: http.MethodGet, Path: "/file-systems"})
}

// CreateFileSystem creates a file system (POST /filesystems). It is not retried on 5xx: a lost answer
// may hide a created one.
func (c *Client) CreateFileSystem(ctx context.Context, req CreateFileSystemRequest) (FileSystem, error) {
	return do[FileSystem](ctx, c, "creating file system", restclient.Request{Method: http.MethodPost, Path: "/filesystems",
		Body: req, NotIdempotent: true})
}

// DeleteFileSystem deletes a file system (DELETE /filesystems/{id}); one in use is 400
// filesystems/filesystem-in-use.
func (c *Client) DeleteFileSystem(ctx context.Context, id string) error {
	return send(ctx, c, "deleting file system", restclient.Request{Method: http.MethodDelete, Path: "/filesystems/" + url.PathEscape(id)})
}

// VolumeTypes answers shared_fs in every region where some instance type has capacity now (Lambda
// lists no regions of its own for file systems), within Config.Regions.
func (b *Backend) VolumeTypes(ctx context.Context) (map[cloudprovider.VolumeType][]string, error) {
	items, err := b.client.InstanceTypes(ctx)
	if err != nil {
		return nil, err
	}
	var regions []string
	for _, it := range items {
		for _, r := range it.RegionsWithCapacityAvailable {
			if r.Name != "" && !slices.Contains(regions, r.Name) && (len(b.cfg.Regions) == 0 || slices.Contains(b.cfg.Regions, r.Name)) {
				regions = append(regions, r.Name)
			}
		}
	}
	sort.Strings(regions)
	return map[cloudprovider.VolumeType][]string{cloudprovider.VolumeSharedFS: regions}, nil
}

// CreateVolume creates a file system named req.Name in req.Region, or returns the one of that name
// (in that region; in another it is ErrInvalid). Only shared_fs exists; SizeGB is ignored (a Lambda
// file system grows as it fills).
func (b *Backend) CreateVolume(ctx context.Context, req cloudprovider.VolumeRequest) (cloudprovider.Volume, error) {
	const op = "creating volume"
	if err := checkName(op, "volume", req.Name); err != nil {
		return cloudprovider.Volume{}, err
	}
	if req.Type != cloudprovider.VolumeSharedFS {
		return cloudprovider.Volume{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op,
			"Lambda has no %s volumes, only %s (file systems)", req.Type, cloudprovider.VolumeSharedFS)
	}
	return b.creates.Volume(ctx, CloudName, req, b.ListVolumes, func(ctx context.Context) (cloudprovider.Volume, error) {
		fs, err := b.client.CreateFileSystem(ctx, CreateFileSystemRequest{Name: req.Name, Region: req.Region})
		if err != nil {
			return cloudprovider.Volume{}, err
		}
		b.log.Info("file system created", "name", fs.Name, "id", fs.ID, "region", fs.Region.Name)
		return toVolume(fs, nil), nil
	})
}

// GetVolume reads one file system by id (Lambda has no call for one: the list is read), with the
// instances mounting it.
func (b *Backend) GetVolume(ctx context.Context, id string) (cloudprovider.Volume, error) {
	vols, err := b.volumes(ctx, func(fs FileSystem) bool { return fs.ID == id })
	if err != nil {
		return cloudprovider.Volume{}, err
	}
	if len(vols) == 0 {
		return cloudprovider.Volume{}, cloudprovider.Errorf(cloudprovider.ErrNotFound, CloudName, "reading volume", "no file system %s", id)
	}
	return vols[0], nil
}

// ListVolumes returns the file systems whose name starts with prefix.
func (b *Backend) ListVolumes(ctx context.Context, prefix string) ([]cloudprovider.Volume, error) {
	return b.volumes(ctx, func(fs FileSystem) bool { return strings.HasPrefix(fs.Name, prefix) })
}

// volumes reads the file systems keep selects, and the instances to know which mount them.
func (b *Backend) volumes(ctx context.Context, keep func(FileSystem) bool) ([]cloudprovider.Volume, error) {
	all, err := b.client.FileSystems(ctx)
	if err != nil {
		return nil, err
	}
	var picked []FileSystem
	for _, fs := range all {
		if keep(fs) {
			picked = append(picked, fs)
		}
	}
	if len(picked) == 0 {
		return nil, nil
	}
	instances, err := b.client.Instances(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]cloudprovider.Volume, 0, len(picked))
	for _, fs := range picked {
		out = append(out, toVolume(fs, instances))
	}
	return out, nil
}

// toVolume maps a file system onto a volume; AttachedTo are the live instances that mount it (by id
// in file_system_mounts, or by name in file_system_names).
func toVolume(fs FileSystem, instances []Instance) cloudprovider.Volume {
	v := cloudprovider.Volume{ID: fs.ID, Name: fs.Name, Cloud: CloudName, Region: fs.Region.Name,
		Type: cloudprovider.VolumeSharedFS, CreatedAt: fs.Created}
	for _, in := range instances {
		if s, _ := mapStatus(in.Status, in.ip() != ""); s == cloudprovider.StatusTerminated {
			continue
		}
		uses := slices.Contains(in.FileSystemNames, fs.Name)
		for _, m := range in.FileSystemMounts {
			uses = uses || m.FileSystemID == fs.ID
		}
		if uses {
			v.AttachedTo = append(v.AttachedTo, in.ID)
		}
	}
	return v
}

// DeleteVolume deletes a file system. One a live instance mounts is ErrInvalid (Lambda refuses it:
// filesystems/filesystem-in-use) and stays; one already gone is success.
func (b *Backend) DeleteVolume(ctx context.Context, id string) error {
	err := b.client.DeleteFileSystem(ctx, id)
	switch {
	case cloudprovider.IsNotFound(err):
		return nil
	case err != nil:
		if re, ok := asResponseError(err); ok && re.Code == CodeFilesystemInUse {
			return cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, "deleting volume",
				"file system %s is mounted by a machine; delete the machine first (%s)", id, re.Message)
		}
		return err
	}
	b.log.Info("file system deleted", "id", id)
	return nil
}

// CreateWithVolumes is Create with the file systems of mounts mounted at launch (file_system_mounts;
// a mount without a path is mounted at /lambda/nfs/<name>). A file system of another region than the
// offer's, an unknown one and a path outside MountRoots are ErrInvalid, checked before anything is
// launched (Lambda refuses the first too: file-system-in-wrong-region).
func (b *Backend) CreateWithVolumes(ctx context.Context, req cloudprovider.CreateRequest, mounts []cloudprovider.VolumeMount) (cloudprovider.Instance, error) {
	const op = "creating instance"
	if len(mounts) == 0 {
		return b.Create(ctx, req)
	}
	region := req.Offer.Details[DetailRegionName]
	if region == "" {
		region = req.Offer.Region
	}
	all, err := b.client.FileSystems(ctx)
	if err != nil {
		return cloudprovider.Instance{}, err
	}
	var fsm []FileSystemMount
	for _, m := range mounts {
		i := slices.IndexFunc(all, func(fs FileSystem) bool { return fs.ID == m.VolumeID })
		if i < 0 {
			return cloudprovider.Instance{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "no file system %s", m.VolumeID)
		}
		fs := all[i]
		if fs.Region.Name != region {
			return cloudprovider.Instance{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op,
				"volume %s is in lambda/%s, the machine's offer in lambda/%s", fs.Name, fs.Region.Name, region)
		}
		at := m.MountPath
		if at == "" {
			at = "/lambda/nfs/" + fs.Name
		}
		if !underMountRoot(at) {
			return cloudprovider.Instance{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op,
				"Lambda mounts a file system only at %s or below one (letters, digits, dashes), not at %s", strings.Join(MountRoots, ", "), at)
		}
		fsm = append(fsm, FileSystemMount{FileSystemID: fs.ID, MountPoint: at})
	}
	return b.create(ctx, req, fsm)
}

// mountPointRE is the launch request's mount_point pattern (RequestedFilesystemMountEntry, at most 256
// characters).
var mountPointRE = regexp.MustCompile(`^(/home|/lambda/nfs|/data)[/a-zA-Z0-9-]*$`)

// underMountRoot reports whether path is one of MountRoots or below one, as Lambda's mount_point
// pattern allows it (letters, digits, dashes and slashes; at most 256 characters).
func underMountRoot(path string) bool {
	if len(path) > 256 || !mountPointRE.MatchString(path) {
		return false
	}
	for _, r := range MountRoots {
		if path == r || strings.HasPrefix(path, r+"/") {
			return !slices.Contains(strings.Split(path, "/"), "..")
		}
	}
	return false
}
