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
