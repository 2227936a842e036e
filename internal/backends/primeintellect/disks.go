package primeintellect

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendkit"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// Prime Intellect's network-attached disks are hydra's block volumes. The shapes come from these
// documents:
//   - Prime's compute OpenAPI document (kept in api-evangelist/prime-intellect,
//     openapi/prime-intellect-disks-api-openapi.yml): POST /api/v1/disks/ {disk: {size, name, country,
//     cloudId, dataCenterId}, provider: {type}, team}, GET/PATCH/DELETE /api/v1/disks/{id}, GET
//     /api/v1/disks/ (offset, limit; {total_count, offset, limit, data}), the disk (APIDiskConfig:
//     status, providerType, size, info, priceHr, pods, clusters, ...);
//   - its pods part (openapi/prime-intellect-pods-api-openapi.yml): the create body's `disks` (disk
//     ids) and the pod's attachedResources [{resourceType DISK, id, status UNATTACHED | ATTACHED |
//     MOUNTED, mountPath (default /workspace), resourcePath, size, isShared}];
//   - the prime CLI (PrimeIntellect-ai/prime): a disk's info {country, dataCenterId, cloudId,
//     isMultinode}; /availability/gpus takes `disks` (repeated ids) for GPUs co-located with them;
//   - Prime's docs ("Managing Disks"): /availability/disks spec.pricePerUnit is $ per GB and hour;
//     disks must be in the same data center as the pod.
//
// A disk is bound to its provider and data center: hydra offers block volumes in every data center
// whose provider sells disks (/availability/disks), and a volume's region is its data center, the
// region Prime's offers carry. Places without a data center (dataCenter null) are left out: no offer's
// region could be matched to them. Prime keeps no type with a disk, and sharedDisk is null in every
// recorded offer, so hydra offers no shared_fs (a disk place's isMultinode is not used). A disk has no
// labels and its only metadata is its name, so the name is its ownership record (Volume.Owner stays
// empty). Prime states the price per hour (priceHr); PricePerMonth is it times HoursPerMonth.

var (
	_ cloudprovider.VolumeBackend  = (*Backend)(nil)
	_ cloudprovider.VolumeLauncher = (*Backend)(nil)
	_ cloudprovider.VolumeAttacher = (*Backend)(nil)
)

// HoursPerMonth turns Prime's hourly disk price into a monthly one: 8760 hours a year over 12 months.
const HoursPerMonth = 730

// DefaultMountPath is where Prime mounts a disk when the pod's attachedResources name no mountPath (the
// document's default).
const DefaultMountPath = "/workspace"

// Facts are what Prime states: it mounts a pod's disk itself, at DefaultMountPath (its create takes no
// path).
var Facts = cloudprovider.Facts{VolumeMountPath: DefaultMountPath}

// Facts returns the package's Facts.
func (b *Backend) Facts() cloudprovider.Facts { return Facts }

// Disk is one of Prime's disks (APIDiskConfig).
type Disk struct {
	ID           string   `json:"id"`
	Name         string   `json:"name"`
	CreatedAt    string   `json:"createdAt"`
	UpdatedAt    string   `json:"updatedAt"`
	TerminatedAt string   `json:"terminatedAt"`
	Status       string   `json:"status"`
	ProviderType string   `json:"providerType"`
	Size         Number   `json:"size"`
	Info         DiskInfo `json:"info"`
	PriceHr      Number   `json:"priceHr"`
	TeamID       string   `json:"teamId"`
	Pods         []string `json:"pods"`
	Clusters     []string `json:"clusters"`
}

// DiskInfo is a disk's info, as the prime CLI reads it; any of it may be null.
type DiskInfo struct {
	Country      string `json:"country"`
	DataCenterID string `json:"dataCenterId"`
	CloudID      string `json:"cloudId"`
	IsMultinode  *bool  `json:"isMultinode"`
}

// UnmarshalJSON reads info leniently: the document types it as any object or null.
func (i *DiskInfo) UnmarshalJSON(b []byte) error {
	type plain DiskInfo
	var p plain
	if json.Unmarshal(b, &p) == nil {
		*i = DiskInfo(p)
	}
	return nil
}

// region is the disk's place as hydra names regions: its data center, else its country.
func (d Disk) region() string { return cmp.Or(d.Info.DataCenterID, d.Info.Country) }

// gone says a disk is deleted or being deleted.
func (d Disk) gone() bool {
	return strings.EqualFold(d.Status, "TERMINATED") || strings.EqualFold(d.Status, "DELETING")
}

// DiskSpec is the disk part of POST /api/v1/disks/ (APIDiskCreateRequest, which admits no other field).
type DiskSpec struct {
	Size         int    `json:"size"`
	Name         string `json:"name,omitempty"`
	Country      string `json:"country,omitempty"`
	DataCenterID string `json:"dataCenterId,omitempty"`
}

// CreateDiskRequest is the body of POST /api/v1/disks/.
type CreateDiskRequest struct {
	Disk     DiskSpec    `json:"disk"`
	Provider ProviderRef `json:"provider"`
	Team     *TeamRef    `json:"team,omitempty"`
}

// AttachedResource is one entry of a pod's attachedResources.
type AttachedResource struct {
	ResourceType string     `json:"resourceType"`
	ID           resourceID `json:"id"`
	Status       string     `json:"status"`
	MountPath    string     `json:"mountPath"`
	ResourcePath string     `json:"resourcePath"`
	Size         Number     `json:"size"`
	IsShared     *bool      `json:"isShared"`
	IsDetachable *bool      `json:"isDetachable"`
}

// resourceID is an attached resource's id, a string or an integer in the document.
type resourceID string

// UnmarshalJSON accepts a string, a number or null.
func (r *resourceID) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	var s string
	switch {
	case string(b) == "null":
		*r = ""
	case json.Unmarshal(b, &s) == nil:
		*r = resourceID(s)
	default:
		*r = resourceID(b)
	}
	return nil
}

// CreateDisk creates a disk. It is not retried on 5xx or timeouts: a lost answer may hide a disk.
func (c *Client) CreateDisk(ctx context.Context, req CreateDiskRequest) (Disk, error) {
	return call[Disk](ctx, c, "creating disk", restclient.Request{Method: http.MethodPost, Path: "/api/v1/disks/", Body: req, NotIdempotent: true})
}

// GetDisk returns one disk; a missing disk is an ErrNotFound error.
func (c *Client) GetDisk(ctx context.Context, id string) (Disk, error) {
	return call[Disk](ctx, c, "reading disk", restclient.Request{Method: http.MethodGet, Path: "/api/v1/disks/" + url.PathEscape(id)})
}

// ListDisks returns every disk of the account, reading every page.
func (c *Client) ListDisks(ctx context.Context) ([]Disk, error) {
	return listAll(ctx, c, "listing disks", "/api/v1/disks/", func(d Disk) string { return d.ID })
}

// DeleteDisk terminates a disk and returns the status the API answers with.
func (c *Client) DeleteDisk(ctx context.Context, id string) (string, error) {
	return c.deleteStatus(ctx, "deleting disk", "/api/v1/disks/"+url.PathEscape(id))
}

// diskPlaces returns the places that sell disks now, by data center: those with a data center and a
// provider, not Unavailable; within one data center the cheapest first, then by provider.
func (b *Backend) diskPlaces(ctx context.Context) (map[string][]DiskOffer, error) {
	offers, err := b.client.Disks(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string][]DiskOffer{}
	for _, o := range offers {
		if o.DataCenter == "" || o.Provider == "" || strings.EqualFold(o.StockStatus, "Unavailable") {
			continue
		}
		out[o.DataCenter] = append(out[o.DataCenter], o)
	}
	for _, places := range out {
		sort.SliceStable(places, func(i, j int) bool {
			if places[i].Spec.PricePerUnit.V != places[j].Spec.PricePerUnit.V {
				return places[i].Spec.PricePerUnit.V < places[j].Spec.PricePerUnit.V
			}
			return places[i].Provider < places[j].Provider
		})
	}
	return out, nil
}

// VolumeTypes answers block in every data center that sells disks now.
func (b *Backend) VolumeTypes(ctx context.Context) (map[cloudprovider.VolumeType][]string, error) {
	places, err := b.diskPlaces(ctx)
	if err != nil {
		return nil, err
	}
	regions := make([]string, 0, len(places))
	for dc := range places {
		regions = append(regions, dc)
	}
	sort.Strings(regions)
	return map[cloudprovider.VolumeType][]string{cloudprovider.VolumeBlock: regions}, nil
}

// CreateVolume creates a disk named req.Name in the data center req.Region, from the cheapest provider
// selling disks there, or returns the live disk of that name (in another data center: ErrInvalid). Only
// block volumes exist; a size outside the place's spec (minCount, maxCount) is ErrInvalid.
func (b *Backend) CreateVolume(ctx context.Context, req cloudprovider.VolumeRequest) (cloudprovider.Volume, error) {
	const op = "creating volume"
	switch {
	case req.Name == "":
		return cloudprovider.Volume{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "no volume name")
	case len(req.Name) > 255:
		return cloudprovider.Volume{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op,
			"volume name %q is %d characters long; Prime Intellect allows at most 255", req.Name, len(req.Name))
	case req.Type != cloudprovider.VolumeBlock:
		return cloudprovider.Volume{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op,
			"Prime Intellect has no %s volumes, only %s (disks)", req.Type, cloudprovider.VolumeBlock)
	case req.SizeGB <= 0:
		return cloudprovider.Volume{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "a disk needs a size (GB), got %d", req.SizeGB)
	}
	return b.creates.Volume(ctx, CloudName, req, b.ListVolumes, func(ctx context.Context) (cloudprovider.Volume, error) {
		places, err := b.diskPlaces(ctx)
		if err != nil {
			return cloudprovider.Volume{}, err
		}
		if len(places[req.Region]) == 0 {
			return cloudprovider.Volume{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op,
				"Prime Intellect sells no disks in %s now", req.Region)
		}
		p := places[req.Region][0]
		if lo, hi := p.Spec.MinCount, p.Spec.MaxCount; (lo.Set && req.SizeGB < lo.Int()) || (hi.Set && hi.Int() > 0 && req.SizeGB > hi.Int()) {
			return cloudprovider.Volume{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op,
				"%s's disks in %s are %d to %d GB, not %d", p.Provider, req.Region, lo.Int(), hi.Int(), req.SizeGB)
		}
		body := CreateDiskRequest{Disk: DiskSpec{Size: req.SizeGB, Name: req.Name, Country: p.Country, DataCenterID: p.DataCenter},
			Provider: ProviderRef{Type: p.Provider}}
		if b.cfg.TeamID != "" {
			body.Team = &TeamRef{TeamID: b.cfg.TeamID}
		}
		d, err := b.client.CreateDisk(ctx, body)
		if err != nil {
			return cloudprovider.Volume{}, err
		}
		b.log.Info("disk created", "name", d.Name, "id", d.ID, "provider", d.ProviderType, "data_center", d.region())
		v := b.toVolume(d)
		v.Region = cmp.Or(v.Region, req.Region)
		return v, nil
	})
}

// toVolume maps a disk; AttachedTo are the pods the disk lists.
func (b *Backend) toVolume(d Disk) cloudprovider.Volume {
	v := cloudprovider.Volume{ID: d.ID, Name: d.Name, Cloud: CloudName, Region: d.region(), Type: cloudprovider.VolumeBlock,
		SizeGB: d.Size.Int(), CreatedAt: parseTime(d.CreatedAt)}
	for _, p := range d.Pods {
		if p != "" && !slices.Contains(v.AttachedTo, p) {
			v.AttachedTo = append(v.AttachedTo, p)
		}
	}
	if d.PriceHr.Set && d.PriceHr.V > 0 {
		if price, err := money.FromFloat(d.PriceHr.V * HoursPerMonth); err == nil {
			v.PricePerMonth = price
		} else {
			b.log.Warn("disk price not read", "id", d.ID, "price_hr", d.PriceHr.V, "error", err)
		}
	}
	return v
}

// GetVolume reads one disk; a deleted or deleting one is ErrNotFound.
func (b *Backend) GetVolume(ctx context.Context, id string) (cloudprovider.Volume, error) {
	d, err := b.client.GetDisk(ctx, id)
	if err != nil {
		return cloudprovider.Volume{}, err
	}
	if d.gone() {
		return cloudprovider.Volume{}, cloudprovider.Errorf(cloudprovider.ErrNotFound, CloudName, "reading volume", "disk %s is %s", id, d.Status)
	}
	return b.toVolume(d), nil
}

// ListVolumes returns the live disks whose name starts with prefix.
func (b *Backend) ListVolumes(ctx context.Context, prefix string) ([]cloudprovider.Volume, error) {
	out, err := backendkit.ListVolumes(ctx, prefix, b.client.ListDisks, func(d Disk) string { return d.Name },
		func(d Disk) bool { return !d.gone() }, b.toVolume)
	return byNameThenID(out, err, func(v cloudprovider.Volume) (string, string) { return v.Name, v.ID })
}

// DeleteVolume terminates a disk. One a pod uses is ErrInvalid and stays (checked first, and Prime's
// own refusal is ErrInvalid too); one already gone, deleted or being deleted is success.
func (b *Backend) DeleteVolume(ctx context.Context, id string) error {
	const op = "deleting volume"
	d, err := b.client.GetDisk(ctx, id)
	switch {
	case cloudprovider.IsNotFound(err):
		return nil
	case err != nil:
		return err
	case d.gone():
		return nil
	case len(d.Pods) > 0:
		return cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "disk %s is used by pods %s; delete them first",
			id, strings.Join(d.Pods, ", "))
	}
	if _, err := b.client.DeleteDisk(ctx, id); err != nil && !cloudprovider.IsNotFound(err) {
		return err
	}
	b.log.Info("disk deleted", "id", id, "name", d.Name)
	return nil
}

// CreateWithVolumes is Create with the disks of mounts attached at the pod's create (`disks`). Every
// disk must be live and in the offer's provider and data center (Prime attaches a disk only to pods
// there), else ErrInvalid before anything is created; the offer is resolved among the GPUs co-located
// with the disks (availability's disks=). Prime's create takes no mount path: it mounts each disk where
// it chooses (the pod's attachedResources say where; Attachment reads it), so the mounts' MountPath are
// not sent.
func (b *Backend) CreateWithVolumes(ctx context.Context, req cloudprovider.CreateRequest, mounts []cloudprovider.VolumeMount) (cloudprovider.Instance, error) {
	const op = "creating pod"
	if len(mounts) == 0 {
		return b.Create(ctx, req)
	}
	region := cmp.Or(req.Offer.Details[DetailDataCenter], req.Offer.Region)
	provider := req.Offer.Details[DetailProvider]
	if provider == "" {
		if s, ok := parseInstanceType(req.Offer.InstanceType); ok {
			provider = s.provider
		}
	}
	var ids []string
	_, err := backendkit.Mounted(ctx, CloudName, op, "machine", region, mounts, b.client.GetDisk,
		func(d Disk) (string, string) { return d.Name, d.region() },
		func(d Disk) error {
			switch {
			case d.gone() || strings.EqualFold(d.Status, "ERROR"):
				return cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "disk %s (%s) is %s", d.Name, d.ID, d.Status)
			case provider != "" && !strings.EqualFold(d.ProviderType, provider):
				return cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op,
					"volume %s is a disk of %s; the machine's offer is %s's, and a disk attaches only to pods of its provider", d.Name, d.ProviderType, provider)
			}
			if !slices.Contains(ids, d.ID) {
				ids = append(ids, d.ID)
			}
			return nil
		})
	if err != nil {
		return cloudprovider.Instance{}, err
	}
	return b.create(ctx, req, ids)
}

// Attachment says how a disk appears in a pod that got it at its create, from the pod's
// attachedResources (see attachment).
func (b *Backend) Attachment(ctx context.Context, inst cloudprovider.Instance, v cloudprovider.Volume, mountPath string) (cloudprovider.Attachment, error) {
	p, err := b.client.Pod(ctx, inst.ID)
	if err != nil {
		return cloudprovider.Attachment{}, err
	}
	a, err := attachment(p.AttachedResources, inst.ID, v.ID, mountPath)
	if err == nil && a.MountedByCloud && mountPath != "" && mountPath != a.MountPath {
		b.log.Warn("Prime mounts the disk where it chooses, not at the asked path", "disk", v.ID, "pod", inst.ID,
			"mount_path", a.MountPath, "asked", mountPath)
	}
	return a, err
}

// attachment reads disk id in a pod's attachedResources: MOUNTED (or no status) is mounted by Prime at
// its mountPath (the document's default /workspace when none), whatever mountPath hydra asked (Prime's
// create takes none); ATTACHED with a device path (resourcePath under /dev/; the document calls it the
// path to the resource) is a block device the playbooks mount at mountPath. A disk the pod does not
// list is ErrInvalid; one not attached or mounted yet is ErrOther (ask again later).
func attachment(resources []AttachedResource, pod, id, mountPath string) (cloudprovider.Attachment, error) {
	const op = "reading the pod's disks"
	i := slices.IndexFunc(resources, func(r AttachedResource) bool {
		return string(r.ID) == id && (r.ResourceType == "" || strings.EqualFold(r.ResourceType, "DISK"))
	})
	if i < 0 {
		return cloudprovider.Attachment{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "pod %s has no disk %s", pod, id)
	}
	r := resources[i]
	switch status := strings.ToUpper(r.Status); {
	case status == "MOUNTED" || status == "":
		return cloudprovider.Attachment{VolumeID: id, Type: cloudprovider.VolumeBlock, MountPath: cmp.Or(r.MountPath, DefaultMountPath),
			MountedByCloud: true}, nil
	case status == "ATTACHED" && strings.HasPrefix(r.ResourcePath, "/dev/"):
		return cloudprovider.Attachment{VolumeID: id, Type: cloudprovider.VolumeBlock, MountPath: mountPath, Device: r.ResourcePath}, nil
	default:
		return cloudprovider.Attachment{}, cloudprovider.Errorf(cloudprovider.ErrOther, CloudName, op,
			"disk %s is %s on pod %s, not mounted yet", id, cmp.Or(r.Status, "not attached"), pod)
	}
}
