package controlplane

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// fakeClusters is an in-memory cloud with clusters, for what the sandbox cannot be: other clouds (their
// offers, for ranking), and an order cut short between two node placements (partial). All or nothing,
// idempotent by name (a create of a cut-short order's name places the rest), nodes named
// "<cluster name>-<i>" with private addresses, a cluster running once every node is placed,
// ownership confirmable per node.
type fakeClusters struct {
	*fakeBackend
	clusterOffers []cloudprovider.ClusterOffer
	// createErr is returned by the next CreateCluster (nothing is created); partial cuts the next order
	// short after that many nodes (ErrOther, as an interrupted create).
	createErr error
	partial   int
	// bidding keeps every order an open bid that never wins (no node allocated, nothing billed).
	bidding bool
	// reversed lists a cluster's nodes last first (clouds do not promise an order).
	reversed bool

	cmu      sync.Mutex
	clusters map[string]*cloudprovider.Cluster
	ordered  map[string]cloudprovider.ClusterRequest
	orders   int
}

func newFakeClusters(cloud string, offers ...cloudprovider.ClusterOffer) *fakeClusters {
	return &fakeClusters{fakeBackend: &fakeBackend{cloud: cloud}, clusterOffers: offers, clusters: map[string]*cloudprovider.Cluster{},
		ordered: map[string]cloudprovider.ClusterRequest{}}
}

func (f *fakeClusters) ClusterOffers(context.Context) ([]cloudprovider.ClusterOffer, error) {
	return slices.Clone(f.clusterOffers), nil
}

func (f *fakeClusters) CreateCluster(_ context.Context, req cloudprovider.ClusterRequest) (cloudprovider.Cluster, error) {
	f.cmu.Lock()
	defer f.cmu.Unlock()
	var c *cloudprovider.Cluster
	for _, k := range f.clusters {
		if k.Name == req.Name {
			c = k // idempotent by name: the rest of a cut-short order is placed below
		}
	}
	if c == nil {
		if err := f.createErr; err != nil {
			f.createErr = nil
			return cloudprovider.Cluster{}, err
		}
		if err := cloudprovider.CheckPriceCap(f.cloud, "creating cluster", req.Offer.InstanceType, req.Offer.PricePerHour, req.MaxPricePerHour); err != nil {
			return cloudprovider.Cluster{}, err
		}
		f.orders++
		id := fmt.Sprintf("%s-c%d", f.cloud, f.orders)
		c = &cloudprovider.Cluster{ID: id, Name: req.Name, Cloud: f.cloud, Region: req.Offer.Region, Status: cloudprovider.StatusPending,
			PricePerHour: req.Offer.PricePerHour, Env: map[string]string{"NCCL_IB_PKEY": "1"}, Owner: req.Owner, CreatedAt: time.Now()}
		f.clusters[id], f.ordered[id] = c, req
	}
	want := f.ordered[c.ID]
	for i := len(c.Nodes) + 1; i <= want.Offer.Nodes; i++ {
		if f.partial > 0 && i > f.partial {
			f.partial = 0
			return cloudprovider.Cluster{}, cloudprovider.Errorf(cloudprovider.ErrOther, f.cloud, "creating cluster", "interrupted while its nodes were placed")
		}
		c.Nodes = append(c.Nodes, cloudprovider.ClusterNode{PrivateIP: fmt.Sprintf("127.100.%d.%d", f.orders, i), Instance: cloudprovider.Instance{
			ID: fmt.Sprintf("%s-n%d", c.ID, i), Name: fmt.Sprintf("%s-%d", req.Name, i), Cloud: f.cloud, Region: want.Offer.Region,
			InstanceType: want.Offer.InstanceType, GPUType: want.Offer.GPUType, GPUCount: want.Offer.GPUCount, Spot: want.Offer.Spot,
			Status: cloudprovider.StatusPending, Cluster: c.ID, Owner: want.Owner}})
	}
	return f.read(c), nil
}

// read returns the cluster as the cloud sees it now: running (every node with an address) once every
// node ordered is placed.
func (f *fakeClusters) read(c *cloudprovider.Cluster) cloudprovider.Cluster {
	if f.bidding {
		return cloudprovider.Cluster{ID: c.ID, Name: c.Name, Cloud: c.Cloud, Region: c.Region, Status: cloudprovider.StatusPending,
			CloudStatus: "Open", AwaitingAllocation: true, Owner: c.Owner}
	}
	if c.Status == cloudprovider.StatusPending && len(c.Nodes) == f.ordered[c.ID].Offer.Nodes {
		c.Status = cloudprovider.StatusRunning
		for i := range c.Nodes {
			c.Nodes[i].Status = cloudprovider.StatusRunning
			c.Nodes[i].SSH = &cloudprovider.SSHEndpoint{Host: "127.0.0.1", Port: 2200 + i, User: "root"}
		}
	}
	out := *c
	out.Nodes = slices.Clone(c.Nodes)
	if f.reversed {
		slices.Reverse(out.Nodes)
	}
	return out
}

func (f *fakeClusters) GetCluster(_ context.Context, id string) (cloudprovider.Cluster, error) {
	f.cmu.Lock()
	defer f.cmu.Unlock()
	c, ok := f.clusters[id]
	if !ok {
		return cloudprovider.Cluster{}, cloudprovider.Errorf(cloudprovider.ErrNotFound, f.cloud, "getting cluster", "no cluster %s", id)
	}
	return f.read(c), nil
}

func (f *fakeClusters) ListClusters(_ context.Context, prefix string) ([]cloudprovider.Cluster, error) {
	f.cmu.Lock()
	defer f.cmu.Unlock()
	var out []cloudprovider.Cluster
	for _, c := range fakeNamed(f.clusters, prefix, func(c *cloudprovider.Cluster) string { return c.Name }) {
		out = append(out, f.read(c))
	}
	return out, nil
}

func (f *fakeClusters) DeleteCluster(_ context.Context, id string) error {
	f.cmu.Lock()
	defer f.cmu.Unlock()
	return fakeDelete(f.clusters, f.cloud, "deleting cluster", id)
}

func (f *fakeClusters) ConfirmOwnership(_ context.Context, id string) error {
	f.cmu.Lock()
	defer f.cmu.Unlock()
	for _, c := range f.clusters {
		for i := range c.Nodes {
			if c.Nodes[i].ID == id {
				c.Nodes[i].Owner.Confirmed = true
				return nil
			}
		}
	}
	return cloudprovider.Errorf(cloudprovider.ErrNotFound, f.cloud, "confirming", "no node %s", id)
}

// List lists the cloud's machines and its clusters' nodes, as a pool listing does.
func (f *fakeClusters) List(ctx context.Context, prefix string) ([]cloudprovider.Instance, error) {
	out, _ := f.fakeBackend.List(ctx, prefix)
	f.cmu.Lock()
	defer f.cmu.Unlock()
	for _, c := range f.clusters {
		for _, n := range f.read(c).Nodes {
			if strings.HasPrefix(n.Name, prefix) {
				out = append(out, n.Instance)
			}
		}
	}
	return out, nil
}

func (f *fakeClusters) live() int {
	f.cmu.Lock()
	defer f.cmu.Unlock()
	return len(f.clusters)
}

func clusterOffer(region, it string, nodes, gpus int, price float64, ic cloudprovider.Interconnect) cloudprovider.ClusterOffer {
	return cloudprovider.ClusterOffer{Offer: cloudprovider.Offer{Region: region, InstanceType: it, GPUType: "h100", GPUCount: gpus,
		PricePerHour: usd(price), Available: -1}, Nodes: nodes, Interconnect: ic}
}

const fabric, anyNet = cloudprovider.InterconnectFabric, cloudprovider.InterconnectAny

func TestClusterOfferIDRoundTrip(t *testing.T) {
	co := clusterOffer("eu-1", "gpu-h100x8", 4, 8, 40, fabric)
	co.Pool = "sandbox-vm-pool"
	id := ClusterOfferID(co)
	if id != "sandbox-vm-pool/eu-1/4xgpu-h100x8/ondemand@40.00" {
		t.Fatalf("ClusterOfferID = %q", id)
	}
	p, err := ParseClusterOfferID(id)
	if err != nil || p.Pool != co.Pool || p.Region != "eu-1" || p.InstanceType != "gpu-h100x8" || p.Nodes != 4 || p.Spot || p.PricePerHour != usd(40) {
		t.Fatalf("ParseClusterOfferID(%q) = %+v, %v", id, p, err)
	}
	// A machine offer ID is not a cluster offer ID.
	for _, bad := range []string{"sandbox-vm-pool/eu-1/gpu-h100x8/ondemand@5.00", "p/r/0xt/spot@1", "p/r/04xt/spot@1", "p/r/4x/spot@1", "p/r/4xt/spot"} {
		if _, err := ParseClusterOfferID(bad); err == nil {
			t.Errorf("ParseClusterOfferID(%q) accepted it", bad)
		}
	}
}

// clusterClouds is one of each kind of cloud for ranking: a sandbox with fabric clusters, an Atlas
// whose price factor halves its ranking price, a Verda with clusters on any network only, a Mithril
// whose region holds at most 2 nodes, and a Lambda without any cluster API.
func clusterClouds() (sb, atlas, verda, mithril *fakeClusters, lambda *fakeBackend) {
	sb = newFakeClusters("sandbox", clusterOffer("eu-1", "gpu-h100x8", 4, 8, 40, fabric), clusterOffer("us-1", "gpu-h100x8", 4, 8, 44, fabric),
		clusterOffer("eu-1", "gpu-h100x8", 2, 8, 20, fabric))
	a := clusterOffer("atl-1", "h100.8x", 4, 8, 48, fabric)
	a.RankPrice = usd(24) // price_factor 0.5: preferred, billed at its list price
	atlas = newFakeClusters("atlas", a)
	verda = newFakeClusters("verda", clusterOffer("FIN-01", "8H100.80S", 4, 8, 30, anyNet))
	mithril = newFakeClusters("mithril", clusterOffer("us-central1-a", "it_h100", 2, 8, 16, fabric))
	lambda = &fakeBackend{cloud: "lambda", offers: []cloudprovider.Offer{offer("us-east-1", "gpu_8x_h100", 8, 20)}}
	return
}

func TestClusterOffersRanking(t *testing.T) {
	spot := true
	cases := []struct {
		name   string
		spec   ClusterSpec
		winner string
		// reasons: what each other cloud's reason contains ("" when it must be absent).
		reasons map[string]string
	}{
		{name: "fabric: Atlas preferred by its price factor", spec: ClusterSpec{},
			winner: "atlas-vm-pool/atl-1/4xh100.8x/ondemand@48.00",
			reasons: map[string]string{"sandbox": "cheapest offer 4xgpu-h100x8 in eu-1 costs $40.00/h, $8.00/h less than atlas, which is preferred",
				"verda": "no fabric", "mithril": "at most 2 nodes in us-central1-a", "lambda": "no cluster API",
				"atlas-vm-pool/": ""}},
		{name: "any network: Verda is cheaper", spec: ClusterSpec{Interconnect: anyNet, Clouds: []string{"sandbox", "verda", "mithril", "lambda"}},
			winner:  "verda-vm-pool/FIN-01/4x8H100.80S/ondemand@30.00",
			reasons: map[string]string{"sandbox": "costs $40.00/h, $10.00/h more than verda", "mithril": "at most 2 nodes", "lambda": "no cluster API", "atlas": ""}},
		{name: "price cap on the whole cluster", spec: ClusterSpec{MaxPricePerHour: usd(42), Clouds: []string{"sandbox", "atlas"}},
			winner: "sandbox-vm-pool/eu-1/4xgpu-h100x8/ondemand@40.00",
			reasons: map[string]string{"atlas": "cheapest matching cluster costs $48.00/h (4x h100.8x in atl-1), above max_price_per_hour $42.00/h",
				"sandbox-vm-pool/us-1": ""}},
		{name: "two nodes", spec: ClusterSpec{Nodes: 2, Clouds: []string{"sandbox", "mithril", "atlas"}},
			winner:  "mithril-vm-pool/us-central1-a/2xit_h100/ondemand@16.00",
			reasons: map[string]string{"sandbox": "$4.00/h more than mithril", "atlas": "clusters of 4 nodes, not 2", "verda": ""}},
		{name: "spot only", spec: ClusterSpec{Spot: &spot, Clouds: []string{"sandbox"}}, winner: "",
			reasons: map[string]string{"sandbox": "only on-demand clusters of 8x h100 nodes (spot = true asks for spot)"}},
		{name: "regions", spec: ClusterSpec{Regions: []string{"nowhere"}, Clouds: []string{"sandbox"}}, winner: "",
			reasons: map[string]string{"sandbox": `no 8x h100 offer in regions "nowhere"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sb, atlas, verda, mithril, lambda := clusterClouds()
			cp := New(testInventory(t), []cloudprovider.InstanceManagerBackend{sb, atlas, verda, mithril, lambda}, Options{})
			spec := tc.spec
			spec.Name, spec.GPUType, spec.GPUCount, spec.Kind = "train", "h100", 8, "vm"
			if spec.Nodes == 0 {
				spec.Nodes = 4
			}
			plan, err := cp.PlanNewCluster(context.Background(), spec, nil)
			if tc.winner == "" {
				var rf *Refusal
				if !errors.As(err, &rf) {
					t.Fatalf("PlanNewCluster = %+v, %v; want a refusal", plan, err)
				}
				for cloud, want := range tc.reasons {
					if !strings.Contains(rf.Detail, cloud+": "+want) {
						t.Errorf("refusal does not say %s: %q:\n%s", cloud, want, rf.Detail)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if plan.OfferID != tc.winner {
				t.Fatalf("chose %s, want %s (other clouds %v)", plan.OfferID, tc.winner, plan.OtherClouds)
			}
			p, _ := ParseClusterOfferID(plan.OfferID)
			if plan.PricePerHour != p.PricePerHour || plan.Cloud != cp.PoolCloud(p.Pool) || plan.Region != p.Region {
				t.Errorf("plan %+v does not show its offer", plan)
			}
			for key, want := range tc.reasons {
				got := ""
				for k, v := range plan.OtherClouds {
					if strings.HasPrefix(k, key) {
						got = v
					}
				}
				if want == "" && got != "" || !strings.Contains(got, want) {
					t.Errorf("other_clouds[%s] = %q, want it to contain %q (all: %v)", key, got, want, plan.OtherClouds)
				}
			}
		})
	}
}

// clusterProvisioner provisions nodes (each Provision waits until every node of the batch has
// started, so nodes provisioned one after another never finish) and checks clusters.
type clusterProvisioner struct {
	batch   int
	failOn  string // a node whose provisioning fails
	checkOK bool
	busbw   float64

	mu      sync.Mutex
	started int
	all     chan struct{}
	checks  []cloudprovider.ClusterCheckRequest
}

func newClusterProvisioner(batch int) *clusterProvisioner {
	return &clusterProvisioner{batch: batch, all: make(chan struct{}), checkOK: true, busbw: 182.5}
}

func (p *clusterProvisioner) Digest(inventory.Pool, map[string]any) (string, error) { return "d1", nil }

func (p *clusterProvisioner) Provision(ctx context.Context, req cloudprovider.ProvisionRequest) (cloudprovider.ProvisionResult, error) {
	p.mu.Lock()
	p.started++
	if p.started == p.batch {
		close(p.all)
	}
	p.mu.Unlock()
	select {
	case <-p.all:
	case <-ctx.Done():
		return cloudprovider.ProvisionResult{}, ctx.Err()
	}
	if req.Instance.Name == p.failOn {
		return cloudprovider.ProvisionResult{FailedTask: "gpu health", Message: "nvidia-smi found 7 GPUs"}, &cloudprovider.PermanentError{Err: errors.New("nvidia-smi found 7 GPUs")}
	}
	return cloudprovider.ProvisionResult{HostKey: "ssh-ed25519 " + req.Instance.Name}, nil
}

func (p *clusterProvisioner) CheckCluster(_ context.Context, req cloudprovider.ClusterCheckRequest) (cloudprovider.ClusterCheckResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.checks = append(p.checks, req)
	if !p.checkOK {
		// The error is the message, as the provisioner's ClusterCheckError is.
		return cloudprovider.ClusterCheckResult{FailedNode: req.Nodes[1].Instance.Name, Message: "port 1 of mlx5_0 is Down"}, errors.New("port 1 of mlx5_0 is Down")
	}
	return cloudprovider.ClusterCheckResult{BusBandwidthGBps: p.busbw}, nil
}

func trainSpec() ClusterSpec {
	return ClusterSpec{Name: "train", GPUType: "h100", GPUCount: 8, Nodes: 4, Kind: "vm", MinBusBandwidthGBps: 150}
}

func TestCreateClusterAllOrNothing(t *testing.T) {
	ctx := context.Background()
	sb := newFakeClusters("sandbox", clusterOffer("eu-1", "gpu-h100x8", 4, 8, 40, fabric))
	atlas := newFakeClusters("atlas", clusterOffer("atl-1", "h100.8x", 4, 8, 52, fabric))
	sb.createErr = cloudprovider.Errorf(cloudprovider.ErrCapacity, "sandbox", "creating cluster", "eu-1 can start 3 of 4 nodes now")
	now := time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)
	cp := New(testInventory(t), []cloudprovider.InstanceManagerBackend{sb, atlas}, Options{CapacityMemory: 30 * time.Minute, Now: func() time.Time { return now },
		Journal: Journal{Dir: t.TempDir()}, PollInterval: time.Millisecond})
	spec := trainSpec()
	spec.MinBusBandwidthGBps = 0
	plan, err := cp.PlanNewCluster(ctx, spec, nil)
	if err != nil || plan.Cloud != "sandbox" {
		t.Fatalf("plan %+v, %v", plan, err)
	}
	var saves int
	_, err = cp.CreateCluster(ctx, spec, plan, func(ClusterRecord) { saves++ })
	var ce *ClusterCapacityError
	if !errors.As(err, &ce) || !cloudprovider.IsCapacity(err) || !strings.Contains(err.Error(), "nothing stays billed") || ce.Capacity == nil ||
		len(ce.Capacity.Misses) != 1 || ce.Capacity.Misses[0].OfferID != plan.OfferID || !ce.Capacity.Until.Equal(now.Add(30*time.Minute)) {
		t.Fatalf("CreateCluster = %v (%+v)", err, ce)
	}
	if saves != 0 || sb.live() != 0 {
		t.Errorf("%d saves, %d clusters live after a capacity error", saves, sb.live())
	}
	if _, ok, _ := cp.clusterJournal().Get("train"); ok {
		t.Error("an intent is left after a create that created nothing")
	}
	// The next plan (another process, remembering from the state) skips the offer and says so.
	cp2 := New(testInventory(t), []cloudprovider.InstanceManagerBackend{sb, atlas}, Options{CapacityMemory: 30 * time.Minute, Now: func() time.Time { return now.Add(time.Minute) }})
	cp2.RememberCapacity(ce.Capacity.Misses)
	plan2, err := cp2.PlanNewCluster(ctx, spec, nil)
	if err != nil || plan2.Cloud != "atlas" || len(plan2.Notices) != 1 || !strings.Contains(plan2.Notices[0].Detail, plan.OfferID) ||
		!strings.Contains(plan2.OtherClouds["sandbox"], "recently ran out of capacity") {
		t.Fatalf("plan after the miss = %+v, %v", plan2, err)
	}
}

// cancelOnFirst cancels the apply while the first node provisions (Ctrl-C during Ansible).
type cancelOnFirst struct {
	*clusterProvisioner
	cancel context.CancelFunc
	once   sync.Once
}

func (p *cancelOnFirst) Provision(ctx context.Context, req cloudprovider.ProvisionRequest) (cloudprovider.ProvisionResult, error) {
	p.once.Do(p.cancel)
	<-ctx.Done()
	return cloudprovider.ProvisionResult{}, ctx.Err()
}

// lockedInspector is fakeInspector safe for concurrent drains.
type lockedInspector struct {
	mu      sync.Mutex
	drained []string
	marker  Marker
	onDrain func()
}

func (f *lockedInspector) ProbeHealth(context.Context, cloudprovider.SSHEndpoint, string) (string, error) {
	return "", nil
}

func (f *lockedInspector) ReadMarker(context.Context, cloudprovider.SSHEndpoint, string) (Marker, string, error) {
	if f.marker.Digest == "" {
		return Marker{}, "", cloudprovider.ErrNoMarker
	}
	return f.marker, "ssh-ed25519 SEEN", nil
}

func (f *lockedInspector) Drain(_ context.Context, inst cloudprovider.Instance, pool inventory.Pool, _ string, _ int, _ string) error {
	if f.onDrain != nil {
		f.onDrain()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drained = append(f.drained, inst.Name+"@"+pool.Name)
	return nil
}

func TestPlanClusterChange(t *testing.T) {
	_, cp := sandboxCluster(t, newClusterProvisioner(1), Options{})
	ready := ClusterRecord{ID: "sbx-vm-train--abcdefgh", Cloud: "sandbox", Pool: "sandbox-vm-pool", Region: "eu-1", OfferID: "sandbox-vm-pool/eu-1/4xgpu-h100x8/ondemand@40.00",
		Status: "ready", ProvisioningDigest: "d1", GPUType: "h100", GPUCount: 8, Interconnect: anyNet, PricePerHour: usd(40),
		Nodes: []ClusterNodeRecord{{Name: "n-1", Status: "ready", Health: HealthHealthy}, {Name: "n-2", Status: "ready", Health: HealthHealthy},
			{Name: "n-3", Status: "ready", Health: HealthHealthy}, {Name: "n-4", Status: "ready", Health: HealthHealthy}}}
	on := true
	cases := []struct {
		name    string
		spec    func(*ClusterSpec)
		rec     func(*ClusterRecord)
		change  Change
		because string
	}{
		{name: "unchanged", change: Keep},
		{name: "nodes", spec: func(s *ClusterSpec) { s.Nodes = 8 }, change: Replace, because: "nodes"},
		{name: "gpu_count", spec: func(s *ClusterSpec) { s.GPUCount = 4 }, change: Replace, because: "gpu_count"},
		{name: "fabric asked of a cluster without", spec: func(s *ClusterSpec) { s.Interconnect = fabric }, change: Replace, because: "interconnect"},
		{name: "cloud no longer allowed", spec: func(s *ClusterSpec) { s.Clouds = []string{"verda"} }, change: Replace, because: "clouds"},
		{name: "region no longer allowed", spec: func(s *ClusterSpec) { s.Regions = []string{"us-1"} }, change: Replace, because: "regions"},
		{name: "spot asked", spec: func(s *ClusterSpec) { s.Spot = &on }, change: Replace, because: "spot"},
		{name: "variables changed", spec: func(s *ClusterSpec) { s.ProvisioningVars = map[string]any{"x": 1} }, rec: func(r *ClusterRecord) { r.ProvisioningDigest = "d0" }, change: Reprovision},
		{name: "variables unknown", spec: func(s *ClusterSpec) { s.ProvisioningVarsUnknown = true }, change: Reprovision},
		{name: "failed at the cloud", rec: func(r *ClusterRecord) { r.Status, r.Nodes[1].Status = "error", "error" }, change: Replace, because: "status"},
		{name: "failed the cluster check (the record does not say)", rec: func(r *ClusterRecord) { r.Status = "error" }, change: Reprovision},
		{name: "failed provisioning", rec: func(r *ClusterRecord) {
			r.Status, r.Nodes[1].Status, r.ProvisioningError = "error", "error", "host n-2"
		},
			change: Reprovision},
		{name: "unhealthy node kept", rec: func(r *ClusterRecord) { r.Nodes[2].Health = HealthUnhealthy }, change: Keep},
		{name: "unhealthy node replaced", spec: func(s *ClusterSpec) { s.ReplaceWhenUnhealthy = true }, rec: func(r *ClusterRecord) { r.Nodes[2].Health = HealthUnhealthy }, change: Replace, because: "health"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := ClusterSpec{Name: "train", GPUType: "h100", GPUCount: 8, Nodes: 4, Kind: "vm", Interconnect: anyNet}
			rec := ready
			rec.Nodes = slices.Clone(ready.Nodes)
			if tc.spec != nil {
				tc.spec(&spec)
			}
			if tc.rec != nil {
				tc.rec(&rec)
			}
			ch, err := cp.PlanClusterChange(spec, rec)
			if err != nil || ch.Change != tc.change || ch.ReplaceBecause != tc.because {
				t.Errorf("PlanClusterChange = %+v, %v; want %v because %q", ch, err, tc.change, tc.because)
			}
		})
	}
}

func TestCreateClusterOrderCutShort(t *testing.T) {
	for _, stateKept := range []bool{true, false} {
		t.Run(fmt.Sprintf("state kept %t", stateKept), func(t *testing.T) {
			sb := newFakeClusters("sandbox", clusterOffer("eu-1", "gpu-h100x8", 4, 8, 40, fabric))
			sb.partial = 2 // the create was cut short while the cloud placed the nodes: 2 of 4 placed
			journal := Journal{Dir: t.TempDir()}
			opts := Options{Journal: journal, PollInterval: time.Millisecond, ProvisionBackoff: time.Millisecond, Provisioner: newClusterProvisioner(4)}
			cp := New(testInventory(t), []cloudprovider.InstanceManagerBackend{sb}, opts)
			spec := trainSpec()
			plan := mustPlanCluster(t, cp, spec)
			// The apply is cancelled (its timeout, Ctrl-C) while it waits for a cluster that cannot run.
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			var last ClusterRecord
			if _, err := cp.CreateCluster(ctx, spec, plan, func(r ClusterRecord) { last = r }); err == nil || last.Status != "pending" || len(last.Nodes) != 2 {
				t.Fatalf("cut-short create: %v (last saved %+v)", err, last)
			}
			rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
			defer rcancel()
			opts.Provisioner = newClusterProvisioner(4)
			cp2 := New(testInventory(t), []cloudprovider.InstanceManagerBackend{sb}, opts)
			rec := last
			var err error
			if stateKept {
				if found, err := cp2.RefreshCluster(rctx, &rec); !found || err != nil {
					t.Fatalf("refresh: %v %v", found, err)
				}
				err = cp2.ResumeCluster(rctx, spec, &rec, nil)
			} else {
				rec, err = cp2.CreateCluster(rctx, spec, plan, nil)
			}
			if err != nil || rec.Status != "ready" || len(rec.Nodes) != 4 || sb.orders != 1 || sb.live() != 1 {
				t.Fatalf("after the re-apply: %+v, %v; %d ordered, %d live", rec, err, sb.orders, sb.live())
			}
		})
	}
}

func TestCreateClusterBidNotWonIsCancelled(t *testing.T) {
	ctx := context.Background()
	mithril := newFakeClusters("mithril", cloudprovider.ClusterOffer{Offer: cloudprovider.Offer{Region: "us-central1-a", InstanceType: "it_h100",
		GPUType: "h100", GPUCount: 8, PricePerHour: usd(32), Spot: true, Available: 4}, Nodes: 4, Interconnect: anyNet})
	mithril.bidding = true
	journal := Journal{Dir: t.TempDir()}
	cp := New(testInventory(t), []cloudprovider.InstanceManagerBackend{mithril}, Options{Journal: journal, PollInterval: time.Millisecond,
		CapacityMemory: time.Hour})
	spec := trainSpec()
	spec.Interconnect, spec.BidTimeout, spec.MinBusBandwidthGBps = anyNet, 20*time.Millisecond, 0
	plan := mustPlanCluster(t, cp, spec)
	var saves int
	_, err := cp.CreateCluster(ctx, spec, plan, func(ClusterRecord) { saves++ })
	var ce *ClusterCapacityError
	if !errors.As(err, &ce) || ce.Capacity == nil || !strings.Contains(ce.Capacity.Misses[0].Reason, "did not win within bid_timeout 20ms") ||
		!strings.Contains(err.Error(), "nothing stays billed") {
		t.Fatalf("CreateCluster = %v", err)
	}
	if mithril.live() != 0 || saves != 0 || mithril.orders != 1 {
		t.Errorf("after a bid that did not win: %d live, %d saves, %d ordered", mithril.live(), saves, mithril.orders)
	}
	if _, ok, _ := cp.clusterJournal().Get("train"); ok {
		t.Error("an intent is left after the bid was cancelled")
	}
}

func TestClusterNodesInNodeOrder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sb := newFakeClusters("sandbox", clusterOffer("eu-1", "gpu-h100x8", 4, 8, 40, fabric))
	sb.reversed = true
	in := &lockedInspector{marker: Marker{Digest: "d1"}}
	cp := New(testInventory(t), []cloudprovider.InstanceManagerBackend{sb}, Options{Journal: Journal{Dir: t.TempDir()}, Inspector: in,
		PollInterval: time.Millisecond, Provisioner: newClusterProvisioner(4)})
	_, rec := mustCreateCluster(t, ctx, cp, trainSpec())
	imported, err := cp.ImportCluster(ctx, "sandbox/"+rec.CloudClusterID)
	if err != nil {
		t.Fatal(err)
	}
	const hostfile = "127.100.1.1 slots=8\n127.100.1.2 slots=8\n127.100.1.3 slots=8\n127.100.1.4 slots=8\n"
	for _, r := range []ClusterRecord{rec, imported} {
		if r.Hostfile != hostfile || r.Nodes[0].Name != rec.ID+"-1" || r.Nodes[3].PrivateIP != "127.100.1.4" || r.Nodes[3].ID != "sandbox-c1-n4" {
			t.Errorf("nodes out of node order: hostfile %q, nodes %+v", r.Hostfile, r.Nodes)
		}
	}
}

// The cluster lifecycle against the sandbox's own ClusterBackend (its default catalog: an InfiniBand
// fabric in sbx-eu-1 only, clusters of any count up to 8 nodes at 4 × the node price, nodes at
// 127.100.<cluster>.<i>). The provisioner is the in-test one (clusterProvisioner): the playbooks and
// the cluster check itself are the provisioning package's tests.

func sandboxCluster(t *testing.T, prov cloudprovider.Provisioner, opts Options) (*sandbox.Backend, *ControlPlane) {
	t.Helper()
	sb, err := sandbox.New(sandbox.Config{Dir: t.TempDir(), BootTime: 20 * time.Millisecond, DeleteTime: 10 * time.Millisecond}, testInventory(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	opts.Provisioner, opts.PollInterval, opts.PollMax, opts.ProvisionBackoff = prov, 5*time.Millisecond, 20*time.Millisecond, time.Millisecond
	if opts.Journal.Dir == "" {
		opts.Journal = Journal{Dir: t.TempDir()}
	}
	return sb, New(testInventory(t), []cloudprovider.InstanceManagerBackend{sb}, opts)
}

func sandboxSpec(kind string) ClusterSpec {
	return ClusterSpec{Name: "train", GPUType: "h100", GPUCount: 8, Nodes: 4, Kind: kind, MinBusBandwidthGBps: 150}
}

// mustPlanCluster is the plan PlanNewCluster makes of spec without an earlier quote.
func mustPlanCluster(t *testing.T, cp *ControlPlane, spec ClusterSpec) ClusterPlan {
	t.Helper()
	plan, err := cp.PlanNewCluster(context.Background(), spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// mustCreateCluster plans spec (mustPlanCluster) and creates it.
func mustCreateCluster(t *testing.T, ctx context.Context, cp *ControlPlane, spec ClusterSpec) (ClusterPlan, ClusterRecord) {
	t.Helper()
	plan := mustPlanCluster(t, cp, spec)
	rec, err := cp.CreateCluster(ctx, spec, plan, nil)
	if err != nil {
		t.Fatal(err)
	}
	return plan, rec
}

// liveNodes counts the sandbox's instances that are not deleted (every node of every cluster).
func liveNodes(t *testing.T, sb *sandbox.Backend) int {
	t.Helper()
	live, err := sb.Live()
	if err != nil {
		t.Fatal(err)
	}
	return len(live)
}

func TestSandboxClusterCreateReady(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	prov := newClusterProvisioner(4)
	sb, cp := sandboxCluster(t, prov, Options{})
	spec := sandboxSpec("vm")
	plan := mustPlanCluster(t, cp, spec)
	// Only sbx-eu-1 has a fabric; a node of 8 H100 costs $19.92 there: the cluster 4 times that.
	if plan.OfferID != "sandbox-vm-pool/sbx-eu-1/4xsbx.h100.8x/ondemand@79.68" || plan.PricePerHour != usd(79.68) || len(plan.Notices) != 0 {
		t.Fatalf("plan = %+v", plan)
	}
	var first *ClusterRecord
	rec, err := cp.CreateCluster(ctx, spec, plan, func(r ClusterRecord) {
		if first == nil {
			first = &r
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	// Saved as soon as the sandbox accepted it: before provisioning (its nodes may already run, as the
	// sandbox's boot takes no time at all).
	if first == nil || first.CloudClusterID == "" || (first.Status != "pending" && first.Status != "running") || first.ProvisioningDigest != "" {
		t.Errorf("first save = %+v; want the cluster as soon as the sandbox accepted it, before provisioning", first)
	}
	if rec.Status != "ready" || len(rec.Nodes) != 4 || rec.Interconnect != fabric || rec.BusBandwidthGBps != 182.5 || rec.PricePerHour != usd(79.68) {
		t.Fatalf("record = %+v", rec)
	}
	var want strings.Builder
	for i, n := range rec.Nodes {
		if n.Name != fmt.Sprintf("%s-%d", rec.ID, i+1) || n.Status != "ready" || n.PrivateIP == "" {
			t.Errorf("node %d = %+v", i+1, n)
		}
		fmt.Fprintf(&want, "%s slots=8\n", n.PrivateIP)
	}
	if rec.Hostfile != want.String() || !strings.HasPrefix(rec.Hostfile, "127.100.") || rec.NCCLEnv["NCCL_IB_HCA"] == "" {
		t.Errorf("hostfile %q, nccl env %v", rec.Hostfile, rec.NCCLEnv)
	}
	if len(prov.checks) != 1 || !prov.checks[0].Fabric || prov.checks[0].Nodes[0].PrivateIP != rec.Nodes[0].PrivateIP {
		t.Errorf("cluster checks: %+v", prov.checks)
	}
	// The nodes are the pool's machines, listed with their cluster, held: never orphans.
	ms := cp.Machines(ctx, nil)
	if len(ms.Machines) != 4 || len(ms.Orphans(0)) != 0 {
		t.Fatalf("machines %d, orphans %v", len(ms.Machines), ms.Orphans(0))
	}
	for _, m := range ms.Machines {
		if m.Instance.Cluster != rec.CloudClusterID || m.Resource != "train" || m.Ownership != OwnedConfirmed {
			t.Errorf("node %s: cluster %q, resource %q, %s", m.Instance.Name, m.Instance.Cluster, m.Resource, m.Ownership)
		}
	}
	// A refresh reads it back unchanged.
	again := rec
	if found, err := cp.RefreshCluster(ctx, &again); !found || err != nil || again.Status != "ready" || again.Hostfile != rec.Hostfile {
		t.Errorf("refresh: %v %v %+v", found, err, again)
	}
	if n := liveNodes(t, sb); n != 4 {
		t.Errorf("%d nodes live", n)
	}
}

func TestSandboxClusterAllOrNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := time.Now()
	sb, cp := sandboxCluster(t, newClusterProvisioner(4), Options{CapacityMemory: 30 * time.Minute, Now: func() time.Time { return now }})
	// The region delivers all but the last node.
	if err := sb.SetAllFaults(sandbox.Faults{PartialClusters: 1}); err != nil {
		t.Fatal(err)
	}
	spec := sandboxSpec("vm")
	plan := mustPlanCluster(t, cp, spec)
	var saves int
	_, err := cp.CreateCluster(ctx, spec, plan, func(ClusterRecord) { saves++ })
	var ce *ClusterCapacityError
	if !errors.As(err, &ce) || !cloudprovider.IsCapacity(err) || !strings.Contains(err.Error(), "nothing stays billed") || ce.Capacity == nil {
		t.Fatalf("CreateCluster = %v", err)
	}
	if n := liveNodes(t, sb); n != 0 || saves != 0 {
		t.Fatalf("%d nodes live, %d saves after a cluster the region could not fill", n, saves)
	}
	// The next plan skips the offer (the only fabric one): it says why, and when it is tried again.
	_, err = cp.PlanNewCluster(ctx, spec, nil)
	var rf *Refusal
	if !errors.As(err, &rf) || !strings.Contains(rf.Detail, plan.OfferID) || !strings.Contains(rf.Detail, "capacity_memory") {
		t.Fatalf("plan after the miss: %v", err)
	}
	// On any network another region serves it.
	spec.Interconnect = anyNet
	plan2, err := cp.PlanNewCluster(ctx, spec, nil)
	if err != nil || plan2.Region == "sbx-eu-1" {
		t.Fatalf("plan on any network after the miss = %+v, %v", plan2, err)
	}
}

func TestSandboxClusterOffersReasons(t *testing.T) {
	ctx := context.Background()
	sb, cp := sandboxCluster(t, newClusterProvisioner(4), Options{})
	cat := sandbox.DefaultCatalog()
	for i := range cat {
		cat[i].MaxClusterNodes = 2
	}
	if err := sb.SetCatalog(cat); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		spec func(*ClusterSpec)
		why  string
	}{
		{"too many nodes", func(*ClusterSpec) {}, "sandbox: at most 2 nodes in sbx-eu-1"},
		{"no fabric in the asked regions", func(s *ClusterSpec) { s.Nodes, s.Regions = 2, []string{"sbx-us-1"} }, "sandbox: no fabric"},
		{"above the cap for the whole cluster", func(s *ClusterSpec) { s.Nodes, s.MaxPricePerHour = 2, usd(39) }, "sandbox: cheapest matching cluster costs $39.84/h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := sandboxSpec("vm")
			tc.spec(&spec)
			_, err := cp.PlanNewCluster(ctx, spec, nil)
			var rf *Refusal
			if !errors.As(err, &rf) || !strings.Contains(rf.Detail, tc.why) {
				t.Errorf("PlanNewCluster = %v, want %q", err, tc.why)
			}
		})
	}
}

func TestSandboxClusterInterruptedThenResumed(t *testing.T) {
	cases := []struct {
		name string
		// stateKept: the interrupted apply's state holds the cluster (refresh, then resume in place);
		// otherwise it is lost and the next create adopts the cluster, found through the journal (same
		// runner) or through its name's derived token (a fresh runner without the journal).
		stateKept, freshRunner bool
		// lostAnswer: the sandbox lost the order's answer first (lose_create_responses).
		lostAnswer bool
	}{
		{name: "state kept: resumed in place", stateKept: true},
		{name: "state lost: adopted through the journal"},
		{name: "state lost: adopted by a fresh runner through the derived token", freshRunner: true},
		{name: "answer lost, state lost: adopted", lostAnswer: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			journal := Journal{Dir: t.TempDir()}
			sb, cp := sandboxCluster(t, &cancelOnFirst{clusterProvisioner: newClusterProvisioner(4), cancel: cancel}, Options{Journal: journal})
			if tc.lostAnswer {
				if err := sb.SetFaults(simulation.Faults{LoseCreateResponses: 1}); err != nil {
					t.Fatal(err)
				}
			}
			spec := sandboxSpec("vm")
			plan := mustPlanCluster(t, cp, spec)
			var last ClusterRecord
			if _, err := cp.CreateCluster(ctx, spec, plan, func(r ClusterRecord) { last = r }); !errors.Is(err, context.Canceled) || last.Status != "provisioning" {
				t.Fatalf("interrupted create: %v (last saved %+v)", err, last)
			}
			rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
			defer rcancel()
			if tc.freshRunner {
				journal = Journal{Dir: t.TempDir()}
			}
			cp2 := New(testInventory(t), []cloudprovider.InstanceManagerBackend{sb}, Options{Journal: journal, Provisioner: newClusterProvisioner(4),
				PollInterval: 5 * time.Millisecond, PollMax: 20 * time.Millisecond})
			// The cut-short create's nodes are its runner's own (its journal names the cluster): listed as
			// interrupted, never reported as orphans; a runner without that journal reports them all.
			st := cp2.Open(rctx)
			if len(st.Machines.Machines) != 4 || (len(st.Orphans) == 4) != tc.freshRunner || (!tc.freshRunner && len(st.Orphans) != 0) {
				t.Errorf("at start: %d machines, orphans %v (a fresh runner: %t)", len(st.Machines.Machines), st.Orphans, tc.freshRunner)
			}
			for _, m := range st.Machines.Machines {
				if m.Ownership != OwnedInterrupted || m.Instance.Cluster != last.CloudClusterID {
					t.Errorf("node %s: %s, cluster %q", m.Instance.Name, m.Ownership, m.Instance.Cluster)
				}
			}
			var rec ClusterRecord
			var err error
			if tc.stateKept {
				// The state keeps what the resource's attributes hold, not the control plane's extras.
				rec = last
				rec.GPUType, rec.GPUCount, rec.Interconnect = "", 0, ""
				if found, err := cp2.RefreshCluster(rctx, &rec); !found || err != nil {
					t.Fatalf("refresh: %v %v", found, err)
				}
				ch, err := cp2.PlanClusterChange(spec, rec)
				if err != nil || ch.Change != Reprovision || len(ch.Notices) == 0 || !strings.Contains(ch.Notices[0].Summary, "resumed") {
					t.Fatalf("PlanClusterChange = %+v, %v", ch, err)
				}
				if err := cp2.ResumeCluster(rctx, spec, &rec, nil); err != nil {
					t.Fatal(err)
				}
			} else {
				plan = mustPlanCluster(t, cp2, spec)
				if len(plan.Notices) != 1 || !strings.Contains(plan.Notices[0].Detail, last.ID) {
					t.Errorf("the plan does not say it adopts the cluster left: %+v", plan.Notices)
				}
				rec, err = cp2.CreateCluster(rctx, spec, plan, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			created, err := sb.CreatedCount()
			if err != nil {
				t.Fatal(err)
			}
			if rec.Status != "ready" || rec.CloudClusterID != last.CloudClusterID || created != 4 || liveNodes(t, sb) != 4 {
				t.Fatalf("after the re-apply: %+v; %d nodes ever created (want the one cluster's 4)", rec, created)
			}
			if chk := cp2.opts.Provisioner.(*clusterProvisioner).checks; len(chk) != 1 || !chk[0].Fabric || rec.Hostfile == "" || !strings.HasSuffix(rec.Hostfile, "slots=8\n") {
				t.Errorf("the re-apply's cluster check %+v, hostfile %q", chk, rec.Hostfile)
			}
			if _, ok, _ := cp2.clusterJournal().Get("train"); ok {
				t.Error("the intent outlived the re-apply")
			}
		})
	}
}

func TestSandboxClusterFailureKeepsTheCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tc := range []struct {
		name, why string
		prov      func(p *clusterProvisioner)
	}{
		{"a node fails provisioning", "nvidia-smi found 7 GPUs", func(p *clusterProvisioner) { p.failOn = "sbx-vm-train--" + cloudprovider.OwnerToken("train", 0) + "-3" }},
		{"the cluster check fails", "port 1 of mlx5_0 is Down", func(p *clusterProvisioner) { p.checkOK = false }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prov := newClusterProvisioner(4)
			tc.prov(prov)
			sb, cp := sandboxCluster(t, prov, Options{MaxProvisionAttempts: 1})
			spec := sandboxSpec("vm")
			plan := mustPlanCluster(t, cp, spec)
			rec, err := cp.CreateCluster(ctx, spec, plan, nil)
			if err == nil || strings.Count(err.Error(), tc.why) != 1 || rec.Status != "error" || strings.Count(rec.ProvisioningError, tc.why) != 1 {
				t.Fatalf("CreateCluster = %+v, %v; want %q said once", rec, err, tc.why)
			}
			if liveNodes(t, sb) != 4 || rec.CloudClusterID == "" {
				t.Fatal("the failed cluster is not kept for Terraform to destroy")
			}
			// The next plan provisions it again in place (a failure of hydra's, not the cloud's).
			if ch, err := cp.PlanClusterChange(spec, rec); err != nil || ch.Change != Reprovision {
				t.Errorf("PlanClusterChange = %+v, %v", ch, err)
			}
		})
	}
}

func TestSandboxClusterLeftoverThatNoLongerFitsIsDeleted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sb, cp := sandboxCluster(t, newClusterProvisioner(2), Options{})
	spec := sandboxSpec("vm")
	spec.MinBusBandwidthGBps = 0
	// A 4-node create was cut short before the state kept it; the configuration now asks for 2 nodes.
	plan4 := mustPlanCluster(t, cp, spec)
	p4, _ := ParseClusterOfferID(plan4.OfferID)
	pm, cb, _ := cp.clusterBackend(p4.Pool)
	offer4, _ := cp.liveClusterOffer(ctx, pm, p4, spec)
	if _, err := cp.orderCluster(ctx, cp.clusterJournal(), spec, pm, cb, offer4); err != nil {
		t.Fatal(err)
	}
	spec.Nodes = 2
	plan2 := mustPlanCluster(t, cp, spec)
	rec, err := cp.CreateCluster(ctx, spec, plan2, nil)
	created, _ := sb.CreatedCount()
	if err != nil || len(rec.Nodes) != 2 || created != 6 || liveNodes(t, sb) != 2 {
		t.Fatalf("CreateCluster = %+v, %v; %d nodes ever created, %d live (want the leftover's 4 deleted, 2 live)", rec, err, created, liveNodes(t, sb))
	}
}

func TestSandboxClusterBudgetCountsTheWholeCluster(t *testing.T) {
	_, cp := sandboxCluster(t, newClusterProvisioner(4), Options{MaxTotalPricePerHour: usd(90)})
	if err := cp.CountBudget("web", "in state", usd(11)); err != nil {
		t.Fatal(err)
	}
	_, err := cp.PlanNewCluster(context.Background(), sandboxSpec("vm"), nil)
	var rf *Refusal
	if !errors.As(err, &rf) || !strings.Contains(rf.Detail, "$90.68/h") || !strings.Contains(rf.Detail, "train (cluster): $79.68/h") {
		t.Fatalf("a cluster of $79.68/h with $11/h in state under a $90/h budget: %v", err)
	}
}

// A re-plan reuses the earlier plan's quote (plan and apply agree) and still counts it in the budget;
// when the market moved since, it says so, with where the quote is kept.
func TestSandboxClusterPlanReusesTheQuote(t *testing.T) {
	ctx := context.Background()
	sb, cp := sandboxCluster(t, newClusterProvisioner(4), Options{})
	spec := sandboxSpec("vm")
	first := mustPlanCluster(t, cp, spec)
	quote := &ClusterQuote{Plan: first, Path: "/run/hydra/quotes/train.json", Expires: time.Date(2026, 12, 5, 4, 0, 0, 0, time.UTC)}
	again, err := cp.PlanNewCluster(ctx, spec, quote)
	if err != nil || again.OfferID != first.OfferID || again.PricePerHour != first.PricePerHour || len(again.Notices) != 0 {
		t.Fatalf("re-plan with the quote, nothing moved = %+v, %v", again, err)
	}
	// The node of 8 H100 in sbx-eu-1 goes from $19.92 to $18.92: the cluster from $79.68 to $75.68.
	c, err := sb.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	for i := range c {
		if c[i].Region == "sbx-eu-1" && c[i].InstanceType == "sbx.h100.8x" && !c[i].Spot {
			c[i].PricePerHour = 18.92
		}
	}
	if err := sb.SetCatalog(c); err != nil {
		t.Fatal(err)
	}
	cp.forgetListings()
	moved, err := cp.PlanNewCluster(ctx, spec, quote)
	if err != nil || moved.OfferID != first.OfferID || moved.PricePerHour != usd(79.68) || len(moved.Notices) != 1 ||
		!strings.Contains(moved.Notices[0].Detail, "now costs $75.68/h (quoted $79.68/h)") || !strings.Contains(moved.Notices[0].Detail, quote.Path) {
		t.Fatalf("re-plan with the quote after the price moved = %+v, %v", moved, err)
	}
	// The quoted cluster counts in the budget as a fresh choice does.
	tight := New(testInventory(t), []cloudprovider.InstanceManagerBackend{sb}, Options{MaxTotalPricePerHour: usd(79)})
	if _, err := tight.PlanNewCluster(ctx, spec, quote); err == nil || !strings.Contains(err.Error(), "max_total_price_per_hour") {
		t.Errorf("a quoted $79.68/h cluster under a $79/h budget: %v", err)
	}
}

func TestSandboxClusterDeleteDrainsExecletsFirst(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	in := &lockedInspector{}
	sb, cp := sandboxCluster(t, newClusterProvisioner(2), Options{Inspector: in})
	spec := sandboxSpec("execlet")
	spec.Nodes = 2
	_, rec := mustCreateCluster(t, ctx, cp, spec)
	in.onDrain = func() {
		if liveNodes(t, sb) != 2 {
			t.Error("a node was drained after the cluster's delete began")
		}
	}
	if err := cp.DeleteCluster(ctx, rec, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := liveNodes(t, sb); n != 0 || len(in.drained) != 2 || !strings.HasPrefix(in.drained[0], "sbx-ex-train--") {
		t.Fatalf("after the delete: %d nodes live, drained %v", n, in.drained)
	}
	if found, err := cp.RefreshCluster(ctx, &rec); found || err != nil {
		t.Errorf("refresh of the deleted cluster: %v %v", found, err)
	}
}

func TestSandboxClusterImport(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	in := &lockedInspector{marker: Marker{Digest: "d1", Playbook: "vm.yml", ProvisionedAt: time.Now()}}
	_, cp := sandboxCluster(t, newClusterProvisioner(2), Options{Inspector: in})
	spec := sandboxSpec("vm")
	spec.Nodes = 2
	plan, rec := mustCreateCluster(t, ctx, cp, spec)
	got, err := cp.ImportCluster(ctx, "sandbox/"+rec.CloudClusterID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != rec.ID || got.Name != "train" || got.Status != "ready" || got.ProvisioningDigest != "d1" || got.OfferID != plan.OfferID ||
		got.Hostfile != rec.Hostfile || got.Interconnect != fabric {
		t.Errorf("ImportCluster = %+v\nwant like %+v", got, rec)
	}
	// Imported as it is: the next plan keeps it.
	if ch, err := cp.PlanClusterChange(spec, got); err != nil || ch.Change != Keep {
		t.Errorf("PlanClusterChange after import = %+v, %v", ch, err)
	}
	// Nodes without hydra's marker import running, and the next apply provisions them.
	in.marker = Marker{}
	if got, err = cp.ImportCluster(ctx, "sandbox/"+rec.CloudClusterID); err != nil || got.Status != "running" || got.ProvisioningDigest != "" {
		t.Errorf("ImportCluster without markers = %+v, %v", got, err)
	} else if ch, err := cp.PlanClusterChange(spec, got); err != nil || ch.Change != Reprovision {
		t.Errorf("PlanClusterChange after an import without markers = %+v, %v", ch, err)
	}
	// A cluster on no fabric (sbx-us-1 has none) imports as interconnect any: a configuration asking a
	// fabric replaces it, one asking any keeps it.
	in.marker = Marker{Digest: "d1", Playbook: "vm.yml", ProvisionedAt: time.Now()}
	anySpec := spec
	anySpec.Name, anySpec.Interconnect, anySpec.Regions = "spread", cloudprovider.InterconnectAny, []string{"sbx-us-1"}
	anySpec.MinBusBandwidthGBps = 0
	plan = mustPlanCluster(t, cp, anySpec)
	spread, err := cp.CreateCluster(ctx, anySpec, plan, nil)
	if err != nil || spread.Interconnect != cloudprovider.InterconnectAny {
		t.Fatalf("CreateCluster on any = %+v, %v", spread, err)
	}
	if got, err = cp.ImportCluster(ctx, "sandbox/"+spread.CloudClusterID); err != nil || got.Interconnect != cloudprovider.InterconnectAny || got.Status != "ready" {
		t.Fatalf("ImportCluster of the cluster on any = %+v, %v", got, err)
	}
	if ch, err := cp.PlanClusterChange(anySpec, got); err != nil || ch.Change != Keep {
		t.Errorf("PlanClusterChange asking any = %+v, %v", ch, err)
	}
	fabricSpec := anySpec
	fabricSpec.Interconnect = fabric
	if ch, err := cp.PlanClusterChange(fabricSpec, got); err != nil || ch.Change != Replace || ch.ReplaceBecause != "interconnect" {
		t.Errorf("PlanClusterChange asking a fabric = %+v, %v", ch, err)
	}
	for id, want := range map[string]string{"sandbox": "not <cloud>/<cluster id>", "lambda/x": "not configured", "sandbox/nope": "nope"} {
		if _, err := cp.ImportCluster(ctx, id); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ImportCluster(%q) = %v, want %q", id, err, want)
		}
	}
}
