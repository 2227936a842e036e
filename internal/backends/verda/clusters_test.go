package verda

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/verda/verdaapi"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/verda"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

func clusterOffer(t *testing.T, b *Backend, typ string) cloudprovider.ClusterOffer {
	t.Helper()
	offers := backendtest.ClusterOffers(t, b)
	for _, o := range offers {
		if o.InstanceType == typ {
			return o
		}
	}
	t.Fatalf("no offer of cluster type %s among %+v", typ, offers)
	return cloudprovider.ClusterOffer{}
}

func clusterReq(t *testing.T, o cloudprovider.ClusterOffer, name string) cloudprovider.ClusterRequest {
	pool := backendtest.Pool(t, CloudName)
	owner := cloudprovider.Ownership{Resource: name, Token: "ab12cd34"}
	o.Pool = pool.Name
	return cloudprovider.ClusterRequest{Name: cloudprovider.CloudName(pool, name, owner.Token), Pool: pool, Offer: o, Owner: owner,
		SSHPublicKeys: []string{testKey}}
}

// TestClusterOffers reads the emulator's cluster types and availability: one fabric offer per
// available type and location, nodes and GPUs per node from node_details, the whole cluster's price,
// and nothing for a type listed but never available.
func TestClusterOffers(t *testing.T) {
	f := startEmulator(t, emu.Options{})
	b := f.backend(t, nil)
	offers := backendtest.ClusterOffers(t, b)
	got := map[string]cloudprovider.ClusterOffer{}
	for _, o := range offers {
		got[o.Region+"/"+o.InstanceType] = o
	}
	cases := []struct {
		key           string
		nodes, gpus   int
		gpuType       string
		price         string
		wantAvailable bool
	}{
		{"FIN-03/16H200", 2, 8, "h200", "$57.44/h", true},
		{"FIN-03/32H200", 4, 8, "h200", "$114.88/h", true},
		{"ICE-01/32B200", 4, 8, "b200", "$143.68/h", true},
		{"FIN-01/16B300", 0, 0, "", "", false},
	}
	for _, tc := range cases {
		o, ok := got[tc.key]
		if ok != tc.wantAvailable {
			t.Errorf("%s offered %v, want %v", tc.key, ok, tc.wantAvailable)
			continue
		}
		if !ok {
			continue
		}
		if o.Nodes != tc.nodes || o.GPUCount != tc.gpus || o.GPUType != tc.gpuType || o.Interconnect != cloudprovider.InterconnectFabric {
			t.Errorf("%s: %d nodes of %d %q on %q, want %d of %d %q on fabric", tc.key, o.Nodes, o.GPUCount, o.GPUType, o.Interconnect, tc.nodes, tc.gpus, tc.gpuType)
		}
		if o.PricePerHour.PerHour() != tc.price {
			t.Errorf("%s: price %s, want %s (the whole cluster)", tc.key, o.PricePerHour.PerHour(), tc.price)
		}
	}
}

// TestClusterLifecycle creates a 4-node cluster, watches it run (ip null while provisioning), checks
// nodes, names, ownership, private addresses and the fabric's environment, finds it again by name,
// and deletes it twice, with the create answered as JSON ({"id"}, as the SDKs show) or as plain text.
func TestClusterLifecycle(t *testing.T) {
	for _, asText := range []bool{false, true} {
		t.Run(fmt.Sprintf("id as text %v", asText), func(t *testing.T) { testClusterLifecycle(t, emu.Options{ClusterIDAsText: asText}) })
	}
}

func testClusterLifecycle(t *testing.T, opts emu.Options) {
	ctx := context.Background()
	f := startEmulator(t, opts)
	b := f.backend(t, nil)
	req := clusterReq(t, clusterOffer(t, b, "32H200"), "train")
	c, err := b.CreateCluster(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != cloudprovider.StatusPending || len(c.Nodes) != 4 {
		t.Fatalf("new cluster: %s with %d nodes, want pending with 4", c.Status, len(c.Nodes))
	}
	for _, n := range c.Nodes {
		if n.SSH != nil {
			t.Errorf("node %s has an address while %s", n.Name, n.CloudStatus)
		}
	}
	f.clock.Advance(bootTime)
	c, err = b.GetCluster(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != cloudprovider.StatusRunning || c.Env["NCCL_IB_PKEY"] != "1" || c.PricePerHour.PerHour() != "$114.88/h" {
		t.Errorf("cluster %s, env %v, price %s; want running, NCCL_IB_PKEY=1, $114.88/h", c.Status, c.Env, c.PricePerHour.PerHour())
	}
	seen := map[string]bool{}
	for i, n := range c.Nodes {
		want := req.Name + "-" + string(rune('1'+i))
		if n.Name != want || n.Cluster != c.ID || n.Owner.Token != req.Owner.Token || n.PrivateIP == "" || n.SSH == nil || n.GPUCount != 8 {
			t.Errorf("node %d: %+v; want %s in cluster %s owned by %s, with a private address and SSH", i, n, want, c.ID, req.Owner.Token)
		}
		if seen[n.PrivateIP] {
			t.Errorf("private address %s twice", n.PrivateIP)
		}
		seen[n.PrivateIP] = true
		// Workers have no public address: reached at the private one through the login node.
		if n.SSH != nil && (n.SSH.Host != n.PrivateIP || n.SSH.Jump == nil || n.SSH.Jump.Host == "" || n.SSH.Jump.Host == n.PrivateIP ||
			n.SSH.Jump.Host != c.Nodes[0].SSH.Jump.Host || n.SSH.Jump.Port != 22 || n.SSH.Jump.User != "root") {
			t.Errorf("node %s's SSH %+v (jump %+v); want its private address through the cluster's login node", n.Name, n.SSH, n.SSH.Jump)
		}
	}
	again, err := b.CreateCluster(ctx, req)
	if err != nil || again.ID != c.ID {
		t.Fatalf("second create of one name: %v, id %s; want the first cluster %s", err, again.ID, c.ID)
	}
	if st, _ := f.srv.Stats(); st.Created != 4 {
		t.Errorf("two creates of one name made %d nodes, want 4", st.Created)
	}
	for i := 0; i < 2; i++ {
		if err := b.DeleteCluster(ctx, c.ID); err != nil {
			t.Fatalf("delete %d: %v", i+1, err)
		}
	}
	if list, err := b.ListClusters(ctx, req.Name); err != nil || len(list) != 0 {
		t.Errorf("after delete: %v %v, want nothing", list, err)
	}
	if n := f.srv.DetachedVolumes(); n != 0 {
		t.Errorf("the cluster's shared volume is left detached (%d volumes billed)", n)
	}
	if _, err := b.GetCluster(ctx, "00000000-0000-4000-8000-000000000000"); !cloudprovider.IsNotFound(err) {
		t.Errorf("unknown cluster: %v, want not found", err)
	}
}

// TestClusterRefusals: a location without room for the whole cluster, a sold-out cloud and a price
// above the cap are capacity errors that place no node.
func TestClusterRefusals(t *testing.T) {
	cases := []struct {
		name   string
		faults simulation.Faults
		prep   func(t *testing.T, b *Backend, req *cloudprovider.ClusterRequest)
	}{
		{"stock used up", simulation.Faults{}, func(t *testing.T, b *Backend, req *cloudprovider.ClusterRequest) {
			first := clusterReq(t, req.Offer, "first")
			if _, err := b.CreateCluster(context.Background(), first); err != nil {
				t.Fatal(err)
			}
		}},
		{"sold out", simulation.Faults{SoldOut: true}, nil},
		{"price cap", simulation.Faults{}, func(t *testing.T, b *Backend, req *cloudprovider.ClusterRequest) {
			req.MaxPricePerHour = req.Offer.PricePerHour - money.Micro
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := startEmulator(t, emu.Options{})
			b := f.backend(t, nil)
			req := clusterReq(t, clusterOffer(t, b, "32H200"), "big")
			before := 0
			if tc.prep != nil {
				tc.prep(t, b, &req)
				st, _ := f.srv.Stats()
				before = st.Created
			}
			f.setFaults(t, tc.faults)
			_, err := b.CreateCluster(context.Background(), req)
			wantKind(t, err, cloudprovider.ErrCapacity)
			if st, _ := f.srv.Stats(); st.Created != before {
				t.Errorf("a refused cluster placed %d nodes", st.Created-before)
			}
			if list, _ := b.ListClusters(context.Background(), req.Name); len(list) != 0 {
				t.Errorf("a refused cluster is listed: %+v", list)
			}
		})
	}
}

// TestClusterCreateNeedsLocation: Verda refuses a cluster without location_code (since 2026-03-23).
func TestClusterCreateNeedsLocation(t *testing.T) {
	f := startEmulator(t, emu.Options{})
	c := f.client(t)
	_, err := c.CreateCluster(context.Background(), CreateClusterRequest{ClusterType: "16H200", Image: DefaultClusterImage, Hostname: "x", Description: "d"})
	wantKind(t, err, cloudprovider.ErrInvalid)
	if !strings.Contains(err.Error(), "location_code") {
		t.Errorf("error %v does not name location_code", err)
	}
}

// TestClusterLostCreate: a create whose answer is lost is found by name, not made twice.
func TestClusterLostCreate(t *testing.T) {
	f := startEmulator(t, emu.Options{})
	b := f.backend(t, nil)
	req := clusterReq(t, clusterOffer(t, b, "16H200"), "lost")
	f.setFaults(t, simulation.Faults{LoseCreateResponses: 1})
	c, err := b.CreateCluster(context.Background(), req)
	if err != nil || c.Name != req.Name {
		t.Fatalf("lost answer: %v %+v; want the cluster found by name", err, c)
	}
	if st, _ := f.srv.Stats(); st.Created != 2 {
		t.Errorf("%d nodes made, want 2 (one cluster)", st.Created)
	}
}

// TestClusterBootFailure: a cluster Verda reports in error is an error with Verda's word for it.
func TestClusterBootFailure(t *testing.T) {
	f := startEmulator(t, emu.Options{})
	b := f.backend(t, nil)
	f.setFaults(t, simulation.Faults{BootFailures: 1})
	c, err := b.CreateCluster(context.Background(), clusterReq(t, clusterOffer(t, b, "16H200"), "broken"))
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(bootTime)
	c, err = b.GetCluster(context.Background(), c.ID)
	if err != nil || c.Status != cloudprovider.StatusError || !strings.Contains(c.Message, "cluster") {
		t.Errorf("failed cluster: %v, %s %q; want an error status with a message", err, c.Status, c.Message)
	}
}

// TestClusterImage: a cluster offer boots the configured image when its type supports it, else the
// type's first supported image.
func TestClusterImage(t *testing.T) {
	cases := []struct{ configured, want string }{
		{"", DefaultClusterImage},
		{"ubuntu-22.04-cuda-12.4-cluster", "ubuntu-22.04-cuda-12.4-cluster"},
		{"ubuntu-24.04", "ubuntu-24.04-cuda-12.8-cluster"},
	}
	for _, tc := range cases {
		f := startEmulator(t, emu.Options{})
		b := f.backend(t, func(c *Config) { c.ClusterImage = tc.configured })
		o := clusterOffer(t, b, "16H200")
		if got := o.Details[DetailClusterImage]; got != tc.want {
			t.Errorf("configured %q: image %q, want %q", tc.configured, got, tc.want)
		}
		if _, err := b.CreateCluster(context.Background(), clusterReq(t, o, "img")); err != nil {
			t.Errorf("configured %q: %v (the emulator refuses an image the type does not support)", tc.configured, err)
		}
	}
}

// TestClusterNodeEndpoints: how a node is reached from what Verda answers. The shape is the Python
// SDK's clusters test payload (verda-cloud/sdk-python tests/unit_tests/clusters: worker_nodes with id,
// status, hostname and private_ip only; ip the cluster's): such a node is reached at its private
// address through the login node; a node that reports a public_ip is reached there directly; no
// login address yet, or a node not running, gives no endpoint.
func TestClusterNodeEndpoints(t *testing.T) {
	b := startEmulator(t, emu.Options{}).backend(t, nil)
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		name       string
		ip         *string
		node       verdaapi.ClusterWorkerNode
		want, jump string
	}{
		{"private only", str("10.0.0.1"), verdaapi.ClusterWorkerNode{ID: "n1", Hostname: "test-cluster-1", PrivateIP: str("10.0.0.2"), Status: "running"}, "10.0.0.2", "10.0.0.1"},
		{"public address", str("10.0.0.1"), verdaapi.ClusterWorkerNode{ID: "n1", Hostname: "test-cluster-1", PublicIP: str("198.51.100.7"), PrivateIP: str("10.0.0.2"), Status: "running"}, "198.51.100.7", ""},
		{"no login address yet", nil, verdaapi.ClusterWorkerNode{ID: "n1", Hostname: "test-cluster-1", PrivateIP: str("10.0.0.2"), Status: "running"}, "", ""},
		{"provisioning", str("10.0.0.1"), verdaapi.ClusterWorkerNode{ID: "n1", Hostname: "test-cluster-1", PrivateIP: str("10.0.0.2"), Status: "provisioning"}, "", ""},
	} {
		c := b.toCluster(VerdaCluster{ID: "c1", IP: tc.ip, Status: tc.node.Status, Hostname: "test-cluster", ClusterType: "16H200",
			GPU: GPU{Description: "16x H200 SXM5 141GB", NumberOfGPUs: 16}, WorkerNodes: []verdaapi.ClusterWorkerNode{tc.node}})
		n := c.Nodes[0]
		got, jump := "", ""
		if n.SSH != nil {
			got = n.SSH.Host
			if n.SSH.Jump != nil {
				jump = n.SSH.Jump.Host
			}
		}
		if got != tc.want || jump != tc.jump {
			t.Errorf("%s: SSH %+v, want host %q through %q", tc.name, n.SSH, tc.want, tc.jump)
		}
		if want := cloudprovider.StatusRunning; (tc.want != "") != (n.Status == want) {
			t.Errorf("%s: status %s", tc.name, n.Status)
		}
	}
}
