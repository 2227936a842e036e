package mithril

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/mithril"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// clusterOffer reads the cluster offers and returns one auction's.
func clusterOffer(t *testing.T, e *env, region, typ string) cloudprovider.ClusterOffer {
	t.Helper()
	offers := backendtest.ClusterOffers(t, e.backend)
	return findClusterOffer(t, offers, region, typ)
}

func findClusterOffer(t *testing.T, offers []cloudprovider.ClusterOffer, region, typ string) cloudprovider.ClusterOffer {
	t.Helper()
	for _, o := range offers {
		if o.Region == region && o.InstanceType == typ {
			return o
		}
	}
	t.Fatalf("no cluster offer %s %s in %+v", region, typ, offers)
	return cloudprovider.ClusterOffer{}
}

// sized is a cluster offer cut to n nodes at its bid per instance.
func sized(o cloudprovider.ClusterOffer, n int) cloudprovider.ClusterOffer {
	o.PricePerHour = perInstance(o) * money.USD(n)
	o.Nodes = n
	return o
}

func TestClusterOffers(t *testing.T) {
	e := newEnv(t, emu.Options{})
	offers := backendtest.ClusterOffers(t, e.backend)
	for _, o := range offers {
		// Mithril promises no fabric for a spot bid's instances.
		if o.Interconnect != cloudprovider.InterconnectAny || o.Cloud != CloudName || !o.Spot || o.Available != o.Nodes ||
			(o.GPUType != "" && o.PricePerNode.String() != o.Details[DetailPricePerNode]) {
			t.Errorf("offer %+v", o)
		}
	}
	for _, tc := range []struct {
		region, typ string
		nodes       int
		// bid is the bid per instance: the auction's need (last winning price + 10%, the lowest winning
		// bid + $0.01, win price, minimum), the highest.
		bid, whole, ineligible string
	}{
		// 8 slots, one held by another customer's $1.00: 7 nodes at max($0.95+10% = $1.05, $1.01).
		{"us-central1-a", "a100-80gb.sxm.1x", 7, "1.05", "7.35", ""},
		// 4 slots, two held ($12.50, $13.00): 2 nodes at $12.03+10% = $13.24.
		{"us-central1-a", "h100-80gb.sxm.8x", 2, "13.24", "26.48", ""},
		{"us-central3-a", "b200.8x", 1, "28.60", "28.60", "auction can allocate 1 instances now; a cluster needs at least 2"},
		{"us-central1-b", "h100-80gb.sxm.8x", 0, "12.65", "0.00", "auction has no capacity now (last clearing price $11.50/h, lowest winning bid $12.00/h)"},
	} {
		o := findClusterOffer(t, offers, tc.region, tc.typ)
		if o.Nodes != tc.nodes || o.Details[DetailBidPrice] != tc.bid || o.Details[DetailPricePerNode] != tc.bid || o.PricePerHour != usd(tc.whole) ||
			o.Ineligible != tc.ineligible {
			t.Errorf("%s %s: %d nodes, bid %s, whole %s, ineligible %q; want %d, %s, %s, %q", tc.region, tc.typ, o.Nodes,
				o.Details[DetailBidPrice], o.PricePerHour, o.Ineligible, tc.nodes, tc.bid, tc.whole, tc.ineligible)
		}
	}
	if a10 := findClusterOffer(t, offers, "us-central5-a", "a10-24gb.pcie.1x"); !strings.HasPrefix(a10.Ineligible, "GPU not in the inventory") {
		t.Errorf("unmapped A10: %+v", a10)
	}
}

// A cluster of 4: one bid, all four instances at once, nodes named after it, running with private
// addresses; created once by name; listed as nodes and as a cluster; deleted as one.
func TestClusterLifecycle(t *testing.T) {
	e := newEnv(t, emu.Options{StopDuration: 10 * time.Second})
	ctx := t.Context()
	pool := backendtest.Pool(t, CloudName)
	o := sized(clusterOffer(t, e, "us-central1-a", "a100-80gb.sxm.1x"), 4)
	owner := cloudprovider.Ownership{Resource: "train", Token: cloudprovider.NewOwnerToken()}
	req := cloudprovider.ClusterRequest{Name: cloudprovider.CloudName(pool, "train", owner.Token), Pool: pool, Offer: o, Owner: owner,
		MaxPricePerHour: usd("4.20"), SSHPublicKeys: []string{testKey}}
	c, err := e.backend.CreateCluster(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.ID, "bid_") || c.Name != req.Name || c.Status != cloudprovider.StatusPending || c.AwaitingAllocation ||
		c.PricePerHour != usd("4.20") || c.Region != "us-central1-a" || c.Owner != owner || len(c.Nodes) != 4 {
		t.Fatalf("created: %+v", c)
	}
	if b := bidOf(t, e, c.ID); b.Quantity != 4 || b.LimitCents != 105 || len(b.Instances) != 4 {
		t.Fatalf("the bid: %+v", b)
	}
	again, err := e.backend.CreateCluster(ctx, req)
	if err != nil || again.ID != c.ID || e.emu.CreateCount() != 1 {
		t.Errorf("second create of the name: %+v %v, %d bids placed", again, err, e.emu.CreateCount())
	}

	e.clock.Advance(bootTime)
	got, err := e.backend.GetCluster(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != cloudprovider.StatusRunning || got.CloudStatus != "Allocated" || len(got.Nodes) != 4 || got.Owner != owner {
		t.Fatalf("running: %+v", got)
	}
	ips := map[string]bool{}
	for i, n := range got.Nodes {
		if want := req.Name + "-" + string(rune('1'+i)); n.Name != want || n.Cluster != c.ID || !strings.HasPrefix(n.ID, "inst_") ||
			n.Status != cloudprovider.StatusRunning || n.SSH == nil || n.SSH.User != "ubuntu" || n.GPUType != "a100-80gb" || n.Owner != owner ||
			!strings.HasPrefix(n.PrivateIP, "10.") || ips[n.PrivateIP] {
			t.Errorf("node %d: %+v (private %q), want named %s", i+1, n.Instance, n.PrivateIP, want)
		}
		ips[n.PrivateIP] = true
	}
	// The pool's listing shows the nodes, each with its cluster; a node reads alone, and cannot be
	// deleted alone (a bid is not resizable).
	list, err := e.backend.List(ctx, pool.Prefix)
	if err != nil || len(list) != 4 || list[0].Cluster != c.ID || list[0].Name != req.Name+"-1" {
		t.Fatalf("pool listing: %+v %v", list, err)
	}
	node, err := e.backend.Get(ctx, got.Nodes[2].ID)
	if err != nil || node.Name != req.Name+"-3" || node.Cluster != c.ID || node.Status != cloudprovider.StatusRunning {
		t.Errorf("one node: %+v %v", node, err)
	}
	if err := e.backend.Delete(ctx, got.Nodes[2].ID); cloudprovider.KindOf(err) != cloudprovider.ErrInvalid || len(e.emu.LiveBids()) != 1 {
		t.Errorf("deleting one node: %v", err)
	}
	clusters, err := e.backend.ListClusters(ctx, pool.Prefix)
	if err != nil || len(clusters) != 1 || clusters[0].ID != c.ID || clusters[0].Status != cloudprovider.StatusRunning {
		t.Errorf("clusters: %+v %v", clusters, err)
	}

	// A machine of the pool is no cluster, and a cluster no machine of List's.
	mo := pricedOffer(t, e, "us-central1-a", "a100-80gb.sxm.1x", "2.00")
	m, err := e.backend.Create(ctx, cloudprovider.CreateRequest{Name: pool.Prefix + "single", Pool: pool, Offer: mo})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.backend.GetCluster(ctx, m.ID); !cloudprovider.IsNotFound(err) {
		t.Errorf("GetCluster of a machine's bid: %v", err)
	}
	if clusters, _ := e.backend.ListClusters(ctx, pool.Prefix); len(clusters) != 1 {
		t.Errorf("clusters with a machine beside: %+v", clusters)
	}

	if err := e.backend.DeleteCluster(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := e.backend.GetCluster(ctx, c.ID); err != nil || got.Status != cloudprovider.StatusPending || got.CloudStatus != "Terminated" {
		t.Errorf("stopping: %+v %v", got, err)
	}
	e.clock.Advance(10 * time.Second)
	got, err = e.backend.GetCluster(ctx, c.ID)
	if err != nil || got.Status != cloudprovider.StatusTerminated {
		t.Errorf("terminated: %+v %v", got, err)
	}
	for _, n := range got.Nodes {
		if n.Status == cloudprovider.StatusRunning {
			t.Errorf("node of a cancelled bid: %+v", n.Instance)
		}
	}
	if err := e.backend.DeleteCluster(ctx, c.ID); err != nil {
		t.Errorf("second delete: %v", err)
	}
	if clusters, _ := e.backend.ListClusters(ctx, pool.Prefix); len(clusters) != 0 {
		t.Errorf("clusters after delete: %+v", clusters)
	}
}

// A region that cannot allocate all the nodes now (two 8x A100 in all, none taken) is ErrCapacity,
// and nothing is placed: a bid is allocated all or nothing.
func TestClusterNotEnoughCapacity(t *testing.T) {
	e := newEnv(t, emu.Options{})
	ctx := t.Context()
	pool := backendtest.Pool(t, CloudName)
	o := clusterOffer(t, e, "us-central1-a", "a100-80gb.sxm.8x")
	if o.Nodes != 2 || o.PricePerNode != usd("8.58") {
		t.Fatalf("offer %+v", o)
	}
	_, err := e.backend.CreateCluster(ctx, cloudprovider.ClusterRequest{Name: pool.Prefix + "big", Pool: pool, Offer: sized(o, 4)})
	if !cloudprovider.IsCapacity(err) || !strings.Contains(err.Error(), "us-central1-a can allocate 2 a100-80gb.sxm.8x instances now, not 4") {
		t.Errorf("4 nodes where 2 are free: %v", err)
	}
	if clusters, _ := e.backend.ListClusters(ctx, pool.Prefix); len(clusters) != 0 || e.emu.CreateCount() != 0 {
		t.Errorf("nothing is placed: %+v, %d bids", clusters, e.emu.CreateCount())
	}
}

// A cluster bid that does not win at once (placed below the lowest winning bid, another customer's
// $1.00, although 7 instances are free) stays Open with no instance, never some: the cluster is
// pending, awaiting allocation, with no nodes, until its bid wins all of them at once.
func TestClusterAwaitingAllocation(t *testing.T) {
	e := newEnv(t, emu.Options{})
	ctx := t.Context()
	pool := backendtest.Pool(t, CloudName)
	o := sized(clusterOffer(t, e, "us-central1-a", "a100-80gb.sxm.1x"), 4)
	o.PricePerNode = usd("0.90")
	c, err := e.backend.CreateCluster(ctx, cloudprovider.ClusterRequest{Name: pool.Prefix + "held", Pool: pool, Offer: o})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if c.Status != cloudprovider.StatusPending || !c.AwaitingAllocation || c.CloudStatus != "Open" || len(c.Nodes) != 0 ||
			c.PricePerHour != usd("3.60") || c.Message == "" {
			t.Fatalf("waiting cluster: %+v", c)
		}
		if b := bidOf(t, e, c.ID); b.Status != "Open" || len(b.Instances) != 0 || b.Quantity != 4 {
			t.Fatalf("the bid is partly allocated: %+v", b)
		}
		e.clock.Advance(time.Hour)
		if c, err = e.backend.GetCluster(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
	}
	if list, err := e.backend.List(ctx, pool.Prefix); err != nil || len(list) != 0 {
		t.Errorf("an open cluster bid has no nodes to list: %+v %v", list, err)
	}
	if clusters, err := e.backend.ListClusters(ctx, pool.Prefix); err != nil || len(clusters) != 1 || !clusters[0].AwaitingAllocation {
		t.Errorf("an open cluster bid is a cluster: %+v %v", clusters, err)
	}
	// The other customer leaves: the bid wins, all four at once.
	if _, err := e.emu.SetAuction(emu.AuctionChange{Region: "us-central1-a", InstanceType: "a100-80gb.sxm.1x", MarketBidsCents: []int64{}}); err != nil {
		t.Fatal(err)
	}
	c, err = e.backend.GetCluster(ctx, c.ID)
	if err != nil || c.AwaitingAllocation || c.Status != cloudprovider.StatusPending || len(c.Nodes) != 4 || c.CloudStatus != "Allocated" {
		t.Errorf("allocated: %+v %v", c, err)
	}
}

// spotCluster orders a cluster of 3 A100 nodes in us-central1-a (one spot bid).
func spotCluster(t *testing.T, e *env) cloudprovider.Cluster {
	t.Helper()
	pool := backendtest.Pool(t, CloudName)
	c, err := e.backend.CreateCluster(t.Context(), cloudprovider.ClusterRequest{Name: pool.Prefix + "spot", Pool: pool,
		Offer: sized(clusterOffer(t, e, "us-central1-a", "a100-80gb.sxm.1x"), 3)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Preempted (another customer outbids the cluster's bid): the cluster is in error with the reason,
// before and after its nodes are gone.
func TestClusterPreempted(t *testing.T) {
	e := newEnv(t, emu.Options{PreemptionWindow: time.Minute})
	ctx := t.Context()
	c := spotCluster(t, e)
	if err := e.emu.SetOwnFaults(emu.OwnFaults{Preemptions: 1}); err != nil {
		t.Fatal(err)
	}
	for _, wait := range []time.Duration{0, time.Minute} {
		e.clock.Advance(wait)
		got, err := e.backend.GetCluster(ctx, c.ID)
		if err != nil || got.Status != cloudprovider.StatusError || !strings.Contains(got.Message, "preempted") {
			t.Errorf("after %v: %+v %v", wait, got, err)
		}
	}
}

// Requests that cannot become a cluster bid place nothing.
func TestCreateClusterRefuses(t *testing.T) {
	e := newEnv(t, emu.Options{})
	offers := backendtest.ClusterOffers(t, e.backend)
	pool := backendtest.Pool(t, CloudName)
	o := findClusterOffer(t, offers, "us-central1-a", "a100-80gb.sxm.1x")
	fabric := sized(o, 4)
	fabric.Interconnect = cloudprovider.InterconnectFabric
	for _, tc := range []struct {
		name  string
		offer cloudprovider.ClusterOffer
		max   string
		kind  cloudprovider.ErrorKind
		msg   string
	}{
		{"one node", sized(o, 1), "", cloudprovider.ErrInvalid, "2 or more instances, not 1"},
		{"fabric", fabric, "", cloudprovider.ErrInvalid, "no fabric"},
		{"above the cap", sized(o, 4), "4.19", cloudprovider.ErrCapacity, "a bid for 4 x a100-80gb.sxm.1x in us-central1-a now costs $4.20/h, above the maximum $4.19/h"},
		{"ineligible", sized(findClusterOffer(t, offers, "us-central1-b", "h100-80gb.sxm.8x"), 4), "", cloudprovider.ErrInvalid, "not eligible"},
	} {
		req := cloudprovider.ClusterRequest{Name: pool.Prefix + "refused", Pool: pool, Offer: tc.offer}
		if tc.max != "" {
			req.MaxPricePerHour = usd(tc.max)
		}
		_, err := e.backend.CreateCluster(t.Context(), req)
		if cloudprovider.KindOf(err) != tc.kind || err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %v containing %q", tc.name, err, tc.kind, tc.msg)
		}
	}
	if n := e.emu.CreateCount(); n != 0 {
		t.Errorf("%d bids placed", n)
	}
}

// Interrupted creates make one bid: a lost answer is settled by looking the name up, concurrent
// creates of one name wait for each other, and a later create of the resource cancels its earlier
// cluster bid whose machines were preempted.
func TestCreateClusterOnce(t *testing.T) {
	e := newEnv(t, emu.Options{PreemptionWindow: time.Minute})
	ctx := t.Context()
	pool := backendtest.Pool(t, CloudName)
	o := sized(clusterOffer(t, e, "us-central1-a", "a100-80gb.sxm.1x"), 2)
	req := func(token string) cloudprovider.ClusterRequest {
		owner := cloudprovider.Ownership{Resource: "once", Token: token}
		return cloudprovider.ClusterRequest{Name: cloudprovider.CloudName(pool, "once", token), Pool: pool, Offer: o, Owner: owner}
	}
	first := req(cloudprovider.OwnerToken("once", 0))
	if err := e.emu.SetFaults(simulation.Faults{LoseCreateResponses: 1}); err != nil {
		t.Fatal(err)
	}
	c, err := e.backend.CreateCluster(ctx, first)
	if err != nil || c.Name != first.Name || e.emu.CreateCount() != 1 {
		t.Fatalf("create with its answer lost: %+v %v, %d bids placed", c, err, e.emu.CreateCount())
	}
	var wg sync.WaitGroup
	ids := make([]string, 4)
	for i := range ids {
		wg.Go(func() {
			got, err := e.backend.CreateCluster(ctx, first)
			if err != nil {
				t.Error(err)
			}
			ids[i] = got.ID
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != c.ID {
			t.Errorf("concurrent creates: %v, want all %s", ids, c.ID)
			break
		}
	}
	// Preempted and its window over: the bid is Open again, its machines gone. The next generation's
	// create cancels it before placing its own.
	if err := e.emu.SetOwnFaults(emu.OwnFaults{Preemptions: 1}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	if got, _ := e.backend.GetCluster(ctx, c.ID); got.Status != cloudprovider.StatusError {
		t.Fatalf("preempted: %+v", got)
	}
	next, err := e.backend.CreateCluster(ctx, req(cloudprovider.OwnerToken("once", 1)))
	if err != nil || next.ID == c.ID {
		t.Fatalf("next create: %+v %v", next, err)
	}
	if b := bidOf(t, e, c.ID); b.Status != "Terminated" {
		t.Errorf("the preempted bid: %+v", b)
	}
	if live := e.emu.LiveBids(); len(live) != 1 || live[0].FID != next.ID || e.emu.CreateCount() != 2 {
		t.Errorf("live bids %+v, %d placed", live, e.emu.CreateCount())
	}
}
