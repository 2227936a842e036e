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

// The values of Health.Status.
const (
	HealthHealthy   = "healthy"
	HealthUnhealthy = "unhealthy"
	HealthUnknown   = "unknown"
)

// Health is a machine's GPU health as last read.
type Health struct {
	// Status is HealthHealthy, HealthUnhealthy or HealthUnknown; "" when it was never read (and with
	// provisioning off, where there is nothing to check).
	Status string
	// CheckedAt is when it was read (zero when never).
	CheckedAt time.Time
	// Reason says why the machine is unhealthy (every failed check) or unknown; "" when healthy.
	Reason string
}

// Record is hydra's record of one resource's machine beyond what was asked for: where the machine is,
// its status and its provisioning. It is what a Terraform state keeps of the machine's lifecycle; the
// control plane alone moves it (BringUp, Resume, Refresh, Import). Empty strings and zero times mean
// "none".
type Record struct {
	// Name is the cloud-side name; ID the cloud's id.
	Name, ID string
	// Status is hydra's status: pending, running, provisioning, ready, terminated or error.
	Status cloudprovider.Status
	// CloudStatus is the cloud's own word for the status, as last read.
	CloudStatus string
	// SSH is where the machine is reached (nil until the cloud has reported it).
	SSH *cloudprovider.SSHEndpoint
	// HostKey is the pinned SSH host key.
	HostKey string
	// ReadyAt is when provisioning last succeeded (or, with provisioning off, when the machine ran).
	ReadyAt time.Time
	// ProvisioningAttempts is the attempts the last provisioning run took.
	ProvisioningAttempts int
	// ProvisioningError summarises the last failed provisioning (host, task and message).
	ProvisioningError string
	// ProvisioningDigest is the digest the machine was provisioned with.
	ProvisioningDigest string
	// Health is the machine's health as last read.
	Health Health
	// CreatedAt is when the cloud created the machine (or, when the cloud does not say, when hydra's
	// create returned); the start of its bill.
	CreatedAt time.Time
	// PricePerHour is what the cloud bills for the machine, as it last reported it (0: not reported).
	PricePerHour money.USD
	// Interruption is the cloud's interruption of a spot machine as last read (nil: none). NoticeAt is
	// when the cloud gave notice, or when hydra first saw it where the cloud does not say.
	Interruption *cloudprovider.Interruption
}

// Observe copies what the cloud reports of inst into the record: the cloud's status word, the SSH
// endpoint when the cloud reports one (a known endpoint is kept otherwise), and the status. A running
// machine keeps the status the control plane gave it (provisioning, ready, or error after a failed
// provisioning); otherwise the cloud's status is the record's.
func (r *Record) Observe(inst cloudprovider.Instance) {
	r.CloudStatus = inst.CloudStatus
	if inst.PricePerHour > 0 {
		r.PricePerHour = inst.PricePerHour
	}
	if r.CreatedAt.IsZero() && !inst.CreatedAt.IsZero() {
		// Set once: a later reading never moves a recorded creation (the plan keeps it).
		r.CreatedAt = inst.CreatedAt
	}
	switch inst.Status {
	case cloudprovider.StatusPending, cloudprovider.StatusError, cloudprovider.StatusTerminated:
		r.Status = inst.Status
	case cloudprovider.StatusRunning:
		switch r.Status {
		case cloudprovider.StatusReady, cloudprovider.StatusProvisioning:
		case cloudprovider.StatusError:
			if r.ProvisioningError == "" {
				r.Status = cloudprovider.StatusRunning
			}
		default:
			r.Status = cloudprovider.StatusRunning
		}
	}
	if inst.SSH != nil {
		ep := *inst.SSH
		r.SSH = &ep
	}
	r.observeInterruption(inst.Interruption, time.Now().UTC())
}

// observeInterruption records the cloud's interruption as read at now: a notice the cloud does not
// date keeps the time hydra first saw it; a notice taken back clears it.
func (r *Record) observeInterruption(in *cloudprovider.Interruption, now time.Time) {
	if in == nil {
		r.Interruption = nil
		return
	}
	got := *in
	if got.NoticeAt.IsZero() {
		got.NoticeAt = now
		if r.Interruption != nil && !r.Interruption.NoticeAt.IsZero() {
			got.NoticeAt = r.Interruption.NoticeAt
		}
	}
	r.Interruption = &got
}

// NewRecord is the record of a machine the cloud has just accepted: nothing ready, nothing
// provisioned, its host key as the cloud reports it.
func NewRecord(inst cloudprovider.Instance) Record {
	r := Record{Name: inst.Name, ID: inst.ID, HostKey: inst.HostKey}
	r.Observe(inst)
	return r
}

// BringUpSpec is what provisioning a machine needs beyond its record.
type BringUpSpec struct {
	// Pool is the machine's pool (Resume fills it from the machine's name).
	Pool inventory.Pool
	// GPUType and GPUCount are what the offer promised; the health checks verify them.
	GPUType  string
	GPUCount int
	// Vars are the playbook's variables.
	Vars map[string]any
	// MaxAttempts overrides the control plane's default when above 0.
	MaxAttempts int
	// Volumes are the machine's volumes, mounted by provisioning (Create fills them from its
	// request; Resume needs them given).
	Volumes []VolumeUse
}

// BootError says a machine did not come up: it failed, was terminated or disappeared at its cloud, or
// the wait ended (the context's error is in the chain).
type BootError struct{ Err error }

func (e *BootError) Error() string { return e.Err.Error() }
func (e *BootError) Unwrap() error { return e.Err }

// ProvisioningFailedError says provisioning ended without success after Attempts attempts; the record
// is in status error with the failure summarised.
type ProvisioningFailedError struct {
	Attempts int
	Err      error
}

func (e *ProvisioningFailedError) Error() string {
	return fmt.Sprintf("provisioning failed after %d attempt(s): %s", e.Attempts, e.Err)
}
func (e *ProvisioningFailedError) Unwrap() error { return e.Err }

// Provisioning reports whether provisioning is on (a Provisioner other than NoProvisioning).
func (cp *ControlPlane) Provisioning() bool {
	_, off := cp.opts.Provisioner.(cloudprovider.NoProvisioning)
	return !off
}

// BringUp takes a machine from wherever it is to ready: it waits for inst to run (when it does not
// yet), then provisions it with retries (or marks it ready when provisioning is off). Every step is
// recorded in rec and handed to save, so the caller's record of the machine is never behind what
// happened. A wait that fails returns a *BootError; a provisioning that fails leaves rec in status
// error and returns a *ProvisioningFailedError. When ctx is cancelled, rec keeps the status reached
// (pending, running or provisioning) so that Resume continues from there, and the error matches
// context.Canceled (errors.Is): a *BootError when it came during the wait. A ctx that times out
// instead is a failure like any other.
func (cp *ControlPlane) BringUp(ctx context.Context, rec *Record, inst cloudprovider.Instance, spec BringUpSpec, save func(Record)) error {
	put := func() {
		if save != nil {
			save(*rec)
		}
	}
	rec.Observe(inst)
	if p, ok := cp.opts.Provisioner.(cloudprovider.Preparer); ok {
		p.Prepare()
	}
	if inst.Status != cloudprovider.StatusRunning {
		var err error
		inst, err = cp.WaitRunning(ctx, inst, func(i cloudprovider.Instance) { rec.Observe(i); put() })
		rec.Observe(inst)
		if err != nil {
			put()
			return &BootError{Err: err}
		}
		if inst.HostKey != "" {
			rec.HostKey = inst.HostKey
		}
	}
	if !cp.Provisioning() {
		rec.Status = cloudprovider.StatusReady
		rec.ReadyAt = time.Now().UTC()
		rec.Health = Health{}
		rec.ProvisioningAttempts = 0
		rec.ProvisioningError = ""
		put()
		return nil
	}
	rec.Status = cloudprovider.StatusProvisioning
	put()
	ps := ProvisionSpec{Pool: spec.Pool, GPUType: spec.GPUType, GPUCount: spec.GPUCount, HostKey: rec.HostKey, Vars: spec.Vars, MaxAttempts: spec.MaxAttempts,
		VolumeUses: spec.Volumes}
	if len(spec.Volumes) > 0 {
		// How the volumes appear inside the machine, for the playbooks to mount them.
		atts, err := cp.attachments(ctx, inst, spec.Volumes)
		if err != nil && errors.Is(ctx.Err(), context.Canceled) {
			put() // still provisioning: Resume continues it
			return err
		}
		if err != nil {
			rec.Status = cloudprovider.StatusError
			rec.ProvisioningError = truncate("mounting volumes: " + err.Error())
			put()
			return &ProvisioningFailedError{Err: err}
		}
		ps.Volumes = atts
	}
	out, err := cp.Provision(ctx, inst, ps, func(attempt int) {
		rec.ProvisioningAttempts = attempt
		put()
	})
	rec.ProvisioningAttempts = out.Attempts
	rec.HostKey = out.HostKey
	rec.SSH = withJumpHostKey(rec.SSH, out.JumpHostKey)
	if err != nil && errors.Is(ctx.Err(), context.Canceled) {
		put() // still provisioning: Resume continues it
		return err
	}
	if err != nil {
		rec.Status = cloudprovider.StatusError
		msg := err.Error()
		if out.FailedTask != "" {
			msg = fmt.Sprintf("host %s, task %q: %s", inst.Name, out.FailedTask, out.Message)
		}
		rec.ProvisioningError = truncate(msg)
		put()
		return &ProvisioningFailedError{Attempts: out.Attempts, Err: err}
	}
	rec.Status = cloudprovider.StatusReady
	rec.ReadyAt = out.ReadyAt
	// Provisioning ends with the health checks: the machine is healthy as of now.
	rec.Health = Health{Status: HealthHealthy, CheckedAt: out.ReadyAt}
	rec.ProvisioningError = ""
	rec.ProvisioningDigest = out.Digest
	put()
	return nil
}

// Resume brings a machine a state already holds to ready again: after an interrupted apply, or to
// provision it anew when its playbooks or variables changed. It reads the machine at its cloud, takes
// its pool from its name, and continues as BringUp does.
func (cp *ControlPlane) Resume(ctx context.Context, rec *Record, spec BringUpSpec, save func(Record)) error {
	ref := InstanceRef{Name: rec.Name, ID: rec.ID}
	inst, err := cp.manager.Get(ctx, ref)
	if err != nil {
		return err
	}
	pm, err := cp.manager.Route(ref.Name)
	if err != nil {
		return err
	}
	spec.Pool = pm.Pool
	return cp.BringUp(ctx, rec, inst, spec, save)
}

// Refresh reads a machine a state holds: found is false when the machine is gone at its cloud (not
// found, or terminated other than by an interruption, which is kept for the plan to replace). Otherwise it records at the cloud that a state holds it (Held), updates rec
// from the cloud (Observe) and, for a ready machine, reads its health (see checkHealth).
func (cp *ControlPlane) Refresh(ctx context.Context, rec *Record) (found bool, err error) {
	inst, err := cp.manager.Get(ctx, InstanceRef{Name: rec.Name, ID: rec.ID})
	return refreshed(err, inst.Status, inst.Interruption != nil, func() { rec.Observe(inst) }, func() {
		cp.Held(ctx, inst)
		cp.checkHealth(ctx, rec, inst)
	})
}

// refreshed is what a refresh makes of its read of a machine or a cluster (err, status, and whether
// its cloud took it back): not found, or terminated other than by its cloud, is gone (false, nil); a
// failed read is err; otherwise observe updates the record, and for one not terminated hold records
// at the cloud that a state holds it and reads its health. One taken back is only observed: kept, so
// the state shows the interruption and the plan replaces it.
func refreshed(err error, status cloudprovider.Status, takenBack bool, observe, hold func()) (bool, error) {
	if cloudprovider.IsNotFound(err) || err == nil && status == cloudprovider.StatusTerminated && !takenBack {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	observe()
	if status != cloudprovider.StatusTerminated {
		hold()
	}
	return true, nil
}

// Imported is what an import learns of a machine from its cloud and from the machine itself.
type Imported struct {
	// Resource is the resource's name, read from the cloud-side name.
	Resource string
	// Pool is the machine's pool, routed by its name's prefix.
	Pool     inventory.Pool
	Instance cloudprovider.Instance
	// OfferID is the offer the machine matches, at the price the cloud reports for it.
	OfferID string
	// Record is the machine's lifecycle: ready with the marker's digest when hydra's provisioning
	// marker is on the machine (or when provisioning is off and it runs), running otherwise.
	Record Record
	// MarkerUnread, when set, is why the marker could not be read (the machine then imports as
	// running and the next apply provisions it).
	MarkerUnread error
	// Volumes are the hydra volumes the machine has (machineVolumes), sorted by id; their MountPath is
	// "" (the cloud does not say where the playbooks mounted them).
	Volumes []VolumeUse
}

// Import reads the machine with the cloud-side name name for an import: found is false when it does
// not exist. It reads the provisioning marker hydra's playbooks leave, records at the cloud that a
// state holds the machine, and reads a ready machine's health.
func (cp *ControlPlane) Import(ctx context.Context, name string) (imp Imported, found bool, err error) {
	inst, err := cp.manager.Get(ctx, InstanceRef{Name: name})
	if cloudprovider.IsNotFound(err) || err == nil && inst.Status == cloudprovider.StatusTerminated {
		return Imported{}, false, nil
	}
	if err != nil {
		return Imported{}, false, err
	}
	pm, err := cp.manager.Route(inst.Name)
	if err != nil {
		return Imported{}, false, err
	}
	resource, _, _ := cloudprovider.ParseCloudName(pm.Pool, inst.Name)
	imp = Imported{Resource: resource, Pool: pm.Pool, Instance: inst,
		OfferID: OfferID(cloudprovider.Offer{Pool: pm.Pool.Name, Region: inst.Region, InstanceType: inst.InstanceType, Spot: inst.Spot, PricePerHour: inst.PricePerHour})}
	imp.Record = Record{Name: inst.Name, ID: inst.ID, Status: cloudprovider.StatusRunning, HostKey: inst.HostKey}
	imp.MarkerUnread = cp.readMarker(ctx, &imp.Record, inst)
	imp.Volumes = cp.machineVolumes(ctx, pm.Pool.Cloud, inst.ID)
	cp.Held(ctx, inst)
	imp.Record.Observe(inst)
	cp.checkHealth(ctx, &imp.Record, inst)
	return imp, true, nil
}

// readMarker sets an imported machine's record from the marker hydra's playbooks leave on every
// machine they provisioned: with a marker the machine is ready with that digest; without one it stays
// running. With provisioning off, a running machine is ready. It returns why the marker could not be
// read, when it could not (a machine without a marker is not an error).
func (cp *ControlPlane) readMarker(ctx context.Context, rec *Record, inst cloudprovider.Instance) error {
	if inst.Status != cloudprovider.StatusRunning {
		return nil
	}
	if !cp.Provisioning() {
		rec.Status = cloudprovider.StatusReady
		rec.ReadyAt = time.Now().UTC()
		return nil
	}
	if cp.opts.Inspector == nil || inst.SSH == nil {
		return nil
	}
	marker, hostKey, err := cp.opts.Inspector.ReadMarker(ctx, *inst.SSH, inst.HostKey)
	if hostKey != "" {
		rec.HostKey = hostKey
	}
	switch {
	case err == nil:
		rec.Status = cloudprovider.StatusReady
		rec.ProvisioningDigest = marker.Digest
		rec.ReadyAt = marker.ProvisionedAt.UTC()
		cp.logger(ctx).Info("imported machine carries hydra's provisioning marker", "digest", marker.Digest, "playbook", marker.Playbook)
		return nil
	case errors.Is(err, cloudprovider.ErrNoMarker):
		cp.logger(ctx).Info("imported machine carries no provisioning marker: the next apply provisions it", "id", inst.Name)
		return nil
	default:
		return err
	}
}

// checkHealth reads a ready machine's health during a refresh: read-only, with the pinned host key. A
// machine that cannot be reached or read is unknown, never unhealthy. With provisioning off (or no
// Inspector) there is nothing to check and the health is left as it is.
func (cp *ControlPlane) checkHealth(ctx context.Context, rec *Record, inst cloudprovider.Instance) {
	if !cp.Provisioning() || cp.opts.Inspector == nil || rec.Status != cloudprovider.StatusReady {
		return
	}
	log := cp.logger(ctx)
	now := time.Now().UTC()
	if inst.SSH == nil {
		rec.Health = Health{Status: HealthUnknown, CheckedAt: now, Reason: "the cloud reports no SSH address"}
		return
	}
	reasons, err := cp.opts.Inspector.ProbeHealth(ctx, *inst.SSH, rec.HostKey)
	switch {
	case err != nil:
		rec.Health = Health{Status: HealthUnknown, CheckedAt: now, Reason: truncate(err.Error())}
		if errors.Is(err, cloudprovider.ErrHealthUnknown) {
			log.Warn("machine health unknown", "name", inst.Name, "why", err.Error())
		} else {
			log.Error("machine health unknown", "name", inst.Name, "why", err.Error())
		}
	case reasons == "":
		rec.Health = Health{Status: HealthHealthy, CheckedAt: now}
		log.Debug("machine healthy", "name", inst.Name)
	default:
		rec.Health = Health{Status: HealthUnhealthy, CheckedAt: now, Reason: truncate(reasons)}
		log.Warn("machine unhealthy", "name", inst.Name, "why", reasons)
	}
}

// Drain drains an execlet before it is deleted, for at most timeout, and logs what happened (drained,
// timed out, unreachable). It does nothing for other kinds, with provisioning off, without an
// Inspector or for a machine never reached over SSH. It never fails: the delete goes ahead whatever
// happened.
func (cp *ControlPlane) Drain(ctx context.Context, rec Record, gpuType string, gpuCount int, timeout time.Duration) {
	if !cp.Provisioning() || cp.opts.Inspector == nil || rec.SSH == nil || rec.SSH.Host == "" {
		return
	}
	log := cp.logger(ctx)
	pm, err := cp.manager.Route(rec.Name)
	if err != nil {
		log.Warn("execlet not drained: its pool is not configured", "name", rec.Name, "why", err.Error())
		return
	}
	if pm.Pool.Kind != inventory.KindExeclet {
		return
	}
	inst := cloudprovider.Instance{Name: rec.Name, ID: rec.ID, SSH: rec.SSH}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	started := time.Now()
	log.Info("draining execlet", "name", rec.Name, "drain_timeout", timeout.String())
	err = cp.opts.Inspector.Drain(dctx, inst, pm.Pool, gpuType, gpuCount, rec.HostKey)
	took := time.Since(started).Round(time.Second).String()
	switch {
	case err == nil:
		log.Info("execlet drained", "name", rec.Name, "took", took)
	case errors.Is(dctx.Err(), context.DeadlineExceeded):
		log.Warn("execlet drain timed out; deleting it with its work still running", "name", rec.Name, "drain_timeout", timeout.String())
	default:
		log.Warn("execlet could not be drained (unreachable or failed); deleting it", "name", rec.Name, "took", took, "why", err.Error())
	}
}

// Marker is what hydra's provisioning leaves on a machine it provisioned.
type Marker struct {
	Digest        string
	Playbook      string
	ProvisionedAt time.Time
}

// Inspector reads provisioned machines over SSH without changing them, and drains execlets before
// they are deleted (the provisioning runner, when provisioning is on).
type Inspector interface {
	// ProbeHealth checks a machine's health: reasons is "" when it is healthy, else every failed
	// check. An error (wrapping ErrHealthUnknown when the machine could not be read) means no verdict.
	ProbeHealth(ctx context.Context, ep cloudprovider.SSHEndpoint, hostKey string) (reasons string, err error)
	// ReadMarker reads the provisioning marker, returning the host key the machine presented; an
	// error wrapping ErrNoMarker means the machine carries none.
	ReadMarker(ctx context.Context, ep cloudprovider.SSHEndpoint, hostKey string) (Marker, string, error)
	// Drain stops an execlet's agent from taking work and waits for running work to end (until ctx ends).
	Drain(ctx context.Context, inst cloudprovider.Instance, pool inventory.Pool, gpuType string, gpuCount int, hostKey string) error
}

// PlannedDigest is the provisioning digest a plan shows for a machine of the pool named pool (or, when
// that pool is not configured, of any pool of kind: playbooks go by kind): "" with provisioning off.
func (cp *ControlPlane) PlannedDigest(pool, kind string, vars map[string]any) (string, error) {
	if !cp.Provisioning() {
		return "", nil
	}
	return cp.opts.Provisioner.Digest(cp.poolForKind(pool, kind), vars)
}

// poolForKind returns the named pool, or any pool of the kind, or a stand-in pool of the kind.
func (cp *ControlPlane) poolForKind(pool, kind string) inventory.Pool {
	if pm, ok := cp.manager.Pool(pool); ok {
		return pm.Pool
	}
	for _, pm := range cp.manager.Pools() {
		if pm.Pool.Kind == kind {
			return pm.Pool
		}
	}
	return inventory.Pool{Kind: kind, Playbook: inventory.DefaultPlaybook(kind)}
}

// PoolCloud returns the cloud of the named pool ("" when it is not configured).
func (cp *ControlPlane) PoolCloud(pool string) string {
	if pm, ok := cp.manager.Pool(pool); ok {
		return pm.Pool.Cloud
	}
	return ""
}

// maxMessage bounds the messages kept in state (provisioning errors, health reasons).
const maxMessage = 1024

// truncate cuts s to maxMessage bytes, marking the cut.
func truncate(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	return s[:maxMessage] + "..."
}
