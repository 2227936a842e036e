package sandbox

import (
	"context"
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
	spot, onDemand := spotAndOnDemand(t, b, "l4")
	s, err := b.Create(ctx, cloudprovider.CreateRequest{Name: "sbx-vm-spot--aaaaaaaa", Offer: spot})
	if err != nil {
		t.Fatal(err)
	}
	d, err := b.Create(ctx, cloudprovider.CreateRequest{Name: "sbx-vm-od--aaaaaaaa", Offer: onDemand})
	if err != nil {
		t.Fatal(err)
	}
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

// spotAndOnDemand is the sandbox's spot and on-demand offer of one GPU of gpuType in sbx-eu-1.
func spotAndOnDemand(t *testing.T, b *Backend, gpuType string) (spot, onDemand cloudprovider.Offer) {
	t.Helper()
	offers, err := b.Offers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range offers {
		if o.GPUType == gpuType && o.GPUCount == 1 && o.Region == "sbx-eu-1" {
			if o.Spot {
				spot = o
			} else {
				onDemand = o
			}
		}
	}
	return spot, onDemand
}
