package controlplane

import (
	"context"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// confirmingBackend is a fakeBackend whose cloud records confirmation.
type confirmingBackend struct {
	*fakeBackend
	confirmed map[string]bool
}

// atlasL4 is an on-demand L4 offer of the Atlas pool of the test inventory.
var atlasL4 = cloudprovider.Offer{ID: "atlas-vm-pool/ams1/l4.1x/ondemand@0.70", Cloud: "atlas", Pool: "atlas-vm-pool", Region: "ams1", InstanceType: "l4.1x", PricePerHour: usd(0.7)}

// newConfirmingBackend is a fake backend of cloud that records ownership confirmations.
func newConfirmingBackend(cloud string) *confirmingBackend {
	return &confirmingBackend{fakeBackend: &fakeBackend{cloud: cloud}, confirmed: map[string]bool{}}
}

func (c *confirmingBackend) ConfirmOwnership(_ context.Context, id string) error {
	c.confirmed[id] = true
	return nil
}

func (c *confirmingBackend) Get(ctx context.Context, id string) (cloudprovider.Instance, error) {
	inst, err := c.fakeBackend.Get(ctx, id)
	inst.Owner.Confirmed = c.confirmed[id]
	return inst, err
}

func (c *confirmingBackend) List(ctx context.Context, prefix string) ([]cloudprovider.Instance, error) {
	list, err := c.fakeBackend.List(ctx, prefix)
	for i := range list {
		list[i].Owner.Confirmed = c.confirmed[list[i].ID]
	}
	return list, err
}

func TestMachinesAndOrphans(t *testing.T) {
	inv := testInventory(t)
	ctx := context.Background()
	v := cloudprovider.Offer{ID: "verda-vm-pool/FIN-01/1L4/ondemand@0.80", Cloud: "verda", Pool: "verda-vm-pool", Region: "FIN-01", InstanceType: "1L4", PricePerHour: usd(0.8)}
	atlas := newConfirmingBackend("atlas")
	verda := &fakeBackend{cloud: "verda"}
	j := Journal{Dir: t.TempDir()}
	cp := New(inv, []cloudprovider.InstanceManagerBackend{atlas, verda}, Options{Journal: j, OrphanGrace: time.Nanosecond})

	held, err := cp.Launch(ctx, LaunchRequest{Name: "held", Offers: []cloudprovider.Offer{atlasL4}})
	if err != nil {
		t.Fatal(err)
	}
	cp.Settle(ctx, "held", held.Instance) // Terraform holds it: confirmed, journal cleared
	cut, err := cp.Launch(ctx, LaunchRequest{Name: "cut", Offers: []cloudprovider.Offer{atlasL4}})
	if err != nil {
		t.Fatal(err)
	}
	// "cut" was never settled: the journal names it. A create cut short on another runner (no journal
	// here) is recognised by its derived token:
	other := New(inv, []cloudprovider.InstanceManagerBackend{atlas, verda}, Options{Journal: Journal{Dir: t.TempDir()}})
	fresh, err := other.Launch(ctx, LaunchRequest{Name: "fresh", Offers: []cloudprovider.Offer{atlasL4}})
	if err != nil {
		t.Fatal(err)
	}
	// A machine with a random token (made before derived tokens), never confirmed:
	pool := inv.Pools[0]
	if pool.Name != atlasL4.Pool {
		t.Fatalf("the test inventory's first pool is %s", pool.Name)
	}
	stray := Launched{Instance: atlas.store(cloudprovider.CreateRequest{Name: cloudprovider.CloudName(pool, "stray", cloudprovider.NewOwnerToken()), Offer: atlasL4})}
	onVerda, err := other.Launch(ctx, LaunchRequest{Name: "elsewhere", Offers: []cloudprovider.Offer{v}})
	if err != nil {
		t.Fatal(err)
	}
	verda.store(cloudprovider.CreateRequest{Name: "verda-vm-handmade", Offer: v}) // not hydra's

	res := cp.Machines(ctx, nil)
	want := map[string]OwnershipState{
		held.Instance.Name: OwnedConfirmed, cut.Instance.Name: OwnedInterrupted, stray.Instance.Name: OwnedUnconfirmed,
		fresh.Instance.Name:   OwnedInterrupted,
		onVerda.Instance.Name: OwnedUnrecorded, "verda-vm-handmade": NotHydras,
	}
	if len(res.Machines) != len(want) {
		t.Fatalf("Machines = %+v", res.Machines)
	}
	for _, m := range res.Machines {
		if want[m.Instance.Name] != m.Ownership {
			t.Errorf("%s: ownership %q, want %q", m.Instance.Name, m.Ownership, want[m.Instance.Name])
		}
	}
	orphans := res.Orphans(time.Nanosecond)
	if len(orphans) != 3 || orphans[0].Instance.Name != cut.Instance.Name || orphans[1].Instance.Name != fresh.Instance.Name || orphans[2].Instance.Name != stray.Instance.Name {
		t.Errorf("Orphans = %+v, want %s, %s and %s", orphans, cut.Instance.Name, fresh.Instance.Name, stray.Instance.Name)
	}
	if young := res.Orphans(time.Hour); len(young) != 2 || young[0].Ownership != OwnedInterrupted || young[1].Ownership != OwnedInterrupted {
		t.Errorf("with a long grace only the interrupted creates (journaled, or recognised by their token) are orphans: %+v", young)
	}

	named, unreachable := cp.Named(ctx, "cut", "vm", []string{"atlas"})
	if len(named) != 1 || named[0].Instance.ID != cut.Instance.ID || len(unreachable) != 0 {
		t.Errorf("Named(cut) = %+v, %v", named, unreachable)
	}
	if named, _ := cp.Named(ctx, "cu", "vm", nil); len(named) != 0 {
		t.Errorf("Named matched a prefix of another name: %+v", named)
	}
}

func TestMachinesUnreachableCloudIsNamed(t *testing.T) {
	inv := testInventory(t)
	slow := &fakeBackend{cloud: "verda", delay: time.Minute}
	cp := New(inv, []cloudprovider.InstanceManagerBackend{&fakeBackend{cloud: "atlas"}, &listDelay{slow}}, Options{OfferTimeout: 50 * time.Millisecond})
	res := cp.Machines(context.Background(), nil)
	if _, ok := res.Unreachable["verda"]; !ok || len(res.Unreachable) != 1 {
		t.Fatalf("Unreachable = %v, want verda timed out", res.Unreachable)
	}
}

// listDelay makes List as slow as the backend's offers.
type listDelay struct{ *fakeBackend }

func (l *listDelay) List(ctx context.Context, prefix string) ([]cloudprovider.Instance, error) {
	select {
	case <-time.After(l.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return l.fakeBackend.List(ctx, prefix)
}

// TestLaunchRecoversCutShortCreateWithoutJournal: a create cut short on one runner is recovered by a
// control plane with no journal (a fresh runner), from the derived token at the cloud alone: adopted
// when it matches the offer, deleted and bought anew when the plan changed; a confirmed machine of the
// name (a create_before_destroy predecessor) is never adopted, and the new one takes the next token.
func TestLaunchRecoversCutShortCreateWithoutJournal(t *testing.T) {
	inv := testInventory(t)
	ctx := context.Background()
	h100 := cloudprovider.Offer{ID: "atlas-vm-pool/ams1/h100.1x/ondemand@2.00", Cloud: "atlas", Pool: "atlas-vm-pool", Region: "ams1", InstanceType: "h100.1x", PricePerHour: usd(2)}
	atlas := newConfirmingBackend("atlas")
	runner := func() *ControlPlane { return New(inv, []cloudprovider.InstanceManagerBackend{atlas}, Options{}) }

	killed, err := New(inv, []cloudprovider.InstanceManagerBackend{atlas}, Options{Journal: Journal{Dir: t.TempDir()}}).Launch(ctx, LaunchRequest{Name: "w", Offers: []cloudprovider.Offer{atlasL4}})
	if err != nil {
		t.Fatal(err)
	}
	if _, token, _ := cloudprovider.ParseCloudName(inv.Pools[0], killed.Instance.Name); token != cloudprovider.OwnerToken("w", 0) {
		t.Fatalf("the first create of w is named %s, want the token %s", killed.Instance.Name, cloudprovider.OwnerToken("w", 0))
	}
	adopted, err := runner().Launch(ctx, LaunchRequest{Name: "w", Offers: []cloudprovider.Offer{atlasL4}})
	if err != nil || !adopted.Adopted || adopted.Instance.ID != killed.Instance.ID || atlas.created != 1 {
		t.Fatalf("a fresh runner must adopt %s: %+v, %v, %d created", killed.Instance.ID, adopted, err, atlas.created)
	}

	// The plan changed (h100 now): the leftover is deleted and the planned machine bought.
	cut, err := runner().Launch(ctx, LaunchRequest{Name: "v", Offers: []cloudprovider.Offer{atlasL4}})
	if err != nil {
		t.Fatal(err)
	}
	changed, err := runner().Launch(ctx, LaunchRequest{Name: "v", Offers: []cloudprovider.Offer{h100}})
	if err != nil || changed.Adopted || changed.Instance.InstanceType != "h100.1x" {
		t.Fatalf("a changed plan must buy the planned machine: %+v, %v", changed, err)
	}
	if _, err := atlas.Get(ctx, cut.Instance.ID); !cloudprovider.IsNotFound(err) {
		t.Fatalf("the leftover %s that no longer matches the plan must be deleted: %v", cut.Instance.ID, err)
	}

	// Confirmed (a state holds it): a second create of w takes the next token, never adopts it.
	runner().Settle(ctx, "w", adopted.Instance)
	next, err := runner().Launch(ctx, LaunchRequest{Name: "w", Offers: []cloudprovider.Offer{atlasL4}})
	if err != nil || next.Adopted || next.Instance.ID == adopted.Instance.ID {
		t.Fatalf("a confirmed machine must not be adopted: %+v, %v", next, err)
	}
	if _, token, _ := cloudprovider.ParseCloudName(inv.Pools[0], next.Instance.Name); token != cloudprovider.OwnerToken("w", 1) {
		t.Fatalf("the second machine of w is named %s, want the token %s", next.Instance.Name, cloudprovider.OwnerToken("w", 1))
	}
}
