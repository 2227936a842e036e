package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
	"github.com/hydragpu/terraform-provider-hydra/internal/osproc"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox/simhost"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// clusterOffer returns the sandbox's cluster offer of count GPUs of gpuType in region on ic, asking for
// nodes nodes (as the control plane's request does).
func clusterOffer(t *testing.T, b *Backend, gpuType string, count int, region string, ic cloudprovider.Interconnect, nodes int) cloudprovider.ClusterOffer {
	t.Helper()
	offers, err := b.ClusterOffers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range offers {
		if o.GPUType == gpuType && o.GPUCount == count && !o.Spot && o.Region == region && o.Interconnect == ic {
			o.Nodes = nodes
			return o
		}
	}
	t.Fatalf("no %s cluster offer of %dx %s in %s", ic, count, gpuType, region)
	return cloudprovider.ClusterOffer{}
}

// setEntry edits the catalog entries of count GPUs of gpu (the sandbox's name), in every region.
func setEntry(t *testing.T, b *Backend, gpu string, count int, edit func(*CatalogEntry)) {
	t.Helper()
	c, err := b.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	for i := range c {
		if c[i].GPU == gpu && c[i].GPUCount == count && !c[i].Spot {
			edit(&c[i])
		}
	}
	if err := b.SetCatalog(c); err != nil {
		t.Fatal(err)
	}
}

func TestClusterOffers(t *testing.T) {
	perNode := money.MustFromFloat(19.92) // sbx.h100.8x in sbx-eu-1
	cases := []struct {
		name      string
		edit      func(*CatalogEntry)
		region    string
		wantICs   []cloudprovider.Interconnect
		wantNodes int
		wantAvail int
	}{
		{"a fabric region, unlimited stock: the default cap", nil, "sbx-eu-1",
			[]cloudprovider.Interconnect{cloudprovider.InterconnectAny, cloudprovider.InterconnectFabric}, DefaultMaxClusterNodes, -1},
		{"a region without a fabric offers any only", nil, "sbx-us-1", []cloudprovider.Interconnect{cloudprovider.InterconnectAny}, DefaultMaxClusterNodes, -1},
		{"stock bounds the nodes", func(e *CatalogEntry) { e.Available = 3 }, "sbx-eu-1",
			[]cloudprovider.Interconnect{cloudprovider.InterconnectAny, cloudprovider.InterconnectFabric}, 3, 3},
		{"max_cluster_nodes bounds the nodes", func(e *CatalogEntry) { e.MaxClusterNodes = 2 }, "sbx-eu-1",
			[]cloudprovider.Interconnect{cloudprovider.InterconnectAny, cloudprovider.InterconnectFabric}, 2, -1},
		{"a higher max_cluster_nodes leaves stock to bound them", func(e *CatalogEntry) { e.MaxClusterNodes = 16; e.Available = 12 }, "sbx-eu-1",
			[]cloudprovider.Interconnect{cloudprovider.InterconnectAny, cloudprovider.InterconnectFabric}, 12, 12},
		{"sold out", func(e *CatalogEntry) { e.Available = 0 }, "sbx-eu-1",
			[]cloudprovider.Interconnect{cloudprovider.InterconnectAny, cloudprovider.InterconnectFabric}, 0, 0},
		{"a fabric added to a region", func(e *CatalogEntry) { e.Fabric = "roce" }, "sbx-us-1",
			[]cloudprovider.Interconnect{cloudprovider.InterconnectAny, cloudprovider.InterconnectFabric}, DefaultMaxClusterNodes, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBackend(t, t.TempDir(), time.Second)
			if tc.edit != nil {
				setEntry(t, b, "H100", 8, tc.edit)
			}
			offers, err := b.ClusterOffers(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var got []cloudprovider.Interconnect
			for _, o := range offers {
				if o.InstanceType != "sbx.h100.8x" || o.Region != tc.region {
					continue
				}
				got = append(got, o.Interconnect)
				unit := perNode
				if tc.region == "sbx-us-1" {
					unit = money.MustFromFloat(21.12)
				}
				if o.Nodes != tc.wantNodes || o.Available != tc.wantAvail || o.PricePerHour != unit*money.USD(tc.wantNodes) ||
					o.PricePerNode != unit || o.Details["price_per_node"] != unit.String() || o.GPUType != "h100" || o.GPUCount != 8 {
					t.Errorf("%s offer: nodes %d, available %d, price %s, details %v; want %d nodes, available %d, %d x %s",
						o.Interconnect, o.Nodes, o.Available, o.PricePerHour, o.Details, tc.wantNodes, tc.wantAvail, tc.wantNodes, unit)
				}
				if (o.Ineligible != "") != (tc.wantNodes == 0) {
					t.Errorf("%s offer with %d nodes: ineligible %q", o.Interconnect, o.Nodes, o.Ineligible)
				}
				if o.Interconnect == cloudprovider.InterconnectFabric && o.Details["fabric"] == "" {
					t.Errorf("a fabric offer does not name its fabric: %v", o.Details)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.wantICs) {
				t.Fatalf("interconnects offered %v, want %v", got, tc.wantICs)
			}
		})
	}
}

// TestClusterRefusals: an order the sandbox cannot fill, or may not, starts nothing.
func TestClusterRefusals(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		edit   func(*CatalogEntry)
		faults Faults
		region string
		ic     cloudprovider.Interconnect
		nodes  int
		max    money.USD
		kind   cloudprovider.ErrorKind
		want   string
	}{
		{"stock below the nodes asked", func(e *CatalogEntry) { e.Available = 3 }, Faults{}, "sbx-eu-1", cloudprovider.InterconnectFabric, 4, 0,
			cloudprovider.ErrCapacity, "sbx-eu-1 can give 3 nodes of sbx.h100.8x now, 4 asked"},
		{"more than max_cluster_nodes", nil, Faults{}, "sbx-eu-1", cloudprovider.InterconnectAny, DefaultMaxClusterNodes + 1, 0,
			cloudprovider.ErrCapacity, "can give 8 nodes of sbx.h100.8x now, 9 asked"},
		{"sold out", nil, Faults{Faults: simulation.Faults{SoldOut: true}}, "sbx-eu-1", cloudprovider.InterconnectFabric, 4, 0,
			cloudprovider.ErrCapacity, "can give 0 nodes"},
		{"out of stock", nil, Faults{OutOfStock: []string{"sbx-eu-1/sbx.h100.8x"}}, "sbx-eu-1", cloudprovider.InterconnectFabric, 2, 0,
			cloudprovider.ErrCapacity, "can give 0 nodes"},
		{"a fabric where the region has none", nil, Faults{}, "sbx-us-1", cloudprovider.InterconnectFabric, 4, 0,
			cloudprovider.ErrCapacity, "sbx-us-1 has no fabric for sbx.h100.8x"},
		{"the whole cluster's price above the cap", nil, Faults{}, "sbx-eu-1", cloudprovider.InterconnectFabric, 4, money.MustFromFloat(79.67),
			cloudprovider.ErrCapacity, "4 nodes of sbx.h100.8x in sbx-eu-1 now costs $79.68/h, above the maximum $79.67/h"},
		{"no nodes", nil, Faults{}, "sbx-eu-1", cloudprovider.InterconnectAny, 0, 0, cloudprovider.ErrInvalid, "0 nodes asked"},
		{"no interconnect", nil, Faults{}, "sbx-eu-1", "", 2, 0, cloudprovider.ErrInvalid, `interconnect ""`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBackend(t, t.TempDir(), time.Second)
			o := clusterOffer(t, b, "h100", 8, tc.region, cloudprovider.InterconnectAny, tc.nodes)
			o.Interconnect = tc.ic
			if tc.edit != nil {
				setEntry(t, b, "H100", 8, tc.edit)
			}
			if err := b.SetAllFaults(tc.faults); err != nil {
				t.Fatal(err)
			}
			_, err := b.CreateCluster(ctx, cloudprovider.ClusterRequest{Name: "sbx-vm-c--k3j5q2xa", Offer: o, MaxPricePerHour: tc.max})
			backendtest.WantKind(t, err, tc.kind)
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
			if n, _ := b.CreatedCount(); n != 0 {
				t.Fatalf("%d machines created", n)
			}
			if cs, err := b.ListClusters(ctx, ""); err != nil || len(cs) != 0 {
				t.Fatalf("clusters after a refusal: %+v, %v", cs, err)
			}
		})
	}
	t.Run("a cap the price meets", func(t *testing.T) {
		b := newBackend(t, t.TempDir(), time.Second)
		o := clusterOffer(t, b, "h100", 8, "sbx-eu-1", cloudprovider.InterconnectFabric, 4)
		c, err := b.CreateCluster(ctx, cloudprovider.ClusterRequest{Name: "sbx-vm-c--k3j5q2xa", Offer: o, MaxPricePerHour: money.MustFromFloat(79.68)})
		if err != nil || c.PricePerHour != money.MustFromFloat(79.68) || len(c.Nodes) != 4 {
			t.Fatalf("CreateCluster = %+v, %v", c, err)
		}
	})
}

// TestClusterLifecycle: a 4-node fabric cluster from create to gone, seen by a second handle on the
// directory (another provider process), with its nodes among the instances.
func TestClusterLifecycle(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	// Booting takes 1 s: long enough that the create (four machines) still reads pending on a loaded
	// machine (at 50 ms, a fresh-clone make test once read the new cluster running).
	a, b := newBackend(t, dir, time.Second), newBackend(t, dir, time.Second)
	o := clusterOffer(t, a, "h100", 8, "sbx-eu-1", cloudprovider.InterconnectFabric, 4)
	owner := cloudprovider.Ownership{Resource: "train", Token: "ab12cd34"}
	const name = "sbx-vm-train--ab12cd34"
	c, err := a.CreateCluster(ctx, cloudprovider.ClusterRequest{Name: name, Offer: o, Owner: owner, SSHPublicKeys: []string{"ssh-ed25519 AAAA k"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != cloudprovider.StatusPending || c.Region != "sbx-eu-1" || c.Owner != owner || len(c.Nodes) != 4 ||
		c.PricePerHour != money.MustFromFloat(19.92)*4 || c.Env["NCCL_IB_HCA"] != "mlx5" {
		t.Fatalf("CreateCluster = %+v", c)
	}
	for i, n := range c.Nodes {
		if n.Name != fmt.Sprintf("%s-%d", name, i+1) || n.PrivateIP != fmt.Sprintf("127.100.1.%d", i+1) || n.Cluster != c.ID || n.Owner != owner {
			t.Errorf("node %d: %+v", i+1, n)
		}
	}
	again, err := b.CreateCluster(ctx, cloudprovider.ClusterRequest{Name: name, Offer: o, Owner: owner})
	if err != nil || again.ID != c.ID {
		t.Fatalf("a create of the same name in another process = %+v, %v; want the first cluster", again, err)
	}
	if n, _ := a.CreatedCount(); n != 4 {
		t.Fatalf("%d machines created, want 4", n)
	}
	got, err := b.GetCluster(ctx, c.ID)
	for deadline := time.Now().Add(10 * time.Second); err == nil && got.Status == cloudprovider.StatusPending && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		got, err = b.GetCluster(ctx, c.ID)
	}
	if err != nil || got.Status != cloudprovider.StatusRunning || got.Nodes[3].SSH == nil {
		t.Fatalf("after boot: %+v, %v", got, err)
	}
	if err := b.ConfirmOwnership(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	list, err := a.ListClusters(ctx, "sbx-vm-")
	if err != nil || len(list) != 1 || list[0].ID != c.ID || !list[0].Owner.Confirmed || !list[0].Nodes[0].Owner.Confirmed {
		t.Fatalf("ListClusters = %+v, %v", list, err)
	}
	if other, err := a.ListClusters(ctx, "sbx-execlet-"); err != nil || len(other) != 0 {
		t.Fatalf("ListClusters of another prefix = %+v, %v", other, err)
	}
	insts, err := a.List(ctx, "sbx-vm-")
	if err != nil || len(insts) != 4 || insts[0].Cluster != c.ID || !insts[0].Owner.Confirmed {
		t.Fatalf("List = %+v, %v; want the 4 nodes with their cluster", insts, err)
	}
	err = a.Delete(ctx, insts[0].ID)
	backendtest.WantKind(t, err, cloudprovider.ErrInvalid)
	if !strings.Contains(err.Error(), "node of cluster "+c.ID+": destroy the cluster") {
		t.Fatalf("Delete of a node: %v", err)
	}
	if err := b.DeleteCluster(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteCluster(ctx, c.ID); err != nil {
		t.Fatalf("a second delete: %v", err)
	}
	time.Sleep(5 * time.Millisecond)
	got, err = a.GetCluster(ctx, c.ID)
	if err != nil || got.Status != cloudprovider.StatusTerminated || got.Nodes[0].Status != cloudprovider.StatusTerminated {
		t.Fatalf("after delete: %+v, %v", got, err)
	}
	if list, err := b.ListClusters(ctx, ""); err != nil || len(list) != 0 {
		t.Fatalf("ListClusters after delete = %+v, %v", list, err)
	}
	if live, _ := b.Live(); len(live) != 0 {
		t.Fatalf("live machines after delete: %+v", live)
	}
	if _, err := a.GetCluster(ctx, "sbxc-nope"); !cloudprovider.IsNotFound(err) {
		t.Fatalf("GetCluster of an unknown id: %v", err)
	}
	if err := a.DeleteCluster(ctx, "sbxc-nope"); err != nil {
		t.Fatalf("DeleteCluster of an unknown id: %v", err)
	}
	// The private network is free again: the next cluster takes 127.100.1.
	next, err := a.CreateCluster(ctx, cloudprovider.ClusterRequest{Name: "sbx-vm-next--ab12cd35", Offer: o})
	if err != nil || next.Nodes[0].PrivateIP != "127.100.1.1" {
		t.Fatalf("the next cluster: %+v, %v", next, err)
	}
}

// TestClusterFaults: a cluster is running only when every node runs (a node that fails to boot, or
// is terminated on its own, makes it an error); a create whose answer is lost placed its cluster, and
// the retry returns it.
func TestClusterFaults(t *testing.T) {
	ctx := context.Background()
	runFaultCases(t, time.Millisecond, func(t *testing.T, b *Backend) cloudprovider.ClusterRequest {
		return cloudprovider.ClusterRequest{Name: "sbx-vm-c", Offer: clusterOffer(t, b, "l4", 1, "sbx-us-1", cloudprovider.InterconnectAny, 3)}
	}, []faultCase[cloudprovider.ClusterRequest]{
		{"a node fails to boot", Faults{Faults: simulation.Faults{BootFailures: 1}}, func(t *testing.T, b *Backend, req cloudprovider.ClusterRequest) {
			c, err := b.CreateCluster(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(5 * time.Millisecond)
			if got, _ := b.GetCluster(ctx, c.ID); got.Status != cloudprovider.StatusError || !strings.Contains(got.Message, "sbx-vm-c-1 is injected fault") {
				t.Fatalf("a cluster with a node that failed to boot: %s (%q)", got.Status, got.Message)
			}
		}},
		{"a node terminated on its own", Faults{}, func(t *testing.T, b *Backend, req cloudprovider.ClusterRequest) {
			c, err := b.CreateCluster(ctx, req)
			if err != nil || len(c.Env) != 1 || c.Env["NCCL_SOCKET_IFNAME"] != "lo" {
				t.Fatalf("a cluster of any interconnect: %+v, %v", c, err)
			}
			time.Sleep(5 * time.Millisecond)
			if got, _ := b.GetCluster(ctx, c.ID); got.Status != cloudprovider.StatusRunning {
				t.Fatalf("booted: %s", got.Status)
			}
			if err := b.Vanish(c.Nodes[1].ID); err != nil {
				t.Fatal(err)
			}
			if got, _ := b.GetCluster(ctx, c.ID); got.Status != cloudprovider.StatusError || !strings.Contains(got.Message, "sbx-vm-c-2") {
				t.Fatalf("a cluster with a node terminated on its own: %s (%q)", got.Status, got.Message)
			}
		}},
		{"the cluster deleted outside Terraform", Faults{}, func(t *testing.T, b *Backend, req cloudprovider.ClusterRequest) {
			c, err := b.CreateCluster(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Vanish(c.ID); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond)
			if got, err := b.GetCluster(ctx, c.ID); err != nil || got.Status != cloudprovider.StatusTerminated || got.Nodes[2].Status != cloudprovider.StatusTerminated {
				t.Fatalf("after Vanish: %+v, %v", got, err)
			}
			if list, err := b.ListClusters(ctx, ""); err != nil || len(list) != 0 {
				t.Fatalf("ListClusters after Vanish: %+v, %v", list, err)
			}
		}},
		{"the create's answer is lost", Faults{Faults: simulation.Faults{LoseCreateResponses: 1}}, func(t *testing.T, b *Backend, req cloudprovider.ClusterRequest) {
			if _, err := b.CreateCluster(ctx, req); cloudprovider.KindOf(err) != cloudprovider.ErrOther || !strings.Contains(err.Error(), "lost") {
				t.Fatalf("want a lost response, got %v", err)
			}
			c, err := b.CreateCluster(ctx, req)
			if err != nil || len(c.Nodes) != 3 {
				t.Fatalf("the retry: %+v, %v", c, err)
			}
			if n, _ := b.CreatedCount(); n != 3 {
				t.Fatalf("%d machines created, want 3", n)
			}
		}},
	})
}

// TestClusterAllOrNothing: a create the cloud cannot finish leaves nothing live, and nothing running
// (the real machines' processes), and says how many nodes it got.
func TestClusterAllOrNothing(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		// faults are armed, and during runs after the given node is placed.
		faults Faults
		during func(t *testing.T, b *Backend, placed int)
		want   string
	}{
		{"the cloud delivers 3 of 4 (partial_clusters)", Faults{PartialClusters: 1}, nil, "sbx-eu-1 delivered 3 of the 4 nodes of sbx.l4.1x asked"},
		{"another create takes the stock meanwhile", Faults{}, func(t *testing.T, b *Backend, placed int) {
			if placed != 2 {
				return
			}
			o := offerFor(t, b, "l4", 1)
			if _, err := b.Create(ctx, cloudprovider.CreateRequest{Name: "sbx-vm-single", Offer: o}); err != nil {
				t.Error(err)
			}
		}, "sbx-eu-1 delivered 3 of the 4 nodes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newRealBackend(t, 100*time.Millisecond)
			setEntry(t, b, "L4", 1, func(e *CatalogEntry) { e.Available = 4 })
			o := clusterOffer(t, b, "l4", 1, "sbx-eu-1", cloudprovider.InterconnectFabric, 4)
			if err := b.SetAllFaults(tc.faults); err != nil {
				t.Fatal(err)
			}
			if tc.during != nil {
				b.onPlaced = func(r Record) { tc.during(t, b, len(mustNodes(t, b, r.Cluster))) }
			}
			_, err := b.CreateCluster(ctx, cloudprovider.ClusterRequest{Name: "sbx-vm-c", Offer: o})
			backendtest.WantKind(t, err, cloudprovider.ErrCapacity)
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
			b.WaitBooting()
			time.Sleep(150 * time.Millisecond) // past the nodes' boot: a node left behind would be running now
			if cs, err := b.ListClusters(ctx, ""); err != nil || len(cs) != 0 {
				t.Fatalf("clusters after a failed create: %+v, %v", cs, err)
			}
			insts, err := b.List(ctx, "sbx-vm-c")
			if err != nil {
				t.Fatal(err)
			}
			for _, inst := range insts {
				if inst.Status != cloudprovider.StatusTerminated && inst.CloudStatus != "stopping" {
					t.Errorf("node %s left %s", inst.Name, inst.CloudStatus)
				}
			}
			if f, _ := b.AllFaults(); f.PartialClusters != 0 {
				t.Errorf("partial_clusters not used up: %d", f.PartialClusters)
			}
			nodes := 0
			for _, r := range mustRecords(t, b) {
				if r.Cluster == "" {
					continue
				}
				nodes++
				if procs := processesIn(b.MachineDir(r.ID)); len(procs) > 0 {
					t.Errorf("node %s: its machine's processes still run: %v", r.Name, procs)
				}
			}
			if nodes != 3 {
				t.Errorf("%d nodes were placed, want 3", nodes)
			}
		})
	}
}

// TestClusterInterrupted: a create cancelled between placements leaves a cluster of fewer nodes,
// pending; the next create of the name (in another process) finishes it, or, when its nodes can no
// longer all be placed, terminates it.
func TestClusterInterrupted(t *testing.T) {
	cases := []struct {
		name  string
		stock int // of the entry after the interrupt
		done  bool
	}{
		{"the retry adopts and finishes it", -1, true},
		{"the retry cannot finish it and cleans up", 1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			a := newBackend(t, dir, time.Hour)
			o := clusterOffer(t, a, "h100", 8, "sbx-eu-1", cloudprovider.InterconnectFabric, 4)
			ctx, cancel := context.WithCancel(context.Background())
			a.onPlaced = func(r Record) {
				if strings.HasSuffix(r.Name, "-2") {
					cancel()
				}
			}
			req := cloudprovider.ClusterRequest{Name: "sbx-vm-c--k3j5q2xa", Offer: o}
			if _, err := a.CreateCluster(ctx, req); err == nil || cloudprovider.IsCapacity(err) || !strings.Contains(err.Error(), "interrupted") {
				t.Fatalf("an interrupted create: %v", err)
			}
			list, err := a.ListClusters(context.Background(), "")
			if err != nil || len(list) != 1 || len(list[0].Nodes) != 2 || list[0].Status != cloudprovider.StatusPending ||
				list[0].CloudStatus != "creating" || list[0].Message != "2 of 4 nodes placed" {
				t.Fatalf("after the interrupt: %+v, %v", list, err)
			}
			setEntry(t, a, "H100", 8, func(e *CatalogEntry) { e.Available = tc.stock })
			b := newBackend(t, dir, time.Hour)
			c, err := b.CreateCluster(context.Background(), req)
			if !tc.done {
				backendtest.WantKind(t, err, cloudprovider.ErrCapacity)
				if !strings.Contains(err.Error(), "delivered 3 of the 4") {
					t.Fatalf("error %v", err)
				}
				if live, _ := b.Live(); len(live) != 0 {
					t.Fatalf("live after the failed retry: %+v", live)
				}
				return
			}
			if err != nil || c.ID != list[0].ID || len(c.Nodes) != 4 || c.Nodes[3].Name != req.Name+"-4" || c.Nodes[3].PrivateIP != "127.100.1.4" {
				t.Fatalf("the retry: %+v, %v", c, err)
			}
			if n, _ := b.CreatedCount(); n != 4 {
				t.Fatalf("%d machines created, want 4", n)
			}
		})
	}
}

// TestClusterNodesOverSSH: the nodes of a 4-node fabric cluster are real machines whose sshd answers on
// their private addresses, with the fabric recorded for the stand-ins; a delete ends every process.
func TestClusterNodesOverSSH(t *testing.T) {
	ctx := context.Background()
	b := newRealBackend(t, 50*time.Millisecond)
	o := clusterOffer(t, b, "h100", 8, "sbx-eu-1", cloudprovider.InterconnectFabric, 4)
	c, err := b.CreateCluster(ctx, cloudprovider.ClusterRequest{Name: "sbx-vm-ssh--ab12cd34", Offer: o})
	if err != nil {
		t.Fatal(err)
	}
	b.WaitBooting()
	time.Sleep(50 * time.Millisecond)
	got, err := b.GetCluster(ctx, c.ID)
	if err != nil || got.Status != cloudprovider.StatusRunning {
		t.Fatalf("GetCluster = %+v, %v", got, err)
	}
	for _, n := range got.Nodes {
		if n.SSH == nil {
			t.Fatalf("node %s has no SSH endpoint", n.Name)
		}
		for _, host := range []string{n.SSH.Host, n.PrivateIP} {
			if b := sshBanner(host, n.SSH.Port); !strings.HasPrefix(b, "SSH-2.0-") {
				t.Errorf("node %s at %s:%d answers %q, want an SSH banner", n.Name, host, n.SSH.Port, b)
			}
		}
		var gpus struct {
			Fabric bool `json:"fabric"`
		}
		data, err := os.ReadFile(filepath.Join(b.MachineDir(n.ID), "gpus.json"))
		if err != nil || json.Unmarshal(data, &gpus) != nil || !gpus.Fabric {
			t.Errorf("node %s: gpus.json does not give it the fabric: %s, %v", n.Name, data, err)
		}
	}
	if err := b.DeleteCluster(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	if procs := processesIn(filepath.Join(b.Dir(), "machines")); len(procs) != 0 {
		t.Fatalf("processes of the deleted cluster's nodes still run: %v", procs)
	}
}

// newRealBackend opens a sandbox whose machines are real (SSHMachines), stopped when the test ends,
// or skips when this host cannot run them.
func newRealBackend(t *testing.T, boot time.Duration) *Backend {
	t.Helper()
	if _, err := simhost.FindSSHD(); err != nil {
		t.Skip(err.Error())
	}
	b := newBackendWith(t, Config{Dir: t.TempDir(), BootTime: boot, DeleteTime: time.Millisecond, Tuning: fastRetries, Machines: SSHMachines{}})
	t.Cleanup(func() {
		b.WaitBooting()
		dirs, _ := filepath.Glob(filepath.Join(b.Dir(), "machines", "*"))
		for _, d := range dirs {
			if err := (SSHMachines{}).Stop(d); err != nil {
				t.Error(err)
			}
		}
	})
	return b
}

// processesIn lists the live processes whose command lines name dir or a path in it.
func processesIn(dir string) []osproc.Process {
	var out []osproc.Process
	for _, p := range osproc.List() {
		if osproc.NamesDir(p.Args, dir) {
			out = append(out, p)
		}
	}
	return out
}

// sshBanner reads what a server at host:port says first ("" when nothing answers).
func sshBanner(host string, port int) string {
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(host, fmt.Sprint(port)), 2*time.Second)
	if err != nil {
		return ""
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 64)
	n, _ := conn.Read(buf)
	return string(buf[:n])
}

func mustRecords(t *testing.T, b *Backend) []Record {
	t.Helper()
	recs, err := b.Instances()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// mustNodes returns the records of a cluster's nodes.
func mustNodes(t *testing.T, b *Backend, cluster string) []Record {
	t.Helper()
	var out []Record
	for _, r := range mustRecords(t, b) {
		if r.Cluster == cluster {
			out = append(out, r)
		}
	}
	return out
}
