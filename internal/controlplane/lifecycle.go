package controlplane

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
)

// LaunchRequest asks for one instance from a list of acceptable offers, best first.
type LaunchRequest struct {
	// Name is the resource's name; each pool prepends its prefix.
	Name string
	// Offers are tried in order while a cloud answers "no capacity". One offer: no fallback.
	Offers          []Offer
	MaxPricePerHour float64
	SSHPublicKeys   []string
}

// Launched is the outcome of Launch.
type Launched struct {
	Instance Instance
	Offer    Offer
	Pool     inventory.Pool
	// Adopted is true when an instance with the name already existed (an earlier create was cut short)
	// and was taken over instead of creating a second one.
	Adopted bool
}

// FindExisting looks in every pool for an instance named after the resource (a create that was cut
// short leaves one behind). It returns ErrNotFound when there is none.
func (cp *ControlPlane) FindExisting(ctx context.Context, name string) (Instance, inventory.Pool, error) {
	for _, p := range cp.manager.Pools() {
		inst, err := p.Get(ctx, InstanceRef{Name: CloudName(p.Pool, name, "")})
		if err == nil {
			return inst, p.Pool, nil
		}
		if !IsNotFound(err) {
			return Instance{}, p.Pool, err
		}
	}
	return Instance{}, inventory.Pool{}, Errorf(ErrNotFound, "hydra", "finding instance", "no instance named after %q in any pool", name)
}

// Launch creates the instance. It is orphan-proof: before creating it adopts an instance that already
// carries the name, and when a create fails in a way that may hide a success (a 5xx, a lost answer) it
// looks for the name again before giving up. A capacity error moves on to the next offer.
func (cp *ControlPlane) Launch(ctx context.Context, req LaunchRequest) (Launched, error) {
	log := cp.logger(ctx)
	if len(req.Offers) == 0 {
		return Launched{}, errors.New("no offer to launch")
	}
	if inst, pool, err := cp.FindExisting(ctx, req.Name); err == nil {
		for _, o := range req.Offers {
			// Some clouds do not report an instance's region (Prime Intellect pods): unknown matches.
			if o.Pool == pool.Name && (inst.Region == "" || o.Region == inst.Region) && o.InstanceType == inst.InstanceType {
				log.Info("adopting existing instance", "name", inst.Name, "id", inst.ID)
				return Launched{Instance: inst, Offer: o, Pool: pool, Adopted: true}, nil
			}
		}
		return Launched{}, Errorf(ErrInvalid, pool.Cloud, "creating instance",
			"an instance named %q (id %s, %s in %s) already exists and does not match the planned offer; import it with `terraform import` or delete it at the cloud",
			inst.Name, inst.ID, inst.InstanceType, inst.Region)
	} else if !IsNotFound(err) {
		return Launched{}, fmt.Errorf("looking for an existing instance named after %q: %w", req.Name, err)
	}

	var tried []string
	for i, o := range req.Offers {
		pm, ok := cp.manager.Pool(o.Pool)
		if !ok {
			return Launched{}, Errorf(ErrInvalid, o.Cloud, "creating instance", "pool %q of offer %s is not configured", o.Pool, o.ID)
		}
		name := CloudName(pm.Pool, req.Name, "")
		log.Info("creating instance", "name", name, "offer", o.ID, "attempt", i+1)
		inst, err := pm.Create(ctx, CreateRequest{Name: name, Offer: o, MaxPricePerHour: req.MaxPricePerHour, SSHPublicKeys: req.SSHPublicKeys})
		if err == nil {
			return Launched{Instance: inst, Offer: o, Pool: pm.Pool}, nil
		}
		// A create whose outcome is unknown may have succeeded: look before doing anything else.
		if k := KindOf(err); k == ErrOther || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			lookCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			inst, gerr := pm.Get(lookCtx, InstanceRef{Name: name})
			cancel()
			if gerr == nil {
				log.Warn("create reported an error but the instance exists; adopting it", "name", name, "error", err)
				return Launched{Instance: inst, Offer: o, Pool: pm.Pool, Adopted: true}, nil
			}
		}
		if !IsCapacity(err) || ctx.Err() != nil {
			return Launched{}, err
		}
		tried = append(tried, fmt.Sprintf("%s: %v", o.ID, err))
		log.Warn("no capacity for offer; trying the next", "offer", o.ID, "error", err)
	}
	if len(req.Offers) == 1 {
		return Launched{}, Errorf(ErrCapacity, req.Offers[0].Cloud, "creating instance",
			"the planned offer %s has no capacity any more (%s); run `terraform plan` again to choose another offer, or set allow_fallback = true to let apply take the next cheapest one", req.Offers[0].ID, tried[0])
	}
	return Launched{}, Errorf(ErrCapacity, "hydra", "creating instance", "every acceptable offer ran out of capacity: %v", tried)
}

// WaitRunning polls until the cloud says the instance runs (with an SSH endpoint when provisioning
// needs one), with backoff, until ctx ends. onChange sees every status change.
func (cp *ControlPlane) WaitRunning(ctx context.Context, inst Instance, onChange func(Instance)) (Instance, error) {
	wait := cp.opts.PollInterval
	last := inst.Status
	for {
		switch inst.Status {
		case StatusRunning:
			return inst, nil
		case StatusError:
			msg := inst.Message
			if msg == "" {
				msg = "the cloud reports status " + inst.CloudStatus
			}
			return inst, fmt.Errorf("instance %s failed at the cloud: %s", inst.Name, msg)
		case StatusTerminated:
			return inst, fmt.Errorf("instance %s was terminated at the cloud (%s) before it became ready", inst.Name, inst.CloudStatus)
		}
		select {
		case <-ctx.Done():
			return inst, fmt.Errorf("waiting for instance %s to run (last status %s): %w", inst.Name, inst.Status, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(wait*3/2, cp.opts.PollMax)
		next, err := cp.manager.Get(ctx, InstanceRef{Name: inst.Name, ID: inst.ID})
		if err != nil {
			if IsNotFound(err) {
				return inst, fmt.Errorf("instance %s disappeared at the cloud while starting: %w", inst.Name, err)
			}
			if ctx.Err() != nil {
				return inst, fmt.Errorf("waiting for instance %s to run (last status %s): %w", inst.Name, inst.Status, ctx.Err())
			}
			cp.logger(ctx).Warn("status poll failed; will retry", "name", inst.Name, "error", err)
			continue
		}
		inst = next
		if inst.Status != last && onChange != nil {
			onChange(inst)
		}
		last = inst.Status
	}
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
}

// Provisioned is what provisioning records.
type Provisioned struct {
	Attempts int
	HostKey  string
	Digest   string
	ReadyAt  time.Time
	// FailedTask and Message summarise the last failure.
	FailedTask string
	Message    string
}

// Provision runs the provisioner on a running instance, retrying failed attempts with backoff; a
// *PermanentError stops at once. onAttempt is told before each attempt starts.
func (cp *ControlPlane) Provision(ctx context.Context, inst Instance, spec ProvisionSpec, onAttempt func(attempt int)) (Provisioned, error) {
	log := cp.logger(ctx)
	digest, err := cp.opts.Provisioner.Digest(spec.Pool, spec.Vars)
	if err != nil {
		return Provisioned{}, fmt.Errorf("computing the provisioning digest: %w", err)
	}
	maxAttempts := cp.opts.MaxProvisionAttempts
	if spec.MaxAttempts > 0 {
		maxAttempts = spec.MaxAttempts
	}
	out := Provisioned{HostKey: spec.HostKey, Digest: digest}
	backoff := cp.opts.ProvisionBackoff
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		out.Attempts = attempt
		if onAttempt != nil {
			onAttempt(attempt)
		}
		log.Info("provisioning", "name", inst.Name, "attempt", attempt, "max_attempts", maxAttempts, "playbook", spec.Pool.Playbook)
		res, err := cp.opts.Provisioner.Provision(ctx, ProvisionRequest{
			Instance: inst, Pool: spec.Pool, GPUType: spec.GPUType, GPUCount: spec.GPUCount,
			HostKey: out.HostKey, Vars: spec.Vars, Attempt: attempt,
			Log: func(msg string, fields map[string]any) {
				args := make([]any, 0, 2*len(fields))
				for k, v := range fields {
					args = append(args, k, v)
				}
				log.Info(msg, args...)
			},
		})
		if res.HostKey != "" && out.HostKey == "" {
			out.HostKey = res.HostKey
		}
		if err == nil {
			out.FailedTask, out.Message = "", ""
			out.ReadyAt = time.Now().UTC()
			log.Info("provisioning succeeded", "name", inst.Name, "attempt", attempt)
			return out, nil
		}
		out.FailedTask, out.Message = res.FailedTask, res.Message
		var perm *PermanentError
		if errors.As(err, &perm) || ctx.Err() != nil || attempt == maxAttempts {
			return out, fmt.Errorf("provisioning %s failed (attempt %d of %d): %w", inst.Name, attempt, maxAttempts, err)
		}
		log.Warn("provisioning attempt failed; retrying", "name", inst.Name, "attempt", attempt, "error", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return out, fmt.Errorf("provisioning %s: %w", inst.Name, ctx.Err())
		case <-time.After(backoff):
		}
		backoff *= 2
	}
	return out, errors.New("unreachable")
}

// Terminate deletes an instance and waits until the cloud says it is gone. An instance that is
// already gone is not an error.
func (cp *ControlPlane) Terminate(ctx context.Context, ref InstanceRef) error {
	err := cp.manager.Delete(ctx, ref)
	if IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	wait := cp.opts.PollInterval
	for {
		inst, err := cp.manager.Get(ctx, ref)
		if IsNotFound(err) || (err == nil && inst.Status == StatusTerminated) {
			return nil
		}
		if err != nil && ctx.Err() == nil {
			cp.logger(ctx).Warn("status poll failed while deleting; will retry", "name", ref.Name, "error", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for instance %s to terminate: %w", ref.Name, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(wait*3/2, cp.opts.PollMax)
	}
}
