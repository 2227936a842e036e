package atlas

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/atlas"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// clusterOffer finds the offer of typ on ic and asks it for nodes nodes.
func clusterOffer(t *testing.T, b *Backend, typ string, ic cloudprovider.Interconnect, nodes int) cloudprovider.ClusterOffer {
	t.Helper()
	offers, err := b.ClusterOffers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range offers {
		if o.InstanceType == typ && o.Interconnect == ic {
			o.Nodes = nodes
			o.PricePerHour = o.PricePerNode.Times(float64(nodes))
			return o
		}
	}
	t.Fatalf("no %s offer of %s", ic, typ)
	return cloudprovider.ClusterOffer{}
}

func clusterReq(o cloudprovider.ClusterOffer, name string) cloudprovider.ClusterRequest {
	return cloudprovider.ClusterRequest{Name: name, Offer: o, Owner: cloudprovider.Ownership{Resource: "train", Token: "ab12cd34"},
		SSHPublicKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHydra user@host"}}
}

// TestClusterOffers: the fabric pod's offer (up to its 4 free nodes, fabric) and the ordinary types'
// (any, up to their free nodes; none for a sold-out type), priced per node and for the most nodes,
// ranked with the factor.
func TestClusterOffers(t *testing.T) {
	b := newEnv(t, emu.Options{}).backend(t, nil)
	offers, err := b.ClusterOffers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]cloudprovider.ClusterOffer{}
	for _, o := range offers {
		got[string(o.Interconnect)+"/"+o.InstanceType] = o
	}
	cases := []struct {
		key       string
		nodes     int
		perNode   money.USD
		available int
		fabric    string
	}{
		{"fabric/h100.8x", 4, 24 * money.Dollar, 1, "ams1-ib1"},
		{"any/h100.8x", 1, 24 * money.Dollar, 1, ""},
		{"any/l40s.1x", 4, 1_600_000, 1, ""},
		{"any/l4.1x", 6, 700_000, 1, ""},
		{"any/rtx6000ada.2x", 0, 2_200_000, 0, ""},
	}
	for _, tc := range cases {
		o, ok := got[tc.key]
		price := tc.perNode.Times(float64(tc.nodes))
		if !ok || o.Nodes != tc.nodes || o.PricePerNode != tc.perNode || o.PricePerHour != price || o.RankingPrice() != price.Times(0.5) ||
			o.Available != tc.available || o.Details[DetailFabric] != tc.fabric {
			t.Errorf("%s: %+v; want %d nodes at %v each (%v, ranked %v), available %d, fabric %q", tc.key, o, tc.nodes, tc.perNode, price, price.Times(0.5), tc.available, tc.fabric)
		}
	}
}

// TestClusterLifecycle: a 4-node fabric cluster is placed whole, its nodes are instances named
// <name>-<i> with the cluster's id, labels and private addresses; it runs only when every node does;
// a second create of the name returns it; delete frees the pod.
func TestClusterLifecycle(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, emu.Options{})
	b := e.backend(t, nil)
	req := clusterReq(clusterOffer(t, b, "h100.8x", cloudprovider.InterconnectFabric, 4), "atlas-vm-train--ab12cd34")
	c, err := b.CreateCluster(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != cloudprovider.StatusPending || len(c.Nodes) != 4 || c.PricePerHour != 96*money.Dollar || c.Owner.Token != "ab12cd34" {
		t.Fatalf("new cluster %+v", c)
	}
	e.clock.Advance(30 * time.Second)
	c, err = b.GetCluster(ctx, c.ID)
	if err != nil || c.Status != cloudprovider.StatusRunning {
		t.Fatalf("booted cluster: %v %+v", err, c)
	}
	insts, err := b.List(ctx, req.Name)
	if err != nil || len(insts) != 4 {
		t.Fatalf("nodes as instances: %v %+v", err, insts)
	}
	for i, n := range c.Nodes {
		if n.Name != fmt.Sprintf("%s-%d", req.Name, i+1) || n.Cluster != c.ID || n.PrivateIP == "" || n.Owner.Token != "ab12cd34" || n.SSH == nil {
			t.Errorf("node %d: %+v", i, n)
		}
		if insts[i].Cluster != c.ID {
			t.Errorf("instance %s does not name its cluster", insts[i].Name)
		}
	}
	if err := b.Delete(ctx, c.Nodes[0].ID); err == nil {
		t.Error("a node was deleted on its own; only its cluster may be")
	}
	again, err := b.CreateCluster(ctx, req)
	if err != nil || again.ID != c.ID {
		t.Fatalf("create again: %v %s, want %s", err, again.ID, c.ID)
	}
	for i := 0; i < 2; i++ {
		if err := b.DeleteCluster(ctx, c.ID); err != nil {
			t.Fatalf("delete %d: %v", i+1, err)
		}
	}
	e.clock.Advance(time.Minute)
	if list, err := b.ListClusters(ctx, req.Name); err != nil || len(list) != 0 {
		t.Errorf("after delete: %v %+v", err, list)
	}
	if err := b.DeleteCluster(ctx, c.ID); err != nil {
		t.Errorf("delete of a terminated cluster: %v", err)
	}
	if o := clusterOffer(t, b, "h100.8x", cloudprovider.InterconnectFabric, 4); o.Available != 1 {
		t.Errorf("the pod was not freed: %+v", o)
	}
	if _, err := b.GetCluster(ctx, "c-unknown"); !cloudprovider.IsNotFound(err) {
		t.Errorf("unknown cluster: %v", err)
	}
}

// TestClusterRefusals: more nodes than are free, a sold-out cloud and a cap below the whole cluster's
// price are capacity errors that place no node.
func TestClusterRefusals(t *testing.T) {
	cases := []struct {
		name   string
		nodes  int
		faults simulation.Faults
		cap    money.USD
	}{
		{"more nodes than free", 5, simulation.Faults{}, 0},
		{"more nodes than Atlas builds", 17, simulation.Faults{}, 0},
		{"sold out", 4, simulation.Faults{SoldOut: true}, 0},
		{"price cap", 4, simulation.Faults{}, 6_400_000 - money.Micro},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, emu.Options{})
			b := e.backend(t, nil)
			req := clusterReq(clusterOffer(t, b, "l40s.1x", cloudprovider.InterconnectAny, tc.nodes), "atlas-vm-big--ab12cd34")
			req.MaxPricePerHour = tc.cap
			if err := e.emu.SetFaults(tc.faults); err != nil {
				t.Fatal(err)
			}
			_, err := b.CreateCluster(context.Background(), req)
			wantKind(t, err, cloudprovider.ErrCapacity)
			if st, _ := e.emu.Stats(); st.Created != 0 || len(st.Live) != 0 {
				t.Errorf("a refused cluster left %+v", st)
			}
		})
	}
}

// TestClusterNodeFailure: a cluster with a failed node is failed as a whole, with Atlas's message.
func TestClusterNodeFailure(t *testing.T) {
	e := newEnv(t, emu.Options{})
	b := e.backend(t, nil)
	if err := e.emu.SetFaults(simulation.Faults{BootFailures: 1}); err != nil {
		t.Fatal(err)
	}
	c, err := b.CreateCluster(context.Background(), clusterReq(clusterOffer(t, b, "l40s.1x", cloudprovider.InterconnectAny, 2), "atlas-vm-broken--ab12cd34"))
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(30 * time.Second)
	c, err = b.GetCluster(context.Background(), c.ID)
	if err != nil || c.Status != cloudprovider.StatusError || c.Message == "" || c.Nodes[0].Status != cloudprovider.StatusRunning {
		t.Errorf("cluster with a failed node: %v, %s %q, first node %s; want the cluster in error, its healthy node running", err, c.Status, c.Message, c.Nodes[0].Status)
	}
}
