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

func clusterOffer(t *testing.T, b *Backend, typ string, ic cloudprovider.Interconnect, nodes int) cloudprovider.ClusterOffer {
	t.Helper()
	offers, err := b.ClusterOffers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range offers {
		if o.InstanceType == typ && o.Interconnect == ic && o.Nodes == nodes {
			return o
		}
	}
	t.Fatalf("no %d-node %s offer of %s", nodes, ic, typ)
	return cloudprovider.ClusterOffer{}
}

func clusterReq(o cloudprovider.ClusterOffer, name string) cloudprovider.ClusterRequest {
	return cloudprovider.ClusterRequest{Name: name, Offer: o, Owner: cloudprovider.Ownership{Resource: "train", Token: "ab12cd34"},
		SSHPublicKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHydra user@host"}}
}

// TestClusterOffers: the fabric pod's offers (2 to 4 nodes, fabric) and an ordinary type's (any),
// whole-cluster prices ranked with the factor, and Available the clusters the free nodes make.
func TestClusterOffers(t *testing.T) {
	b := newEnv(t, emu.Options{}).backend(t, nil)
	cases := []struct {
		typ        string
		ic         cloudprovider.Interconnect
		nodes      int
		price      money.USD
		available  int
		fabricName string
	}{
		{"h100.8x", cloudprovider.InterconnectFabric, 4, 96 * money.Dollar, 1, "ams1-ib1"},
		{"h100.8x", cloudprovider.InterconnectFabric, 2, 48 * money.Dollar, 2, "ams1-ib1"},
		{"l40s.1x", cloudprovider.InterconnectAny, 4, 6_400_000, 1, ""},
		{"l40s.1x", cloudprovider.InterconnectAny, 5, 8 * money.Dollar, 0, ""},
	}
	for _, tc := range cases {
		o := clusterOffer(t, b, tc.typ, tc.ic, tc.nodes)
		if o.PricePerHour != tc.price || o.RankingPrice() != tc.price.Times(0.5) || o.Available != tc.available || o.Details[DetailFabric] != tc.fabricName {
			t.Errorf("%d-node %s %s: price %v rank %v available %d fabric %q; want %v, %v, %d, %q", tc.nodes, tc.ic, tc.typ,
				o.PricePerHour, o.RankingPrice(), o.Available, o.Details[DetailFabric], tc.price, tc.price.Times(0.5), tc.available, tc.fabricName)
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
