package upcloud

import (
	"context"
	"strings"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/upcloud"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// TestConfirmOwnershipKeepsOtherLabels: the confirmation is a modify that resends every label, so a
// label someone else put on the server survives it, and the record reads back confirmed.
func TestConfirmOwnershipKeepsOtherLabels(t *testing.T) {
	srv, base := startEmulator(t, emu.Options{})
	b := newTestBackend(t, base, nil)
	ctx := context.Background()
	owner := cloudprovider.Ownership{Resource: "conf", Token: "qrstuvwx"}
	inst, err := b.Create(ctx, cloudprovider.CreateRequest{Name: "upcloud-vm-conf--qrstuvwx", Owner: owner,
		Offer: offerFor(t, b, "fi-hel2", "GPU-8xCPU-64GB-1xL4"), SSHPublicKeys: []string{testKey}})
	if err != nil {
		t.Fatal(err)
	}
	// Someone adds a label of their own (a modify resends the whole list).
	s, err := b.Client().GetServer(ctx, inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	mine := append(append(Labels{}, s.Labels...), Label{Key: "team", Value: "ml"})
	if _, err := b.Client().ModifyServer(ctx, inst.ID, ModifyServer{Labels: &mine}); err != nil {
		t.Fatal(err)
	}

	if err := b.ConfirmOwnership(ctx, inst.ID); err != nil {
		t.Fatal(err)
	}
	labels := srv.Servers()[0].Labels
	if labels["team"] != "ml" || labels[cloudprovider.LabelConfirmed] != "true" || labels[cloudprovider.LabelOwner] != "qrstuvwx" ||
		labels[NameLabel] != "upcloud-vm-conf--qrstuvwx" || len(labels) != 6 {
		t.Errorf("labels after confirmation: %v", labels)
	}
	got, err := b.Get(ctx, inst.ID)
	if err != nil || got.Owner != (cloudprovider.Ownership{Resource: "conf", Token: "qrstuvwx", Confirmed: true}) {
		t.Errorf("owner after confirmation: %+v %v", got.Owner, err)
	}

	// A server without a record (made before ownership records) can be confirmed too.
	old, err := b.Create(ctx, cloudprovider.CreateRequest{Name: "upcloud-vm-old", Offer: offerFor(t, b, "fi-hel2", "GPU-8xCPU-64GB-1xL4"), SSHPublicKeys: []string{testKey}})
	if err != nil {
		t.Fatal(err)
	}
	if old.Owner != (cloudprovider.Ownership{}) {
		t.Errorf("a server without a record reads %+v", old.Owner)
	}
	if err := b.ConfirmOwnership(ctx, old.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.Get(ctx, old.ID); got.Owner != (cloudprovider.Ownership{Confirmed: true}) {
		t.Errorf("a confirmed server without a record reads %+v", got.Owner)
	}

	for _, id := range []string{"00000000-0000-4000-a000-000000000000", "not-a-uuid"} {
		if err := b.ConfirmOwnership(ctx, id); !cloudprovider.IsNotFound(err) {
			t.Errorf("confirming %s: %v, want not found", id, err)
		}
		if _, err := b.Get(ctx, id); !cloudprovider.IsNotFound(err) {
			t.Errorf("get %s: %v, want not found", id, err)
		}
		if err := b.Delete(ctx, id); err != nil {
			t.Errorf("delete %s: %v, want success", id, err)
		}
	}
}

// TestCreateIsIdempotentByName: a create of a name that exists (made by this process, another
// process, or a create whose answer was lost) returns that server.
func TestCreateIsIdempotentByName(t *testing.T) {
	srv, base := startEmulator(t, emu.Options{})
	ctx := context.Background()
	first := newTestBackend(t, base, nil)
	req := cloudprovider.CreateRequest{Name: "upcloud-vm-idem--abcdefgh", Owner: cloudprovider.Ownership{Resource: "idem", Token: "abcdefgh"},
		Offer: offerFor(t, first, "fi-hel2", "GPU-8xCPU-64GB-1xL4"), SSHPublicKeys: []string{testKey}}
	a, err := first.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := first.Create(ctx, req)
	if err != nil || again.ID != a.ID {
		t.Fatalf("second create: %+v %v", again, err)
	}
	other := newTestBackend(t, base, nil) // another process
	if c, err := other.Create(ctx, req); err != nil || c.ID != a.ID || c.Owner != req.Owner {
		t.Fatalf("create from another process: %+v %v", c, err)
	}
	if n := srv.CreateCount(); n != 1 {
		t.Errorf("created %d servers, want 1", n)
	}

	// A lost answer: Create looks again and returns the server the cloud made.
	if err := srv.SetFaults(simulation.Faults{LoseCreateResponses: 1}); err != nil {
		t.Fatal(err)
	}
	req.Name, req.Owner = "upcloud-vm-lost--bcdefghi", cloudprovider.Ownership{Resource: "lost", Token: "bcdefghi"}
	lost, err := first.Create(ctx, req)
	if err != nil || lost.ID == "" || lost.Name != req.Name || lost.Owner != req.Owner {
		t.Fatalf("create with a lost answer: %+v %v", lost, err)
	}
	if st, _ := srv.Stats(); st.Created != 2 || len(st.Live) != 2 {
		t.Errorf("stats %+v", st)
	}
	// A 5xx on the create that hides nothing stays an unknown outcome, and creates nothing.
	_ = srv.SetCloudFaults(emu.Faults{Faults: simulation.Faults{ServerErrors: 1}, Match: "POST /server"})
	req.Name = "upcloud-vm-fail--cdefghij"
	if _, err := first.Create(ctx, req); cloudprovider.KindOf(err) != cloudprovider.ErrOther || !strings.Contains(err.Error(), "SERVICE_UNAVAILABLE") {
		t.Fatalf("create answered 503: %v", err)
	}
	if n := srv.CreateCount(); n != 2 {
		t.Errorf("created %d servers, want 2", n)
	}
}

// TestCreatePriceCap: the cap is checked against the price list as it is at create, in euro cents
// converted to dollars exactly as Offers converts them.
func TestCreatePriceCap(t *testing.T) {
	srv, base := startEmulator(t, emu.Options{})
	b := newTestBackend(t, base, nil)
	ctx := context.Background()
	offer := offerFor(t, b, "fi-hel2", "GPU-8xCPU-64GB-1xL40S")
	const exact money.USD = 1_210_000 // 111.1607 euro cents * 1.08 = 1.20053556 USD, up to the cent
	if offer.PricePerHour != exact {
		t.Fatalf("offer price %s, want %s", offer.PricePerHour, exact)
	}
	req := func(name string, maxPrice money.USD) cloudprovider.CreateRequest {
		return cloudprovider.CreateRequest{Name: name, Offer: offer, MaxPricePerHour: maxPrice, SSHPublicKeys: []string{testKey}}
	}
	_, err := b.Create(ctx, req("upcloud-vm-cheap", exact-money.Micro))
	const want = "plan GPU-8xCPU-64GB-1xL40S in fi-hel2 now costs $1.21/h, above the maximum $1.209999/h"
	if !cloudprovider.IsCapacity(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("create capped one micro-dollar below the price: %v, want %q", err, want)
	}
	gone := offer
	gone.Region = "nl-ams1" // no price for the plan there: not sold
	if _, err := b.Create(ctx, cloudprovider.CreateRequest{Name: "upcloud-vm-gone", Offer: gone, MaxPricePerHour: 100 * money.Dollar, SSHPublicKeys: []string{testKey}}); !cloudprovider.IsCapacity(err) {
		t.Fatalf("create of a plan the zone does not sell: %v", err)
	}
	if n := srv.CreateCount(); n != 0 {
		t.Fatalf("capped creates made %d servers", n)
	}
	if _, err := b.Create(ctx, req("upcloud-vm-exact", offer.PricePerHour)); err != nil {
		t.Fatalf("create capped at the price: %v", err)
	}
}
