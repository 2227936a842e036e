// Package conformance is the backend contract (cloudprovider.InstanceManagerBackend) as one test suite.
// Every cloud of the registry (internal/clouds) runs it against its own emulator (this package's
// TestConformance, which fails for a registered cloud without a harness), so a rule of the contract is
// a rule of every cloud: creates are idempotent by name, a lost create answer is recovered, a price above the cap is
// a capacity error, Get and List change nothing at the cloud, a gone machine deletes cleanly, and the
// ownership record survives the round trip through the cloud.
//
// Only tests import this package.
package conformance

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// Harness is what a cloud's test hands the suite.
type Harness struct {
	// Cloud is the backend's cloud name.
	Cloud string
	// Start starts a fresh emulator with its own empty state, machines that boot and terminate within
	// a second or two, and returns a backend talking to it over real HTTP, and the emulator's admin.
	// It registers its own cleanup with t.
	Start func(t *testing.T) (cloudprovider.InstanceManagerBackend, simulation.Admin)
	// Offer picks the offer the suite creates from (default: the cheapest eligible offer with stock).
	// Auction clouds use it to price a bid.
	Offer func(t *testing.T, b cloudprovider.InstanceManagerBackend, offers []cloudprovider.Offer) cloudprovider.Offer
}

// testKey is an authorized_keys line for creates (a throwaway key; nothing logs in with it).
const testKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIH3dlYcKyiFqR4SxlGQbfJEX5RzzyLcn6X9UGBJ4U2rG conformance@hydra"

// Run runs the whole suite. Each case starts its own emulator and may run in parallel with the others.
func Run(t *testing.T, h Harness) {
	t.Helper()
	runCases(t, h, "cloudprovider.InstanceManagerBackend", []suiteCase[cloudprovider.InstanceManagerBackend]{
		{"OffersHaveNoSideEffects", testOffers},
		{"Lifecycle", testLifecycle},
		{"CreateStormMakesOneMachine", testStorm},
		{"LostCreateResponseIsRecovered", testLostCreate},
		{"BootFailureIsError", testBootFailure},
		{"PriceAboveCapIsCapacity", testPriceCap},
		{"SoldOutIsCapacity", testSoldOut},
		{"TransientErrorsAreRetried", testRetries},
		{"OwnershipConfirmation", testConfirm},
	})
}

// suiteCase is one case of a suite of the contract of B.
type suiteCase[B any] struct {
	name string
	fn   func(t *testing.T, h Harness, b B, admin simulation.Admin)
}

// runCases runs each case in parallel, each with an emulator of its own and the backend built against
// it as a B; a backend that is no B (ability names it) fails the case.
func runCases[B any](t *testing.T, h Harness, ability string, cases []suiteCase[B]) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ib, admin := h.Start(t)
			b, ok := ib.(B)
			if !ok {
				t.Fatalf("the %s backend does not implement %s", h.Cloud, ability)
			}
			c.fn(t, h, b, admin)
		})
	}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func pickOffer(t *testing.T, h Harness, b cloudprovider.InstanceManagerBackend) cloudprovider.Offer {
	t.Helper()
	offers, err := b.Offers(ctxFor(t))
	if err != nil {
		t.Fatalf("Offers: %v", err)
	}
	if h.Offer != nil {
		return h.Offer(t, b, offers)
	}
	var ok []cloudprovider.Offer
	for _, o := range offers {
		if o.Ineligible == "" && o.Available != 0 && !o.Spot && o.GPUType != "" {
			ok = append(ok, o)
		}
	}
	if len(ok) == 0 {
		t.Fatalf("no eligible offer with stock among %d offers", len(offers))
	}
	sort.SliceStable(ok, func(i, j int) bool { return ok[i].PricePerHour < ok[j].PricePerHour })
	return ok[0]
}

// request builds a create request for resource name in the cloud's pool with a fresh token.
func request(t *testing.T, h Harness, offer cloudprovider.Offer, name string) cloudprovider.CreateRequest {
	pool := backendtest.Pool(t, h.Cloud)
	offer.Pool = pool.Name
	owner := cloudprovider.Ownership{Resource: name, Token: cloudprovider.NewOwnerToken()}
	return cloudprovider.CreateRequest{
		Name: cloudprovider.CloudName(pool, name, owner.Token), Pool: pool, Offer: offer, Owner: owner,
		SSHPublicKeys: []string{testKey},
	}
}

func stats(t *testing.T, a simulation.Admin) simulation.Stats {
	t.Helper()
	st, err := a.Stats()
	if err != nil {
		t.Fatalf("emulator stats: %v", err)
	}
	return st
}

// wantNothingMade fails the test unless the cloud has made no machine at all: what (a listing, a
// refused create) changed nothing.
func wantNothingMade(t *testing.T, a simulation.Admin, what string) {
	t.Helper()
	if st := stats(t, a); st.Created != 0 || len(st.Live) != 0 {
		t.Errorf("%s changed the cloud: %+v", what, st)
	}
}

func setFaults(t *testing.T, a simulation.Admin, f simulation.Faults) {
	t.Helper()
	if err := a.SetFaults(f); err != nil {
		t.Fatalf("setting faults: %v", err)
	}
}

// waitFor polls Get until done says so, for at most 30 s.
func waitFor(t *testing.T, b cloudprovider.InstanceManagerBackend, id string, what string, done func(cloudprovider.Instance, error) bool) cloudprovider.Instance {
	t.Helper()
	return waitUntil(t, "instance", id, what, b.Get, done, func(i cloudprovider.Instance) string {
		return fmt.Sprintf("status %q (%s)", i.Status, i.CloudStatus)
	})
}

// instanceRunning and instanceGone are the states the suite waits for a machine to reach.
func instanceRunning(i cloudprovider.Instance, err error) bool {
	return err == nil && i.Status == cloudprovider.StatusRunning
}

func instanceGone(i cloudprovider.Instance, err error) bool {
	return cloudprovider.IsNotFound(err) || (err == nil && i.Status == cloudprovider.StatusTerminated)
}

// waitUntil polls get(id) every 100 ms until done says so, for at most 30 s; the failure names the
// kind of thing, what it waited for and the last answer (described by last).
func waitUntil[T any](t *testing.T, kind, id, what string, get func(context.Context, string) (T, error), done func(T, error) bool, last func(T) string) T {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, err := get(ctxFor(t), id)
		if done(v, err) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s: waited 30s for %s; last %s, error %v", kind, id, what, last(v), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func checkOwner(t *testing.T, pool inventory.Pool, req cloudprovider.CreateRequest, inst cloudprovider.Instance) {
	t.Helper()
	if inst.Name != req.Name {
		t.Errorf("instance name %q, want the requested name %q verbatim", inst.Name, req.Name)
	}
	if inst.Owner.Token != "" && (inst.Owner.Token != req.Owner.Token || inst.Owner.Resource != req.Owner.Resource) {
		t.Errorf("the cloud's ownership record is %+v, want %+v", inst.Owner, req.Owner)
	}
	got := cloudprovider.WithOwner(pool, inst).Owner
	if got.Token != req.Owner.Token || got.Resource != req.Owner.Resource {
		t.Errorf("ownership record %+v does not survive the round trip (want resource %q, token %q)", got, req.Owner.Resource, req.Owner.Token)
	}
}

func testOffers(t *testing.T, h Harness, b cloudprovider.InstanceManagerBackend, admin simulation.Admin) {
	offers, err := b.Offers(ctxFor(t))
	if err != nil {
		t.Fatalf("Offers: %v", err)
	}
	if len(offers) == 0 {
		t.Fatal("Offers returned nothing")
	}
	for _, o := range offers {
		if o.Cloud != h.Cloud || o.InstanceType == "" || o.PricePerHour < 0 || o.CloudGPU == "" {
			t.Errorf("malformed offer %+v (every offer names its cloud, instance type, price and the cloud's GPU name)", o)
		}
		// A GPU the inventory maps has a type and a count; one it cannot map is reported, not dropped.
		if o.GPUType != "" && o.GPUCount < 1 {
			t.Errorf("mapped offer %+v has no GPU count", o)
		}
		if o.Pool != "" || o.ID != "" {
			t.Errorf("offer %+v: backends leave Pool and ID to the control plane", o)
		}
	}
	wantNothingMade(t, admin, "listing offers")
}

func testLifecycle(t *testing.T, h Harness, b cloudprovider.InstanceManagerBackend, admin simulation.Admin) {
	pool := backendtest.Pool(t, h.Cloud)
	req := request(t, h, pickOffer(t, h, b), "lifecycle")
	inst, err := b.Create(ctxFor(t), req)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if inst.ID == "" {
		t.Fatal("Create returned no id")
	}
	checkOwner(t, pool, req, inst)

	// Get and List find it, by id and by prefix, and change nothing at the cloud.
	before := stats(t, admin)
	got, err := b.Get(ctxFor(t), inst.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	checkOwner(t, pool, req, got)
	list, err := b.List(ctxFor(t), pool.Prefix)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if n := countNamed(list, req.Name); n != 1 {
		t.Errorf("List(%q) holds %d instances named %q, want 1", pool.Prefix, n, req.Name)
	}
	for _, l := range list {
		if l.Name == req.Name {
			checkOwner(t, pool, req, l)
		}
	}
	other, err := b.List(ctxFor(t), pool.Prefix+"no-such-")
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(other) != 0 {
		t.Errorf("List with a prefix nothing has returned %d instances", len(other))
	}
	if after := stats(t, admin); after.Created != before.Created || len(after.Live) != len(before.Live) {
		t.Errorf("Get and List changed the cloud: before %+v, after %+v", before, after)
	}

	running := waitFor(t, b, inst.ID, "running", instanceRunning)
	if running.SSH == nil || running.SSH.Host == "" || running.SSH.Port == 0 {
		t.Errorf("a running instance reports no SSH endpoint: %+v", running.SSH)
	}
	if running.PricePerHour <= 0 && req.Offer.PricePerHour > 0 {
		t.Errorf("running instance has price %v", running.PricePerHour)
	}

	if err := b.Delete(ctxFor(t), inst.ID); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	waitFor(t, b, inst.ID, "terminated", instanceGone)
	if err := b.Delete(ctxFor(t), inst.ID); err != nil {
		t.Errorf("Delete of a gone instance: %v, want success", err)
	}
	if _, err := b.Get(ctxFor(t), "no-such-instance-id"); err != nil && !cloudprovider.IsNotFound(err) {
		t.Errorf("Get of an unknown id: %v, want a not-found error", err)
	} else if err == nil {
		t.Error("Get of an unknown id succeeded")
	}
	if st := stats(t, admin); st.Created != 1 || len(st.Live) != 0 {
		t.Errorf("after the lifecycle the cloud has %+v, want 1 created and none live", st)
	}
}

func countNamed(list []cloudprovider.Instance, name string) int {
	n := 0
	for _, i := range list {
		if i.Name == name && i.Status != cloudprovider.StatusTerminated {
			n++
		}
	}
	return n
}

func testStorm(t *testing.T, h Harness, b cloudprovider.InstanceManagerBackend, admin simulation.Admin) {
	req := request(t, h, pickOffer(t, h, b), "storm")
	const n = 6
	ids, errs := storm(n, func() (string, error) {
		inst, err := b.Create(ctxFor(t), req)
		return inst.ID, err
	})
	for i, err := range errs {
		if err != nil && cloudprovider.KindOf(err) != cloudprovider.ErrOther {
			t.Errorf("create %d of a storm: %v (kind %v); a create of an existing name returns that instance", i, err, cloudprovider.KindOf(err))
		}
	}
	st := stats(t, admin)
	if st.Created != 1 || len(st.Live) != 1 {
		t.Fatalf("%d concurrent creates of one name left %d created, %d live; want exactly 1", n, st.Created, len(st.Live))
	}
	for i, id := range ids {
		if errs[i] == nil && id != st.Live[0].ID {
			t.Errorf("create %d returned id %s, but the one machine is %s", i, id, st.Live[0].ID)
		}
	}
}

func testLostCreate(t *testing.T, h Harness, b cloudprovider.InstanceManagerBackend, admin simulation.Admin) {
	pool := backendtest.Pool(t, h.Cloud)
	req := request(t, h, pickOffer(t, h, b), "lost")
	setFaults(t, admin, simulation.Faults{LoseCreateResponses: 1})
	inst, err := b.Create(ctxFor(t), req)
	if err != nil && cloudprovider.KindOf(err) != cloudprovider.ErrOther {
		t.Fatalf("a lost create answer is %v (kind %v), want an unknown outcome (ErrOther) or the instance", err, cloudprovider.KindOf(err))
	}
	list, lerr := b.List(ctxFor(t), req.Name)
	if lerr != nil {
		t.Fatalf("List: %v", lerr)
	}
	if n := countNamed(list, req.Name); n != 1 {
		t.Fatalf("after a lost create answer List(%q) finds %d instances, want 1", req.Name, n)
	}
	for _, l := range list {
		if l.Name == req.Name {
			checkOwner(t, pool, req, l)
			if err == nil && inst.ID != l.ID {
				t.Errorf("Create returned %s but the machine is %s", inst.ID, l.ID)
			}
		}
	}
	if st := stats(t, admin); st.Created != 1 {
		t.Errorf("created %d machines, want 1", st.Created)
	}
}

func testBootFailure(t *testing.T, h Harness, b cloudprovider.InstanceManagerBackend, admin simulation.Admin) {
	req := request(t, h, pickOffer(t, h, b), "bootfail")
	setFaults(t, admin, simulation.Faults{BootFailures: 1})
	inst, err := b.Create(ctxFor(t), req)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	waitFor(t, b, inst.ID, "the error status", func(i cloudprovider.Instance, err error) bool {
		if err == nil && i.Status == cloudprovider.StatusRunning {
			t.Fatalf("a machine whose boot fails reached running")
		}
		return err == nil && i.Status == cloudprovider.StatusError
	})
}

func testPriceCap(t *testing.T, h Harness, b cloudprovider.InstanceManagerBackend, admin simulation.Admin) {
	offer := pickOffer(t, h, b)
	if offer.PricePerHour <= money.Cent {
		t.Skip("the offer is too cheap to cap below")
	}
	req := request(t, h, offer, "capped")
	// One micro-dollar below the price: caps are exact, so this is above the cap.
	req.MaxPricePerHour = offer.PricePerHour - money.Micro
	_, err := b.Create(ctxFor(t), req)
	if !cloudprovider.IsCapacity(err) {
		t.Fatalf("create with max price %s below the offer's %s: %v (kind %v), want a capacity error", req.MaxPricePerHour, offer.PricePerHour, err, cloudprovider.KindOf(err))
	}
	wantNothingMade(t, admin, "a create above the cap")
}

func testSoldOut(t *testing.T, h Harness, b cloudprovider.InstanceManagerBackend, admin simulation.Admin) {
	req := request(t, h, pickOffer(t, h, b), "soldout")
	setFaults(t, admin, simulation.Faults{SoldOut: true})
	_, err := b.Create(ctxFor(t), req)
	if !cloudprovider.IsCapacity(err) {
		t.Fatalf("create while sold out: %v (kind %v), want a capacity error", err, cloudprovider.KindOf(err))
	}
	wantNothingMade(t, admin, "a sold-out create")
}

func testRetries(t *testing.T, h Harness, b cloudprovider.InstanceManagerBackend, admin simulation.Admin) {
	setFaults(t, admin, simulation.Faults{RateLimited: 2, RetryAfterSeconds: 1})
	if _, err := b.Offers(ctxFor(t)); err != nil {
		t.Fatalf("Offers after two 429s: %v; rate limits are waited out", err)
	}
	setFaults(t, admin, simulation.Faults{ServerErrors: 1})
	if _, err := b.List(ctxFor(t), "x-"); err != nil {
		t.Fatalf("List after one 5xx: %v; safe calls are retried", err)
	}
	f, err := admin.Faults()
	if err != nil {
		t.Fatal(err)
	}
	if f.RateLimited != 0 || f.ServerErrors != 0 {
		t.Errorf("faults not used up (%+v): the calls never reached the emulator", f)
	}
}

func testConfirm(t *testing.T, h Harness, b cloudprovider.InstanceManagerBackend, _ simulation.Admin) {
	c, ok := b.(cloudprovider.OwnershipConfirmer)
	if !ok {
		t.Skipf("%s cannot change a machine's metadata after creation; ownership is carried by the name alone", h.Cloud)
	}
	req := request(t, h, pickOffer(t, h, b), "confirm")
	inst, err := b.Create(ctxFor(t), req)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if inst.Owner.Token != req.Owner.Token || inst.Owner.Confirmed {
		t.Errorf("a new machine's record is %+v, want token %q, unconfirmed", inst.Owner, req.Owner.Token)
	}
	for range 2 { // idempotent
		if err := c.ConfirmOwnership(ctxFor(t), inst.ID); err != nil {
			t.Fatalf("ConfirmOwnership: %v", err)
		}
	}
	got, err := b.Get(ctxFor(t), inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Owner.Confirmed || got.Owner.Token != req.Owner.Token {
		t.Errorf("after confirmation Get reports %+v", got.Owner)
	}
	list, err := b.List(ctxFor(t), req.Name)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || !list[0].Owner.Confirmed {
		t.Errorf("after confirmation List reports %+v", list)
	}
	if err := b.Delete(ctxFor(t), inst.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, b, inst.ID, "terminated", instanceGone)
	if err := c.ConfirmOwnership(ctxFor(t), inst.ID); !cloudprovider.IsNotFound(err) {
		t.Errorf("ConfirmOwnership of a gone machine: %v, want a not-found error", err)
	}
}
