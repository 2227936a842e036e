package controlplane

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
)

// InstanceRef names an instance: by its cloud-side name (always) and the cloud's id (when known).
type InstanceRef struct {
	Name string
	ID   string
}

// SinglePoolInstManager acts for one pool through its cloud's backend.
type SinglePoolInstManager struct {
	Pool    inventory.Pool
	Backend cloudprovider.InstanceManagerBackend
}

// Create starts an instance in this pool; req.Name must start with the pool's prefix.
func (m *SinglePoolInstManager) Create(ctx context.Context, req cloudprovider.CreateRequest) (cloudprovider.Instance, error) {
	if !strings.HasPrefix(req.Name, m.Pool.Prefix) {
		return cloudprovider.Instance{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, m.Pool.Cloud, "creating instance", "name %q does not start with pool %s's prefix %q", req.Name, m.Pool.Name, m.Pool.Prefix)
	}
	req.Pool = m.Pool
	inst, err := m.Backend.Create(ctx, req)
	return cloudprovider.WithOwner(m.Pool, inst), err
}

// Get finds an instance of this pool by its cloud id or, when ref.ID is empty, by its name (one live
// instance at most may carry it). A missing instance is an ErrNotFound *Error.
func (m *SinglePoolInstManager) Get(ctx context.Context, ref InstanceRef) (cloudprovider.Instance, error) {
	if ref.ID != "" {
		inst, err := m.Backend.Get(ctx, ref.ID)
		return cloudprovider.WithOwner(m.Pool, inst), err
	}
	list, err := m.ListPrefix(ctx, ref.Name)
	if err != nil {
		return cloudprovider.Instance{}, err
	}
	var found []cloudprovider.Instance
	for _, inst := range list {
		if inst.Name == ref.Name && inst.Status != cloudprovider.StatusTerminated {
			found = append(found, inst)
		}
	}
	switch len(found) {
	case 0:
		return cloudprovider.Instance{}, cloudprovider.Errorf(cloudprovider.ErrNotFound, m.Pool.Cloud, "finding instance", "no instance named %q", ref.Name)
	case 1:
		return found[0], nil
	default:
		ids := make([]string, len(found))
		for i, f := range found {
			ids[i] = f.ID
		}
		return cloudprovider.Instance{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, m.Pool.Cloud, "finding instance", "%d instances are named %q (ids %s); delete the extra ones at the cloud", len(found), ref.Name, strings.Join(ids, ", "))
	}
}

// List returns this pool's instances, with their ownership records.
func (m *SinglePoolInstManager) List(ctx context.Context) ([]cloudprovider.Instance, error) {
	return m.ListPrefix(ctx, m.Pool.Prefix)
}

// ListPrefix returns this pool's instances whose name starts with prefix, with their ownership records.
func (m *SinglePoolInstManager) ListPrefix(ctx context.Context, prefix string) ([]cloudprovider.Instance, error) {
	list, err := m.Backend.List(ctx, prefix)
	for i := range list {
		list[i] = cloudprovider.WithOwner(m.Pool, list[i])
	}
	return list, err
}

// Delete starts termination of an instance of this pool, by its cloud id: never by a name, which
// another resource's machine could carry. A gone instance is success.
func (m *SinglePoolInstManager) Delete(ctx context.Context, ref InstanceRef) error {
	if ref.ID == "" {
		return cloudprovider.Errorf(cloudprovider.ErrInvalid, m.Pool.Cloud, "deleting instance", "instance %q has no cloud id; hydra deletes machines by id only", ref.Name)
	}
	err := m.Backend.Delete(ctx, ref.ID)
	if cloudprovider.IsNotFound(err) {
		return nil
	}
	return err
}

// MultiPoolInstManager routes each call to the pool whose prefix starts the instance's name.
type MultiPoolInstManager struct {
	pools []*SinglePoolInstManager
}

// NewMultiPoolInstManager routes over the given pools (prefixes must not overlap; the inventory checks).
func NewMultiPoolInstManager(pools []*SinglePoolInstManager) *MultiPoolInstManager {
	sorted := append([]*SinglePoolInstManager(nil), pools...)
	// Longest prefix first, so routing is exact even if a future inventory allowed nesting.
	sort.SliceStable(sorted, func(i, j int) bool { return len(sorted[i].Pool.Prefix) > len(sorted[j].Pool.Prefix) })
	return &MultiPoolInstManager{pools: sorted}
}

// Route returns the pool manager for an instance name.
func (m *MultiPoolInstManager) Route(name string) (*SinglePoolInstManager, error) {
	for _, p := range m.pools {
		if strings.HasPrefix(name, p.Pool.Prefix) {
			return p, nil
		}
	}
	prefixes := make([]string, 0, len(m.pools))
	for _, p := range m.pools {
		prefixes = append(prefixes, fmt.Sprintf("%q (%s)", p.Pool.Prefix, p.Pool.Name))
	}
	sort.Strings(prefixes)
	return nil, cloudprovider.Errorf(cloudprovider.ErrInvalid, "hydra", "routing instance", "instance name %q starts with no configured pool's prefix; configured prefixes: %s", name, strings.Join(prefixes, ", "))
}

// Pool returns the manager of the named pool.
func (m *MultiPoolInstManager) Pool(name string) (*SinglePoolInstManager, bool) {
	for _, p := range m.pools {
		if p.Pool.Name == name {
			return p, true
		}
	}
	return nil, false
}

// Pools returns every pool manager.
func (m *MultiPoolInstManager) Pools() []*SinglePoolInstManager { return m.pools }

// Create routes by req.Name.
func (m *MultiPoolInstManager) Create(ctx context.Context, req cloudprovider.CreateRequest) (cloudprovider.Instance, error) {
	p, err := m.Route(req.Name)
	if err != nil {
		return cloudprovider.Instance{}, err
	}
	return p.Create(ctx, req)
}

// Get routes by ref.Name.
func (m *MultiPoolInstManager) Get(ctx context.Context, ref InstanceRef) (cloudprovider.Instance, error) {
	p, err := m.Route(ref.Name)
	if err != nil {
		return cloudprovider.Instance{}, err
	}
	return p.Get(ctx, ref)
}

// List returns the instances of every pool.
func (m *MultiPoolInstManager) List(ctx context.Context) ([]cloudprovider.Instance, error) {
	var all []cloudprovider.Instance
	for _, p := range m.pools {
		list, err := p.List(ctx)
		if err != nil {
			return nil, err
		}
		all = append(all, list...)
	}
	return all, nil
}

// Delete routes by ref.Name.
func (m *MultiPoolInstManager) Delete(ctx context.Context, ref InstanceRef) error {
	p, err := m.Route(ref.Name)
	if err != nil {
		return err
	}
	return p.Delete(ctx, ref)
}
