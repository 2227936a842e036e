package controlplane

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
)

// OwnershipState says what hydra knows about who holds a machine.
type OwnershipState string

// The ownership states of a machine.
const (
	// OwnedConfirmed: a completed create, refresh or import recorded at the cloud that a state holds it.
	OwnedConfirmed OwnershipState = "confirmed"
	// OwnedUnconfirmed: created by hydra, never confirmed: in flight, or left by a create cut short.
	OwnedUnconfirmed OwnershipState = "unconfirmed"
	// OwnedUnrecorded: created by hydra on a cloud that cannot record confirmation; only a state (or
	// this working directory's journal) knows whether it is held.
	OwnedUnrecorded OwnershipState = "unrecorded"
	// OwnedInterrupted: left by a create cut short: named by this working directory's journal, or, on a
	// cloud that records confirmation, never confirmed and carrying its resource name's derived token
	// (OwnerToken), which every runner of the configuration recognises, a fresh one included.
	OwnedInterrupted OwnershipState = "interrupted"
	// NotHydras: in a hydra pool's name space but carrying no ownership record.
	NotHydras OwnershipState = "foreign"
)

// Machine is one machine in a configured pool with its ownership.
type Machine struct {
	Instance cloudprovider.Instance
	Pool     inventory.Pool
	// Resource is the resource name the machine was created for.
	Resource  string
	Ownership OwnershipState
	// Age is how long ago the cloud created it (0 when the cloud does not say).
	Age time.Duration
	// Facts are what its cloud states about itself (billing granularity).
	Facts cloudprovider.Facts
}

// ListResult is every machine hydra can see, and the clouds that could not be listed.
type ListResult struct {
	Machines []Machine
	// Volumes are the volumes in the clouds' volume name spaces, with the machines using them.
	Volumes []ListedVolume
	// Unreachable maps a cloud to why it could not be listed.
	Unreachable map[string]string
	// At is when the machines were listed; Grace is the configured orphan grace (see Orphans).
	At    time.Time
	Grace time.Duration
}

// Machines lists the machines of every configured pool (of the given clouds only when clouds is not
// empty) concurrently, each pool within the offer timeout, with their ownership state, then the
// clouds' volumes (listVolumes).
func (cp *ControlPlane) Machines(ctx context.Context, clouds []string) ListResult {
	intents := cp.journaled()
	res := ListResult{Unreachable: map[string]string{}, At: cp.Now(), Grace: cp.opts.OrphanGrace}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, pm := range cp.manager.Pools() {
		if !cloudAllowed(clouds, pm.Pool.Cloud) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			list, err := cp.listPool(ctx, pm)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				res.Unreachable[pm.Pool.Cloud] = err.Error()
				return
			}
			_, confirmable := pm.Backend.(cloudprovider.OwnershipConfirmer)
			for _, inst := range list {
				if inst.Status == cloudprovider.StatusTerminated {
					continue
				}
				res.Machines = append(res.Machines, cp.machine(pm, inst, confirmable, intents))
			}
		}()
	}
	wg.Wait()
	slices.SortFunc(res.Machines, func(a, b Machine) int {
		return cmp.Or(cmp.Compare(a.Instance.Cloud, b.Instance.Cloud), cmp.Compare(a.Instance.Name, b.Instance.Name))
	})
	cp.listVolumes(ctx, clouds, &res)
	return res
}

func (cp *ControlPlane) machine(pm *SinglePoolInstManager, inst cloudprovider.Instance, confirmable bool, intents map[string]Intent) Machine {
	pool := pm.Pool
	m := Machine{Instance: inst, Pool: pool, Resource: inst.Owner.Resource, Facts: cloudprovider.FactsOf(pm.Backend)}
	if m.Resource == "" {
		m.Resource, _, _ = cloudprovider.ParseCloudName(pool, inst.Name)
	}
	if !inst.CreatedAt.IsZero() {
		m.Age = time.Since(inst.CreatedAt)
	}
	switch in, ok := intentOf(intents, inst); {
	case ok && in.Token == inst.Owner.Token:
		m.Ownership = OwnedInterrupted
	case inst.Owner.Token == "":
		m.Ownership = NotHydras
	case confirmable && !inst.Owner.Confirmed && cloudprovider.DerivedToken(m.Resource, inst.Owner.Token):
		m.Ownership = OwnedInterrupted
	case inst.Owner.Confirmed:
		m.Ownership = OwnedConfirmed
	case confirmable:
		m.Ownership = OwnedUnconfirmed
	default:
		m.Ownership = OwnedUnrecorded
	}
	return m
}

// journaled is this working directory's intents, the machines' and the clusters', by cloud-side name.
func (cp *ControlPlane) journaled() map[string]Intent {
	intents := map[string]Intent{}
	for _, j := range []Journal{cp.opts.Journal, cp.clusterJournal()} {
		all, _ := j.All()
		for _, in := range all {
			intents[in.CloudName] = in
		}
	}
	return intents
}

// intentOf is the intent that covers inst: its own, or a cluster node's cluster's (a node is named
// "<cluster name>-<i>").
func intentOf(intents map[string]Intent, inst cloudprovider.Instance) (Intent, bool) {
	if in, ok := intents[inst.Name]; ok || inst.Cluster == "" {
		return in, ok
	}
	in, ok := intents[inst.Name[:max(strings.LastIndexByte(inst.Name, '-'), 0)]]
	return in, ok
}

// Orphans returns the machines probably billed with no Terraform state holding them: every machine a
// cut-short create left (OwnedInterrupted: named by this working directory's journal, or never
// confirmed and carrying its resource name's derived token), whatever its age, and every other
// never-confirmed machine (OwnedUnconfirmed) older than grace or of unknown age.
func (r ListResult) Orphans(grace time.Duration) []Machine {
	var out []Machine
	for _, m := range r.Machines {
		// A machine whose cloud does not say when it was made counts as old: better a warning too many.
		old := m.Age >= grace || m.Instance.CreatedAt.IsZero()
		if m.Ownership == OwnedInterrupted || (m.Ownership == OwnedUnconfirmed && old) {
			out = append(out, m)
		}
	}
	return out
}

// Named returns the live machines created for resource name in the pools of kind on the given clouds
// (every configured cloud when clouds is empty), and the clouds that could not be asked.
func (cp *ControlPlane) Named(ctx context.Context, name, kind string, clouds []string) ([]Machine, map[string]string) {
	intents := map[string]Intent{}
	if in, ok, err := cp.opts.Journal.Get(name); err == nil && ok {
		intents[in.CloudName] = in
	}
	var out []Machine
	unreachable := map[string]string{}
	for _, pm := range cp.manager.Pools() {
		if pm.Pool.Kind != kind || !cloudAllowed(clouds, pm.Pool.Cloud) {
			continue
		}
		list, err := cp.listPool(ctx, pm)
		if err != nil {
			unreachable[pm.Pool.Cloud] = err.Error()
			continue
		}
		_, confirmable := pm.Backend.(cloudprovider.OwnershipConfirmer)
		for _, inst := range list {
			if inst.Status == cloudprovider.StatusTerminated {
				continue
			}
			if n, _, ok := cloudprovider.ParseCloudName(pm.Pool, inst.Name); ok && n == name {
				out = append(out, cp.machine(pm, inst, confirmable, intents))
			}
		}
	}
	return out, unreachable
}

// listPool lists a pool's machines once per control plane (one Terraform walk) and shares the answer:
// the orphan scan at configure time and every plan-time name check read the same listing. A failed
// listing is not kept, so a later caller asks again.
func (cp *ControlPlane) listPool(ctx context.Context, pm *SinglePoolInstManager) ([]cloudprovider.Instance, error) {
	cp.mu.Lock()
	if list, ok := cp.listings[pm.Pool.Name]; ok {
		cp.mu.Unlock()
		return list, nil
	}
	cp.mu.Unlock()
	v, err, _ := cp.flight.Do("list/"+pm.Pool.Name, func() (any, error) {
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cp.opts.OfferTimeout)
		defer cancel()
		list, err := pm.List(pctx)
		if err != nil {
			if pctx.Err() != nil {
				err = fmt.Errorf("timed out after %s", cp.opts.OfferTimeout)
			}
			return nil, err
		}
		cp.mu.Lock()
		cp.listings[pm.Pool.Name] = list
		cp.mu.Unlock()
		return list, nil
	})
	if err != nil {
		return nil, err
	}
	list, _ := v.([]cloudprovider.Instance) // the function above returns a []Instance with a nil error
	return list, nil
}

// forgetListings drops the shared listings once this process has changed what a cloud holds.
func (cp *ControlPlane) forgetListings() {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	clear(cp.listings)
}

// ListedVolume is one volume in a configured cloud's volume name space (its vm pool's prefix).
type ListedVolume struct {
	Volume cloudprovider.Volume
	// Pool is the pool whose prefix the volume's name carries; Resource the hydra_volume name it was
	// created for ("" when the name carries none).
	Pool     inventory.Pool
	Resource string
	// ID is its hydra_volume.id (<cloud>/<region>/<name>; "" for a volume without hydra's name).
	ID string
	// UsedBy are the cloud-side names of the machines using it (a machine outside hydra's pools by its
	// cloud id), sorted.
	UsedBy []string
	// Ownership is OwnedInterrupted when this working directory's journal names it (a volume create
	// cut short), NotHydras without an ownership token, otherwise OwnedUnrecorded: only a state knows
	// whether it is held.
	Ownership OwnershipState
	// Age is how long ago the cloud created it (0 when the cloud does not say).
	Age time.Duration
}

// OrphanVolumes returns the volumes a cut-short create left (OwnedInterrupted): billed, and no state
// holds them. hydra never deletes a volume by itself.
func (r ListResult) OrphanVolumes() []ListedVolume {
	var out []ListedVolume
	for _, v := range r.Volumes {
		if v.Ownership == OwnedInterrupted {
			out = append(out, v)
		}
	}
	return out
}

// listVolumes adds to res every volume of the given clouds (all when empty) with a volume API, read
// with ListVolumes(<the cloud's vm pool prefix>) concurrently, each within the offer timeout, with the
// machines of res.Machines that use it. A cloud that cannot be listed is in res.Unreachable.
func (cp *ControlPlane) listVolumes(ctx context.Context, clouds []string, res *ListResult) {
	intents, _ := cp.volumeJournal().All()
	journaled := map[string]bool{}
	for _, in := range intents {
		journaled[in.CloudName] = true
	}
	names := map[string]string{} // cloud + "\x00" + machine id -> machine name
	for _, m := range res.Machines {
		names[m.Instance.Cloud+"\x00"+m.Instance.ID] = m.Instance.Name
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range cp.Clouds() {
		vb, ok := cp.backends[c].(cloudprovider.VolumeBackend)
		if !ok || !cloudAllowed(clouds, c) {
			continue
		}
		pool, ok := cp.volumePool(c)
		if !ok {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cp.opts.OfferTimeout)
			defer cancel()
			list, err := vb.ListVolumes(lctx, pool.Prefix)
			if err != nil {
				if lctx.Err() != nil {
					err = fmt.Errorf("timed out after %s", cp.opts.OfferTimeout)
				}
				mu.Lock()
				defer mu.Unlock()
				why := "volumes: " + err.Error()
				if prior, ok := res.Unreachable[c]; ok {
					why = prior + "; " + why
				}
				res.Unreachable[c] = why
				return
			}
			var out []ListedVolume
			var nodes map[string]string // the cloud's cluster nodes, read when a volume names a machine not listed
			for _, v := range list {
				lv := ListedVolume{Volume: v, Pool: pool, Resource: v.Owner.Resource, Ownership: OwnedUnrecorded}
				name, token, ok := cloudprovider.ParseCloudName(pool, v.Name)
				if lv.Resource == "" && ok {
					lv.Resource = name
				}
				switch {
				case journaled[v.Name]:
					lv.Ownership = OwnedInterrupted
				case !ok || token == "":
					lv.Ownership = NotHydras
				}
				if lv.Ownership != NotHydras {
					lv.ID = VolumeID(c, v.Region, lv.Resource)
				}
				for _, id := range v.AttachedTo {
					n, ok := names[c+"\x00"+id]
					if !ok && nodes == nil {
						nodes = cp.clusterNodeNames(lctx, c)
					}
					if !ok {
						if n, ok = nodes[id]; !ok {
							n = id
						}
					}
					lv.UsedBy = append(lv.UsedBy, n)
				}
				slices.Sort(lv.UsedBy)
				if !v.CreatedAt.IsZero() {
					lv.Age = cp.Now().Sub(v.CreatedAt)
				}
				out = append(out, lv)
			}
			mu.Lock()
			defer mu.Unlock()
			res.Volumes = append(res.Volumes, out...)
		}()
	}
	wg.Wait()
	slices.SortFunc(res.Volumes, func(a, b ListedVolume) int {
		return cmp.Or(cmp.Compare(a.Pool.Cloud, b.Pool.Cloud), cmp.Compare(a.Volume.Name, b.Volume.Name))
	})
}
