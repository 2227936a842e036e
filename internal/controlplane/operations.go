package controlplane

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// CreateRequest is one resource's create: the request it was planned with, the planned offer (or
// none when apply chooses), and what bringing the machine up needs.
type CreateRequest struct {
	// Name is the resource's name.
	Name    string
	Request OfferRequest
	// OfferID is the planned offer; "" lets the create take the cheapest acceptable offer now.
	OfferID string
	// NameInUse is the name check the plan left to the create (Quote.NameInUse).
	NameInUse     *NameInUse
	SSHPublicKeys []string
	BidTimeout    time.Duration
	// BringUp is what provisioning needs; its Pool is the launched offer's.
	BringUp BringUpSpec
	// Launched, when set, is told of the launched machine before its record is first saved.
	Launched func(Launched)
	// Gone, when set, is asked once the create ends whether Terraform is gone (true): the journaled
	// intent then stays so the next apply adopts the machine instead of buying another.
	Gone func(cancelled bool) bool
}

// Created is the outcome of Create.
type Created struct {
	Launched Launched
	Record   Record
	// ForgetQuote says the plan's quote is spent (launched) or wrong (the price rose, the offer sold
	// out): the next plan quotes afresh.
	ForgetQuote bool
	// Capacity is set when nothing was created for lack of capacity and capacity_memory is on: the
	// offers the next plans skip.
	Capacity *CapacityRecord
}

// CapacityRecord is what a create that failed for lack of capacity leaves for the next plans.
type CapacityRecord struct {
	Misses []CapacityMiss
	// Until is when the last miss is forgotten; Memory is capacity_memory.
	Until  time.Time
	Memory time.Duration
}

// Create is one resource's create, end to end: the name check the plan left to it, the offers it may
// launch (the planned one, or every acceptable one now), the launch (adopting what an interrupted
// create of the resource left), the record saved before any wait, bring-up to ready, and the ownership
// settled once the create ends. save sees every step of the record. An error after the launch leaves
// Created.Record holding the machine; before it, nothing was created.
func (cp *ControlPlane) Create(ctx context.Context, req CreateRequest, save func(Record)) (Created, error) {
	var out Created
	if cp.NameStillInUse(ctx, req.Name, req.Request.Kind, req.Request.Clouds, req.NameInUse) {
		return out, &Refusal{Notice{Field: "name", Summary: req.NameInUse.Summary, Detail: req.NameInUse.Detail}}
	}
	offers, err := cp.LaunchOffers(ctx, req.Request, req.OfferID)
	var rose *PriceRoseError
	if err != nil {
		out.ForgetQuote = errors.As(err, &rose)
		return out, err
	}
	var misses []CapacityMiss
	launched, err := cp.Launch(ctx, LaunchRequest{
		Name: req.Name, Offers: offers, MaxPricePerHour: req.Request.MaxPricePerHour, BidTimeout: req.BidTimeout,
		SSHPublicKeys: req.SSHPublicKeys,
		NoCapacity:    func(o cloudprovider.Offer, why string) { misses = append(misses, cp.NewCapacityMiss(o, why)) },
	})
	if cloudprovider.IsCapacity(err) && cp.opts.CapacityMemory > 0 && len(misses) > 0 {
		// Nothing was created (an unknown outcome is not a capacity error).
		out.Capacity = &CapacityRecord{Misses: misses, Until: misses[len(misses)-1].At.Add(cp.opts.CapacityMemory), Memory: cp.opts.CapacityMemory}
	}
	var soldOut *SoldOutError
	out.ForgetQuote = err == nil || errors.As(err, &soldOut)
	if err != nil {
		return out, err
	}
	out.Launched = launched
	if req.Launched != nil {
		req.Launched(launched)
	}
	// The machine exists and is billed: recorded before any wait, so no error or interrupt loses it.
	rec := NewRecord(launched.Instance)
	if rec.CreatedAt.IsZero() {
		rec.CreatedAt = cp.Now() // the cloud does not say: the bill started about now
	}
	if rec.PricePerHour == 0 {
		rec.PricePerHour = launched.Offer.PricePerHour
	}
	if save != nil {
		save(rec)
	}
	defer func() {
		// Terraform holds the machine once the create returns, unless Terraform itself is gone.
		if req.Gone == nil || !req.Gone(ctx.Err() != nil) {
			cp.Settle(ctx, req.Name, launched.Instance)
		}
	}()
	if launched.Adopted {
		cp.logger(ctx).Warn("adopted the machine an interrupted create of this resource left, instead of buying another", "id", launched.Instance.ID, "name", launched.Instance.Name)
	}
	spec := req.BringUp
	spec.Pool = launched.Pool
	err = cp.BringUp(ctx, &rec, launched.Instance, spec, save)
	out.Record = rec
	return out, err
}

// DefaultDrainTimeout bounds an execlet's drain when the resource sets none.
const DefaultDrainTimeout = 10 * time.Minute

// DeleteRequest is one resource's delete.
type DeleteRequest struct {
	Record   Record
	GPUType  string
	GPUCount int
	// DrainTimeout bounds an execlet's drain (0: DefaultDrainTimeout).
	DrainTimeout time.Duration
	// NoDrain, when set, is why an execlet cannot be drained from here (it is deleted undrained).
	NoDrain string
}

// Delete deletes a resource's machine: an execlet is drained first (at most its drain timeout, and
// deleted whatever happened), then the machine is terminated and awaited. A record without a cloud
// machine (a create that failed for lack of capacity) deletes nothing.
func (cp *ControlPlane) Delete(ctx context.Context, req DeleteRequest) error {
	rec := req.Record
	if rec.ID == "" {
		return nil
	}
	switch {
	case req.NoDrain != "":
		if pm, err := cp.manager.Route(rec.Name); err == nil && pm.Pool.Kind == inventory.KindExeclet {
			cp.logger(ctx).Warn("execlet not drained", "name", rec.Name, "why", req.NoDrain)
		}
	default:
		timeout := req.DrainTimeout
		if timeout <= 0 {
			timeout = DefaultDrainTimeout
		}
		cp.Drain(ctx, rec, req.GPUType, req.GPUCount, timeout)
	}
	return cp.Terminate(ctx, InstanceRef{Name: rec.Name, ID: rec.ID})
}

// BilledPrice says how the price a machine is billed compares with the one its plan showed: "" when
// they agree (or either is unknown), else a sentence with both.
func BilledPrice(planned, billed money.USD) string {
	if planned == 0 || billed == 0 || planned == billed {
		return ""
	}
	return fmt.Sprintf("The plan showed %s; the cloud bills %s.", planned.PerHour(), billed.PerHour())
}

// Startup is what the control plane finds when it starts: every pool's machines with their
// ownership, and those that may be billed with no state holding them (Orphans, after OrphanGrace)
// apart from the ones this working directory's journal names (its own report).
type Startup struct {
	Machines ListResult
	Orphans  []Machine
}

// Open lists every pool's machines once, forgets the journaled intents whose machine does not exist
// (PruneJournal), and finds the orphans.
func (cp *ControlPlane) Open(ctx context.Context) Startup {
	st := Startup{Machines: cp.Machines(ctx, nil)}
	cp.PruneJournal(st.Machines)
	journaled := map[string]bool{}
	if intents, err := cp.opts.Journal.All(); err == nil {
		for _, in := range intents {
			journaled[in.CloudName] = true
		}
	}
	for _, m := range st.Machines.Orphans(cp.opts.OrphanGrace) {
		if !journaled[m.Instance.Name] {
			st.Orphans = append(st.Orphans, m)
		}
	}
	return st
}

// PlannedProvisioning is what a plan's provisioning digest needs: the machine's pool (or, when none
// is known yet, its kind) and the playbook's variables (VarsKnown false while any is unknown).
type PlannedProvisioning struct {
	Pool, Kind string
	Vars       map[string]any
	VarsKnown  bool
}

// plannedDigest is the digest a plan shows: "" with provisioning off, not known while the variables
// are not. An error is a *Refusal.
func (cp *ControlPlane) plannedDigest(p PlannedProvisioning) (digest string, known bool, err error) {
	if !cp.Provisioning() {
		return "", true, nil
	}
	if !p.VarsKnown {
		return "", false, nil
	}
	d, err := cp.PlannedDigest(p.Pool, p.Kind, p.Vars)
	if err != nil {
		return "", false, refuse("", "Cannot compute the provisioning digest", err.Error())
	}
	return d, true, nil
}
