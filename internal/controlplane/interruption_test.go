package controlplane

import (
	"context"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// A machine its cloud took back without notice (Verda's discontinued spot machine) reads as terminated
// with its interruption: Refresh keeps it, so the state shows why and the plan replaces it; a machine
// terminated otherwise is gone from the state as before.
func TestRefreshKeepsInterrupted(t *testing.T) {
	b := &fakeBackend{cloud: "verda"}
	taken := b.put(cloudprovider.Instance{Name: "verda-vm-taken--abcdefgh", Spot: true, Status: cloudprovider.StatusTerminated,
		CloudStatus: "discontinued", Interruption: &cloudprovider.Interruption{Reason: "discontinued"}})
	deleted := b.put(cloudprovider.Instance{Name: "verda-vm-deleted--abcdefgh", Status: cloudprovider.StatusTerminated, CloudStatus: "discontinued"})
	cp := New(testInventory(t), []cloudprovider.InstanceManagerBackend{b}, Options{})

	rec := Record{Name: taken.Name, ID: taken.ID, Status: cloudprovider.StatusReady, ProvisioningDigest: "d1"}
	found, err := cp.Refresh(context.Background(), &rec)
	if err != nil || !found {
		t.Fatalf("Refresh of an interrupted machine: found %v, %v", found, err)
	}
	if rec.Status != cloudprovider.StatusTerminated || rec.Interruption == nil || rec.Interruption.Reason != "discontinued" || rec.Interruption.NoticeAt.IsZero() {
		t.Errorf("record: %+v (interruption %+v)", rec, rec.Interruption)
	}
	if p, _ := cp.PlanChange(ChangeRequest{Name: "taken", Record: rec, ReplaceWhenPreempted: true, Digest: "d1", DigestKnown: true}); p.Change != Replace || p.ReplaceBecause != "interruption" {
		t.Errorf("plan of the interrupted machine: %+v", p)
	}

	other := Record{Name: deleted.Name, ID: deleted.ID, Status: cloudprovider.StatusReady}
	if found, err := cp.Refresh(context.Background(), &other); err != nil || found {
		t.Errorf("Refresh of a machine terminated without interruption: found %v, %v", found, err)
	}
}
