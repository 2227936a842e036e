package controlplane

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox"
)

// signalProvisioner is clusterProvisioner recording the interruption signal each node's provisioning
// was given (what the playbooks' watcher is installed with).
type signalProvisioner struct {
	*clusterProvisioner
	smu     sync.Mutex
	signals map[string]cloudprovider.InterruptionSignal
}

func (p *signalProvisioner) Provision(ctx context.Context, req cloudprovider.ProvisionRequest) (cloudprovider.ProvisionResult, error) {
	p.smu.Lock()
	p.signals[req.Instance.Name] = req.Signal
	p.smu.Unlock()
	return p.clusterProvisioner.Provision(ctx, req)
}

// A spot cluster on the sandbox: every node is provisioned with the sandbox's signal (so the watcher
// is installed on each); a node preempted with notice makes the refresh record its interruption on the
// node and on the cluster, and the plan replaces the whole cluster (or, with ReplaceWhenPreempted
// false, keeps it and says so); once the notice ends the node is taken back and the cluster, in error,
// is still kept and still replaced for the interruption, not for its status.
func TestSandboxClusterPreempted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	prov := &signalProvisioner{clusterProvisioner: newClusterProvisioner(2), signals: map[string]cloudprovider.InterruptionSignal{}}
	sb, cp := sandboxCluster(t, prov, Options{})
	spot := true
	spec := ClusterSpec{Name: "spot", GPUType: "h100", GPUCount: 1, Nodes: 2, Kind: "vm", Spot: &spot}
	plan := mustPlanCluster(t, cp, spec)
	if !strings.Contains(plan.OfferID, "/spot@") {
		t.Fatalf("plan %+v: not a spot offer", plan)
	}
	rec, err := cp.CreateCluster(ctx, spec, plan, func(ClusterRecord) {})
	if err != nil || rec.Status != "ready" || len(rec.Nodes) != 2 || rec.Interruption != nil {
		t.Fatalf("create: %+v (interruption %+v), %v", rec, rec.Interruption, err)
	}
	for _, n := range rec.Nodes {
		if got := prov.signals[n.Name]; got != sandbox.Facts.Signal {
			t.Errorf("node %s provisioned with signal %+v; want the sandbox's %+v", n.Name, got, sandbox.Facts.Signal)
		}
	}

	const window = 400 * time.Millisecond
	noticed := time.Now()
	if err := sb.Preempt(rec.Nodes[1].ID, window); err != nil {
		t.Fatal(err)
	}
	if found, err := cp.RefreshCluster(ctx, &rec); !found || err != nil {
		t.Fatalf("refresh during the notice: %v %v", found, err)
	}
	it := rec.Interruption
	if it == nil || rec.Nodes[0].Interruption != nil || rec.Nodes[1].Interruption == nil || !strings.Contains(it.Reason, "preempted") ||
		it.EndsAt.Sub(it.NoticeAt) != window || it.NoticeAt.Before(noticed.Add(-time.Second)) {
		t.Fatalf("during the notice: cluster %+v, nodes %+v / %+v", it, rec.Nodes[0].Interruption, rec.Nodes[1].Interruption)
	}
	if rec.Status != "ready" {
		t.Errorf("status during the notice: %s; want ready (the node still runs)", rec.Status)
	}
	decide := func(replace bool) ChangePlan {
		t.Helper()
		s := spec
		s.ReplaceWhenPreempted = replace
		ch, err := cp.PlanClusterChange(s, rec)
		if err != nil {
			t.Fatal(err)
		}
		return ch
	}
	if ch := decide(true); ch.Change != Replace || ch.ReplaceBecause != "interruption" || len(ch.Notices) != 1 ||
		!strings.Contains(ch.Notices[0].Detail, rec.Nodes[1].Name) || !strings.Contains(ch.Notices[0].Detail, "replaces the whole cluster") {
		t.Errorf("plan with replace_when_preempted: %+v", ch)
	}
	if ch := decide(false); ch.Change != Keep || len(ch.Notices) != 1 || !strings.Contains(ch.Notices[0].Detail, "Nothing changes") {
		t.Errorf("plan without replace_when_preempted: %+v", ch)
	}

	time.Sleep(window)
	if found, err := cp.RefreshCluster(ctx, &rec); !found || err != nil {
		t.Fatalf("refresh after the notice: %v %v", found, err)
	}
	if rec.Status != "error" || rec.Nodes[1].Status != "terminated" || rec.Interruption == nil || !rec.Interruption.NoticeAt.Equal(it.NoticeAt) {
		t.Fatalf("after the notice: %+v (interruption %+v)", rec, rec.Interruption)
	}
	if ch := decide(true); ch.Change != Replace || ch.ReplaceBecause != "interruption" {
		t.Errorf("plan after the notice: %+v", ch)
	}
}

// clusterInterruption: the earliest notice among the nodes; kept while the cloud reports the cluster
// in error or terminated without its nodes' notices (a Mithril bid whose nodes are gone), cleared when
// the nodes run without one (the cloud took it back).
func TestClusterInterruption(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 5, 0, 0, 0, time.UTC)
	early := &cloudprovider.Interruption{NoticeAt: t0, EndsAt: t0.Add(5 * time.Minute), Reason: "early"}
	late := &cloudprovider.Interruption{NoticeAt: t0.Add(time.Minute), Reason: "late"}
	sameNoEnd := &cloudprovider.Interruption{NoticeAt: t0, Reason: "no end"}
	cases := []struct {
		name   string
		nodes  []*cloudprovider.Interruption
		status string
		prior  *cloudprovider.Interruption
		want   string
	}{
		{name: "none", nodes: []*cloudprovider.Interruption{nil, nil}, status: "ready"},
		{name: "one node", nodes: []*cloudprovider.Interruption{nil, late}, status: "ready", want: "late"},
		{name: "earliest notice", nodes: []*cloudprovider.Interruption{late, early}, status: "ready", want: "early"},
		{name: "same notice: the one that says its end", nodes: []*cloudprovider.Interruption{sameNoEnd, early}, status: "ready", want: "early"},
		{name: "nodes gone, cluster in error", status: "error", prior: late, want: "late"},
		{name: "nodes gone, cluster terminated", status: "terminated", prior: late, want: "late"},
		{name: "won back", nodes: []*cloudprovider.Interruption{nil, nil}, status: "ready", prior: late},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var nodes []ClusterNodeRecord
			for _, it := range tc.nodes {
				nodes = append(nodes, ClusterNodeRecord{Name: "n", Interruption: it})
			}
			got := clusterInterruption(nodes, tc.status, tc.prior)
			if (got == nil) != (tc.want == "") || got != nil && got.Reason != tc.want {
				t.Errorf("clusterInterruption = %+v; want %q", got, tc.want)
			}
		})
	}
}
