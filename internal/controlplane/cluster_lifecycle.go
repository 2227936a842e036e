package controlplane

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/wait"
)

// clusterJournal keeps the intents of cluster creates in flight: the machines' journal's folder
// "clusters".
func (cp *ControlPlane) clusterJournal() Journal { return cp.opts.Journal.sub("clusters") }

// clusterBackend returns the pool and cluster backend of the named pool.
func (cp *ControlPlane) clusterBackend(pool string) (*SinglePoolInstManager, cloudprovider.ClusterBackend, error) {
	pm, ok := cp.manager.Pool(pool)
	if !ok {
		return nil, nil, cloudprovider.Errorf(cloudprovider.ErrInvalid, "hydra", "finding GPU cluster", "pool %q is not configured", pool)
	}
	cb, ok := pm.Backend.(cloudprovider.ClusterBackend)
	if !ok {
		return nil, nil, cloudprovider.Errorf(cloudprovider.ErrInvalid, pm.Pool.Cloud, "finding GPU cluster", "%s has no cluster API", pm.Pool.Cloud)
	}
	return pm, cb, nil
}

// CreateCluster orders the planned cluster and takes it to ready: every node running, provisioned
// concurrently (one batch for a batching provisioner), then the cluster check when the provisioner is a
// ClusterChecker. It journals the intent before ordering, and first adopts, instead of ordering another,
// the cluster an earlier create of this resource left (the one its intent names, or an unconfirmed one
// carrying a token derived from its name; one that no longer matches the plan is deleted). save sees
// the record as soon as the cloud accepted the order and at each status change. When the cloud cannot
// deliver every node the error is a *ClusterCapacityError (nothing billed, the miss remembered). A
// failure after the order leaves the returned record holding the cluster (status error), for the state
// to keep and Terraform to destroy, as for a machine. When ctx is cancelled the record keeps the status
// reached and the intent stays, so the next apply resumes (ResumeCluster) or adopts it.
func (cp *ControlPlane) CreateCluster(ctx context.Context, spec ClusterSpec, plan ClusterPlan, save func(ClusterRecord)) (ClusterRecord, error) {
	p, err := ParseClusterOfferID(plan.OfferID)
	if err != nil {
		return ClusterRecord{}, err
	}
	if err := cp.checkClusterVolumes(spec, plan.OfferID); err != nil {
		return ClusterRecord{}, err
	}
	pm, cb, err := cp.clusterBackend(p.Pool)
	if err != nil {
		return ClusterRecord{}, err
	}
	defer cp.forgetListings()
	offer, err := cp.liveClusterOffer(ctx, pm, p, spec)
	if err != nil {
		return ClusterRecord{}, err
	}
	journal := cp.clusterJournal()
	c, adopted, err := cp.adoptCluster(ctx, journal, spec.Name, pm, cb, offer)
	if err != nil {
		return ClusterRecord{}, err
	}
	if adopted {
		c, err = cp.finishOrder(ctx, journal, spec, pm, cb, offer, c)
	} else {
		c, err = cp.orderCluster(ctx, journal, spec, pm, cb, offer)
	}
	if err == nil {
		c, err = cp.awaitBid(ctx, journal, spec, cb, offer, c)
	}
	if err != nil {
		return ClusterRecord{}, err
	}
	rec := ClusterRecord{ID: c.Name, Name: spec.Name, CloudClusterID: c.ID, Cloud: pm.Pool.Cloud, Pool: pm.Pool.Name, Region: cmpOr(c.Region, offer.Region),
		OfferID: offer.ID, Status: string(cloudprovider.StatusPending), PricePerHour: offer.PricePerHour, GPUType: spec.GPUType, GPUCount: spec.GPUCount,
		Interconnect: offer.Interconnect}
	rec.observe(c)
	sv := &clusterSaver{rec: &rec, save: save}
	sv.update(nil)
	err = cp.bringUpCluster(ctx, spec, pm, cb, c, sv)
	if ctx.Err() == nil {
		// The create ends with the state holding the cluster: confirmed, and the intent forgotten.
		// The nodes as last read (the order's answer may have named none yet).
		held := c
		held.Nodes = nil
		for _, n := range rec.Nodes {
			held.Nodes = append(held.Nodes, cloudprovider.ClusterNode{Instance: cloudprovider.Instance{ID: n.ID, Name: n.Name}})
		}
		cp.heldCluster(ctx, journal, spec.Name, held)
	}
	return rec, err
}

// ResumeCluster takes a cluster a state holds to ready again, in place: after an interrupted or failed
// apply, or to provision it anew when its playbooks or variables changed. It waits for every node,
// provisions them all concurrently and checks the cluster, as CreateCluster does.
func (cp *ControlPlane) ResumeCluster(ctx context.Context, spec ClusterSpec, rec *ClusterRecord, save func(ClusterRecord)) error {
	pm, cb, err := cp.clusterBackend(rec.Pool)
	if err != nil {
		return err
	}
	c, err := cb.GetCluster(ctx, rec.CloudClusterID)
	if err != nil {
		return err
	}
	if p, perr := ParseClusterOfferID(rec.OfferID); perr == nil && c.Status == cloudprovider.StatusPending && len(c.Nodes) < p.Nodes {
		offer, err := cp.liveClusterOffer(ctx, pm, p, spec)
		if err != nil {
			return err
		}
		if c, err = cp.finishOrder(ctx, cp.clusterJournal(), spec, pm, cb, offer, c); err != nil {
			return err
		}
	}
	// What a record read back from a state may not say: the spec asks it (a fabric cluster when it
	// asks one, else the cluster would have been replaced).
	if rec.Interconnect == "" {
		rec.Interconnect = spec.interconnect()
	}
	if rec.GPUCount == 0 {
		rec.GPUType, rec.GPUCount = spec.GPUType, spec.GPUCount
	}
	rec.observe(c)
	return cp.bringUpCluster(ctx, spec, pm, cb, c, &clusterSaver{rec: rec, save: save})
}

// clusterSaver hands a record to save after every change, as a copy (nodes and env included); the
// node bring-ups change it concurrently through update.
type clusterSaver struct {
	mu   sync.Mutex
	rec  *ClusterRecord
	save func(ClusterRecord)
}

// update applies change (when not nil) to the record and saves it.
func (s *clusterSaver) update(change func(*ClusterRecord)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if change != nil {
		change(s.rec)
	}
	if s.save == nil {
		return
	}
	cp := *s.rec
	cp.Nodes = slices.Clone(s.rec.Nodes)
	cp.NCCLEnv = maps.Clone(s.rec.NCCLEnv)
	s.save(cp)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// liveClusterOffer is the planned cluster offer as its cloud lists it now (with the details its create
// needs), or, when the cloud does not list it now or cannot be asked, the offer the ID describes (the
// cloud refuses what it cannot do). A listed offer that costs more now than planned is a
// *PriceRoseError: hydra never pays more than the plan showed.
func (cp *ControlPlane) liveClusterOffer(ctx context.Context, pm *SinglePoolInstManager, p ParsedClusterOfferID, spec ClusterSpec) (cloudprovider.ClusterOffer, error) {
	id := OfferID(cloudprovider.Offer{Pool: p.Pool, Region: p.Region, InstanceType: fmt.Sprintf("%dx%s", p.Nodes, p.InstanceType), Spot: p.Spot, PricePerHour: p.PricePerHour})
	planned := cloudprovider.ClusterOffer{Offer: cloudprovider.Offer{ID: id, Cloud: pm.Pool.Cloud, Pool: p.Pool, Region: p.Region, InstanceType: p.InstanceType,
		GPUType: spec.GPUType, GPUCount: spec.GPUCount, PricePerHour: p.PricePerHour, Spot: p.Spot, Available: -1}, Nodes: p.Nodes, Interconnect: spec.interconnect()}
	offers, err := cp.cloudClusterOffers(ctx, pm.Pool.Cloud)
	if err != nil {
		return planned, nil //nolint:nilerr // the offers could not be read again: order what was planned
	}
	listed := false
	for _, co := range offers {
		co, fits := fitNodes(co, p.Nodes)
		if !fits || co.Region != p.Region || co.InstanceType != p.InstanceType || co.Spot != p.Spot ||
			(spec.interconnect() == cloudprovider.InterconnectFabric && co.Interconnect != cloudprovider.InterconnectFabric) {
			continue
		}
		if co.PricePerHour > p.PricePerHour {
			return planned, &PriceRoseError{OfferID: id, Planned: p.PricePerHour, Now: co.PricePerHour}
		}
		co.ID, co.Cloud, co.Pool = id, pm.Pool.Cloud, p.Pool
		if !listed || co.Interconnect == cloudprovider.InterconnectFabric {
			// Listed on both interconnects: the fabric one serves either ask.
			planned, listed = co, true
		}
	}
	return planned, nil
}

// orderCluster journals the intent and orders the cluster. A create whose outcome is unknown (an
// ErrOther, or cut short) is looked for by its name first. A capacity error is a *ClusterCapacityError
// and the miss is remembered.
func (cp *ControlPlane) orderCluster(ctx context.Context, journal Journal, spec ClusterSpec, pm *SinglePoolInstManager, cb cloudprovider.ClusterBackend, offer cloudprovider.ClusterOffer) (cloudprovider.Cluster, error) {
	token, err := cp.freeClusterToken(ctx, pm, cb, spec.Name)
	if err != nil {
		return cloudprovider.Cluster{}, err
	}
	return cp.sendOrder(ctx, journal, spec, pm, cb, offer, cloudprovider.CloudName(pm.Pool, spec.Name, token), token)
}

// finishOrder orders again, by its name, a cluster whose order was cut short before the cloud placed
// every node (pending with fewer nodes than offer's): creates are idempotent by name, so the cloud
// places the missing nodes, or, when it no longer can, terminates the cluster (a capacity error).
func (cp *ControlPlane) finishOrder(ctx context.Context, journal Journal, spec ClusterSpec, pm *SinglePoolInstManager, cb cloudprovider.ClusterBackend, offer cloudprovider.ClusterOffer, c cloudprovider.Cluster) (cloudprovider.Cluster, error) {
	if c.AwaitingAllocation || c.Status != cloudprovider.StatusPending || len(c.Nodes) >= offer.Nodes {
		return c, nil
	}
	cp.logger(ctx).Info("the GPU cluster's order was cut short before every node was placed; ordering it again by its name", "name", c.Name, "placed", len(c.Nodes), "nodes", offer.Nodes)
	_, token, _ := cloudprovider.ParseCloudName(pm.Pool, c.Name)
	return cp.sendOrder(ctx, journal, spec, pm, cb, offer, c.Name, token)
}

// sendOrder journals the intent and sends the order of the cluster name (see orderCluster).
func (cp *ControlPlane) sendOrder(ctx context.Context, journal Journal, spec ClusterSpec, pm *SinglePoolInstManager, cb cloudprovider.ClusterBackend, offer cloudprovider.ClusterOffer, name, token string) (cloudprovider.Cluster, error) {
	log := cp.logger(ctx)
	// The volumes are found before anything is ordered (a missing one orders nothing).
	mounts, err := cp.resolveMounts(ctx, spec.Volumes)
	if err != nil {
		return cloudprovider.Cluster{}, err
	}
	if err := journal.Put(Intent{Resource: spec.Name, Token: token, Pool: pm.Pool.Name, CloudName: name, OfferID: offer.ID, StartedAt: time.Now().UTC()}); err != nil {
		return cloudprovider.Cluster{}, fmt.Errorf("journaling the create before sending it (nothing was created): %w", err)
	}
	log.Info("creating GPU cluster", "name", name, "offer", offer.ID, "nodes", offer.Nodes)
	c, err := cb.CreateCluster(ctx, cloudprovider.ClusterRequest{Name: name, Pool: pm.Pool, Offer: offer, MaxPricePerHour: spec.MaxPricePerHour,
		SSHPublicKeys: spec.SSHPublicKeys, Owner: cloudprovider.Ownership{Resource: spec.Name, Token: token}, Volumes: mounts})
	if err == nil {
		return c, nil
	}
	found, ok, uerr := lookAgain(ctx, err, name, func(ctx context.Context) (cloudprovider.Cluster, bool, error) { return findCluster(ctx, cb, name) })
	switch {
	case uerr != nil:
		return cloudprovider.Cluster{}, uerr
	case ok:
		log.Warn("create reported an error but the cluster exists; keeping it", "name", name, "error", err)
		return found, nil
	}
	_ = journal.Remove(spec.Name) // nothing was created
	if !cloudprovider.IsCapacity(err) {
		return cloudprovider.Cluster{}, err
	}
	log.Warn("no capacity for the cluster; nothing was created", "name", name, "offer", offer.ID, "error", err)
	return cloudprovider.Cluster{}, cp.clusterMiss(name, offer, err.Error(), err)
}

// clusterMiss remembers that offer failed for lack of capacity (why) and is the create's error.
func (cp *ControlPlane) clusterMiss(name string, offer cloudprovider.ClusterOffer, why string, err error) *ClusterCapacityError {
	miss := cp.NewCapacityMiss(flatCluster(offer), why)
	cp.RememberCapacity([]CapacityMiss{miss})
	ce := &ClusterCapacityError{Name: name, OfferID: offer.ID, Err: err}
	if m := cp.opts.CapacityMemory; m > 0 {
		ce.Capacity = &CapacityRecord{Misses: []CapacityMiss{miss}, Until: miss.At.Add(m), Memory: m}
	}
	return ce
}

// awaitBid waits, for at most spec.BidTimeout, for an order the cloud accepted but has not allocated
// (an auction bid for N nodes) to be allocated. A bid that does not win in time is cancelled and is a
// *ClusterCapacityError (nothing billed, the miss remembered); one that cannot be cancelled is kept, as
// a machine's is. When ctx ends the intent stays, so the next apply takes the bid over.
func (cp *ControlPlane) awaitBid(ctx context.Context, journal Journal, spec ClusterSpec, cb cloudprovider.ClusterBackend, offer cloudprovider.ClusterOffer, c cloudprovider.Cluster) (cloudprovider.Cluster, error) {
	if !c.AwaitingAllocation || spec.BidTimeout <= 0 {
		return c, nil
	}
	log := cp.logger(ctx)
	log.Info("waiting for the cluster's bid to win", "name", c.Name, "bid_timeout", spec.BidTimeout.String())
	wctx, cancel := context.WithTimeout(ctx, spec.BidTimeout)
	defer cancel()
	err := wait.Until(wctx, "the bid of GPU cluster "+c.Name+" to win", wait.Backoff{First: cp.opts.PollInterval, Max: min(BootPollMax, cp.opts.PollMax), Factor: 1.5, WaitFirst: true},
		func(ctx context.Context) (bool, error) {
			next, err := cb.GetCluster(ctx, c.ID)
			if err != nil {
				return false, wait.Transient(err)
			}
			c = next
			return !c.AwaitingAllocation, nil
		})
	switch {
	case err == nil:
		return c, nil
	case ctx.Err() != nil:
		return c, ctx.Err()
	}
	why := fmt.Sprintf("the bid did not win within bid_timeout %s and was cancelled; nothing is billed", spec.BidTimeout)
	if derr := cb.DeleteCluster(context.WithoutCancel(ctx), c.ID); derr != nil && !cloudprovider.IsNotFound(derr) {
		// A bid that could not be cancelled may still win and bill: keep it, like any cluster.
		log.Warn("could not cancel the cluster bid that did not win in time; keeping it", "name", c.Name, "error", derr)
		return c, nil
	}
	_ = journal.Remove(spec.Name)
	log.Warn("cluster bid not won in time; cancelled it", "name", c.Name, "offer", offer.ID, "bid_timeout", spec.BidTimeout.String())
	return cloudprovider.Cluster{}, cp.clusterMiss(c.Name, offer, "its auction could not be won: "+why,
		cloudprovider.Errorf(cloudprovider.ErrCapacity, offer.Cloud, "creating GPU cluster", "%s", why))
}

// findCluster returns the live cluster named name (ok false when there is none).
func findCluster(ctx context.Context, cb cloudprovider.ClusterBackend, name string) (cloudprovider.Cluster, bool, error) {
	return cloudprovider.FindNamed(ctx, name, cb.ListClusters, func(c cloudprovider.Cluster) bool {
		return c.Name == name && c.Status != cloudprovider.StatusTerminated
	}, nil)
}

// freeClusterToken is the first of the resource name's derived tokens whose cloud-side name no cluster
// and no machine of the pool carries.
func (cp *ControlPlane) freeClusterToken(ctx context.Context, pm *SinglePoolInstManager, cb cloudprovider.ClusterBackend, resource string) (string, error) {
	clusters, err := cb.ListClusters(ctx, pm.Pool.Prefix)
	if err != nil {
		return "", fmt.Errorf("listing the clusters of %s before creating %q there (nothing was created): %w", pm.Pool.Name, resource, err)
	}
	used := map[string]bool{}
	for _, c := range clusters {
		used[c.Name] = c.Status != cloudprovider.StatusTerminated
	}
	return cp.freeToken(ctx, pm, resource, used)
}

// adoptCluster finds the cluster an interrupted create of resource left: the one its journaled intent
// names, or, on a cloud that records confirmation, an unconfirmed one named with one of the resource
// name's derived tokens. It adopts it when it matches offer, and otherwise deletes it (by its cloud id)
// so it does not bill on.
func (cp *ControlPlane) adoptCluster(ctx context.Context, journal Journal, resource string, pm *SinglePoolInstManager, cb cloudprovider.ClusterBackend, offer cloudprovider.ClusterOffer) (cloudprovider.Cluster, bool, error) {
	var left []cloudprovider.Cluster
	if in, ok, err := journal.Get(resource); err != nil {
		return cloudprovider.Cluster{}, false, err
	} else if ok {
		ipm, ipb, perr := cp.clusterBackend(in.Pool)
		if perr != nil {
			cp.logger(ctx).Warn("a cluster create of this resource was cut short in a pool that no longer has clusters; see the orphan warnings", "name", in.CloudName, "pool", in.Pool)
			return cloudprovider.Cluster{}, false, journal.Remove(resource)
		}
		c, found, err := findCluster(ctx, ipb, in.CloudName)
		if err != nil {
			return cloudprovider.Cluster{}, false, fmt.Errorf("looking for %s, left by an interrupted create of this resource: %w", in.CloudName, err)
		}
		if found {
			if ipm != pm {
				return cloudprovider.Cluster{}, false, cp.dropLeftover(ctx, ipb, c)
			}
			left = append(left, c)
		} else if err := journal.Remove(resource); err != nil {
			return cloudprovider.Cluster{}, false, err
		}
	}
	if _, confirmable := pm.Backend.(cloudprovider.OwnershipConfirmer); confirmable {
		list, err := cb.ListClusters(ctx, cloudprovider.CloudName(pm.Pool, resource, "")+cloudprovider.TokenSeparator)
		if err != nil {
			return cloudprovider.Cluster{}, false, fmt.Errorf("looking in %s for a cluster an interrupted create of %q left (nothing was created): %w", pm.Pool.Name, resource, err)
		}
		for _, c := range list {
			name, token, ok := cloudprovider.ParseCloudName(pm.Pool, c.Name)
			if ok && name == resource && c.Status != cloudprovider.StatusTerminated && !clusterConfirmed(c) && cloudprovider.DerivedToken(resource, token) &&
				!slices.ContainsFunc(left, func(l cloudprovider.Cluster) bool { return l.ID == c.ID }) {
				left = append(left, c)
			}
		}
	}
	for _, c := range left {
		if clusterMatches(c, offer) {
			cp.logger(ctx).Warn("adopting the GPU cluster an interrupted create of this resource left, instead of ordering another", "name", c.Name, "id", c.ID)
			return c, true, nil
		}
		if err := cp.dropLeftover(ctx, cb, c); err != nil {
			return cloudprovider.Cluster{}, false, err
		}
	}
	return cloudprovider.Cluster{}, false, nil
}

// dropLeftover deletes a cluster an interrupted create of this resource left that no longer matches
// the plan.
func (cp *ControlPlane) dropLeftover(ctx context.Context, cb cloudprovider.ClusterBackend, c cloudprovider.Cluster) error {
	cp.logger(ctx).Warn("the GPU cluster an interrupted create of this resource left does not match the plan; deleting it", "name", c.Name, "id", c.ID)
	if err := cb.DeleteCluster(ctx, c.ID); err != nil && !cloudprovider.IsNotFound(err) {
		return fmt.Errorf("deleting %s (id %s), left by an interrupted create of this resource and no longer matching the plan: %w", c.Name, c.ID, err)
	}
	return nil
}

// clusterConfirmed reports whether a state was recorded at the cloud as holding the cluster (on the
// cluster or any of its nodes).
func clusterConfirmed(c cloudprovider.Cluster) bool {
	return c.Owner.Confirmed || slices.ContainsFunc(c.Nodes, func(n cloudprovider.ClusterNode) bool { return n.Owner.Confirmed })
}

// clusterMatches reports whether a cluster is what offer orders (what the cloud does not report matches).
func clusterMatches(c cloudprovider.Cluster, offer cloudprovider.ClusterOffer) bool {
	// An order not allocated yet (a bid) has no node; one cut short has fewer: finishOrder places the rest.
	cutShort := c.Status == cloudprovider.StatusPending && len(c.Nodes) < offer.Nodes
	if (c.Region != "" && c.Region != offer.Region) || (len(c.Nodes) != offer.Nodes && !cutShort) {
		return false
	}
	for _, n := range c.Nodes {
		if (n.InstanceType != "" && n.InstanceType != offer.InstanceType) || n.Spot != offer.Spot {
			return false
		}
	}
	return true
}

// heldCluster records that a state holds the cluster: every node's ownership confirmed at the cloud
// (where it can be), and the resource's cluster intent forgotten when it names this cluster.
func (cp *ControlPlane) heldCluster(ctx context.Context, journal Journal, resource string, c cloudprovider.Cluster) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	for _, n := range c.Nodes {
		cp.Confirm(ctx, n.Instance)
	}
	if in, ok, err := journal.Get(resource); err == nil && ok && in.CloudName == c.Name {
		if err := journal.Remove(resource); err != nil {
			cp.logger(ctx).Warn("could not remove the journal entry of a finished cluster create", "resource", resource, "error", err)
		}
	}
}

// observe copies what the cloud reports of the cluster into the record: its nodes (in node order, each
// through Record.Observe so a running node keeps the status provisioning gave it), price and env, the
// hostfile, and the cluster's status while it is not up (pending, error, terminated).
func (r *ClusterRecord) observe(c cloudprovider.Cluster) {
	nodes := slices.Clone(c.Nodes)
	slices.SortStableFunc(nodes, func(a, b cloudprovider.ClusterNode) int { return nodeIndex(a.Name) - nodeIndex(b.Name) })
	prior := map[string]ClusterNodeRecord{}
	for _, n := range r.Nodes {
		prior[n.Name] = n
	}
	r.Nodes = r.Nodes[:0:0]
	for _, n := range nodes {
		nr := prior[n.Name].record()
		nr.Name, nr.ID = n.Name, n.ID
		if nr.HostKey == "" {
			nr.HostKey = n.HostKey
		}
		pinned := jumpHostKey(nr.SSH)
		nr.Observe(n.Instance)
		nr.SSH = withJumpHostKey(nr.SSH, pinned) // the cloud's endpoint carries no key hydra pinned
		r.Nodes = append(r.Nodes, nodeRecord(nr, n.PrivateIP))
	}
	if c.PricePerHour > 0 {
		r.PricePerHour = c.PricePerHour
	}
	if c.Env != nil {
		r.NCCLEnv = maps.Clone(c.Env)
	}
	if r.GPUCount == 0 && len(c.Nodes) > 0 {
		r.GPUType, r.GPUCount = c.Nodes[0].GPUType, c.Nodes[0].GPUCount
	}
	if r.Interconnect == "" {
		r.Interconnect = c.Interconnect // a record that does not say it (an import): the cloud's
	}
	r.Hostfile = Hostfile(r.Nodes, r.GPUCount)
	switch c.Status {
	case cloudprovider.StatusPending, cloudprovider.StatusTerminated:
		r.Status = string(c.Status)
	case cloudprovider.StatusError:
		if r.Status != string(cloudprovider.StatusError) {
			r.ProvisioningError = ""
		}
		r.Status = string(c.Status)
	case cloudprovider.StatusRunning:
		if r.Status == string(cloudprovider.StatusPending) || r.Status == "" {
			r.Status = string(cloudprovider.StatusRunning)
		}
	}
	r.Interruption = clusterInterruption(r.Nodes, r.Status, r.Interruption)
}

// Hostfile is a cluster's hostfile for mpirun and torchrun: one line per node, `<private_ip>
// slots=<gpu_count>`, in node order (the first line's address is torchrun's master).
func Hostfile(nodes []ClusterNodeRecord, gpuCount int) string {
	var b strings.Builder
	for _, n := range nodes {
		if n.PrivateIP != "" {
			fmt.Fprintf(&b, "%s slots=%d\n", n.PrivateIP, gpuCount)
		}
	}
	return b.String()
}

// nodeIndex is i of a node's name "<cluster name>-<i>" (0 when it has none).
func nodeIndex(name string) int {
	i, _ := strconv.Atoi(name[strings.LastIndexByte(name, '-')+1:])
	return i
}

// jumpHostKey is the host key of ep's jump host ("" without a jump host or key).
func jumpHostKey(ep *cloudprovider.SSHEndpoint) string {
	if ep == nil || ep.Jump == nil {
		return ""
	}
	return ep.Jump.HostKey
}

// withJumpHostKey is ep with its jump host's key set to key, as a copy (ep is not changed); ep itself
// when it has no jump host or key is "".
func withJumpHostKey(ep *cloudprovider.SSHEndpoint, key string) *cloudprovider.SSHEndpoint {
	if ep == nil || ep.Jump == nil || key == "" || ep.Jump.HostKey == key {
		return ep
	}
	out, jump := *ep, *ep.Jump
	jump.HostKey = key
	out.Jump = &jump
	return &out
}

// pinnedJump is inst with its endpoint's jump host key taken from the node's record r (the cloud
// reports none), for every connection to the node after the first.
func pinnedJump(inst cloudprovider.Instance, r Record) cloudprovider.Instance {
	inst.SSH = withJumpHostKey(inst.SSH, jumpHostKey(r.SSH))
	return inst
}

// record is a node as a machine's Record, so that the machines' lifecycle (Observe, BringUp, health,
// markers, drain) serves it.
func (n ClusterNodeRecord) record() Record {
	r := Record{Name: n.Name, ID: n.ID, Status: cloudprovider.Status(n.Status), HostKey: n.HostKey, Health: Health{Status: n.Health},
		Interruption: n.Interruption}
	if n.SSHHost != "" {
		r.SSH = &cloudprovider.SSHEndpoint{Host: n.SSHHost, Port: n.SSHPort, User: n.SSHUser}
		if n.SSHJump != nil {
			jump := *n.SSHJump
			r.SSH.Jump = &jump
		}
	}
	return r
}

// nodeRecord is a machine Record as a cluster node.
func nodeRecord(r Record, privateIP string) ClusterNodeRecord {
	n := ClusterNodeRecord{ID: r.ID, Name: r.Name, PrivateIP: privateIP, HostKey: r.HostKey, Status: string(r.Status), Health: r.Health.Status,
		Interruption: r.Interruption}
	if r.SSH != nil {
		n.SSHHost, n.SSHPort, n.SSHUser = r.SSH.Host, r.SSH.Port, r.SSH.User
		if r.SSH.Jump != nil {
			jump := *r.SSH.Jump
			n.SSHJump = &jump
		}
	}
	return n
}

// bringUpCluster waits until every node of c runs, provisions every node concurrently (BringUp each,
// so a batching provisioner runs them as one batch) and runs the cluster check.
func (cp *ControlPlane) bringUpCluster(ctx context.Context, spec ClusterSpec, pm *SinglePoolInstManager, cb cloudprovider.ClusterBackend, c cloudprovider.Cluster, sv *clusterSaver) error {
	rec := sv.rec
	put := func() { sv.update(nil) }
	if p, ok := cp.opts.Provisioner.(cloudprovider.Preparer); ok {
		p.Prepare()
	}
	c, err := cp.waitCluster(ctx, cb, c, sv)
	if err != nil {
		if ctx.Err() == nil {
			rec.Status = string(cloudprovider.StatusError)
			put()
		}
		return &BootError{Err: err}
	}
	rec.Status = string(cloudprovider.StatusProvisioning)
	put()
	// From here until g.Wait the nodes' bring-ups change rec, each through sv.update.
	var g errgroup.Group // no shared cancellation: every node's attempt ends on its own and is recorded
	var failed []string
	type job struct {
		i  int
		n  cloudprovider.ClusterNode
		nr Record
		ip string
	}
	var jobs []job
	for _, n := range c.Nodes {
		if i := slices.IndexFunc(rec.Nodes, func(r ClusterNodeRecord) bool { return r.Name == n.Name }); i >= 0 {
			jobs = append(jobs, job{i, n, rec.Nodes[i].record(), rec.Nodes[i].PrivateIP})
		}
	}
	for _, j := range jobs {
		i, n, nr, ip := j.i, j.n, j.nr, j.ip
		g.Go(func() error {
			nr.Status = cloudprovider.StatusRunning
			err := cp.BringUp(ctx, &nr, pinnedJump(n.Instance, nr), BringUpSpec{Pool: pm.Pool, GPUType: spec.GPUType, GPUCount: spec.GPUCount, Vars: spec.ProvisioningVars, Volumes: spec.Volumes}, func(r Record) {
				sv.update(func(rec *ClusterRecord) { rec.Nodes[i] = nodeRecord(r, ip) })
			})
			sv.update(func(rec *ClusterRecord) {
				rec.Nodes[i] = nodeRecord(nr, ip)
				if err == nil {
					rec.ProvisioningDigest = nr.ProvisioningDigest
				} else if nr.ProvisioningError != "" {
					failed = append(failed, nr.ProvisioningError)
				}
			})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			put() // still provisioning: ResumeCluster continues it
			return err
		}
		slices.Sort(failed)
		rec.Status = string(cloudprovider.StatusError)
		rec.ProvisioningError = truncate(cmpOr(strings.Join(failed, "; "), err.Error()))
		rec.ProvisioningDigest = ""
		put()
		return fmt.Errorf("provisioning the nodes of %s: %w", rec.ID, err)
	}
	if err := cp.checkCluster(ctx, spec, pm, rec); err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			put()
			return err
		}
		rec.Status = string(cloudprovider.StatusError)
		rec.ProvisioningError = truncate(err.Error())
		put()
		return err
	}
	rec.Status = string(cloudprovider.StatusReady)
	rec.ProvisioningError = ""
	put()
	cp.logger(ctx).Info("GPU cluster ready", "name", rec.ID, "nodes", len(rec.Nodes))
	return nil
}

// waitCluster polls the cluster until the cloud says every node runs; each change is observed into rec
// and saved. A cluster that fails, is terminated or disappears ends the wait with an error.
func (cp *ControlPlane) waitCluster(ctx context.Context, cb cloudprovider.ClusterBackend, c cloudprovider.Cluster, sv *clusterSaver) (cloudprovider.Cluster, error) {
	settled := func(c cloudprovider.Cluster) (bool, error) {
		switch c.Status {
		case cloudprovider.StatusRunning:
			return true, nil
		case cloudprovider.StatusError:
			return false, fmt.Errorf("GPU cluster %s failed at the cloud: %s", c.Name, cmpOr(c.Message, "the cloud reports status "+c.CloudStatus))
		case cloudprovider.StatusTerminated:
			return false, fmt.Errorf("GPU cluster %s was terminated at the cloud (%s) before it became ready", c.Name, c.CloudStatus)
		}
		return false, nil
	}
	if done, err := settled(c); done || err != nil {
		return c, err
	}
	cp.logger(ctx).Info("waiting for every node of the GPU cluster to run", "name", c.Name, "status", c.CloudStatus)
	started := time.Now()
	err := wait.Until(ctx, "GPU cluster "+c.Name+" to run", wait.Backoff{First: cp.opts.PollInterval, Max: min(BootPollMax, cp.opts.PollMax), Factor: 1.5, WaitFirst: true},
		func(ctx context.Context) (bool, error) {
			next, err := cb.GetCluster(ctx, c.ID)
			if cloudprovider.IsNotFound(err) {
				return false, fmt.Errorf("GPU cluster %s disappeared at the cloud while starting: %w", c.Name, err)
			}
			if err != nil {
				return false, wait.Transient(err)
			}
			changed := clusterStatuses(next) != clusterStatuses(c)
			c = next
			if changed {
				sv.update(func(rec *ClusterRecord) { rec.observe(c) })
			}
			return settled(c)
		})
	if err == nil {
		cp.logger(ctx).Info("every node of the GPU cluster runs", "name", c.Name, "took", time.Since(started).Round(time.Second).String())
	}
	return c, err
}

// clusterStatuses is the cluster's and its nodes' statuses and addresses, to see a change.
func clusterStatuses(c cloudprovider.Cluster) string {
	var b strings.Builder
	b.WriteString(string(c.Status))
	for _, n := range c.Nodes {
		b.WriteString(" " + n.Name + "=" + string(n.Status) + "@" + n.PrivateIP)
		if n.SSH != nil {
			b.WriteString("/" + n.SSH.Host)
		}
	}
	return b.String()
}

// checkCluster runs the cluster check when the provisioner is a ClusterChecker: every node reaches
// every other over the private network, the fabric is up where the offer promised one, and the NCCL
// bus bandwidth reaches spec's floor when set. nccl_check without a checker is an error.
func (cp *ControlPlane) checkCluster(ctx context.Context, spec ClusterSpec, pm *SinglePoolInstManager, rec *ClusterRecord) error {
	checker, ok := cp.opts.Provisioner.(cloudprovider.ClusterChecker)
	if !ok {
		if spec.MinBusBandwidthGBps > 0 {
			return fmt.Errorf("nccl_check asks for an NCCL all-reduce across the nodes, but %s", map[bool]string{true: "this provisioner cannot run one",
				false: "provisioning is off"}[cp.Provisioning()])
		}
		return nil
	}
	req := cloudprovider.ClusterCheckRequest{Fabric: rec.Interconnect == cloudprovider.InterconnectFabric, MinBusBandwidthGBps: spec.MinBusBandwidthGBps,
		Env: maps.Clone(rec.NCCLEnv), Log: func(msg string, fields map[string]any) {
			args := make([]any, 0, 2*len(fields))
			for _, k := range slices.Sorted(maps.Keys(fields)) {
				args = append(args, k, fields[k])
			}
			cp.logger(ctx).Info(msg, args...)
		}}
	for _, n := range rec.Nodes {
		r := n.record()
		req.Nodes = append(req.Nodes, cloudprovider.ClusterCheckNode{PrivateIP: n.PrivateIP, ProvisionRequest: cloudprovider.ProvisionRequest{
			Instance: cloudprovider.Instance{ID: n.ID, Name: n.Name, Cloud: rec.Cloud, Region: rec.Region, GPUType: rec.GPUType, GPUCount: rec.GPUCount,
				SSH: r.SSH, HostKey: n.HostKey, Cluster: rec.CloudClusterID, Status: cloudprovider.StatusRunning},
			Pool: pm.Pool, GPUType: rec.GPUType, GPUCount: rec.GPUCount, HostKey: n.HostKey, Vars: spec.ProvisioningVars, Attempt: 1}})
	}
	cp.logger(ctx).Info("checking the GPU cluster", "name", rec.ID, "fabric", req.Fabric, "min_bus_bandwidth_gbps", req.MinBusBandwidthGBps)
	res, err := checker.CheckCluster(ctx, req)
	if err != nil {
		switch {
		case res.FailedNode != "" && !strings.Contains(err.Error(), res.Message):
			return fmt.Errorf("cluster check of %s failed on node %s: %s: %w", rec.ID, res.FailedNode, res.Message, err)
		case res.FailedNode != "":
			// The error says the message already (the provisioner's ClusterCheckError is its message).
			return fmt.Errorf("cluster check of %s failed on node %s: %w", rec.ID, res.FailedNode, err)
		}
		return fmt.Errorf("cluster check of %s failed: %w", rec.ID, err)
	}
	rec.BusBandwidthGBps = res.BusBandwidthGBps
	return nil
}

// RefreshCluster reads a cluster a state holds: found is false when the cloud no longer has it (not
// found, or terminated). Otherwise it records at the cloud that a state holds it, updates rec (nodes,
// statuses, price, env, hostfile) and reads the health of every ready node.
func (cp *ControlPlane) RefreshCluster(ctx context.Context, rec *ClusterRecord) (bool, error) {
	_, cb, err := cp.clusterBackend(rec.Pool)
	if err != nil {
		return false, err
	}
	c, err := cb.GetCluster(ctx, rec.CloudClusterID)
	return refreshed(err, c.Status, takenBack(c), func() { rec.observe(c) }, func() {
		cp.heldCluster(ctx, cp.clusterJournal(), rec.Name, c)
		cp.nodesHealth(ctx, rec, c)
	})
}

// nodesHealth reads every ready node's health concurrently (checkHealth, as for a machine).
func (cp *ControlPlane) nodesHealth(ctx context.Context, rec *ClusterRecord, c cloudprovider.Cluster) {
	var wg sync.WaitGroup
	for i := range rec.Nodes {
		j := slices.IndexFunc(c.Nodes, func(n cloudprovider.ClusterNode) bool { return n.Name == rec.Nodes[i].Name })
		if j < 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rec.Nodes[i].record()
			cp.checkHealth(ctx, &r, pinnedJump(c.Nodes[j].Instance, r))
			rec.Nodes[i].Health = r.Health.Status
		}()
	}
	wg.Wait()
}

// ImportCluster reads the cluster "<cloud>/<cluster id>" for an import: the pool from its name's
// prefix, the resource's name from its name, every node's provisioning marker (Import's rule: ready
// with the marker's digest, running without one), and the health of ready nodes. The cluster is ready
// when every node is (the cluster check runs again at the next re-provisioning); nodes provisioned
// with different digests leave the digest empty, so the next apply provisions them.
func (cp *ControlPlane) ImportCluster(ctx context.Context, id string) (ClusterRecord, error) {
	cloud, cid, ok := strings.Cut(id, "/")
	if !ok || cloud == "" || cid == "" {
		return ClusterRecord{}, &RequestError{Field: "id", Msg: fmt.Sprintf("import ID %q is not <cloud>/<cluster id>, such as sandbox/%s", id, "c-1")}
	}
	b, ok := cp.backends[cloud]
	if !ok {
		return ClusterRecord{}, &UnconfiguredError{Cloud: cloud, Configured: cp.Clouds()}
	}
	cb, ok := b.(cloudprovider.ClusterBackend)
	if !ok {
		return ClusterRecord{}, &RequestError{Field: "id", Msg: fmt.Sprintf("%s has no cluster API: it has no GPU cluster to import", cloud)}
	}
	c, err := cb.GetCluster(ctx, cid)
	if err == nil && c.Status == cloudprovider.StatusTerminated {
		err = cloudprovider.Errorf(cloudprovider.ErrNotFound, cloud, "importing GPU cluster", "cluster %s is terminated", cid)
	}
	if err != nil {
		return ClusterRecord{}, err
	}
	pm, err := cp.manager.Route(c.Name)
	if err != nil {
		return ClusterRecord{}, err
	}
	resource, _, _ := cloudprovider.ParseCloudName(pm.Pool, c.Name)
	rec := ClusterRecord{ID: c.Name, Name: resource, CloudClusterID: c.ID, Cloud: cloud, Pool: pm.Pool.Name, Region: c.Region, Status: string(cloudprovider.StatusPending)}
	rec.observe(c)
	if len(c.Nodes) > 0 {
		n0 := c.Nodes[0]
		rec.OfferID = ClusterOfferID(cloudprovider.ClusterOffer{Offer: cloudprovider.Offer{Pool: pm.Pool.Name, Region: c.Region, InstanceType: n0.InstanceType,
			Spot: n0.Spot, PricePerHour: c.PricePerHour}, Nodes: len(c.Nodes)})
	}
	if c.Status == cloudprovider.StatusRunning && len(c.Nodes) > 0 {
		digests := map[string]bool{}
		ready := true
		insts := map[string]cloudprovider.Instance{}
		for _, n := range c.Nodes {
			insts[n.Name] = n.Instance
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range rec.Nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rec.Nodes[i].record()
				inst := pinnedJump(insts[rec.Nodes[i].Name], r)
				r.Status = cloudprovider.StatusRunning
				if err := cp.readMarker(ctx, &r, inst); err != nil {
					cp.logger(ctx).Warn("could not read the node's provisioning marker; the next apply provisions it", "name", r.Name, "error", err)
				}
				cp.checkHealth(ctx, &r, inst)
				mu.Lock()
				defer mu.Unlock()
				rec.Nodes[i] = nodeRecord(r, rec.Nodes[i].PrivateIP)
				digests[r.ProvisioningDigest] = true
				ready = ready && r.Status == cloudprovider.StatusReady
			}()
		}
		wg.Wait()
		if ready {
			rec.Status = string(cloudprovider.StatusReady)
		}
		if len(digests) == 1 {
			rec.ProvisioningDigest = slices.Collect(maps.Keys(digests))[0]
		}
	}
	nodeIDs := make([]string, 0, len(rec.Nodes))
	for _, n := range rec.Nodes {
		nodeIDs = append(nodeIDs, n.ID)
	}
	rec.Volumes = cp.machineVolumes(ctx, cloud, nodeIDs...)
	cp.heldCluster(ctx, cp.clusterJournal(), resource, c)
	return rec, nil
}

// DeleteCluster deletes a cluster: its execlet nodes are drained first, concurrently, for at most
// drainTimeout each (0: DefaultDrainTimeout; the delete goes ahead whatever happened), then the cloud
// deletes the cluster and the call waits until it is gone. A record without a cloud cluster (a create
// that failed for lack of capacity) deletes nothing; a cluster already gone is success.
func (cp *ControlPlane) DeleteCluster(ctx context.Context, rec ClusterRecord, drainTimeout time.Duration) error {
	if rec.CloudClusterID == "" {
		return nil
	}
	_, cb, err := cp.clusterBackend(rec.Pool)
	if err != nil {
		return err
	}
	defer cp.forgetListings()
	if drainTimeout <= 0 {
		drainTimeout = DefaultDrainTimeout
	}
	if rec.GPUCount == 0 {
		// A record that does not say the nodes' GPUs (the drain needs them): the cloud does.
		if c, err := cb.GetCluster(ctx, rec.CloudClusterID); err == nil && len(c.Nodes) > 0 {
			rec.GPUType, rec.GPUCount = c.Nodes[0].GPUType, c.Nodes[0].GPUCount
		}
	}
	var wg sync.WaitGroup
	for _, n := range rec.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cp.Drain(ctx, n.record(), rec.GPUType, rec.GPUCount, drainTimeout)
		}()
	}
	wg.Wait()
	log := cp.logger(ctx)
	if err := cb.DeleteCluster(ctx, rec.CloudClusterID); err != nil && !cloudprovider.IsNotFound(err) {
		return err
	}
	log.Info("deleting GPU cluster", "name", rec.ID, "id", rec.CloudClusterID)
	started := time.Now()
	err = wait.Until(ctx, "GPU cluster "+rec.ID+" to terminate", wait.Backoff{First: cp.opts.PollInterval, Max: cp.opts.PollMax, Factor: 1.5, WaitFirst: true},
		func(ctx context.Context) (bool, error) {
			c, err := cb.GetCluster(ctx, rec.CloudClusterID)
			if cloudprovider.IsNotFound(err) || (err == nil && c.Status == cloudprovider.StatusTerminated) {
				return true, nil
			}
			return false, wait.Transient(err)
		})
	if err != nil {
		return fmt.Errorf("waiting for GPU cluster %s to terminate: %w", rec.ID, err)
	}
	log.Info("GPU cluster deleted", "name", rec.ID, "took", time.Since(started).Round(time.Second).String())
	return nil
}
