package sandbox

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox/simhost"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// The sandbox's volumes (cloudprovider.VolumeBackend, VolumeLauncher, VolumeAttacher). A volume is a
// record in state.json and a store directory, volumes/<id>/ in the sandbox directory, whose data/ holds
// its files (see simhost.Volume for what a machine makes of it). Its types and prices come from the
// catalog, per region (see VolumeTypes). A volume is bound to its region; a machine or a cluster gets
// it at create only (CreateWithVolumes, ClusterRequest.Volumes); a block volume is on one machine at a
// time, a shared_fs volume on any number of the region's machines. The ownership record is kept with
// the volume as with an instance, and its name carries it.
//
// Inside a machine (Attachment), a block volume is the device /dev/disk/by-id/hydra-sbx-<id>, with
// no file system until one is made on it, and a shared_fs volume is the NFS export
// sbx-nfs:/volumes/<id> (fstype nfs).

var (
	_ cloudprovider.VolumeBackend  = (*Backend)(nil)
	_ cloudprovider.VolumeLauncher = (*Backend)(nil)
	_ cloudprovider.VolumeAttacher = (*Backend)(nil)
)

// VolumesDir is the directory of the volumes' stores in the sandbox directory: VolumesDir/<id>/.
const VolumesDir = "volumes"

// VolumeNone is the catalog's volume_type for a region that has no volumes.
const VolumeNone = "none"

// VolumeDevicePrefix and VolumeNFSServer make a volume's path inside a machine (see BlockDevice and
// NFSSource).
const (
	VolumeDevicePrefix = "/dev/disk/by-id/hydra-sbx-"
	VolumeNFSServer    = "sbx-nfs"
	// VolumeNFSType is the fstype of a shared_fs volume.
	VolumeNFSType = "nfs"
)

// BlockDevice is the block device a block volume appears as inside a machine.
func BlockDevice(volumeID string) string { return VolumeDevicePrefix + volumeID }

// NFSSource is the mount source of a shared_fs volume inside a machine.
func NFSSource(volumeID string) string { return VolumeNFSServer + ":/volumes/" + volumeID }

// VolumeRecord is one sandbox volume as stored in state.json. Deleted volumes are removed.
type VolumeRecord struct {
	ID     string                   `json:"id"`
	Name   string                   `json:"name"`
	Region string                   `json:"region"`
	Type   cloudprovider.VolumeType `json:"type"`
	SizeGB int                      `json:"size_gb"`
	// PricePerGBMonth is the catalog's price at create (0: the catalog names none).
	PricePerGBMonth float64   `json:"price_per_gb_month,omitempty"`
	Owner           Ownership `json:"owner,omitzero"`
	CreatedAt       time.Time `json:"created_at"`
}

// InstanceVolume is a volume an instance got at create, as its record keeps it.
type InstanceVolume struct {
	ID        string                   `json:"id"`
	Type      cloudprovider.VolumeType `json:"type"`
	MountPath string                   `json:"mount_path"`
	SizeGB    int                      `json:"size_gb,omitempty"`
}

// volume returns the volume of an ID, or nil.
func (st *state) volume(id string) *VolumeRecord {
	for _, v := range st.Volumes {
		if v.ID == id {
			return v
		}
	}
	return nil
}

// holds reports whether the instance holds its volumes at now: from its create until it is deleted or
// taken back (a machine stopping no longer has them).
func (r *Record) holds(now time.Time) bool {
	_, ended := r.interruption(now)
	return r.DeletedAt.IsZero() && !ended
}

// attachedTo lists the instances holding a volume at now, by id.
func (st *state) attachedTo(id string, now time.Time) []string {
	var out []string
	for _, r := range st.Instances {
		if r.holds(now) && slices.ContainsFunc(r.Volumes, func(v InstanceVolume) bool { return v.ID == id }) {
			out = append(out, r.ID)
		}
	}
	return out
}

// VolumeTypes lists the volume types of every region of the catalog. A region with no volume entry
// (an entry with volume_type) has both types; one with volume entries has the types they name, and
// none when one of them is "none".
func (b *Backend) VolumeTypes(ctx context.Context) (map[cloudprovider.VolumeType][]string, error) {
	if err := b.call(ctx, "listing volume types"); err != nil {
		return nil, err
	}
	catalog, err := b.Catalog()
	if err != nil {
		return nil, err
	}
	out := map[cloudprovider.VolumeType][]string{}
	for region, types := range volumeTypes(catalog) {
		for typ := range types {
			out[typ] = append(out[typ], region)
		}
	}
	for _, regions := range out {
		sort.Strings(regions)
	}
	return out, nil
}

// volumeTypes maps each region of the catalog to its volume types and their price per GB-month.
func volumeTypes(catalog []CatalogEntry) map[string]map[cloudprovider.VolumeType]float64 {
	out := map[string]map[cloudprovider.VolumeType]float64{}
	named := map[string]bool{}
	for _, e := range catalog {
		if e.Region == "" {
			continue
		}
		if out[e.Region] == nil {
			out[e.Region] = map[cloudprovider.VolumeType]float64{}
		}
		if e.VolumeType != "" {
			named[e.Region] = true
		}
	}
	for _, e := range catalog {
		if e.Region == "" || e.VolumeType == "" || e.VolumeType == VolumeNone {
			continue
		}
		out[e.Region][cloudprovider.VolumeType(e.VolumeType)] = e.PricePerGBMonth
	}
	for _, e := range catalog {
		if e.VolumeType == VolumeNone {
			out[e.Region] = map[cloudprovider.VolumeType]float64{}
		}
	}
	for region, types := range out {
		if !named[region] {
			types[cloudprovider.VolumeBlock], types[cloudprovider.VolumeSharedFS] = 0, 0
		}
	}
	return out
}

// describeTypes says what a region has, for errors: "block, shared_fs" or "no volumes".
func describeTypes(types map[cloudprovider.VolumeType]float64) string {
	var names []string
	for t := range types {
		names = append(names, string(t))
	}
	if len(names) == 0 {
		return "no volumes"
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// CreateVolume creates a volume and its empty store (a block volume has no file system yet). It is
// idempotent by name: a volume of that name is returned as it is. A type the catalog does not give
// the region, a size below 1 GB or an unknown type is ErrInvalid.
func (b *Backend) CreateVolume(ctx context.Context, req cloudprovider.VolumeRequest) (cloudprovider.Volume, error) {
	const op = "creating volume"
	switch {
	case req.Name == "":
		return cloudprovider.Volume{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "no name")
	case req.Type != cloudprovider.VolumeBlock && req.Type != cloudprovider.VolumeSharedFS:
		return cloudprovider.Volume{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "volume type %q is neither %q nor %q", req.Type, cloudprovider.VolumeBlock, cloudprovider.VolumeSharedFS)
	case req.SizeGB < 1:
		return cloudprovider.Volume{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "size %d GB; at least 1", req.SizeGB)
	}
	if err := b.call(ctx, op); err != nil {
		return cloudprovider.Volume{}, err
	}
	var (
		out     cloudprovider.Volume
		created bool
	)
	err := b.update(func(st *state, _ *Faults) error {
		now := time.Now()
		for _, v := range st.Volumes {
			if v.Name == req.Name {
				out = b.toVolume(st, v, now)
				return nil
			}
		}
		catalog, err := b.Catalog()
		if err != nil {
			return err
		}
		types, ok := volumeTypes(catalog)[req.Region]
		if !ok {
			return cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "no region %q", req.Region)
		}
		price, ok := types[req.Type]
		if !ok {
			return cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "%s has no %s volumes in %s; it has: %s", CloudName, req.Type, req.Region, describeTypes(types))
		}
		v := &VolumeRecord{ID: "sbxv-" + simulation.RandomHex(6), Name: req.Name, Region: req.Region, Type: req.Type, SizeGB: req.SizeGB,
			PricePerGBMonth: price, Owner: ownerAtCreate(req.Owner), CreatedAt: now.UTC()}
		if err := os.MkdirAll(filepath.Join(b.VolumeDir(v.ID), "data"), 0o755); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
		st.Volumes = append(st.Volumes, v)
		out, created = b.toVolume(st, v, now), true
		return nil
	})
	if err != nil {
		return cloudprovider.Volume{}, err
	}
	if created {
		b.log.Info("volume created", "id", out.ID, "name", out.Name, "region", out.Region, "type", out.Type, "size_gb", out.SizeGB)
	}
	return out, nil
}

// GetVolume returns the volume with the sandbox's id, or ErrNotFound. It changes nothing.
func (b *Backend) GetVolume(ctx context.Context, id string) (cloudprovider.Volume, error) {
	return readOne(ctx, b, "reading volume", "volume", id, (*state).volume, func(st *state, v *VolumeRecord, now time.Time) (cloudprovider.Volume, error) {
		return b.toVolume(st, v, now), nil
	})
}

// ListVolumes returns the volumes whose names start with prefix, by name. It changes nothing.
func (b *Backend) ListVolumes(ctx context.Context, prefix string) ([]cloudprovider.Volume, error) {
	return readAll(ctx, b, "listing volumes", func(st *state, now time.Time) ([]cloudprovider.Volume, error) {
		var out []cloudprovider.Volume
		for _, v := range st.Volumes {
			if strings.HasPrefix(v.Name, prefix) {
				out = append(out, b.toVolume(st, v, now))
			}
		}
		return out, nil
	}, func(v cloudprovider.Volume) string { return v.Name })
}

// DeleteVolume deletes a volume and its store, data included. A volume a machine holds is ErrInvalid
// naming the machines, and nothing is deleted; an unknown one is gone: success.
func (b *Backend) DeleteVolume(ctx context.Context, id string) error {
	const op = "deleting volume"
	if err := b.call(ctx, op); err != nil {
		return err
	}
	deleted := false
	err := b.update(func(st *state, _ *Faults) error {
		v := st.volume(id)
		if v == nil {
			return nil
		}
		if users := st.attachedTo(id, time.Now()); len(users) > 0 {
			return cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "volume %s (%s) is attached to %s", v.Name, id, strings.Join(st.instanceNames(users), ", "))
		}
		if err := os.RemoveAll(b.VolumeDir(id)); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
		st.Volumes = slices.DeleteFunc(st.Volumes, func(x *VolumeRecord) bool { return x.ID == id })
		deleted = true
		return nil
	})
	if err == nil && deleted {
		b.log.Info("volume deleted", "id", id)
	}
	return err
}

// instanceNames names instances by id, for messages.
func (st *state) instanceNames(ids []string) []string {
	var out []string
	for _, id := range ids {
		name := id
		if r := st.instance(id); r != nil {
			name = r.Name + " (" + id + ")"
		}
		out = append(out, name)
	}
	return out
}

// CreateWithVolumes is Create with every volume of mounts given to the new machine. A volume that is
// unknown, of another region, a block volume another machine holds, or two mounts of one volume or at
// one path are ErrInvalid, and nothing is created. A machine of the name that exists is returned as
// it is.
func (b *Backend) CreateWithVolumes(ctx context.Context, req cloudprovider.CreateRequest, mounts []cloudprovider.VolumeMount) (cloudprovider.Instance, error) {
	return b.create(ctx, req, mounts)
}

// instanceVolumes checks mounts for one new machine (nodes machines, for a cluster) of region against
// the state and returns what its record keeps of them.
func instanceVolumes(op string, st *state, region string, nodes int, mounts []cloudprovider.VolumeMount, now time.Time) ([]InstanceVolume, error) {
	var out []InstanceVolume
	for i, m := range mounts {
		v := st.volume(m.VolumeID)
		switch {
		case v == nil:
			return nil, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "volume %s not found", m.VolumeID)
		case v.Region != region:
			return nil, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "volume %s is in %s, the machine in %s: a volume is bound to its region", v.Name, v.Region, region)
		case !strings.HasPrefix(m.MountPath, "/"):
			return nil, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "mount path %q of volume %s is not absolute", m.MountPath, v.Name)
		case slices.ContainsFunc(mounts[:i], func(o cloudprovider.VolumeMount) bool { return o.VolumeID == m.VolumeID }):
			return nil, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "volume %s is asked for twice", v.Name)
		case slices.ContainsFunc(mounts[:i], func(o cloudprovider.VolumeMount) bool { return o.MountPath == m.MountPath }):
			return nil, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "two volumes asked at %s", m.MountPath)
		}
		if v.Type == cloudprovider.VolumeBlock {
			if nodes > 1 {
				return nil, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "block volume %s attaches to one machine, not %d nodes: use a shared_fs volume", v.Name, nodes)
			}
			if users := st.attachedTo(v.ID, now); len(users) > 0 {
				return nil, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "block volume %s is attached to %s: it attaches to one machine at a time", v.Name, strings.Join(st.instanceNames(users), ", "))
			}
		}
		out = append(out, InstanceVolume{ID: v.ID, Type: v.Type, MountPath: m.MountPath, SizeGB: v.SizeGB})
	}
	return out, nil
}

// Attachment says how volume v appears inside inst: a block volume as BlockDevice, a shared_fs one as
// NFSSource of type nfs (never mounted by the sandbox: the playbooks mount both). A machine that did
// not get the volume at create is ErrInvalid.
func (b *Backend) Attachment(ctx context.Context, inst cloudprovider.Instance, v cloudprovider.Volume, mountPath string) (cloudprovider.Attachment, error) {
	const op = "reading attachment"
	if err := b.call(ctx, op); err != nil {
		return cloudprovider.Attachment{}, err
	}
	var typ cloudprovider.VolumeType
	err := b.read(func(st *state, _ time.Time) error {
		for _, r := range st.Instances {
			if r.ID != inst.ID {
				continue
			}
			for _, iv := range r.Volumes {
				if iv.ID == v.ID {
					typ = iv.Type
					return nil
				}
			}
			return cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "machine %s was not created with volume %s", r.Name, cmp.Or(v.Name, v.ID))
		}
		return cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "machine %s not found", inst.ID)
	})
	if err != nil {
		return cloudprovider.Attachment{}, err
	}
	return attachment(v.ID, typ, mountPath), nil
}

// attachment is how a volume of typ appears inside a machine.
func attachment(id string, typ cloudprovider.VolumeType, mountPath string) cloudprovider.Attachment {
	a := cloudprovider.Attachment{VolumeID: id, Type: typ, MountPath: mountPath}
	if typ == cloudprovider.VolumeSharedFS {
		a.Source, a.FSType = NFSSource(id), VolumeNFSType
	} else {
		a.Device = BlockDevice(id)
	}
	return a
}

// toVolume is the contract's form of a volume at now.
func (b *Backend) toVolume(st *state, v *VolumeRecord, now time.Time) cloudprovider.Volume {
	out := cloudprovider.Volume{
		ID: v.ID, Name: v.Name, Cloud: CloudName, Region: v.Region, Type: v.Type, SizeGB: v.SizeGB,
		AttachedTo: st.attachedTo(v.ID, now), Owner: v.Owner.contract(), CreatedAt: v.CreatedAt,
	}
	if p, err := money.FromFloat(v.PricePerGBMonth); err == nil {
		out.PricePerMonth = p * money.USD(v.SizeGB)
	}
	return out
}

// VolumeDir returns the store directory of a volume (its files are in data/).
func (b *Backend) VolumeDir(id string) string { return filepath.Join(b.cfg.Dir, VolumesDir, id) }

// Volumes returns every volume record (tests and the CLI).
func (b *Backend) Volumes() ([]VolumeRecord, error) {
	st, err := b.load()
	if err != nil {
		return nil, err
	}
	return values(st.Volumes), nil
}

// machineVolumes is what the simulated machine in machineDir (<sandbox>/machines/<id>) makes of an
// instance's volumes: their paths inside it (see attachment) and their stores in the sandbox directory.
func machineVolumes(machineDir string, vols []InstanceVolume) []simhost.Volume {
	var out []simhost.Volume
	for _, v := range vols {
		a := attachment(v.ID, v.Type, v.MountPath)
		out = append(out, simhost.Volume{ID: v.ID, Device: a.Device, Source: a.Source, SizeGB: v.SizeGB,
			Store: filepath.Join(filepath.Dir(filepath.Dir(machineDir)), VolumesDir, v.ID)})
	}
	return out
}
