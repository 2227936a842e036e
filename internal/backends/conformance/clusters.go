package conformance

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// clusterNodes is the size of the cluster every cloud is asked for.
const clusterNodes = 4

// RunClusters runs the cluster contract (cloudprovider.ClusterBackend) against h's emulator: offers
// change nothing; a 4-node cluster runs whole, every node named <name>-<i> with a private address (and,
// when reached through a jump host, at that address through it), its cluster's id and the ownership
// record; a second create of the name and concurrent creates return the
// one cluster; a cluster the cloud cannot fill and one above the price cap are ErrCapacity and leave
// nothing (no cluster listed, no live node at the emulator); an unknown id is ErrNotFound; delete
// empties the cloud and succeeds again; on a cloud with shared volumes, a cluster created with one has
// it on every node and leaves it when deleted. Each case starts its own emulator and runs in parallel.
func RunClusters(t *testing.T, h Harness) {
	t.Helper()
	runCases(t, h, "cloudprovider.ClusterBackend", []suiteCase[cloudprovider.ClusterBackend]{
		{"OffersHaveNoSideEffects", testClusterOffers},
		{"Lifecycle", testClusterLifecycle},
		{"CreateStormMakesOneCluster", testClusterStorm},
		{"ClusterTheCloudCannotFill", testClusterCannotFill},
		{"PriceAboveCapIsCapacity", testClusterPriceCap},
		{"UnknownIsNotFound", testClusterUnknown},
		{"SharedVolumeOnEveryNode", testClusterVolumes}, // volumes_clusters.go
	})
}

// sized asks offer for n nodes: a cloud that rents any count up to Nodes (PricePerNode above 0) is
// asked for n at n times the node's price; a fixed cluster type is left as it is.
func sized(offer cloudprovider.ClusterOffer, n int) cloudprovider.ClusterOffer {
	if offer.PricePerNode > 0 {
		offer.Nodes = n
		offer.PricePerHour = offer.PricePerNode.Times(float64(n))
	}
	return offer
}

// clusterOffer picks the cheapest eligible offer with stock and a mapped GPU that rents a 4-node
// cluster (a fixed type of 4 nodes, or one renting up to 4 or more), a fabric one before an "any" one,
// asked for 4 nodes.
func clusterOffer(t *testing.T, b cloudprovider.ClusterBackend) cloudprovider.ClusterOffer {
	t.Helper()
	offers, err := b.ClusterOffers(ctxFor(t))
	if err != nil {
		t.Fatalf("ClusterOffers: %v", err)
	}
	var ok []cloudprovider.ClusterOffer
	for _, o := range offers {
		fits := o.Nodes == clusterNodes || (o.PricePerNode > 0 && o.Nodes >= clusterNodes)
		if fits && o.Ineligible == "" && o.Available != 0 && o.GPUType != "" {
			ok = append(ok, sized(o, clusterNodes))
		}
	}
	if len(ok) == 0 {
		t.Fatalf("no eligible offer of a %d-node cluster with stock among %d offers", clusterNodes, len(offers))
	}
	sort.SliceStable(ok, func(i, j int) bool {
		if fi, fj := ok[i].Interconnect == cloudprovider.InterconnectFabric, ok[j].Interconnect == cloudprovider.InterconnectFabric; fi != fj {
			return fi
		}
		return ok[i].PricePerHour < ok[j].PricePerHour
	})
	return ok[0]
}

// clusterRequest builds a create request for resource name in the cloud's pool with a fresh token.
func clusterRequest(t *testing.T, h Harness, offer cloudprovider.ClusterOffer, name string) cloudprovider.ClusterRequest {
	pool := backendtest.Pool(t, h.Cloud)
	offer.Pool = pool.Name
	owner := cloudprovider.Ownership{Resource: name, Token: cloudprovider.NewOwnerToken()}
	return cloudprovider.ClusterRequest{Name: cloudprovider.CloudName(pool, name, owner.Token), Pool: pool, Offer: offer, Owner: owner,
		SSHPublicKeys: []string{testKey}}
}

// liveNodes lists the emulator's live machines whose name starts with name.
func liveNodes(t *testing.T, admin simulation.Admin, name string) []string {
	t.Helper()
	var out []string
	for _, m := range stats(t, admin).Live {
		if strings.HasPrefix(m.Name, name) {
			out = append(out, m.Name)
		}
	}
	return out
}

// waitForCluster polls GetCluster until done says so, for at most 30 s.
func waitForCluster(t *testing.T, b cloudprovider.ClusterBackend, id, what string, done func(cloudprovider.Cluster, error) bool) cloudprovider.Cluster {
	t.Helper()
	return waitUntil(t, "cluster", id, what, b.GetCluster, done, func(c cloudprovider.Cluster) string {
		return fmt.Sprintf("status %q (%s)", c.Status, c.CloudStatus)
	})
}

// clusterRunning is the state the suite waits for a cluster to reach.
func clusterRunning(c cloudprovider.Cluster, err error) bool {
	return err == nil && c.Status == cloudprovider.StatusRunning
}

func testClusterOffers(t *testing.T, h Harness, b cloudprovider.ClusterBackend, admin simulation.Admin) {
	offers, err := b.ClusterOffers(ctxFor(t))
	if err != nil {
		t.Fatalf("ClusterOffers: %v", err)
	}
	if len(offers) == 0 {
		t.Fatal("ClusterOffers returned nothing")
	}
	for _, o := range offers {
		// An offer with no node free now may say 0 nodes (listed so the control plane can say why).
		noNodes := o.Nodes < 0 || (o.Nodes == 0 && o.Available != 0 && o.Ineligible == "")
		if o.Cloud != h.Cloud || o.InstanceType == "" || o.Region == "" || noNodes || o.PricePerHour < 0 || o.PricePerNode < 0 ||
			(o.Interconnect != cloudprovider.InterconnectFabric && o.Interconnect != cloudprovider.InterconnectAny) {
			t.Errorf("malformed cluster offer %+v (every offer names its cloud, region, instance type, nodes, price and interconnect)", o)
		}
		if o.GPUType != "" && o.GPUCount < 1 {
			t.Errorf("mapped cluster offer %+v has no GPU count per node", o)
		}
		if o.Pool != "" || o.ID != "" {
			t.Errorf("cluster offer %+v: backends leave Pool and ID to the control plane", o)
		}
	}
	wantNothingMade(t, admin, "listing cluster offers")
}

func testClusterLifecycle(t *testing.T, h Harness, b cloudprovider.ClusterBackend, admin simulation.Admin) {
	pool := backendtest.Pool(t, h.Cloud)
	offer := clusterOffer(t, b)
	req := clusterRequest(t, h, offer, "train")
	c, err := b.CreateCluster(ctxFor(t), req)
	if err != nil {
		t.Fatalf("CreateCluster: %v", err)
	}
	if c.ID == "" || c.Name != req.Name || c.Cloud != h.Cloud {
		t.Fatalf("CreateCluster returned %+v; want an id, the name %q verbatim and cloud %q", c, req.Name, h.Cloud)
	}
	before := stats(t, admin)
	list, err := b.ListClusters(ctxFor(t), pool.Prefix)
	if err != nil {
		t.Fatalf("ListClusters: %v", err)
	}
	if n := countClusters(list, req.Name); n != 1 {
		t.Errorf("ListClusters(%q) holds %d clusters named %q, want 1", pool.Prefix, n, req.Name)
	}
	if other, err := b.ListClusters(ctxFor(t), pool.Prefix+"no-such-"); err != nil || len(other) != 0 {
		t.Errorf("ListClusters with a prefix nothing has: %d clusters, %v", len(other), err)
	}
	again, err := b.CreateCluster(ctxFor(t), req)
	if err != nil || again.ID != c.ID {
		t.Errorf("a second create of the name: %v, id %q; want the first cluster %q", err, again.ID, c.ID)
	}
	if after := stats(t, admin); after.Created != before.Created || len(after.Live) != len(before.Live) {
		t.Errorf("ListClusters and a second create changed the cloud: before %+v, after %+v", before, after)
	}

	running := waitForCluster(t, b, c.ID, "running", clusterRunning)
	if len(running.Nodes) != offer.Nodes {
		t.Fatalf("a running %d-node cluster has %d nodes", offer.Nodes, len(running.Nodes))
	}
	if running.PricePerHour <= 0 {
		t.Errorf("running cluster has price %v", running.PricePerHour)
	}
	if running.Interconnect != offer.Interconnect {
		t.Errorf("a cluster of a %q offer says interconnect %q", offer.Interconnect, running.Interconnect)
	}
	private := map[string]bool{}
	for i, n := range running.Nodes {
		if want := fmt.Sprintf("%s-%d", req.Name, i+1); n.Name != want {
			t.Errorf("node %d is named %q, want %q", i+1, n.Name, want)
		}
		if n.Status != cloudprovider.StatusRunning || n.SSH == nil || n.SSH.Host == "" {
			t.Errorf("node %s of a running cluster: status %s, SSH %+v", n.Name, n.Status, n.SSH)
		}
		if n.PrivateIP == "" || private[n.PrivateIP] {
			t.Errorf("node %s has private address %q (empty or shared)", n.Name, n.PrivateIP)
		}
		// A node behind a jump host (a login node) is reached at its private address through it.
		if j := n.SSH; j != nil && j.Jump != nil && (j.Host != n.PrivateIP || j.Jump.Host == "" || j.Jump.Host == j.Host || j.Jump.Jump != nil) {
			t.Errorf("node %s is reached at %s through %+v; want its private address %s through a jump host of its own address, not chained",
				n.Name, j.Host, *j.Jump, n.PrivateIP)
		}
		private[n.PrivateIP] = true
		if n.Cluster != c.ID {
			t.Errorf("node %s names cluster %q, want %q", n.Name, n.Cluster, c.ID)
		}
		if n.Owner.Token != req.Owner.Token || n.Owner.Resource != req.Owner.Resource {
			t.Errorf("node %s carries ownership %+v, want %+v", n.Name, n.Owner, req.Owner)
		}
	}
	if got := liveNodes(t, admin, req.Name); len(got) != offer.Nodes {
		t.Errorf("the emulator has %d live nodes of the cluster (%v), want %d", len(got), got, offer.Nodes)
	}

	if err := b.DeleteCluster(ctxFor(t), c.ID); err != nil {
		t.Fatalf("DeleteCluster: %v", err)
	}
	waitForCluster(t, b, c.ID, "terminated", func(c cloudprovider.Cluster, err error) bool {
		return cloudprovider.IsNotFound(err) || (err == nil && c.Status == cloudprovider.StatusTerminated)
	})
	if list, err := b.ListClusters(ctxFor(t), req.Name); err != nil || countClusters(list, req.Name) != 0 {
		t.Errorf("ListClusters after the delete: %d clusters named %q, %v", countClusters(list, req.Name), req.Name, err)
	}
	if got := liveNodes(t, admin, req.Name); len(got) != 0 {
		t.Errorf("after the delete the emulator still has live nodes %v", got)
	}
	if err := b.DeleteCluster(ctxFor(t), c.ID); err != nil {
		t.Errorf("DeleteCluster of a gone cluster: %v, want success", err)
	}
}

func countClusters(list []cloudprovider.Cluster, name string) int {
	n := 0
	for _, c := range list {
		if c.Name == name && c.Status != cloudprovider.StatusTerminated {
			n++
		}
	}
	return n
}

func testClusterStorm(t *testing.T, h Harness, b cloudprovider.ClusterBackend, admin simulation.Admin) {
	offer := clusterOffer(t, b)
	req := clusterRequest(t, h, offer, "storm")
	const n = 4
	ids, errs := storm(n, func() (string, error) {
		c, err := b.CreateCluster(ctxFor(t), req)
		return c.ID, err
	})
	first := ""
	for i, err := range errs {
		if err != nil {
			t.Errorf("create %d of a storm: %v (kind %v); a create of an existing name returns that cluster", i, err, cloudprovider.KindOf(err))
			continue
		}
		if first == "" {
			first = ids[i]
		} else if ids[i] != first {
			t.Errorf("create %d returned cluster %s, another %s", i, ids[i], first)
		}
	}
	if st := stats(t, admin); st.Created != offer.Nodes {
		t.Errorf("%d concurrent creates of one %d-node cluster made %d machines", n, offer.Nodes, st.Created)
	}
}

// testClusterCannotFill asks for clusters the cloud cannot fill: one node more than an offer renting
// any count has free, or a fixed type it lists without stock, where it lists one; and the 4-node
// offer once capacity went (the SoldOut fault). Each is ErrCapacity and leaves nothing: no cluster listed, no live node.
func testClusterCannotFill(t *testing.T, h Harness, b cloudprovider.ClusterBackend, admin simulation.Admin) {
	offers, err := b.ClusterOffers(ctxFor(t))
	if err != nil {
		t.Fatalf("ClusterOffers: %v", err)
	}
	type attempt struct {
		what  string
		offer cloudprovider.ClusterOffer
	}
	var tries []attempt
	for _, o := range offers {
		switch {
		case o.GPUType == "":
		case o.PricePerNode > 0 && o.Nodes >= 1 && o.Available != 0 && o.Ineligible == "":
			tries = append(tries, attempt{fmt.Sprintf("%d nodes of %s where at most %d are free", o.Nodes+1, o.InstanceType, o.Nodes), sized(o, o.Nodes+1)})
		case o.PricePerNode == 0 && o.Nodes >= 2 && o.Available == 0:
			tries = append(tries, attempt{fmt.Sprintf("a %d-node %s cluster listed without stock", o.Nodes, o.InstanceType), o})
		default:
			continue
		}
		break
	}
	tries = append(tries, attempt{"a sold-out cloud", clusterOffer(t, b)})
	for i, try := range tries {
		if i == len(tries)-1 {
			setFaults(t, admin, simulation.Faults{SoldOut: true})
		}
		req := clusterRequest(t, h, try.offer, fmt.Sprintf("full%d", i))
		_, err := b.CreateCluster(ctxFor(t), req)
		if !cloudprovider.IsCapacity(err) {
			t.Errorf("%s: %v (kind %v), want a capacity error", try.what, err, cloudprovider.KindOf(err))
		}
		if list, err := b.ListClusters(ctxFor(t), req.Name); err != nil || len(list) != 0 {
			t.Errorf("%s left %d clusters listed (%v)", try.what, len(list), err)
		}
		if got := liveNodes(t, admin, req.Name); len(got) != 0 {
			t.Errorf("%s left live nodes %v: a cluster is all or nothing", try.what, got)
		}
	}
	if st := stats(t, admin); len(st.Live) != 0 {
		t.Errorf("clusters the cloud could not fill left %+v live", st.Live)
	}
}

func testClusterPriceCap(t *testing.T, h Harness, b cloudprovider.ClusterBackend, admin simulation.Admin) {
	offer := clusterOffer(t, b)
	if offer.PricePerHour <= money.Cent {
		t.Skip("the offer is too cheap to cap below")
	}
	req := clusterRequest(t, h, offer, "capped")
	// One micro-dollar below the whole cluster's price: caps are exact, so this is above the cap.
	req.MaxPricePerHour = offer.PricePerHour - money.Micro
	_, err := b.CreateCluster(ctxFor(t), req)
	if !cloudprovider.IsCapacity(err) {
		t.Fatalf("cluster with max price %s below its %s: %v (kind %v), want a capacity error", req.MaxPricePerHour, offer.PricePerHour, err, cloudprovider.KindOf(err))
	}
	wantNothingMade(t, admin, "a cluster above the cap")
}

func testClusterUnknown(t *testing.T, h Harness, b cloudprovider.ClusterBackend, admin simulation.Admin) {
	if _, err := b.GetCluster(ctxFor(t), "no-such-cluster-id"); !cloudprovider.IsNotFound(err) {
		t.Errorf("GetCluster of an unknown id: %v (kind %v), want a not-found error", err, cloudprovider.KindOf(err))
	}
	if err := b.DeleteCluster(ctxFor(t), "no-such-cluster-id"); err != nil {
		t.Errorf("DeleteCluster of an unknown id: %v, want success (gone is gone)", err)
	}
}

// storm runs create n times at once and returns each call's id and error.
func storm(n int, create func() (string, error)) ([]string, []error) {
	var wg sync.WaitGroup
	ids := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i], errs[i] = create()
		}()
	}
	wg.Wait()
	return ids, errs
}
