package controlplane

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
	"github.com/hydragpu/terraform-provider-hydra/internal/wait"
)

// LaunchRequest asks for one instance from a list of acceptable offers, best first.
type LaunchRequest struct {
	// Name is the resource's name; each pool prepends its prefix and the ownership token follows it.
	Name string
	// Offers are tried in order while a cloud answers "no capacity". One offer: no fallback.
	Offers          []cloudprovider.Offer
	MaxPricePerHour money.USD
	SSHPublicKeys   []string
	// BidTimeout bounds how long Launch waits for an auction bid to win (Instance.AwaitingAllocation)
	// before it cancels the bid and moves on to the next offer (0: no bound; wait as for any boot).
	BidTimeout time.Duration
	// NoCapacity, when set, is told of every offer that failed for lack of capacity (a capacity error,
	// or a bid that did not win in time), so the caller can remember it (see CapacityMemory).
	NoCapacity func(o cloudprovider.Offer, why string)
	// Volumes, when not empty, are attached at launch (VolumeLauncher.CreateWithVolumes): the offers
	// must be of the volumes' cloud and region.
	Volumes []cloudprovider.VolumeMount
}

// Launched is the outcome of Launch.
type Launched struct {
	Instance cloudprovider.Instance
	Offer    cloudprovider.Offer
	Pool     inventory.Pool
	// Adopted is true when the machine was not created by this call but taken over (see Launch).
	Adopted bool
}

// Launch creates the instance from the first offer that has capacity, trying req.Offers in order. It
// first adopts, instead of buying another, a machine an earlier create of the same resource left: the
// one its journaled intent names, or one never confirmed that carries a token derived from its name
// (a leftover that no longer matches the offers is deleted). A create whose answer was lost is looked
// for by name. It never touches a machine of another resource. One offer that ran out of capacity is
// a *SoldOutError; several, a capacity error.
func (cp *ControlPlane) Launch(ctx context.Context, req LaunchRequest) (Launched, error) {
	log := cp.logger(ctx)
	if len(req.Offers) == 0 {
		return Launched{}, errors.New("no offer to launch")
	}
	if l, ok, err := cp.resumeIntent(ctx, req); err != nil || ok {
		return l, err
	}

	if l, ok, err := cp.resumeLeftover(ctx, req); err != nil || ok {
		return l, err
	}

	defer cp.forgetListings()
	var tried []string
	for i, o := range req.Offers {
		pm, ok := cp.manager.Pool(o.Pool)
		if !ok {
			return Launched{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, o.Cloud, "creating instance", "pool %q of offer %s is not configured", o.Pool, o.ID)
		}
		token, err := cp.freeToken(ctx, pm, req.Name, nil)
		if err != nil {
			return Launched{}, err
		}
		name := cloudprovider.CloudName(pm.Pool, req.Name, token)
		intent := Intent{Resource: req.Name, Token: token, Pool: pm.Pool.Name, CloudName: name, OfferID: o.ID, StartedAt: time.Now().UTC()}
		if err := cp.opts.Journal.Put(intent); err != nil {
			return Launched{}, fmt.Errorf("journaling the create before sending it (nothing was created): %w", err)
		}
		log.Info("creating instance", "name", name, "offer", o.ID, "attempt", i+1)
		creq := cloudprovider.CreateRequest{Name: name, Offer: o, MaxPricePerHour: req.MaxPricePerHour,
			SSHPublicKeys: req.SSHPublicKeys, Owner: cloudprovider.Ownership{Resource: req.Name, Token: token}}
		var inst cloudprovider.Instance
		if len(req.Volumes) > 0 {
			inst, err = createWithVolumes(ctx, pm, creq, req.Volumes)
		} else {
			inst, err = pm.Create(ctx, creq)
		}
		if err == nil && inst.AwaitingAllocation && req.BidTimeout > 0 {
			var won bool
			inst, won, err = cp.awaitAllocation(ctx, pm, inst, req.BidTimeout)
			if err != nil {
				// Interrupted: the journaled intent stays, so the next apply takes the bid over.
				return Launched{}, err
			}
			if !won {
				why := fmt.Sprintf("the bid did not win within bid_timeout %s and was cancelled; nothing is billed", req.BidTimeout)
				if derr := pm.Delete(context.WithoutCancel(ctx), InstanceRef{Name: name, ID: inst.ID}); derr != nil {
					// A bid that could not be cancelled may still win and bill: keep it, like any machine.
					log.Warn("could not cancel the bid that did not win in time; keeping it", "name", name, "error", derr)
					return Launched{Instance: inst, Offer: o, Pool: pm.Pool}, nil
				}
				_ = cp.opts.Journal.Remove(req.Name)
				log.Warn("bid not won in time; cancelled it", "name", name, "offer", o.ID, "bid_timeout", req.BidTimeout.String())
				tried = append(tried, fmt.Sprintf("%s: %s", o.ID, why))
				req.noCapacity(o, "its auction could not be won: "+why)
				continue
			}
		}
		if err == nil {
			return Launched{Instance: inst, Offer: o, Pool: pm.Pool}, nil
		}
		// A create whose outcome is unknown may have succeeded: look (by its unique name) first.
		found, ok, uerr := lookAgain(ctx, err, name, func(ctx context.Context) (cloudprovider.Instance, bool, error) {
			inst, err := pm.Get(ctx, InstanceRef{Name: name})
			if cloudprovider.IsNotFound(err) {
				return inst, false, nil
			}
			return inst, err == nil, err
		})
		switch {
		case uerr != nil:
			return Launched{}, uerr
		case ok:
			log.Warn("create reported an error but the instance exists; keeping it", "name", name, "error", err)
			return Launched{Instance: found, Offer: o, Pool: pm.Pool, Adopted: true}, nil
		}
		_ = cp.opts.Journal.Remove(req.Name) // nothing was created
		if !cloudprovider.IsCapacity(err) || ctx.Err() != nil {
			return Launched{}, err
		}
		tried = append(tried, fmt.Sprintf("%s: %v", o.ID, err))
		req.noCapacity(o, err.Error())
		log.Warn("no capacity for offer; trying the next", "offer", o.ID, "error", err)
	}
	if len(req.Offers) == 1 {
		return Launched{}, &SoldOutError{OfferID: req.Offers[0].ID, Cloud: req.Offers[0].Cloud, Reason: tried[0]}
	}
	return Launched{}, cloudprovider.Errorf(cloudprovider.ErrCapacity, "hydra", "creating instance", "every acceptable offer ran out of capacity: %v", tried)
}

// lostAnswer reports whether a create's error leaves its outcome unknown, so that the cloud may have
// made the resource: its answer was lost (ErrOther), or ctx ended while it was sent.
func lostAnswer(err error) bool {
	return cloudprovider.KindOf(err) == cloudprovider.ErrOther || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// lookAgain looks, when a create's error leaves its outcome unknown (lostAnswer), for what the create of
// what may have made: find runs for at most 30 s, even after ctx ended. ok says find found it. When
// find fails, the error is createErr saying that the outcome stays unknown (the intent stays, so the
// next apply looks again).
func lookAgain[T any](ctx context.Context, createErr error, what string, find func(context.Context) (T, bool, error)) (found T, ok bool, err error) {
	if !lostAnswer(createErr) {
		return found, false, nil
	}
	lookCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	found, ok, ferr := find(lookCtx)
	if ferr != nil {
		return found, false, fmt.Errorf("%w (whether %s was created is unknown: %v; the next apply looks for it again)", createErr, what, ferr)
	}
	return found, ok, nil
}

// awaitAllocation waits for an instance awaiting allocation, read through its cloud's shared status
// poller (see poll.go), until the cloud allocates it (won) or timeout passes (not won). An error is
// returned only when ctx ends.
func (cp *ControlPlane) awaitAllocation(ctx context.Context, pm *SinglePoolInstManager, inst cloudprovider.Instance, timeout time.Duration) (cloudprovider.Instance, bool, error) {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cp.logger(ctx).Info("waiting for the bid to win", "name", inst.Name, "bid_timeout", timeout.String())
	err := cp.watch(wctx, pm, InstanceRef{Name: inst.Name, ID: inst.ID}, func(next cloudprovider.Instance, err error) (bool, error) {
		if err != nil {
			return false, nil //nolint:nilerr // a failed read is retried at the next tick, as any failed poll
		}
		inst = next
		return !inst.AwaitingAllocation, nil
	})
	switch {
	case err == nil:
		return inst, true, nil
	case ctx.Err() != nil:
		return inst, false, ctx.Err()
	default:
		return inst, false, nil
	}
}

// SoldOutError says the one planned offer has no capacity any more (a capacity error).
type SoldOutError struct {
	OfferID, Cloud, Reason string
}

func (e *SoldOutError) Error() string {
	return fmt.Sprintf("%s: the planned offer %s has no capacity any more (%s)", e.Cloud, e.OfferID, e.Reason)
}

// Unwrap makes a SoldOutError a capacity error for KindOf and IsCapacity.
func (e *SoldOutError) Unwrap() error {
	return &cloudprovider.Error{Kind: cloudprovider.ErrCapacity, Cloud: e.Cloud, Err: errors.New(e.Reason)}
}

// resumeIntent adopts the machine a journaled intent of this resource names, when it exists and
// matches one of the acceptable offers. A leftover that no longer matches (the plan changed since) is
// this resource's own unconfirmed machine: it is deleted, by its cloud id, so it does not bill on.
func (cp *ControlPlane) resumeIntent(ctx context.Context, req LaunchRequest) (Launched, bool, error) {
	log := cp.logger(ctx)
	intent, ok, err := cp.opts.Journal.Get(req.Name)
	if err != nil || !ok {
		return Launched{}, false, err
	}
	pm, ok := cp.manager.Pool(intent.Pool)
	if !ok {
		log.Warn("a create of this resource was cut short in a pool that is no longer configured; see the orphan warnings", "name", intent.CloudName, "pool", intent.Pool)
		return Launched{}, false, cp.opts.Journal.Remove(req.Name)
	}
	inst, err := pm.Get(ctx, InstanceRef{Name: intent.CloudName})
	if cloudprovider.IsNotFound(err) {
		return Launched{}, false, cp.opts.Journal.Remove(req.Name) // the cut-short create never reached the cloud
	}
	if err != nil {
		return Launched{}, false, fmt.Errorf("looking for %s, left by an interrupted create of this resource: %w", intent.CloudName, err)
	}
	if l, adopted, err := cp.adoptOrDelete(ctx, req, pm, inst); adopted || err != nil {
		return l, adopted, err
	}
	return Launched{}, false, cp.opts.Journal.Remove(req.Name)
}

// adoptOrDelete adopts inst, a machine an interrupted create of req's resource left in pm, when it
// matches one of req's offers, and otherwise deletes it by its cloud id, so that it does not bill on
// (a machine already gone counts as deleted). It reports whether it adopted the machine.
func (cp *ControlPlane) adoptOrDelete(ctx context.Context, req LaunchRequest, pm *SinglePoolInstManager, inst cloudprovider.Instance) (Launched, bool, error) {
	log := cp.logger(ctx)
	for _, o := range req.Offers {
		// Some clouds do not report an instance's region: unknown matches.
		if o.Pool == pm.Pool.Name && (inst.Region == "" || o.Region == inst.Region) && o.InstanceType == inst.InstanceType && o.Spot == inst.Spot {
			log.Info("adopting the machine an interrupted create of this resource left", "name", inst.Name, "id", inst.ID, "created_at", inst.CreatedAt)
			return Launched{Instance: inst, Offer: o, Pool: pm.Pool, Adopted: true}, true, nil
		}
	}
	log.Warn("the machine an interrupted create of this resource left does not match the planned offer; deleting it",
		"name", inst.Name, "id", inst.ID, "instance_type", inst.InstanceType, "region", inst.Region)
	if err := pm.Backend.Delete(ctx, inst.ID); err != nil && !cloudprovider.IsNotFound(err) {
		return Launched{}, false, fmt.Errorf("deleting %s (id %s), left by an interrupted create of this resource and no longer matching the plan: %w", inst.Name, inst.ID, err)
	}
	return Launched{}, false, nil
}

// resumeLeftover looks at the cloud, in the pools of the acceptable offers, for a machine a cut-short
// create of this resource left: never confirmed (on a cloud that records confirmation) and named with
// one of the resource name's derived tokens (OwnerToken), so that any runner of the configuration,
// a fresh one with only the state included, recovers it. A leftover that matches an offer is adopted;
// one that no longer does (the plan changed since) is deleted by its cloud id, so it does not bill on.
func (cp *ControlPlane) resumeLeftover(ctx context.Context, req LaunchRequest) (Launched, bool, error) {
	seen := map[string]bool{}
	for _, o := range req.Offers {
		pm, ok := cp.manager.Pool(o.Pool)
		if !ok || seen[o.Pool] {
			continue
		}
		seen[o.Pool] = true
		if _, confirmable := pm.Backend.(cloudprovider.OwnershipConfirmer); !confirmable {
			continue // the cloud cannot tell a held machine from a leftover: the plan names such machines
		}
		list, err := cp.listPool(ctx, pm)
		if err != nil {
			return Launched{}, false, fmt.Errorf("looking in %s for a machine an interrupted create of %q left (nothing was created): %w", pm.Pool.Name, req.Name, err)
		}
		for _, inst := range list {
			inst = cloudprovider.WithOwner(pm.Pool, inst)
			name, token, ok := cloudprovider.ParseCloudName(pm.Pool, inst.Name)
			if !ok || name != req.Name || inst.Status == cloudprovider.StatusTerminated || inst.Owner.Confirmed || !cloudprovider.DerivedToken(req.Name, token) {
				continue
			}
			if l, adopted, err := cp.adoptOrDelete(ctx, req, pm, inst); adopted || err != nil {
				return l, adopted, err
			}
		}
	}
	return Launched{}, false, nil
}

// freeToken is the first of the resource name's derived tokens whose cloud-side name no machine of the
// pool carries (a create_before_destroy replacement's predecessor holds the first, for one), nor any
// name taken says is used (a cluster's, say; nil: none).
func (cp *ControlPlane) freeToken(ctx context.Context, pm *SinglePoolInstManager, resource string, taken map[string]bool) (string, error) {
	list, err := cp.listPool(ctx, pm)
	if err != nil {
		return "", fmt.Errorf("listing %s before creating %q there (nothing was created): %w", pm.Pool.Name, resource, err)
	}
	used := maps.Clone(taken)
	if used == nil {
		used = map[string]bool{}
	}
	for _, inst := range list {
		used[inst.Name] = true
	}
	for gen := 0; gen < cloudprovider.OwnerGenerations; gen++ {
		if t := cloudprovider.OwnerToken(resource, gen); !used[cloudprovider.CloudName(pm.Pool, resource, t)] {
			return t, nil
		}
	}
	return "", fmt.Errorf("every cloud-side name of %q in %s is taken (%d of them); delete the machines or clusters no state holds, then apply again (nothing was created)", resource, pm.Pool.Name, cloudprovider.OwnerGenerations)
}

// Settle is called once the resource's create has returned the machine to Terraform: it records the
// ownership as confirmed at the cloud (where the cloud can) and forgets the journaled intent. It is
// best effort: a failure is logged and the next refresh confirms again.
func (cp *ControlPlane) Settle(ctx context.Context, resource string, inst cloudprovider.Instance) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	cp.Confirm(ctx, inst)
	if err := cp.opts.Journal.Remove(resource); err != nil {
		cp.logger(ctx).Warn("could not remove the journal entry of a finished create", "resource", resource, "error", err)
	}
}

// Held is called when a refresh or an import finds inst in a Terraform state: it confirms the
// ownership at the cloud and forgets a journaled intent that names the machine (an imported leftover).
func (cp *ControlPlane) Held(ctx context.Context, inst cloudprovider.Instance) {
	cp.Confirm(ctx, inst)
	if in, ok, err := cp.opts.Journal.Get(inst.Owner.Resource); err == nil && ok && in.CloudName == inst.Name {
		_ = cp.opts.Journal.Remove(in.Resource)
	}
}

// PruneJournal forgets journaled intents whose machine does not exist (the create never reached the
// cloud, or the machine was deleted since), judged from a listing of every pool. Intents of clouds
// that could not be listed are kept.
func (cp *ControlPlane) PruneJournal(res ListResult) {
	intents, err := cp.opts.Journal.All()
	if err != nil {
		return
	}
	exists := map[string]bool{}
	for _, m := range res.Machines {
		exists[m.Instance.Name] = true
	}
	for _, in := range intents {
		pm, ok := cp.manager.Pool(in.Pool)
		if !ok || exists[in.CloudName] {
			continue
		}
		if _, down := res.Unreachable[pm.Pool.Cloud]; down {
			continue
		}
		_ = cp.opts.Journal.Remove(in.Resource)
	}
}

// Confirm records at the cloud that a Terraform state holds inst (a no-op where it is confirmed
// already or the cloud cannot record it). Errors are logged, not returned.
func (cp *ControlPlane) Confirm(ctx context.Context, inst cloudprovider.Instance) {
	if inst.ID == "" || inst.Owner.Confirmed {
		return
	}
	pm, err := cp.manager.Route(inst.Name)
	if err != nil {
		return
	}
	c, ok := pm.Backend.(cloudprovider.OwnershipConfirmer)
	if !ok {
		return
	}
	if err := c.ConfirmOwnership(ctx, inst.ID); err != nil && !cloudprovider.IsNotFound(err) {
		cp.logger(ctx).Warn("could not record the machine's ownership as confirmed; the next refresh tries again", "name", inst.Name, "id", inst.ID, "error", err)
	}
}

// WaitRunning waits until the cloud says the instance runs, until ctx ends. It does not wait for an
// SSH endpoint: a running instance ends the wait with the endpoint the cloud reports, nil when none
// (provisioning then waits for SSH itself). An instance that fails, is terminated or disappears at the
// cloud ends it with an error. The instance is read through its cloud's shared status poller (see
// poll.go): at most BootPollMax between reads while the cloud answers, one read per tick for every
// machine waiting on that cloud. onChange sees every status change.
func (cp *ControlPlane) WaitRunning(ctx context.Context, inst cloudprovider.Instance, onChange func(cloudprovider.Instance)) (cloudprovider.Instance, error) {
	log := cp.logger(ctx)
	started := time.Now()
	lastLog := started
	// settled reports whether inst ends the wait: running (done), or an error or terminated (failed).
	settled := func() (bool, error) {
		switch inst.Status {
		case cloudprovider.StatusRunning:
			return true, nil
		case cloudprovider.StatusError:
			msg := inst.Message
			if msg == "" {
				msg = "the cloud reports status " + inst.CloudStatus
			}
			return false, fmt.Errorf("instance %s failed at the cloud: %s", inst.Name, msg)
		case cloudprovider.StatusTerminated:
			return false, fmt.Errorf("instance %s was terminated at the cloud (%s) before it became ready", inst.Name, inst.CloudStatus)
		}
		return false, nil
	}
	interrupted := func() error {
		return fmt.Errorf("waiting for instance %s to run (last status %s): %w", inst.Name, inst.Status, ctx.Err())
	}
	if ctx.Err() != nil {
		return inst, interrupted()
	}
	if done, err := settled(); done || err != nil {
		if done {
			log.Info("machine running", "name", inst.Name, "took", "0s")
		}
		return inst, err
	}
	pm, err := cp.manager.Route(inst.Name)
	if err != nil {
		return inst, err
	}
	log.Info("waiting for the machine to boot", "name", inst.Name, "status", inst.CloudStatus)
	err = cp.watch(ctx, pm, InstanceRef{Name: inst.Name, ID: inst.ID}, func(next cloudprovider.Instance, err error) (bool, error) {
		if cloudprovider.IsNotFound(err) {
			return false, fmt.Errorf("instance %s disappeared at the cloud while starting: %w", inst.Name, err)
		}
		if err != nil {
			log.Warn("status poll failed; will retry", "name", inst.Name, "error", err)
			return false, nil
		}
		if next.Status != inst.Status && onChange != nil {
			onChange(next)
		}
		inst = next
		if time.Since(lastLog) >= 15*time.Second {
			lastLog = time.Now()
			log.Info("waiting for the machine to boot", "name", inst.Name, "status", inst.CloudStatus, "elapsed", time.Since(started).Round(time.Second).String())
		}
		return settled()
	})
	if err == nil {
		log.Info("machine running", "name", inst.Name, "took", time.Since(started).Round(time.Second).String())
		return inst, nil
	}
	if ctx.Err() != nil {
		return inst, interrupted()
	}
	return inst, err
}

// ProvisionSpec is what provisioning needs beyond the instance.
type ProvisionSpec struct {
	Pool     inventory.Pool
	GPUType  string
	GPUCount int
	HostKey  string
	Vars     map[string]any
	// MaxAttempts overrides the control plane's default when above 0.
	MaxAttempts int
	// Volumes are how the machine's volumes appear inside it (ProvisionRequest.Volumes); VolumeUses
	// the volumes as asked, which the digest carries (cloudprovider.VolumesVar).
	Volumes    []cloudprovider.Attachment
	VolumeUses []VolumeUse
}

// Provisioned is what provisioning records.
type Provisioned struct {
	Attempts int
	HostKey  string
	// JumpHostKey is the key of the instance's jump host (SSH.Jump) as given or trusted on first use;
	// "" without a jump host.
	JumpHostKey string
	Digest      string
	ReadyAt     time.Time
	// FailedTask and Message summarise the last failure.
	FailedTask string
	Message    string
}

// Provision runs the provisioner on a running instance, retrying failed attempts with backoff; a
// *PermanentError stops at once. onAttempt is told before each attempt starts.
func (cp *ControlPlane) Provision(ctx context.Context, inst cloudprovider.Instance, spec ProvisionSpec, onAttempt func(attempt int)) (Provisioned, error) {
	log := cp.logger(ctx)
	// The volumes are in the digest's variables, and in the request's, so the marker the provisioner
	// writes carries the same digest.
	vars := volumeVars(spec.Vars, spec.VolumeUses)
	digest, err := cp.opts.Provisioner.Digest(spec.Pool, vars)
	if err != nil {
		return Provisioned{}, fmt.Errorf("computing the provisioning digest: %w", err)
	}
	maxAttempts := cp.opts.MaxProvisionAttempts
	if spec.MaxAttempts > 0 {
		maxAttempts = spec.MaxAttempts
	}
	out := Provisioned{HostKey: spec.HostKey, JumpHostKey: jumpHostKey(inst.SSH), Digest: digest}
	var signal cloudprovider.InterruptionSignal
	if pm, err := cp.manager.Route(inst.Name); err == nil {
		signal = cloudprovider.FactsOf(pm.Backend).Signal
	}
	attempt := 0
	var lastErr error
	err = wait.Until(ctx, "provisioning of "+inst.Name, wait.Backoff{First: cp.opts.ProvisionBackoff, Factor: 2, Attempts: maxAttempts},
		func(ctx context.Context) (bool, error) {
			attempt++
			out.Attempts = attempt
			if onAttempt != nil {
				onAttempt(attempt)
			}
			log.Info("provisioning", "name", inst.Name, "attempt", attempt, "max_attempts", maxAttempts, "playbook", spec.Pool.Playbook)
			res, err := cp.opts.Provisioner.Provision(ctx, cloudprovider.ProvisionRequest{
				Instance: inst, Pool: spec.Pool, GPUType: spec.GPUType, GPUCount: spec.GPUCount,
				HostKey: out.HostKey, Vars: vars, Signal: signal, Volumes: spec.Volumes, Attempt: attempt,
				Log: func(msg string, fields map[string]any) {
					keys := make([]string, 0, len(fields))
					for k := range fields {
						keys = append(keys, k)
					}
					sort.Strings(keys)
					args := make([]any, 0, 2*len(fields))
					for _, k := range keys {
						args = append(args, k, fields[k])
					}
					// One INFO line per task (its outcome); its start and skipped tasks are detail.
					if msg == "task started" || msg == "task skipped" {
						log.Debug(msg, args...)
						return
					}
					log.Info(msg, args...)
				},
			})
			if res.HostKey != "" && out.HostKey == "" {
				out.HostKey = res.HostKey
			}
			if res.JumpHostKey != "" && out.JumpHostKey == "" {
				out.JumpHostKey = res.JumpHostKey
				inst.SSH = withJumpHostKey(inst.SSH, res.JumpHostKey) // pinned for the next attempts
			}
			if err == nil {
				out.FailedTask, out.Message = "", ""
				out.ReadyAt = time.Now().UTC()
				log.Info("provisioning succeeded", "name", inst.Name, "attempt", attempt)
				return true, nil
			}
			out.FailedTask, out.Message = res.FailedTask, res.Message
			lastErr = err
			var perm *cloudprovider.PermanentError
			if errors.As(err, &perm) || ctx.Err() != nil {
				return false, err
			}
			if attempt < maxAttempts {
				log.Warn("provisioning attempt failed; retrying", "name", inst.Name, "attempt", attempt, "error", err)
			}
			return false, wait.Transient(err)
		})
	if err == nil {
		return out, nil
	}
	if lastErr == nil {
		lastErr = err
	}
	if ctx.Err() != nil && !errors.Is(lastErr, ctx.Err()) {
		return out, fmt.Errorf("provisioning %s: %w", inst.Name, ctx.Err())
	}
	return out, fmt.Errorf("provisioning %s failed (attempt %d of %d): %w", inst.Name, attempt, maxAttempts, lastErr)
}

// Terminate deletes an instance, by its cloud id, and waits until the cloud says it is gone. An
// instance that is already gone is not an error.
func (cp *ControlPlane) Terminate(ctx context.Context, ref InstanceRef) error {
	log := cp.logger(ctx)
	defer cp.forgetListings()
	if err := cp.manager.Delete(ctx, ref); err != nil {
		return err
	}
	log.Info("deleting machine", "name", ref.Name, "id", ref.ID)
	started := time.Now()
	lastLog := started
	err := wait.Until(ctx, "instance "+ref.Name+" to terminate", wait.Backoff{First: cp.opts.PollInterval, Max: cp.opts.PollMax, Factor: 1.5, WaitFirst: true},
		func(ctx context.Context) (bool, error) {
			inst, err := cp.manager.Get(ctx, ref)
			if cloudprovider.IsNotFound(err) || (err == nil && inst.Status == cloudprovider.StatusTerminated) {
				return true, nil
			}
			if err != nil {
				log.Warn("status poll failed while deleting; will retry", "name", ref.Name, "error", err)
				return false, wait.Transient(err)
			}
			if time.Since(lastLog) >= 15*time.Second {
				lastLog = time.Now()
				log.Info("waiting for the machine to terminate", "name", ref.Name, "status", inst.CloudStatus, "elapsed", time.Since(started).Round(time.Second).String())
			}
			return false, nil
		})
	if err != nil {
		return fmt.Errorf("waiting for instance %s to terminate: %w", ref.Name, err)
	}
	log.Info("machine deleted", "name", ref.Name, "id", ref.ID, "took", time.Since(started).Round(time.Second).String())
	return nil
}

// CreateRequest is one resource's create: the request it was planned with, the planned offer (or
// none when apply chooses), and what bringing the machine up needs.
type CreateRequest struct {
	// Name is the resource's name.
	Name string
	// Request is what the machine asks for; its Volumes are the machine's volumes, given at launch
	// (CreateWithVolumes) and mounted by provisioning.
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
	if req.OfferID != "" {
		if p, err := ParseOfferID(req.OfferID); err == nil {
			if err := cp.checkPinnedVolumes(req.OfferID, cp.PoolCloud(p.Pool), p.Region, req.Request); err != nil {
				return out, err
			}
		}
	}
	// The volumes are found before anything is created (a missing one creates nothing).
	mounts, err := cp.resolveMounts(ctx, req.Request.Volumes)
	if err != nil {
		return out, err
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
		SSHPublicKeys: req.SSHPublicKeys, Volumes: mounts,
		NoCapacity: func(o cloudprovider.Offer, why string) { misses = append(misses, cp.NewCapacityMiss(o, why)) },
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
	if spec.Volumes == nil {
		spec.Volumes = req.Request.Volumes
	}
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
	journaled := cp.journaled()
	for _, m := range st.Machines.Orphans(cp.opts.OrphanGrace) {
		if _, ok := intentOf(journaled, m.Instance); !ok {
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
	// Volumes are the machine's volumes (their ids and mount paths are part of the digest); PlanNew
	// takes them from its request.
	Volumes []VolumeUse
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
	d, err := cp.PlannedDigest(p.Pool, p.Kind, volumeVars(p.Vars, p.Volumes))
	if err != nil {
		return "", false, refuse("", "Cannot compute the provisioning digest", err.Error())
	}
	return d, true, nil
}
