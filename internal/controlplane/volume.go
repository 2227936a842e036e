package controlplane

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// VolumeSpec is what a hydra_volume asks for.
type VolumeSpec struct {
	// Name is the resource's name; the cloud-side name is CloudName(<the cloud's vm pool>, Name, token).
	Name   string
	Type   cloudprovider.VolumeType
	SizeGB int
	// Cloud and Region are where the volume lives; a volume never moves.
	Cloud, Region string
}

// VolumeRecord is a volume as a state holds it.
type VolumeRecord struct {
	// ID is hydra_volume.id: <cloud>/<region>/<name> (VolumeID).
	ID string
	// CloudVolumeID is the cloud's id; CloudName the cloud-side name.
	CloudVolumeID, CloudName, Name, Cloud, Region string
	Type                                          cloudprovider.VolumeType
	SizeGB                                        int
	// AttachedTo are the cloud-side names of the machines using the volume (a machine outside hydra's
	// pools by its cloud id), sorted.
	AttachedTo []string
	// PricePerMonth is what the cloud bills a month (0: the cloud does not say).
	PricePerMonth money.USD
}

// VolumeUse is one volume a machine or cluster gets: ID is hydra_volume.id, MountPath where it is
// mounted inside the machine.
type VolumeUse struct {
	ID        string
	MountPath string
}

// VolumeID is hydra_volume.id for a volume named name in cloud's region.
func VolumeID(cloud, region, name string) string { return cloud + "/" + region + "/" + name }

// ParseVolumeID splits a hydra_volume.id into its cloud, region and name; an id that is not
// <cloud>/<region>/<name> (three non-empty parts) is an error saying so.
func ParseVolumeID(id string) (cloud, region, name string, err error) {
	parts := strings.Split(id, "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", "", "", fmt.Errorf("volume id %q is not <cloud>/<region>/<name>", id)
	}
	return parts[0], parts[1], parts[2], nil
}

// VolumeInUseError is a volume's delete refused because machines use it; nothing was deleted.
type VolumeInUseError struct {
	// Name is the volume's resource name; Machines the cloud-side names of the machines using it.
	Name     string
	Machines []string
}

func (e *VolumeInUseError) Error() string {
	return fmt.Sprintf("used by %s; destroy or change those first", strings.Join(e.Machines, ", "))
}

// volumeTypesAnswer is one cloud's VolumeTypes, asked once per control plane.
type volumeTypesAnswer struct {
	types map[cloudprovider.VolumeType][]string
	err   error
}

// volumeJournal keeps the intents of volume creates in flight: the machines' journal's folder
// "volumes".
func (cp *ControlPlane) volumeJournal() Journal { return cp.opts.Journal.sub("volumes") }

// volumePool is the pool whose prefix a cloud's volumes carry: its first vm pool, else its first pool.
func (cp *ControlPlane) volumePool(cloud string) (inventory.Pool, bool) {
	var first *inventory.Pool
	for _, pm := range cp.manager.Pools() {
		if pm.Pool.Cloud != cloud {
			continue
		}
		if pm.Pool.Kind == inventory.KindVM {
			return pm.Pool, true
		}
		if first == nil {
			p := pm.Pool
			first = &p
		}
	}
	if first == nil {
		return inventory.Pool{}, false
	}
	return *first, true
}

// volumeBackend is cloud's volume API and the pool its volumes are named in. Errors are *RequestError
// (field "cloud") or *UnconfiguredError.
func (cp *ControlPlane) volumeBackend(cloud string) (cloudprovider.VolumeBackend, inventory.Pool, error) {
	b, ok := cp.backends[cloud]
	if !ok {
		if !slices.Contains(cp.inv.KnownClouds(), cloud) {
			return nil, inventory.Pool{}, &RequestError{Field: "cloud", Msg: fmt.Sprintf("unknown cloud %q; expected any of %s", cloud, quoteList(cp.inv.KnownClouds(), ", "))}
		}
		return nil, inventory.Pool{}, &UnconfiguredError{Cloud: cloud, Configured: cp.Clouds()}
	}
	vb, ok := b.(cloudprovider.VolumeBackend)
	if !ok {
		return nil, inventory.Pool{}, &RequestError{Field: "cloud", Msg: fmt.Sprintf("%s has no volume API: hydra cannot keep volumes there", cloud)}
	}
	pool, ok := cp.volumePool(cloud)
	if !ok {
		return nil, inventory.Pool{}, &RequestError{Field: "cloud", Msg: fmt.Sprintf("%s has no pool in the inventory to name its volumes by", cloud)}
	}
	return vb, pool, nil
}

// volumeTypes is cloud's VolumeTypes, asked once per control plane (concurrent askers share one
// request, bounded by OfferTimeout); a failed answer is not kept.
func (cp *ControlPlane) volumeTypes(ctx context.Context, cloud string, vb cloudprovider.VolumeBackend) (map[cloudprovider.VolumeType][]string, error) {
	cp.mu.Lock()
	a, ok := cp.volTypes[cloud]
	cp.mu.Unlock()
	if ok {
		return a.types, a.err
	}
	v, err, _ := cp.flight.Do("volume-types/"+cloud, func() (any, error) {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cp.opts.OfferTimeout)
		defer cancel()
		types, err := vb.VolumeTypes(rctx)
		if err != nil {
			if errors.Is(rctx.Err(), context.DeadlineExceeded) {
				err = fmt.Errorf("timed out after %s waiting for its volume types", cp.opts.OfferTimeout)
			}
			return nil, err
		}
		cp.mu.Lock()
		if cp.volTypes == nil {
			cp.volTypes = map[string]volumeTypesAnswer{}
		}
		cp.volTypes[cloud] = volumeTypesAnswer{types: types}
		cp.mu.Unlock()
		return types, nil
	})
	types, _ := v.(map[cloudprovider.VolumeType][]string) // the function above returns only this type
	return types, err
}

// describeVolumeTypes words what a cloud has: "block in a, b; shared_fs in c", or "none".
func describeVolumeTypes(types map[cloudprovider.VolumeType][]string) string {
	var parts []string
	for _, typ := range slices.Sorted(maps.Keys(types)) {
		if rs := types[typ]; len(rs) > 0 {
			parts = append(parts, fmt.Sprintf("%s in %s", typ, strings.Join(sortedUnique(rs), ", ")))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// PlanVolume checks at plan, reading only the cloud's volume types, that spec is possible: a known
// type, a size of at least 1 GB, a name without "/", a configured cloud with a volume API that has
// spec.Type in spec.Region. An error is a *RequestError (its Field the attribute at fault) naming
// what the cloud has, an *UnconfiguredError, or the cloud's classified error.
func (cp *ControlPlane) PlanVolume(ctx context.Context, spec VolumeSpec) error {
	switch {
	case spec.Name == "" || strings.Contains(spec.Name, "/"):
		return &RequestError{Field: "name", Msg: fmt.Sprintf("volume name %q must be non-empty and without \"/\"", spec.Name)}
	case spec.Type != cloudprovider.VolumeBlock && spec.Type != cloudprovider.VolumeSharedFS:
		return &RequestError{Field: "type", Msg: fmt.Sprintf("unknown volume type %q; expected %q or %q", spec.Type, cloudprovider.VolumeBlock, cloudprovider.VolumeSharedFS)}
	case spec.SizeGB < 1:
		return &RequestError{Field: "size_gb", Msg: fmt.Sprintf("size_gb must be at least 1, got %d", spec.SizeGB)}
	case spec.Region == "":
		return &RequestError{Field: "region", Msg: "a volume needs a region"}
	}
	vb, _, err := cp.volumeBackend(spec.Cloud)
	if err != nil {
		return err
	}
	types, err := cp.volumeTypes(ctx, spec.Cloud, vb)
	if err != nil {
		return fmt.Errorf("reading %s's volume types: %w", spec.Cloud, err)
	}
	if slices.Contains(types[spec.Type], spec.Region) {
		return nil
	}
	field := "type"
	if !slices.ContainsFunc(slices.Collect(maps.Keys(types)), func(t cloudprovider.VolumeType) bool { return slices.Contains(types[t], spec.Region) }) {
		field = "region"
	}
	return &RequestError{Field: field, Msg: fmt.Sprintf("%s has no %s volumes in %s; it has: %s", spec.Cloud, spec.Type, spec.Region, describeVolumeTypes(types))}
}

// VolumeToken is the ownership token a create of volume name takes in generation gen: derived like a
// machine's, from "volume:<name>", so a volume and a machine of one name never share a cloud-side name.
func VolumeToken(name string, gen int) string { return cloudprovider.OwnerToken("volume:"+name, gen) }

// CreateVolume creates spec's volume (after PlanVolume's checks) under the first free ownership token
// of its name: CloudName(<the cloud's vm pool>, spec.Name, VolumeToken(spec.Name, gen)). The create is
// journaled before it is sent; a create cut short is resumed by the next CreateVolume of the name
// under the same cloud-side name (the backend's create is idempotent by name), and one whose answer
// was lost is looked for by name. Errors are the cloud's classified ones, *RequestError or
// *UnconfiguredError; nothing was created unless the error says its outcome is unknown.
func (cp *ControlPlane) CreateVolume(ctx context.Context, spec VolumeSpec) (VolumeRecord, error) {
	if err := cp.PlanVolume(ctx, spec); err != nil {
		return VolumeRecord{}, err
	}
	vb, pool, _ := cp.volumeBackend(spec.Cloud) // PlanVolume checked it
	log := cp.logger(ctx)
	journal := cp.volumeJournal()
	prefix := cloudprovider.CloudName(pool, spec.Name, "") + cloudprovider.TokenSeparator
	var name, token string
	if in, ok, err := journal.Get(spec.Name); err != nil {
		return VolumeRecord{}, err
	} else if ok && in.Pool == pool.Name && strings.HasPrefix(in.CloudName, prefix) {
		// A create of this volume was cut short: ask for the same name again (found, or made now).
		name, token = in.CloudName, in.Token
		log.Info("resuming a volume create that was cut short", "name", name)
	} else {
		list, err := vb.ListVolumes(ctx, prefix)
		if err != nil {
			return VolumeRecord{}, fmt.Errorf("listing %s's volumes before creating %q (nothing was created): %w", spec.Cloud, spec.Name, err)
		}
		used := map[string]bool{}
		for _, v := range list {
			used[v.Name] = true
		}
		for gen := 0; gen < cloudprovider.OwnerGenerations && token == ""; gen++ {
			if t := VolumeToken(spec.Name, gen); !used[cloudprovider.CloudName(pool, spec.Name, t)] {
				token = t
			}
		}
		if token == "" {
			return VolumeRecord{}, fmt.Errorf("every cloud-side name of volume %q in %s is taken (%d of them); delete the volumes no state holds, then apply again (nothing was created)",
				spec.Name, spec.Cloud, cloudprovider.OwnerGenerations)
		}
		name = cloudprovider.CloudName(pool, spec.Name, token)
		if err := journal.Put(Intent{Resource: spec.Name, Token: token, Pool: pool.Name, CloudName: name, StartedAt: time.Now().UTC()}); err != nil {
			return VolumeRecord{}, fmt.Errorf("journaling the volume create before sending it (nothing was created): %w", err)
		}
	}
	log.Info("creating volume", "name", name, "type", string(spec.Type), "region", spec.Region, "size_gb", spec.SizeGB)
	v, err := vb.CreateVolume(ctx, cloudprovider.VolumeRequest{Name: name, Type: spec.Type, Region: spec.Region, SizeGB: spec.SizeGB,
		Owner: cloudprovider.Ownership{Resource: spec.Name, Token: token}})
	if err != nil {
		found, ok, uerr := lookAgain(ctx, err, "volume "+name, func(ctx context.Context) (cloudprovider.Volume, bool, error) { return findVolume(ctx, vb, name) })
		switch {
		case uerr != nil:
			return VolumeRecord{}, uerr
		case ok:
			log.Warn("volume create reported an error but the volume exists; keeping it", "name", name, "error", err)
			v, err = found, nil
		}
		if err != nil {
			_ = journal.Remove(spec.Name) // nothing was created
			return VolumeRecord{}, err
		}
	}
	if v.Region != spec.Region || v.Type != spec.Type {
		// Only a volume an earlier, different create of this name left can disagree.
		return VolumeRecord{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, spec.Cloud, "creating volume",
			"volume %s (id %s) exists as %s in %s, not %s in %s: an earlier create of %q left it; delete it at the cloud or import it",
			name, v.ID, v.Type, v.Region, spec.Type, spec.Region, spec.Name)
	}
	if !errors.Is(ctx.Err(), context.Canceled) {
		_ = journal.Remove(spec.Name)
	}
	return cp.volumeRecord(ctx, pool, v), nil
}

// findVolume finds the one volume named name (ok false: none).
func findVolume(ctx context.Context, vb cloudprovider.VolumeBackend, name string) (cloudprovider.Volume, bool, error) {
	return cloudprovider.FindNamed(ctx, name, vb.ListVolumes, func(v cloudprovider.Volume) bool { return v.Name == name }, nil)
}

// volumeRecord is v as a state holds it, its attachments named by machine.
func (cp *ControlPlane) volumeRecord(ctx context.Context, pool inventory.Pool, v cloudprovider.Volume) VolumeRecord {
	resource := v.Owner.Resource
	if resource == "" {
		resource, _, _ = cloudprovider.ParseCloudName(pool, v.Name)
	}
	return VolumeRecord{ID: VolumeID(pool.Cloud, v.Region, resource), CloudVolumeID: v.ID, CloudName: v.Name, Name: resource,
		Cloud: pool.Cloud, Region: v.Region, Type: v.Type, SizeGB: v.SizeGB, AttachedTo: cp.machineNames(ctx, pool.Cloud, v.AttachedTo),
		PricePerMonth: v.PricePerMonth}
}

// machineNames names cloud's machines by their cloud ids: from the pools' listings, else read one by
// one; a machine hydra cannot read is named by its id. Sorted.
func (cp *ControlPlane) machineNames(ctx context.Context, cloud string, ids []string) []string {
	if len(ids) == 0 {
		return nil
	}
	byID := map[string]string{}
	var backend cloudprovider.InstanceManagerBackend
	for _, pm := range cp.manager.Pools() {
		if pm.Pool.Cloud != cloud {
			continue
		}
		backend = pm.Backend
		list, err := cp.listPool(ctx, pm)
		if err != nil {
			continue
		}
		for _, inst := range list {
			byID[inst.ID] = inst.Name
		}
	}
	if slices.ContainsFunc(ids, func(id string) bool { _, ok := byID[id]; return !ok }) {
		maps.Copy(byID, cp.clusterNodeNames(ctx, cloud))
	}
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		name, ok := byID[id]
		if !ok && backend != nil {
			if inst, err := backend.Get(ctx, id); err == nil && inst.Name != "" {
				name, ok = inst.Name, true
			}
		}
		if !ok {
			name = id
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// clusterNodeNames maps the cloud ids of cloud's cluster nodes in hydra's pools to their names (some
// clouds list cluster nodes only with their cluster); empty where the cloud has no cluster API or
// cannot be listed.
func (cp *ControlPlane) clusterNodeNames(ctx context.Context, cloud string) map[string]string {
	out := map[string]string{}
	cb, ok := cp.backends[cloud].(cloudprovider.ClusterBackend)
	if !ok {
		return out
	}
	for _, pm := range cp.manager.Pools() {
		if pm.Pool.Cloud != cloud {
			continue
		}
		cs, err := cb.ListClusters(ctx, pm.Pool.Prefix)
		if err != nil {
			continue
		}
		for _, c := range cs {
			for _, n := range c.Nodes {
				if n.ID != "" && n.Name != "" {
					out[n.ID] = n.Name
				}
			}
		}
	}
	return out
}

// machineVolumes are the hydra volumes (named with the cloud's volume pool prefix and a token) that
// any of the machines with cloud ids ids uses, as hydra_volume ids sorted, with no mount path. nil
// where the cloud has no volume API or its volumes cannot be listed (logged).
func (cp *ControlPlane) machineVolumes(ctx context.Context, cloud string, ids ...string) []VolumeUse {
	vb, pool, err := cp.volumeBackend(cloud)
	if err != nil {
		return nil
	}
	list, err := vb.ListVolumes(ctx, pool.Prefix)
	if err != nil {
		cp.logger(ctx).Warn("could not list the volumes to find the machine's", "cloud", cloud, "ids", ids, "error", err)
		return nil
	}
	var out []VolumeUse
	for _, v := range list {
		name, token, ok := cloudprovider.ParseCloudName(pool, v.Name)
		if ok && token != "" && slices.ContainsFunc(v.AttachedTo, func(a string) bool { return slices.Contains(ids, a) }) {
			out = append(out, VolumeUse{ID: VolumeID(cloud, v.Region, name)})
		}
	}
	slices.SortFunc(out, func(a, b VolumeUse) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// RefreshVolume reads rec's volume back from its cloud, by CloudVolumeID (by its ID's name when that
// is empty): found is false when it is gone. It updates rec (size, attachments by machine name,
// price, the cloud-side name and id).
func (cp *ControlPlane) RefreshVolume(ctx context.Context, rec *VolumeRecord) (found bool, err error) {
	_, pool, v, err := cp.readVolume(ctx, *rec)
	if cloudprovider.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	name := rec.Name
	*rec = cp.volumeRecord(ctx, pool, v)
	if rec.Name == "" {
		rec.Name, rec.ID = name, VolumeID(pool.Cloud, v.Region, name)
	}
	return true, nil
}

// readVolume reads rec's volume from its cloud, by CloudVolumeID (by its ID's name when that is
// empty), with the cloud's volume backend and pool.
func (cp *ControlPlane) readVolume(ctx context.Context, rec VolumeRecord) (cloudprovider.VolumeBackend, inventory.Pool, cloudprovider.Volume, error) {
	vb, pool, err := cp.volumeBackend(rec.Cloud)
	if err != nil {
		return nil, pool, cloudprovider.Volume{}, err
	}
	var v cloudprovider.Volume
	if rec.CloudVolumeID == "" {
		v, err = cp.resolveVolume(ctx, rec.ID)
	} else {
		v, err = vb.GetVolume(ctx, rec.CloudVolumeID)
	}
	return vb, pool, v, err
}

// ImportVolume reads the volume of importID (<cloud>/<cloud volume id>); its record's ID comes from the
// volume's region and its ownership record's resource name. A volume without hydra's name (the pool's
// prefix and a token) is refused: hydra does not take over volumes it did not make.
func (cp *ControlPlane) ImportVolume(ctx context.Context, importID string) (VolumeRecord, error) {
	cloud, id, ok := strings.Cut(importID, "/")
	if !ok || cloud == "" || id == "" {
		return VolumeRecord{}, &RequestError{Field: "id", Msg: fmt.Sprintf("import ID %q is not <cloud>/<cloud volume id>", importID)}
	}
	vb, pool, err := cp.volumeBackend(cloud)
	if err != nil {
		return VolumeRecord{}, err
	}
	v, err := vb.GetVolume(ctx, id)
	if err != nil {
		return VolumeRecord{}, err
	}
	if _, token, ok := cloudprovider.ParseCloudName(pool, v.Name); !ok || token == "" {
		return VolumeRecord{}, &RequestError{Field: "id", Msg: fmt.Sprintf("volume %s (%s) at %s was not made by hydra: its name does not start with %q and end in an ownership token",
			id, v.Name, cloud, pool.Prefix)}
	}
	return cp.volumeRecord(ctx, pool, v), nil
}

// DeleteVolume deletes rec's volume. While any machine uses it (as its cloud reads it now) it deletes
// nothing and returns a *VolumeInUseError naming the machines. A volume already gone is success.
func (cp *ControlPlane) DeleteVolume(ctx context.Context, rec VolumeRecord) error {
	vb, pool, v, err := cp.readVolume(ctx, rec)
	if cloudprovider.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(v.AttachedTo) > 0 {
		return &VolumeInUseError{Name: rec.Name, Machines: cp.machineNames(ctx, pool.Cloud, v.AttachedTo)}
	}
	cp.logger(ctx).Info("deleting volume", "name", v.Name, "id", v.ID)
	if err := vb.DeleteVolume(ctx, v.ID); err != nil && !cloudprovider.IsNotFound(err) {
		if cloudprovider.KindOf(err) == cloudprovider.ErrInvalid {
			// Attached since it was read: say by whom, when the cloud tells.
			if again, gerr := vb.GetVolume(ctx, v.ID); gerr == nil && len(again.AttachedTo) > 0 {
				return &VolumeInUseError{Name: rec.Name, Machines: cp.machineNames(ctx, pool.Cloud, again.AttachedTo)}
			}
		}
		return err
	}
	return nil
}

// VolumeRegions is, for each configured cloud with a volume API, the regions that have volumes of typ
// (for hydra_gpu_offer's volume_type), sorted; a cloud without any is absent. Clouds whose volume types
// could not be read are left out and named in the error (the map holds the others).
func (cp *ControlPlane) VolumeRegions(ctx context.Context, typ cloudprovider.VolumeType) (map[string][]string, error) {
	out := map[string][]string{}
	var errs []error
	for _, c := range cp.Clouds() {
		vb, ok := cp.backends[c].(cloudprovider.VolumeBackend)
		if !ok {
			continue
		}
		types, err := cp.volumeTypes(ctx, c, vb)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c, err))
			continue
		}
		if rs := types[typ]; len(rs) > 0 {
			out[c] = sortedUnique(rs)
		}
	}
	return out, errors.Join(errs...)
}

// resolveVolume finds the cloud's volume of a hydra_volume.id: the one live volume of its cloud-side
// name's prefix (<pool prefix><name>--) in its region. None is ErrNotFound; several are ErrInvalid.
func (cp *ControlPlane) resolveVolume(ctx context.Context, id string) (cloudprovider.Volume, error) {
	cloud, region, name, err := ParseVolumeID(id)
	if err != nil {
		return cloudprovider.Volume{}, &RequestError{Field: "volumes", Msg: err.Error()}
	}
	vb, pool, err := cp.volumeBackend(cloud)
	if err != nil {
		return cloudprovider.Volume{}, err
	}
	prefix := cloudprovider.CloudName(pool, name, "") + cloudprovider.TokenSeparator
	list, err := vb.ListVolumes(ctx, prefix)
	if err != nil {
		return cloudprovider.Volume{}, fmt.Errorf("finding volume %s: %w", id, err)
	}
	var found []cloudprovider.Volume
	for _, v := range list {
		if n, _, ok := cloudprovider.ParseCloudName(pool, v.Name); ok && n == name && v.Region == region {
			found = append(found, v)
		}
	}
	switch len(found) {
	case 0:
		return cloudprovider.Volume{}, cloudprovider.Errorf(cloudprovider.ErrNotFound, cloud, "finding volume", "no volume %q in %s/%s (no volume there is named %s<token>)", name, cloud, region, prefix)
	case 1:
		return found[0], nil
	}
	names := make([]string, len(found))
	for i, v := range found {
		names[i] = fmt.Sprintf("%s (id %s)", v.Name, v.ID)
	}
	sort.Strings(names)
	return cloudprovider.Volume{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, cloud, "finding volume", "%d volumes of %q are in %s/%s: %s; delete or import the extra ones",
		len(found), name, cloud, region, strings.Join(names, ", "))
}
