package controlplane

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
)

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
				sort.Strings(lv.UsedBy)
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
	sort.Slice(res.Volumes, func(i, j int) bool {
		a, b := res.Volumes[i], res.Volumes[j]
		if a.Pool.Cloud != b.Pool.Cloud {
			return a.Pool.Cloud < b.Pool.Cloud
		}
		return a.Volume.Name < b.Volume.Name
	})
}
