package controlplane

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

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
