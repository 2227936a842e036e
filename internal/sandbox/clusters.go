package sandbox

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// The sandbox's clusters (cloudprovider.ClusterBackend). A cluster is an order of N nodes of one
// catalog entry, kept in state.json beside the instances; its nodes are instances (listed by List, with
// Instance.Cluster set) whose machines have a private address, 127.100.<cluster number>.<node>, where
// their sshd listens too, and, in a fabric cluster, simulated InfiniBand adapters.

// FabricInfiniBand is the catalog's word for an InfiniBand fabric (the default catalog's sbx-eu-1).
const FabricInfiniBand = "infiniband"

// DefaultMaxClusterNodes is the most nodes one cluster may have where the catalog entry does not say.
const DefaultMaxClusterNodes = 8

// maxClusters and maxNodes bound the private addresses: 127.100.<1..254>.<1..254>.
const (
	maxClusters = 254
	maxNodes    = 254
)

// ClusterRecord is one sandbox cluster as stored in state.json. Its nodes are the instance records
// whose Cluster is its ID, named "<Name>-<i>" in the order placed. A live cluster with fewer nodes
// than ordered is being placed, or was left so by an interrupted create, which a create of the same
// name finishes.
type ClusterRecord struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Number is the third byte of the nodes' private addresses, unique among the clusters not deleted.
	Number       int                        `json:"number"`
	Region       string                     `json:"region"`
	InstanceType string                     `json:"instance_type"`
	Spot         bool                       `json:"spot"`
	Interconnect cloudprovider.Interconnect `json:"interconnect"`
	// Fabric is the catalog entry's fabric in a fabric cluster ("" in a cluster of any interconnect).
	Fabric string `json:"fabric,omitempty"`
	// Nodes is how many nodes were ordered; PricePerHour is one node's price at the order.
	Nodes        int       `json:"nodes"`
	PricePerHour float64   `json:"price_per_hour"`
	SSHKeys      []string  `json:"ssh_keys,omitempty"`
	Owner        Ownership `json:"owner,omitzero"`
	CreatedAt    time.Time `json:"created_at"`
	DeletedAt    time.Time `json:"deleted_at,omitzero"`
	GoneAt       time.Time `json:"gone_at,omitzero"`
	// Volumes are the volumes every node gets (ClusterRequest.Volumes; see volumes.go).
	Volumes []InstanceVolume `json:"volumes,omitempty"`
}

func (c *ClusterRecord) gone(now time.Time) bool { return !c.GoneAt.IsZero() && now.After(c.GoneAt) }

// fabricEnv is what an NCCL run on the sandbox's simulated InfiniBand fabric is given: the HCAs its
// ibstat shows (mlx5_*), and the interface the nodes' private addresses are on (loopback, which NCCL
// otherwise leaves out). Simulated: no NCCL runs on the sandbox; its all_reduce_perf replays recordings.
var fabricEnv = map[string]string{"NCCL_IB_HCA": "mlx5", "NCCL_SOCKET_IFNAME": "lo"}

// anyEnv is what an NCCL run over the nodes' private network (loopback) is given.
var anyEnv = map[string]string{"NCCL_SOCKET_IFNAME": "lo"}

// cluster returns the cluster of an ID, or nil.
func (st *state) cluster(id string) *ClusterRecord {
	for _, c := range st.Clusters {
		if c.ID == id {
			return c
		}
	}
	return nil
}

// nodes returns a cluster's nodes in the order placed.
func (st *state) nodes(id string) []*Record {
	var out []*Record
	for _, r := range st.Instances {
		if r.Cluster == id {
			out = append(out, r)
		}
	}
	return out
}

// clusterNodes is the most nodes one cluster of the entry can have now: its stock bounded by its
// max_cluster_nodes.
func (e *CatalogEntry) clusterNodes() int {
	n := DefaultMaxClusterNodes
	if e.MaxClusterNodes > 0 {
		n = min(e.MaxClusterNodes, maxNodes)
	}
	if e.Available >= 0 {
		n = min(n, e.Available)
	}
	return n
}

// ClusterOffers lists, for every machine offer (Offers), a cluster offer of interconnect any and, where
// the catalog entry has a fabric, one of interconnect fabric (Details["fabric"] names it). Nodes is the
// capacity: the most nodes one cluster can have now (the entry's stock, Offer.Available as in Offers,
// bounded by its max_cluster_nodes); a create may ask for any count from 1 to Nodes. PricePerNode (and
// Details["price_per_node"]) is one node's price, PricePerHour that of Nodes nodes (exact). An entry
// out of stock is offered with Nodes 0, Ineligible.
func (b *Backend) ClusterOffers(ctx context.Context) ([]cloudprovider.ClusterOffer, error) {
	offers, entries, err := b.offers(ctx)
	if err != nil {
		return nil, err
	}
	var out []cloudprovider.ClusterOffer
	for i, o := range offers {
		e := entries[i]
		nodes := e.clusterNodes()
		interconnects := []cloudprovider.Interconnect{cloudprovider.InterconnectAny}
		if e.Fabric != "" {
			interconnects = append(interconnects, cloudprovider.InterconnectFabric)
		}
		for _, ic := range interconnects {
			co := cloudprovider.ClusterOffer{Offer: o, Nodes: nodes, Interconnect: ic, PricePerNode: o.PricePerHour}
			co.PricePerHour = o.PricePerHour * money.USD(nodes)
			co.Details = map[string]string{"gpu": e.GPU, "price_per_node": o.PricePerHour.String()}
			if ic == cloudprovider.InterconnectFabric {
				co.Details["fabric"] = e.Fabric
			}
			if nodes == 0 {
				co.Ineligible = "sold out: no node of " + e.InstanceType + " left in " + e.Region
			}
			out = append(out, co)
		}
	}
	return out, nil
}

// CreateCluster orders req.Offer.Nodes nodes of the offer's catalog entry (region, instance type, spot)
// on req.Offer.Interconnect, all or nothing, and returns once every node is placed (booting):
//   - An order the entry cannot fill now is ErrCapacity naming the region, the nodes asked and the
//     nodes available (stock, max_cluster_nodes, the sold_out and out_of_stock faults), as is a fabric
//     cluster of an entry without a fabric, and a price of the whole cluster above req.MaxPricePerHour
//     (cloudprovider.CheckPriceCap). Nothing starts then.
//   - The nodes are then placed one at a time, each recorded as it is (node i is "<name>-<i>" at
//     127.100.<cluster number>.<i>). A placement the stock no longer allows (another create took it
//     meanwhile, or the partial_clusters fault) terminates every node placed and the cluster, in the
//     same step, and is ErrCapacity saying how many were delivered.
//   - Every node gets the volumes of req.Volumes, checked as CreateWithVolumes checks a machine's
//     (a block volume only on a cluster of one node); a volume refused is ErrInvalid, before anything
//     starts.
//   - It is idempotent by name: a cluster of the name not deleted is returned, after its missing nodes
//     are placed. So a create cancelled (ctx) or killed between placements, which leaves a cluster of
//     fewer nodes (pending, cloud status "creating"), is finished by the next create of its name, or,
//     when its nodes can no longer all be placed, terminated as above.
func (b *Backend) CreateCluster(ctx context.Context, req cloudprovider.ClusterRequest) (cloudprovider.Cluster, error) {
	const op = "creating cluster"
	switch {
	case req.Name == "":
		return cloudprovider.Cluster{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "no name")
	case req.Offer.Nodes < 1:
		return cloudprovider.Cluster{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "%d nodes asked; at least 1", req.Offer.Nodes)
	case req.Offer.Interconnect != cloudprovider.InterconnectFabric && req.Offer.Interconnect != cloudprovider.InterconnectAny:
		return cloudprovider.Cluster{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "interconnect %q is neither %q nor %q", req.Offer.Interconnect, cloudprovider.InterconnectFabric, cloudprovider.InterconnectAny)
	case req.MaxPricePerHour < 0:
		return cloudprovider.Cluster{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "max price %s must not be negative", req.MaxPricePerHour)
	}
	if err := b.call(ctx, op); err != nil {
		return cloudprovider.Cluster{}, err
	}
	var (
		id       string
		existing bool
		lost     bool
	)
	err := b.update(func(st *state, f *Faults) error {
		for _, c := range st.Clusters {
			if c.Name == req.Name && c.DeletedAt.IsZero() {
				id, existing = c.ID, true
				return nil
			}
		}
		c, err := b.order(op, st, f, req)
		if err != nil {
			return err
		}
		id, lost = c.ID, f.TakeLostCreate()
		return nil
	})
	if err != nil {
		return cloudprovider.Cluster{}, err
	}
	if existing {
		b.log.Debug("a cluster with this name already exists; returning it once its nodes are placed", "name", req.Name, "id", id)
	} else {
		b.log.Info("cluster ordered", "id", id, "name", req.Name, "region", req.Offer.Region, "instance_type", req.Offer.InstanceType, "nodes", req.Offer.Nodes)
	}
	for {
		if err := ctx.Err(); err != nil {
			return cloudprovider.Cluster{}, cloudprovider.Errorf(cloudprovider.ErrOther, CloudName, op, "%s interrupted while its nodes were placed (a create of the same name finishes it): %w", req.Name, err)
		}
		rec, err := b.placeNode(op, id)
		if err != nil {
			return cloudprovider.Cluster{}, err
		}
		if rec == nil {
			break
		}
		b.startBooting(rec)
		if b.onPlaced != nil {
			b.onPlaced(*rec)
		}
	}
	if lost {
		return cloudprovider.Cluster{}, cloudprovider.Errorf(cloudprovider.ErrOther, CloudName, op, "injected fault: the response was lost (HTTP 502)")
	}
	return b.GetCluster(ctx, id)
}

// order checks a new cluster's order against the catalog, the faults and the price cap, and records
// it in st with no node yet.
func (b *Backend) order(op string, st *state, f *Faults, req cloudprovider.ClusterRequest) (*ClusterRecord, error) {
	_, entry, err := b.catalogEntry(op, req.Offer.Region, req.Offer.InstanceType, req.Offer.Spot)
	if err != nil {
		return nil, err
	}
	asked := req.Offer.Nodes
	if req.Offer.Interconnect == cloudprovider.InterconnectFabric && entry.Fabric == "" {
		return nil, cloudprovider.Errorf(cloudprovider.ErrCapacity, CloudName, op, "%s has no fabric for %s: %d nodes asked on a fabric, 0 available", entry.Region, entry.InstanceType, asked)
	}
	available := entry.clusterNodes()
	if f.outOfStock(entry) {
		available = 0
	}
	if available < asked {
		return nil, cloudprovider.Errorf(cloudprovider.ErrCapacity, CloudName, op, "%s can give %d nodes of %s now, %d asked", entry.Region, available, entry.InstanceType, asked)
	}
	price, err := entryPrice(op, entry)
	if err != nil {
		return nil, err
	}
	what := fmt.Sprintf("%d nodes of %s in %s", asked, entry.InstanceType, entry.Region)
	if err := cloudprovider.CheckPriceCap(CloudName, op, what, price*money.USD(asked), req.MaxPricePerHour); err != nil {
		return nil, err
	}
	vols, err := instanceVolumes(op, st, entry.Region, asked, req.Volumes, time.Now())
	if err != nil {
		return nil, err
	}
	used := map[int]bool{}
	for _, c := range st.Clusters {
		if c.DeletedAt.IsZero() {
			used[c.Number] = true
		}
	}
	number := 1
	for used[number] {
		number++
	}
	if number > maxClusters {
		return nil, cloudprovider.Errorf(cloudprovider.ErrQuota, CloudName, op, "%d clusters already: no private network left", maxClusters)
	}
	c := &ClusterRecord{
		ID: "sbxc-" + simulation.RandomHex(6), Name: req.Name, Number: number, Region: entry.Region, InstanceType: entry.InstanceType,
		Spot: entry.Spot, Interconnect: req.Offer.Interconnect, Nodes: asked, PricePerHour: entry.PricePerHour,
		SSHKeys: req.SSHPublicKeys, Owner: ownerAtCreate(req.Owner), CreatedAt: time.Now().UTC(), Volumes: vols,
	}
	if c.Interconnect == cloudprovider.InterconnectFabric {
		c.Fabric = entry.Fabric
	}
	st.Clusters = append(st.Clusters, c)
	return c, nil
}

// placeNode places the next missing node of a cluster and returns it, or nil when every node is
// placed. A node the catalog or the faults no longer allow ends the order in the same step: every
// node placed and the cluster are terminated, and the error is ErrCapacity.
func (b *Backend) placeNode(op, id string) (*Record, error) {
	var (
		rec     *Record
		failure error
	)
	err := b.update(func(st *state, f *Faults) error {
		c := st.cluster(id)
		if c == nil || !c.DeletedAt.IsZero() {
			return cloudprovider.Errorf(cloudprovider.ErrOther, CloudName, op, "cluster %s was deleted while its nodes were placed", id)
		}
		placed := len(st.nodes(id))
		if placed >= c.Nodes {
			return nil
		}
		catalog, entry, err := b.catalogEntry(op, c.Region, c.InstanceType, c.Spot)
		short := err == nil && placed == c.Nodes-1 && f.PartialClusters > 0
		if short {
			f.PartialClusters--
		}
		if err != nil || short || f.outOfStock(entry) {
			now := time.Now().UTC()
			for _, r := range st.nodes(id) {
				if r.DeletedAt.IsZero() {
					b.terminate(r, now)
				}
			}
			c.DeletedAt, c.GoneAt = now, now.Add(b.cfg.DeleteTime)
			failure = cloudprovider.Errorf(cloudprovider.ErrCapacity, CloudName, op, "%s delivered %d of the %d nodes of %s asked (no stock left for the next); the %d placed were terminated", c.Region, placed, c.Nodes, c.InstanceType, placed)
			return nil
		}
		i := placed + 1
		rec, err = b.place(st, f, catalog, entry, Record{
			Name: fmt.Sprintf("%s-%d", c.Name, i), SSHKeys: c.SSHKeys, Owner: c.Owner,
			Cluster: c.ID, PrivateAddr: fmt.Sprintf("127.100.%d.%d", c.Number, i), Fabric: c.Fabric != "",
			Volumes: c.Volumes,
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	if failure != nil {
		b.log.Info("cluster terminated: not every node could be placed", "id", id, "error", failure)
		return nil, failure
	}
	return rec, nil
}

// GetCluster returns the cluster with the sandbox's id (terminated ones too, as Get), or ErrNotFound.
// Like Get it changes nothing at the cloud.
func (b *Backend) GetCluster(ctx context.Context, id string) (cloudprovider.Cluster, error) {
	return readOne(ctx, b, "reading cluster", "cluster", id, (*state).cluster, b.toCluster)
}

// ListClusters returns the clusters whose names start with prefix, terminated ones left out.
func (b *Backend) ListClusters(ctx context.Context, prefix string) ([]cloudprovider.Cluster, error) {
	return readAll(ctx, b, "listing clusters", func(st *state, now time.Time) ([]cloudprovider.Cluster, error) {
		var out []cloudprovider.Cluster
		for _, c := range st.Clusters {
			if !strings.HasPrefix(c.Name, prefix) || c.gone(now) {
				continue
			}
			cl, err := b.toCluster(st, c, now)
			if err != nil {
				return nil, err
			}
			out = append(out, cl)
		}
		return out, nil
	}, func(c cloudprovider.Cluster) string { return c.Name })
}

// DeleteCluster starts termination of every node of the cluster, and of the cluster. A cluster
// already deleted, terminated or unknown is gone: success.
func (b *Backend) DeleteCluster(ctx context.Context, id string) error {
	if err := b.call(ctx, "deleting cluster"); err != nil {
		return err
	}
	deleted := false
	err := b.update(func(st *state, _ *Faults) error {
		c := st.cluster(id)
		if c == nil || !c.DeletedAt.IsZero() {
			return nil
		}
		now := time.Now().UTC()
		for _, r := range st.nodes(id) {
			if r.DeletedAt.IsZero() {
				b.terminate(r, now)
			}
		}
		c.DeletedAt, c.GoneAt, deleted = now, now.Add(b.cfg.DeleteTime), true
		return nil
	})
	if err == nil && deleted {
		b.log.Info("cluster deleted", "id", id)
	}
	return err
}

// toCluster reports what time has made of a cluster and its nodes (see toInstance). Its status is the
// nodes': running only when every node runs, error when one failed or was terminated on its own,
// pending while one boots or the order is not placed yet (cloud status "creating").
func (b *Backend) toCluster(st *state, c *ClusterRecord, now time.Time) (cloudprovider.Cluster, error) {
	recs := st.nodes(c.ID)
	insts, err := b.toInstances(recs, now, func(*Record) bool { return true })
	if err != nil {
		return cloudprovider.Cluster{}, err
	}
	out := cloudprovider.Cluster{
		ID: c.ID, Name: c.Name, Cloud: CloudName, Region: c.Region,
		PricePerHour: recordPrice(c.PricePerHour) * money.USD(c.Nodes), Owner: c.Owner.contract(), CreatedAt: c.CreatedAt,
		Env: maps.Clone(anyEnv), Interconnect: cmp.Or(c.Interconnect, cloudprovider.InterconnectAny),
	}
	if c.Fabric != "" {
		out.Env = maps.Clone(fabricEnv)
	}
	for i, inst := range insts {
		out.Nodes = append(out.Nodes, cloudprovider.ClusterNode{Instance: inst, PrivateIP: recs[i].PrivateAddr})
	}
	out.Status, out.CloudStatus = cloudprovider.StatusRunning, "running"
	switch {
	case c.gone(now):
		out.Status, out.CloudStatus = cloudprovider.StatusTerminated, "terminated"
	case !c.DeletedAt.IsZero():
		out.CloudStatus = "stopping"
	case len(recs) < c.Nodes:
		out.Status, out.CloudStatus = cloudprovider.StatusPending, "creating"
		out.Message = fmt.Sprintf("%d of %d nodes placed", len(recs), c.Nodes)
	default:
		for _, n := range out.Nodes {
			switch {
			case n.Status == cloudprovider.StatusError || n.Status == cloudprovider.StatusTerminated || n.CloudStatus == "stopping":
				// A node failed, or was terminated on its own (Vanish): the cluster is broken.
				if out.Status != cloudprovider.StatusError {
					out.Message = fmt.Sprintf("node %s is %s", n.Name, cmp.Or(n.Message, n.CloudStatus))
				}
				out.Status, out.CloudStatus = cloudprovider.StatusError, "degraded"
			case n.Status == cloudprovider.StatusPending && out.Status == cloudprovider.StatusRunning:
				out.Status, out.CloudStatus = cloudprovider.StatusPending, "booting"
			}
		}
	}
	return out, nil
}
