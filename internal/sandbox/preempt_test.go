package sandbox

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// Preempt: a spot machine gets the notice file in its root (Mithril's format) and reads as running
// with its interruption until the end, then terminated with it; an on-demand machine, or a second
// notice, is refused.
func TestPreempt(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	b := newBackend(t, dir, time.Millisecond)
	s, d := spotAndOnDemand(t, b, "l4")
	time.Sleep(10 * time.Millisecond)
	if err := b.Preempt(d.ID, time.Minute); err == nil {
		t.Error("an on-demand machine was preempted")
	}
	const window = 300 * time.Millisecond
	if err := b.Preempt(s.ID, window); err != nil {
		t.Fatal(err)
	}
	if err := b.Preempt(s.ID, window); err == nil {
		t.Error("a second notice was given")
	}
	signal, err := os.ReadFile(filepath.Join(b.MachineDir(s.ID), "root", SignalPath))
	if err != nil || !strings.Contains(string(signal), "instance_status: STATUS_PREEMPTING\n") || !strings.Contains(string(signal), "end_time: \"20") {
		t.Fatalf("the notice file: %q, %v", signal, err)
	}
	got, err := b.Get(ctx, s.ID)
	if err != nil || got.Status != cloudprovider.StatusRunning || got.CloudStatus != "preempting" || got.Interruption == nil ||
		got.Interruption.EndsAt.Sub(got.Interruption.NoticeAt) != window {
		t.Fatalf("during the notice: %+v (%+v), %v", got, got.Interruption, err)
	}
	time.Sleep(window)
	got, err = b.Get(ctx, s.ID)
	if err != nil || got.Status != cloudprovider.StatusTerminated || got.CloudStatus != "preempted" || got.Interruption == nil || got.SSH != nil {
		t.Fatalf("after the notice: %+v, %v", got, err)
	}
	if f := cloudprovider.FactsOf(b); f.Signal.Path != SignalPath || f.Signal.Format != cloudprovider.SignalStatusYAML {
		t.Errorf("facts: %+v", f)
	}
}

// spotAndOnDemand starts a spot and an on-demand machine of one GPU of gpuType in sbx-eu-1, named
// sbx-vm-spot--aaaaaaaa and sbx-vm-od--aaaaaaaa, in that order.
func spotAndOnDemand(t *testing.T, b *Backend, gpuType string) (spot, onDemand cloudprovider.Instance) {
	t.Helper()
	offers, err := b.Offers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var picked [2]cloudprovider.Offer // spot, on-demand
	for _, o := range offers {
		if o.GPUType == gpuType && o.GPUCount == 1 && o.Region == "sbx-eu-1" {
			if o.Spot {
				picked[0] = o
			} else {
				picked[1] = o
			}
		}
	}
	var made [2]cloudprovider.Instance
	for i, name := range []string{"sbx-vm-spot--aaaaaaaa", "sbx-vm-od--aaaaaaaa"} {
		if made[i], err = b.Create(context.Background(), cloudprovider.CreateRequest{Name: name, Offer: picked[i]}); err != nil {
			t.Fatal(err)
		}
	}
	return made[0], made[1]
}

// faults.json's `preempt`, written by hand as a user's CI would: on the next call the named spot
// machine and the named node of a spot cluster get notice (the notice file in their roots, their
// interruption until the end, then taken back; the cluster reads as failed); an entry naming no
// machine yet stays armed, one naming an on-demand machine or with a bad notice is used up without
// effect.
func TestPreemptFault(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	b := newBackend(t, dir, time.Millisecond)
	m, od := spotAndOnDemand(t, b, "h100")
	cos, err := b.ClusterOffers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var co cloudprovider.ClusterOffer
	for _, o := range cos {
		if o.Spot && o.GPUType == "h100" && o.GPUCount == 1 && o.Region == "sbx-eu-1" && o.Interconnect == cloudprovider.InterconnectFabric {
			co = o
		}
	}
	co.Nodes = 2
	c, err := b.CreateCluster(ctx, cloudprovider.ClusterRequest{Name: "sbx-vm-c--aaaaaaaa", Offer: co})
	if err != nil || len(c.Nodes) != 2 {
		t.Fatalf("cluster: %+v, %v", c, err)
	}
	time.Sleep(10 * time.Millisecond)

	const notice = 300 * time.Millisecond
	faults := `{"preempt": [
  {"name": "sbx-vm-spot--aaaaaaaa", "notice": "300ms"},
  {"name": "sbx-vm-c--aaaaaaaa-2", "notice": "300ms"},
  {"name": "sbx-vm-later--aaaaaaaa"},
  {"name": "sbx-vm-od--aaaaaaaa", "notice": "1m"},
  {"name": "sbx-vm-c--aaaaaaaa-1", "notice": "soon"}
]}`
	if err := os.WriteFile(filepath.Join(dir, FaultsFile), []byte(faults), 0o644); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	got, err := b.Get(ctx, m.ID)
	if err != nil || got.Status != cloudprovider.StatusRunning || got.Interruption == nil ||
		got.Interruption.EndsAt.Sub(got.Interruption.NoticeAt) != notice || got.Interruption.NoticeAt.Before(before.Add(-time.Second)) {
		t.Fatalf("the machine after the fault fired: %+v (%+v), %v", got, got.Interruption, err)
	}
	signal, err := os.ReadFile(filepath.Join(b.MachineDir(m.ID), "root", SignalPath))
	if err != nil || !strings.Contains(string(signal), "instance_status: STATUS_PREEMPTING\n") {
		t.Errorf("the machine's notice file: %q, %v", signal, err)
	}
	c, err = b.GetCluster(ctx, c.ID)
	if err != nil || c.Status != cloudprovider.StatusRunning || c.Nodes[0].Interruption != nil || c.Nodes[1].Interruption == nil {
		t.Fatalf("the cluster during the notice: %+v, %v", c, err)
	}
	if _, err := os.Stat(filepath.Join(b.MachineDir(c.Nodes[1].ID), "root", SignalPath)); err != nil {
		t.Errorf("node 2's notice file: %v", err)
	}
	if got, err := b.Get(ctx, od.ID); err != nil || got.Interruption != nil {
		t.Errorf("the on-demand machine: %+v, %v", got, err)
	}
	f, err := b.AllFaults()
	if err != nil || len(f.Preempt) != 1 || f.Preempt[0].Name != "sbx-vm-later--aaaaaaaa" {
		t.Errorf("faults left armed: %+v, %v", f.Preempt, err)
	}
	// The file keeps the user's key names.
	raw, _ := os.ReadFile(filepath.Join(dir, FaultsFile))
	var back map[string]any
	if err := json.Unmarshal(raw, &back); err != nil || back["preempt"] == nil {
		t.Errorf("faults.json after: %s", raw)
	}

	time.Sleep(notice)
	if got, err := b.Get(ctx, m.ID); err != nil || got.Status != cloudprovider.StatusTerminated || got.CloudStatus != "preempted" {
		t.Errorf("the machine after the notice: %+v, %v", got, err)
	}
	if c, err = b.GetCluster(ctx, c.ID); err != nil || c.Status != cloudprovider.StatusError || c.Nodes[1].Status != cloudprovider.StatusTerminated {
		t.Errorf("the cluster after the notice: %+v, %v", c, err)
	}
}
