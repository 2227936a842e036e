package upcloud

// UpCloud's storages as hydra's volumes. Shapes, from UpCloud's Go SDK (UpCloudLtd/upcloud-go-api v8:
// upcloud/storage.go, upcloud/request/storage.go, upcloud/request/server.go) and its go-vcr recordings
// of real traffic (upcloud/service/fixtures: createmodifydeletestorage.yaml, storagelabels.yaml,
// attachdetachstorage.yaml):
//
//   - POST /storage {"storage":{size ("50": the SDK sends a string), tier, title, zone, labels: a bare
//     [{key,value}] array}} answers 201 {"storage":{..., "servers":{"server":[]}}}.
//   - GET /storage/{uuid} answers the storage with the uuids of the servers it is attached to
//     ("servers":{"server":[...]}); an unknown one is 404 STORAGE_NOT_FOUND (the recorded
//     error.storage-not-found.404.json).
//   - GET /storage?label=hydra-name lists the storages carrying the label, without their servers.
//   - DELETE /storage/{uuid} answers 204; while a server has the storage UpCloud refuses it (409
//     STORAGE_ATTACHED in the SDK's error code list; UpCloud's Terraform provider detaches first), and
//     DeleteVolume refuses it itself before asking.
//   - A server gets storages at its create: storage_devices [{action:"clone", ...}, {action:"attach",
//     storage, address:"virtio", type:"disk"}] (the SDK's CreateServerStorageDeviceActionAttach).
//   - POST /server/{uuid}/storage/detach {"storage_device":{"address":"virtio:1"}} answers the server.
//     UpCloud's CSI driver (UpCloudLtd/upcloud-csi) attaches and detaches virtio disks on started
//     servers; only ide devices need a stopped one (UpCloud's Terraform provider). hydra detaches only
//     from servers it has stopped to delete them.
//   - DELETE /server/{uuid}/?storages=1 deletes the server "and all attached storages" (the SDK's
//     DeleteServerAndStoragesRequest). So Delete first detaches every storage but the server's own
//     disk (the clone titled "<name>-disk"), and sends storages=1 only after a read shows none left: a
//     volume always outlives its machine.
//   - Inside the machine a virtio disk is /dev/disk/by-id/virtio-<its uuid without dashes, first 20
//     characters> (UpCloud's CSI driver, internal/filesystem/linux_utils.go, volumeIDToDiskID): the
//     disk's serial, stable whatever order the disks came in (unlike /dev/vdb).
//
// A volume is a block storage of tier VolumeTier in one zone, titled with its cloud-side name and
// carrying hydra's labels: hydra-name (the name) and the ownership record (cloudprovider.OwnerLabels).
// Its price: GET /price quotes storage_<tier> in euro cents per GiB (amount 1) per hour in each zone,
// and UpCloud bills by the hour up to a monthly price of 672 hours (reference 2.4, "hourly = monthly /
// 672 h"), so a month is size x price x 672 cents, converted once like plan prices (money.Exchange:
// euros at Config.EURToUSD, rounded up to the cent). UpCloud's file storage (NFS, /file-storage) needs
// an SDN private network on every machine and a share ACL per client address, which hydra's servers do
// not have: UpCloud has no shared_fs volumes in hydra.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendkit"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

var (
	_ cloudprovider.VolumeBackend  = (*Backend)(nil)
	_ cloudprovider.VolumeLauncher = (*Backend)(nil)
	_ cloudprovider.VolumeAttacher = (*Backend)(nil)
)

// VolumeTier is the tier of the storages hydra makes as volumes.
const VolumeTier = "maxiops"

// billedHoursPerMonth is the hours UpCloud bills a month at most (hourly = monthly / 672).
const billedHoursPerMonth = 672

// StorageDetail is a storage as GET /storage/{uuid} and POST /storage answer it: the storage and the
// servers it is attached to.
type StorageDetail struct {
	Storage
	Servers struct {
		Server []string `json:"server"`
	} `json:"servers"`
}

// storageDetailBody is {"storage":{...}}.
type storageDetailBody struct {
	Storage StorageDetail `json:"storage"`
}

// CreateStorage is the body of POST /storage (inside {"storage": ...}); Labels is a bare array.
type CreateStorage struct {
	Size   int     `json:"size,string"`
	Tier   string  `json:"tier,omitempty"`
	Title  string  `json:"title"`
	Zone   string  `json:"zone"`
	Labels []Label `json:"labels,omitempty"`
}

// CreateStorage sends POST /storage. It is never retried except on 429 (a lost answer may hide a
// storage that exists: the caller looks by name).
func (c *Client) CreateStorage(ctx context.Context, req CreateStorage) (*StorageDetail, error) {
	body := struct {
		Storage CreateStorage `json:"storage"`
	}{req}
	out, err := create(ctx, c, "creating storage", "/storage", "storage", body, func(d *storageDetailBody) string { return d.Storage.UUID })
	if err != nil {
		return nil, err
	}
	return &out.Storage, nil
}

// GetStorage reads a storage with its servers (GET /storage/{uuid}); a missing one is ErrNotFound.
func (c *Client) GetStorage(ctx context.Context, uuid string) (*StorageDetail, error) {
	if uuid == "" {
		return nil, classify("reading storage", errors.New("empty storage uuid"))
	}
	out, err := decode[storageDetailBody](ctx, c, "reading storage", restclient.Request{Method: http.MethodGet, Path: "/storage/" + url.PathEscape(uuid)})
	if err != nil {
		return nil, err
	}
	return &out.Storage, nil
}

// ListStorages lists the storages that carry every label filter ("key" or "key=value"), as GET
// /storage?label=... answers them (without their servers; UpCloud does not page this list).
func (c *Client) ListStorages(ctx context.Context, labels ...string) ([]Storage, error) {
	q := url.Values{}
	for _, l := range labels {
		q.Add("label", l)
	}
	var out StorageList
	if err := c.get(ctx, "listing storages", "/storage", q, &out); err != nil {
		return nil, err
	}
	return out.Storages.Storage, nil
}

// DeleteStorage deletes a storage (DELETE /storage/{uuid}); a repeat answers STORAGE_NOT_FOUND.
func (c *Client) DeleteStorage(ctx context.Context, uuid string) error {
	if uuid == "" {
		return classify("deleting storage", errors.New("empty storage uuid"))
	}
	return c.call(ctx, "deleting storage", restclient.Request{Method: http.MethodDelete, Path: "/storage/" + url.PathEscape(uuid)}, nil)
}

// DetachStorage detaches the storage at address from a server (POST /server/{uuid}/storage/detach) and
// returns the server. A repeat answers DEVICE_ADDRESS_NOT_IN_USE.
func (c *Client) DetachStorage(ctx context.Context, server, address string) (*Server, error) {
	var body struct {
		StorageDevice struct {
			Address string `json:"address"`
		} `json:"storage_device"`
	}
	body.StorageDevice.Address = address
	return c.server(ctx, "detaching storage", restclient.Request{Method: http.MethodPost,
		Path: "/server/" + url.PathEscape(server) + "/storage/detach", Body: body})
}

// attachDevice is a create's storage device that attaches an existing storage on the virtio bus.
func attachDevice(uuid string) CreateStorageDevice {
	return CreateStorageDevice{Action: "attach", Storage: uuid, Address: "virtio", Type: "disk"}
}

// osDiskTitle is the title of the disk a server of that name is cloned onto.
func osDiskTitle(name string) string { return name + "-disk" }

// VolumeTypes answers block in every zone (within Config.Zones) whose price list prices VolumeTier
// storage; UpCloud has no shared_fs volumes in hydra (see above).
func (b *Backend) VolumeTypes(ctx context.Context) (map[cloudprovider.VolumeType][]string, error) {
	prices, err := b.client.ListPrices(ctx)
	if err != nil {
		return nil, err
	}
	var zones []string
	for _, z := range prices.Prices.Zone {
		if _, ok := z.Items["storage_"+VolumeTier]; ok && backendkit.Allowed(b.cfg.Zones, z.Name) {
			zones = append(zones, z.Name)
		}
	}
	sort.Strings(zones)
	out := map[cloudprovider.VolumeType][]string{}
	if len(zones) > 0 {
		out[cloudprovider.VolumeBlock] = zones
	}
	return out, nil
}

// CreateVolume creates a block storage of req.SizeGB GiB in zone req.Region, titled and labelled with
// req.Name and the ownership record, or returns the one of that name (in another zone it is
// ErrInvalid).
func (b *Backend) CreateVolume(ctx context.Context, req cloudprovider.VolumeRequest) (cloudprovider.Volume, error) {
	const op = "creating volume"
	switch {
	case req.Name == "":
		return cloudprovider.Volume{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "no volume name")
	case req.Type != cloudprovider.VolumeBlock:
		return cloudprovider.Volume{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op,
			"UpCloud has no %q volumes in hydra, only block storage (its file storage needs a private network hydra's servers lack)", req.Type)
	case req.SizeGB <= 0 || req.SizeGB > maxStorageGiB:
		return cloudprovider.Volume{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op,
			"volume size %d GB: an UpCloud storage is 1 to %d GiB", req.SizeGB, maxStorageGiB)
	case req.Region == "":
		return cloudprovider.Volume{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "no zone for volume %s", req.Name)
	}
	labels := []Label{{Key: NameLabel, Value: req.Name}}
	if req.Owner.Token != "" {
		for _, kv := range cloudprovider.OwnerLabels(req.Owner) {
			labels = append(labels, Label{Key: kv[0], Value: kv[1]})
		}
	}
	return b.creates.Volume(ctx, CloudName, req, b.ListVolumes, func(ctx context.Context) (cloudprovider.Volume, error) {
		s, err := b.client.CreateStorage(ctx, CreateStorage{Size: req.SizeGB, Tier: VolumeTier, Title: req.Name, Zone: req.Region, Labels: labels})
		if err != nil {
			return cloudprovider.Volume{}, err
		}
		b.log.Info("volume created", "name", req.Name, "id", s.UUID, "zone", s.Zone, "size_gib", int(s.Size))
		return b.toVolume(s, b.storagePrices(ctx)), nil
	})
}

// GetVolume reads one volume: a normal storage (an unknown uuid, a template or a backup is
// ErrNotFound).
func (b *Backend) GetVolume(ctx context.Context, id string) (cloudprovider.Volume, error) {
	s, err := b.readStorage(ctx, id)
	if err != nil {
		return cloudprovider.Volume{}, err
	}
	return b.toVolume(s, b.storagePrices(ctx)), nil
}

// readStorage reads a normal storage; anything else, and an id UpCloud finds malformed
// (STORAGE_INVALID), is ErrNotFound.
func (b *Backend) readStorage(ctx context.Context, id string) (*StorageDetail, error) {
	const op = "reading storage"
	s, err := b.client.GetStorage(ctx, id)
	var ae *APIError
	switch {
	case err != nil && errors.As(err, &ae) && ae.Code == "STORAGE_INVALID":
		return nil, cloudprovider.NewError(cloudprovider.ErrNotFound, CloudName, op, err)
	case err != nil:
		return nil, err
	case s.Type != "" && s.Type != "normal":
		return nil, cloudprovider.Errorf(cloudprovider.ErrNotFound, CloudName, op, "storage %s is a %s, not a volume", id, s.Type)
	}
	return s, nil
}

// ListVolumes returns the volumes whose name starts with prefix: the storages labelled hydra-name, each
// read again for the servers it is attached to.
func (b *Backend) ListVolumes(ctx context.Context, prefix string) ([]cloudprovider.Volume, error) {
	all, err := b.client.ListStorages(ctx, NameLabel)
	if err != nil {
		return nil, err
	}
	var (
		out    []cloudprovider.Volume
		prices *PriceList
	)
	for _, s := range all {
		name, _ := s.Labels.Get(NameLabel)
		if (s.Type != "" && s.Type != "normal") || !strings.HasPrefix(name, prefix) {
			continue
		}
		d, err := b.readStorage(ctx, s.UUID)
		if cloudprovider.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if prices == nil {
			prices = b.storagePrices(ctx)
		}
		out = append(out, b.toVolume(d, prices))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// DeleteVolume deletes a volume. One a server has is ErrInvalid and stays; one UpCloud does not know is
// success.
func (b *Backend) DeleteVolume(ctx context.Context, id string) error {
	s, deleted, err := backendkit.DeleteVolume(ctx, id, b.readStorage, func(s *StorageDetail) error {
		if len(s.Servers.Server) == 0 {
			return nil
		}
		return cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, "deleting volume",
			"volume %s is attached to machine %s; delete the machine first", volumeName(&s.Storage), strings.Join(s.Servers.Server, ", "))
	}, b.client.DeleteStorage, cloudprovider.IsNotFound)
	if deleted {
		b.log.Info("volume deleted", "id", id, "name", volumeName(&s.Storage))
	}
	return err
}

// CreateWithVolumes is Create with the storages of mounts attached at the create, on the virtio bus.
// An unknown storage, one of another zone than the offer's and one a server has are ErrInvalid before
// anything is created; the price cap and every rule of Create hold. UpCloud mounts nothing: MountPath
// is the playbooks'.
func (b *Backend) CreateWithVolumes(ctx context.Context, req cloudprovider.CreateRequest, mounts []cloudprovider.VolumeMount) (cloudprovider.Instance, error) {
	return b.create(ctx, req, mounts)
}

// volumesFor checks the storages of mounts for a server of zone and returns their uuids.
func (b *Backend) volumesFor(ctx context.Context, zone string, mounts []cloudprovider.VolumeMount) ([]string, error) {
	const op = "creating server"
	var ids []string
	_, err := backendkit.Mounted(ctx, CloudName, op, "machine", zone, mounts, b.readStorage,
		func(s *StorageDetail) (string, string) { return volumeName(&s.Storage), s.Zone },
		func(s *StorageDetail) error {
			switch {
			case len(s.Servers.Server) > 0:
				return cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op,
					"volume %s is attached to machine %s already", volumeName(&s.Storage), strings.Join(s.Servers.Server, ", "))
			case slices.Contains(ids, s.UUID):
				return cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "volume %s is asked for twice", volumeName(&s.Storage))
			}
			ids = append(ids, s.UUID)
			return nil
		})
	if err != nil {
		return nil, err
	}
	if len(ids)+1 > maxStorageDevices {
		return nil, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op,
			"%d volumes: an UpCloud server has at most %d storage devices, its own disk included", len(ids), maxStorageDevices)
	}
	return ids, nil
}

// maxStorageDevices is how many storages one UpCloud server may have (UpCloud's API page "9. Storages").
const maxStorageDevices = 16

// maxStorageGiB is the largest storage UpCloud makes (UpCloud's Terraform provider validates 1 to 4096).
const maxStorageGiB = 4096

// Attachment says where volume v appears inside inst: the virtio disk's by-id path. A machine without
// the volume, or with it on another bus than virtio, is ErrInvalid.
func (b *Backend) Attachment(ctx context.Context, inst cloudprovider.Instance, v cloudprovider.Volume, mountPath string) (cloudprovider.Attachment, error) {
	const op = "reading volume attachment"
	s, err := b.getServer(ctx, inst.ID)
	if err != nil {
		return cloudprovider.Attachment{}, err
	}
	for _, d := range s.StorageDevices.StorageDevice {
		if d.Storage != v.ID {
			continue
		}
		dev, err := virtioDevice(d.Address, d.Storage)
		if err != nil {
			return cloudprovider.Attachment{}, cloudprovider.NewError(cloudprovider.ErrInvalid, CloudName, op, err)
		}
		return cloudprovider.Attachment{VolumeID: v.ID, Type: cloudprovider.VolumeBlock, MountPath: mountPath, Device: dev}, nil
	}
	return cloudprovider.Attachment{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op,
		"volume %s is not attached to machine %s", cmp.Or(v.Name, v.ID), cmp.Or(inst.Name, inst.ID))
}

// virtioDevice is the by-id path of a storage attached at a virtio address: "virtio-" and the first 20
// hexadecimal digits of its uuid, the disk's serial (UpCloud's CSI driver, volumeIDToDiskID).
func virtioDevice(address, uuid string) (string, error) {
	if bus, _, _ := strings.Cut(address, ":"); bus != "virtio" {
		return "", fmt.Errorf("storage %s is attached at %q; hydra finds only virtio disks by id", uuid, address)
	}
	serial := strings.ReplaceAll(uuid, "-", "")
	if len(serial) < 20 {
		return "", fmt.Errorf("storage uuid %q is too short for a disk serial", uuid)
	}
	return "/dev/disk/by-id/virtio-" + serial[:20], nil
}

// detachVolumes detaches from a stopped server every storage but its own disk, so that DELETE
// ?storages=1 deletes that disk alone. busy says the server must be read again before it is deleted
// (something was detached, or UpCloud is busy with the server); false means s has no other storage.
func (b *Backend) detachVolumes(ctx context.Context, s *Server) (busy bool, err error) {
	own, err := b.ownDisk(ctx, s)
	if err != nil {
		return false, err
	}
	for _, d := range s.StorageDevices.StorageDevice {
		if d.Storage == own || d.Storage == "" {
			continue
		}
		_, err := b.client.DetachStorage(ctx, s.UUID, d.Address)
		var ae *APIError
		switch {
		case err == nil:
			b.log.Info("volume detached from the server being deleted", "server", s.UUID, "storage", d.Storage, "address", d.Address)
		case cloudprovider.IsNotFound(err):
			return true, nil // the server went; the next read says so
		case errors.As(err, &ae) && (ae.Code == "DEVICE_ADDRESS_NOT_IN_USE" || ae.Code == "SERVER_STATE_ILLEGAL"):
			// Detached already, or UpCloud is busy with the server: read it again.
		default:
			return false, err
		}
		busy = true
	}
	if own == "" && len(s.StorageDevices.StorageDevice) > 0 {
		b.log.Warn("the server's own disk was not recognised; it is detached and left", "server", s.UUID)
	}
	return busy, nil
}

// ownDisk is the uuid of the server's own disk: the one titled "<name>-disk" as Create clones it, or
// else the only storage it has when that storage carries no hydra-name label (no volume, as a read of
// it shows); "" when none is recognised (then every storage counts as a volume, and none is deleted
// with the server).
func (b *Backend) ownDisk(ctx context.Context, s *Server) (string, error) {
	devs := s.StorageDevices.StorageDevice
	name, ok := s.Labels.Get(NameLabel)
	if !ok || name == "" {
		name = s.Title
	}
	own := ""
	for _, d := range devs {
		if name != "" && d.StorageTitle == osDiskTitle(name) {
			if own != "" {
				return "", nil // two of that title: neither is recognised
			}
			own = d.Storage
		}
	}
	if own != "" || len(devs) != 1 || devs[0].Storage == "" {
		return own, nil
	}
	if _, labelled := devs[0].Labels.Get(NameLabel); labelled {
		return "", nil
	}
	st, err := b.client.GetStorage(ctx, devs[0].Storage)
	if cloudprovider.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if _, labelled := st.Labels.Get(NameLabel); labelled {
		return "", nil
	}
	return st.UUID, nil
}

// volumeName is a storage's cloud-side name: its hydra-name label, else its title.
func volumeName(s *Storage) string {
	if name, ok := s.Labels.Get(NameLabel); ok && name != "" {
		return name
	}
	return s.Title
}

// storagePrices reads the price list for volume prices; a failed read leaves prices unknown (0).
func (b *Backend) storagePrices(ctx context.Context) *PriceList {
	prices, err := b.client.ListPrices(ctx)
	if err != nil {
		b.log.Warn("volume prices unknown: the price list could not be read", "error", err)
		return nil
	}
	return prices
}

// toVolume maps a storage onto hydra's Volume.
func (b *Backend) toVolume(s *StorageDetail, prices *PriceList) cloudprovider.Volume {
	v := cloudprovider.Volume{ID: s.UUID, Name: volumeName(&s.Storage), Cloud: CloudName, Region: s.Zone,
		Type: cloudprovider.VolumeBlock, SizeGB: int(s.Size), AttachedTo: slices.Clone(s.Servers.Server)}
	if o, ok := cloudprovider.OwnerFromLabels(s.Labels.Get); ok {
		v.Owner = o
	}
	if t, err := time.Parse(time.RFC3339, s.Created); err == nil {
		v.CreatedAt = t
	}
	if prices != nil {
		v.PricePerMonth = b.storageMonthly(prices, s.Zone, cmp.Or(s.Tier, VolumeTier), int(s.Size))
	}
	return v
}

// storageMonthly is what a storage of sizeGiB in tier costs a month in zone: storage_<tier> (euro
// cents per amount GiB per hour) x size / amount x 672 hours, computed exactly and converted once; 0
// when the zone does not price the tier.
func (b *Backend) storageMonthly(prices *PriceList, zone, tier string, sizeGiB int) money.USD {
	for _, z := range prices.Prices.Zone {
		if z.Name != zone {
			continue
		}
		item, ok := z.Items["storage_"+tier]
		if !ok || item.Price < 0 || sizeGiB <= 0 {
			return 0
		}
		price, ok := new(big.Rat).SetString(strconv.FormatFloat(float64(item.Price), 'g', -1, 64))
		if !ok {
			return 0
		}
		cents := price.Mul(price, big.NewRat(int64(sizeGiB)*billedHoursPerMonth, max(int64(item.Amount), 1)))
		f, _ := cents.Float64()
		return b.centsToUSD(FlexFloat(f), currency(prices))
	}
	return 0
}
