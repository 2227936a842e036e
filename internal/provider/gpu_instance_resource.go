package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/hydragpu/terraform-provider-hydra/internal/clouds"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
)

// The resource maps hydra_gpu_instance's schema to the control plane's requests and records, and the
// control plane's decisions and errors to plans, state and diagnostics. Every decision (which offer,
// whether a quote is reused, replace or re-provision, whether a name is free) and every step of the
// machine's lifecycle is the control plane's.

var _ hydraResource = (*gpuInstanceResource)(nil)

const (
	defaultCreateTimeout = 60 * time.Minute
	defaultUpdateTimeout = 60 * time.Minute
	defaultDeleteTimeout = 30 * time.Minute
)

// NewGPUInstanceResource is the hydra_gpu_instance resource.
func NewGPUInstanceResource() resource.Resource {
	return &gpuInstanceResource{resourceBase{base{typeName: "gpu_instance"}}}
}

type gpuInstanceResource struct{ resourceBase }

func (r *gpuInstanceResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	m, ok := get[gpuInstanceModel](ctx, req.Config, &resp.Diagnostics)
	if !ok {
		return
	}
	if r.data != nil && !m.Name.IsNull() && !m.Name.IsUnknown() {
		// Terraform validates each resource instance once per walk, right before planning it.
		r.data.walk.validated(m.Name.ValueString())
	}
	resp.Diagnostics.Append(volumesPlacementProblems(ctx, m.Volumes, m.Clouds, m.Regions, machineSubject.thing)...)
	if !m.OfferID.IsNull() && !m.OfferID.IsUnknown() {
		if _, err := controlplane.ParseOfferID(m.OfferID.ValueString()); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("offer_id"), "Invalid offer_id", err.Error())
		}
		if m.AllowFallback.ValueBool() {
			resp.Diagnostics.AddAttributeError(path.Root("allow_fallback"), "Conflicting offer settings",
				"allow_fallback = true lets apply choose the offer, but offer_id pins one; set only one of them.")
		}
	}
}

// addPlanError reports a control-plane refusal or an impossible request on the attribute it concerns.
func addPlanError(diags *diag.Diagnostics, err error) {
	var re *controlplane.RequestError
	var rf *controlplane.Refusal
	var uc *controlplane.UnconfiguredError
	switch {
	case errors.As(err, &uc):
		detail := fmt.Sprintf("clouds names %q, which this provider configuration does not set up, so hydra cannot ask it for offers.", uc.Cloud)
		if d := clouds.ByName(uc.Cloud); d != nil {
			detail += fmt.Sprintf(" To rent from %s, %s.", d.Title, d.HowToConfigure())
		}
		detail += fmt.Sprintf(" Otherwise remove %q from clouds. Configured now: %s.", uc.Cloud, quoteAll(uc.Configured))
		diags.AddAttributeError(path.Root("clouds"), "Cloud not configured", detail)
	case errors.As(err, &re):
		diags.AddAttributeError(path.Root(re.Field), "Impossible GPU request", re.Msg)
	case errors.As(err, &rf) && rf.Field != "":
		diags.AddAttributeError(path.Root(rf.Field), rf.Summary, rf.Detail)
	case errors.As(err, &rf):
		diags.AddError(rf.Summary, rf.Detail)
	default:
		diags.AddError("Cannot list GPU offers", err.Error())
	}
}

// addNotices reports a decision's notices as warnings, on the attribute each concerns.
func addNotices(diags *diag.Diagnostics, notes []controlplane.Notice) {
	for _, n := range notes {
		if n.Field != "" {
			diags.AddAttributeWarning(path.Root(n.Field), n.Summary, n.Detail)
		} else {
			diags.AddWarning(n.Summary, n.Detail)
		}
	}
}

func (r *gpuInstanceResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if r.data == nil {
		return // the provider is not configured yet
	}
	if !req.State.Raw.IsNull() {
		var held types.String
		resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root("cloud_instance_id"), &held)...)
		r.data.walk.hold(held.ValueString())
	}
	// A create that failed for lack of capacity left its misses in the private state: skip those
	// offers. Terraform plans a tainted record's replacement as a create without its state or private
	// data (it passes them only to the destroy half, planned after), so Read hands them over as well.
	r.data.rememberCapacity(ctx, req.Private)
	if req.Plan.Raw.IsNull() {
		// Destroy: where the command is unknown, a destroy plan is where the leftovers guard runs.
		r.leftoversGuard(ctx, req, resp)
		return
	}
	if r.data.command == commandDestroys {
		// A destroy's refresh plans every resource too, and throws that plan away: no offer, name or
		// ownership check may fail it (the destroy of what the state holds goes ahead).
		return
	}
	ctx, done := operation(ctx)
	defer done()
	plan, ok := get[gpuInstanceModel](ctx, req.Plan, &resp.Diagnostics)
	if !ok {
		return
	}
	if !plan.Name.IsUnknown() && r.data.walk.sharedName(plan.Name.ValueString()) {
		if r.data.command.refusesNamesAtPlan() {
			resp.Diagnostics.AddAttributeError(path.Root("name"), "Two GPU instances share one name", sharedNameDetail(plan.Name.ValueString()))
			return
		}
		// Perhaps the refresh a destroy plans first, which must not fail: the create refuses.
		resp.Diagnostics.AddAttributeWarning(path.Root("name"), "Two GPU instances share one name; apply refuses their creates",
			sharedNameDetail(plan.Name.ValueString()))
	}
	if !req.State.Raw.IsNull() {
		r.planChange(ctx, req, resp, &plan)
		return
	}

	// Create (or replace): every new machine is provisioned, which must be possible here.
	if u := r.data.provisioningUnavailable; u != nil {
		u.error(&resp.Diagnostics, "A new GPU instance")
		return
	}
	offerReq, known, diags := r.offerRequest(ctx, &plan)
	resp.Diagnostics.Append(diags...)
	var configuredOffer types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("offer_id"), &configuredOffer)...)
	if !known || plan.Name.IsUnknown() || configuredOffer.IsUnknown() {
		return // decided once the inputs are known
	}
	np := controlplane.NewPlanRequest{Name: plan.Name.ValueString(), Request: offerReq, AllowFallback: plan.AllowFallback.ValueBool(), Held: r.data.walk.holds,
		NameRefusedAtApply: !r.data.command.refusesNamesAtPlan(), Provisioning: plannedProvisioning(ctx, &plan, offerReq.Kind, &resp.Diagnostics)}
	key := quoteKey(np.Name, offerReq, np.AllowFallback)
	pinned := !plan.OfferID.IsUnknown() && !plan.OfferID.IsNull()
	if pinned {
		np.OfferID = plan.OfferID.ValueString()
	} else {
		q, qpath, found := earlierQuote(ctx, req.Private, r.data.quotes, planQuoteKey, key, func(q quote) time.Time { return q.Expires }, &resp.Diagnostics)
		if found {
			np.Quote, np.QuotePath = &q, qpath
		}
	}
	chosen, err := r.data.cp.PlanNew(ctx, np)
	r.data.warnUnmapped(chosen.Unmapped, &resp.Diagnostics)
	if !decided(&resp.Diagnostics, chosen.Notices, err) {
		return
	}
	plan.ProvisioningDigest = digestValue(chosen.Digest, chosen.DigestKnown)
	if chosen.NewQuote != nil {
		chosen.NewQuote.Expires = r.data.quotes.expiry()
		np.Quote = chosen.NewQuote
	}
	if np.Quote != nil {
		pinQuote(ctx, r.data.quotes, resp.Private, planQuoteKey, key, *np.Quote, chosen.NewQuote != nil, &resp.Diagnostics)
	}
	plan.EstimatedPricePerHour = types.Float64Null()
	switch {
	case pinned:
		// An offer ID from the configuration (or the data source) pins everything shown.
		setOfferFields(&plan, chosen.Cloud, chosen.Offer)
		plan.OtherClouds, plan.OfferDetails = types.MapNull(types.StringType), types.MapNull(types.StringType)
	case np.AllowFallback:
		// The offer, and so its details, are decided at apply.
		plan.EstimatedPricePerHour = usdValue(chosen.Estimate)
		plan.OtherClouds = stringMap(ctx, chosen.WhyNot, &resp.Diagnostics)
	default:
		if chosen.HardwareKnown {
			plan.setHardware(chosen.Hardware)
		}
		plan.OtherClouds = stringMap(ctx, chosen.WhyNot, &resp.Diagnostics)
		plan.OfferID = types.StringValue(chosen.OfferID)
		setOfferFields(&plan, chosen.Cloud, chosen.Offer)
		plan.OfferDetails = stringMap(ctx, chosen.Details, &resp.Diagnostics)
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// plannedProvisioning is what the planned provisioning digest needs from the model: the variables and
// the volumes (their mount paths are in the digest).
func plannedProvisioning(ctx context.Context, m *gpuInstanceModel, kind string, diags *diag.Diagnostics) controlplane.PlannedProvisioning {
	vars, ok, d := m.vars(ctx)
	diags.Append(d...)
	volumes, volumesKnown := controlPlaneVolumes(m.Volumes)
	return controlplane.PlannedProvisioning{Pool: m.Pool.ValueString(), Kind: kind, Vars: vars, VarsKnown: ok && volumesKnown, Volumes: volumes}
}

// digestValue is a planned provisioning digest: unknown while the variables are, null with
// provisioning off.
func digestValue(digest string, known bool) types.String {
	if !known {
		return types.StringUnknown()
	}
	return stringOrNull(digest)
}

// planChange plans an existing machine: the control plane decides whether it is kept, provisioned
// again in place or replaced, and why.
func (r *gpuInstanceResource) planChange(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse, plan *gpuInstanceModel) {
	state, ok := get[gpuInstanceModel](ctx, req.State, &resp.Diagnostics)
	if !ok {
		return
	}
	pp := plannedProvisioning(ctx, plan, state.Kind.ValueString(), &resp.Diagnostics)
	change, err := r.data.cp.PlanChange(controlplane.ChangeRequest{Name: state.Name.ValueString(), Record: state.record(),
		ReplaceWhenUnhealthy: plan.ReplaceWhenUnhealthy.ValueBool(), ReplaceWhenPreempted: plan.ReplaceWhenPreempted.ValueBool(), Provisioning: &pp})
	digest, ok := changeDecided(&resp.Diagnostics, &change, err, &state.resourceModel, &plan.resourceModel)
	if !ok {
		return
	}
	switch change.Change {
	case controlplane.Replace:
		switch change.ReplaceBecause {
		case "volumes":
			// The state has none (an import): the volumes attribute itself differs.
		case "health":
			plan.Health = types.StringUnknown()
		case "interruption":
			plan.Interruption = types.ObjectUnknown(interruptionTypes)
		default:
			plan.Status = types.StringUnknown()
		}
		resp.RequiresReplace.Append(path.Root(change.ReplaceBecause))
	case controlplane.Reprovision:
		if u := r.data.provisioningUnavailable; u != nil {
			u.error(&resp.Diagnostics, fmt.Sprintf("hydra_gpu_instance %q (%s)", state.Name.ValueString(), state.ID.ValueString()))
			return
		}
		plan.ProvisioningDigest = digest
		plan.Status, plan.CloudStatus, plan.ReadyAt = types.StringUnknown(), types.StringUnknown(), types.StringUnknown()
		plan.ProvisioningAttempts, plan.ProvisioningError = types.Int64Unknown(), types.StringUnknown()
		plan.HostKey = types.StringUnknown()
		if state.CreatedAt.IsNull() {
			plan.CreatedAt = types.StringUnknown() // a state from before created_at: the apply reads it
		}
		// Provisioning ends with the health checks: health is known after apply.
		plan.Health, plan.HealthCheckedAt, plan.HealthReason = types.StringUnknown(), types.StringUnknown(), types.StringUnknown()
		if !change.Provisioning {
			plan.HostKey = state.HostKey
			plan.Health, plan.HealthCheckedAt, plan.HealthReason = state.Health, state.HealthCheckedAt, state.HealthReason
		}
		if state.SSHHost.IsNull() {
			// Not reachable yet (an interrupted boot): the address comes while resuming.
			plan.SSHHost, plan.SSHPort, plan.SSHUser = types.StringUnknown(), types.Int64Unknown(), types.StringUnknown()
		}
	default:
		plan.ProvisioningDigest = digest
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, plan)...)
}

func (r *gpuInstanceResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	c, ok := beginCreate[gpuInstanceModel](ctx, req, resp, "instance", defaultCreateTimeout, r.data.provisioningUnavailable)
	defer c.end()
	if !ok {
		return
	}
	ctx, plan, summary, name := c.ctx, c.plan, c.summary, c.plan.Name.ValueString()
	offerReq, _, diags := r.offerRequest(ctx, &plan)
	resp.Diagnostics.Append(diags...)
	vars, _, diags := plan.vars(ctx)
	resp.Diagnostics.Append(diags...)
	sshKeys, diags := plan.installedKeys(ctx, r.data.sshPublicKeys)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}

	qkey := quoteKey(name, offerReq, plan.AllowFallback.ValueBool())
	if r.data.walk.sharedName(name) {
		resp.Diagnostics.AddAttributeError(path.Root("name"), "Two GPU instances share one name", sharedNameDetail(name))
		return
	}
	creq := controlplane.CreateRequest{Name: name, Request: offerReq, BidTimeout: bidTimeout(plan.BidTimeout),
		SSHPublicKeys: sshKeys, BringUp: r.bringUpSpec(&plan, vars), Gone: terraformGone}
	if !plan.OfferID.IsUnknown() && !plan.OfferID.IsNull() {
		creq.OfferID = plan.OfferID.ValueString()
	}
	if q, found := r.quote(ctx, resp.Private, qkey); found {
		creq.NameInUse = q.NameInUse
	}
	m := plan
	plannedPrice := plan.PricePerHour
	creq.Launched = func(l controlplane.Launched) { r.setLaunched(ctx, &m, l, &resp.Diagnostics) }
	save := r.saver(ctx, &m, &resp.State, &resp.Diagnostics)
	planned := m.ProvisioningDigest
	created, err := r.data.cp.Create(ctx, creq, save)
	if created.ForgetQuote {
		if ferr := r.data.quotes.remove(qkey); ferr != nil {
			tflog.Warn(hydraLog(), "could not remove the plan quote", map[string]any{"error": ferr.Error()})
		}
	}
	if created.Capacity != nil {
		saveCapacityMisses(ctx, req.Plan, &resp.State, resp.Private, *created.Capacity, "cloud_instance_id", machineSubject.thing, &resp.Diagnostics)
	}
	var rose *controlplane.PriceRoseError
	var soldOut *controlplane.SoldOutError
	var refused *controlplane.Refusal
	switch {
	case created.Launched.Instance.Name != "": // launched: the machine is in state
	case errors.As(err, &refused):
		resp.Diagnostics.AddError(refused.Summary, refused.Detail)
		return
	case errors.As(err, &rose):
		resp.Diagnostics.AddError(summary, err.Error()+"; run `terraform plan` again to see the new price")
		return
	case errors.As(err, &soldOut):
		resp.Diagnostics.AddError(summary, err.Error()+"; run `terraform plan` again to choose another offer, or set "+
			"allow_fallback = true to let apply take the next cheapest one. Nothing was created.")
		return
	case err != nil:
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	if why := controlplane.BilledPrice(usdOf(plannedPrice), created.Record.PricePerHour); why != "" {
		resp.Diagnostics.AddAttributeWarning(path.Root("price_usd_per_hour"), "The cloud bills another price than the plan showed",
			why+" The state keeps the planned price until the next refresh (`terraform plan` or `terraform apply -refresh-only`) records the billed one.")
	}
	if r.settle(ctx, &m, planned, c.timedOut(err), summary, &resp.State, &resp.Diagnostics) {
		tflog.Info(hydraLog(), "machine ready", map[string]any{"name": created.Launched.Instance.Name, "took": c.took()})
	}
}

// setLaunched fills what the plan left to apply from the launched offer.
func (r *gpuInstanceResource) setLaunched(ctx context.Context, m *gpuInstanceModel, l controlplane.Launched, diags *diag.Diagnostics) {
	parsed, _ := controlplane.ParseOfferID(l.Offer.ID)
	price := m.PricePerHour
	m.OfferID = types.StringValue(l.Offer.ID)
	setOfferFields(m, l.Pool.Cloud, parsed)
	if !price.IsUnknown() {
		m.PricePerHour = price
	}
	if m.EstimatedPricePerHour.IsUnknown() {
		m.EstimatedPricePerHour = types.Float64Null()
		if m.AllowFallback.ValueBool() {
			m.EstimatedPricePerHour = usdValue(parsed.PricePerHour)
		}
	}
	if m.OtherClouds.IsUnknown() {
		m.OtherClouds = types.MapNull(types.StringType)
	}
	if m.OfferDetails.IsUnknown() {
		m.OfferDetails = stringMap(ctx, controlplane.ShownDetails(l.Offer), diags)
	}
	if m.GPUFormFactor.IsUnknown() {
		// Left to apply (a pinned offer, or allow_fallback): what the launched offer's cloud said.
		m.setHardware(l.Offer.Hardware)
	}
}

// bringUpSpec is what provisioning the machine needs, its volumes' mounts included.
func (r *gpuInstanceResource) bringUpSpec(m *gpuInstanceModel, vars map[string]any) controlplane.BringUpSpec {
	volumes, _ := controlPlaneVolumes(m.Volumes)
	return controlplane.BringUpSpec{GPUType: m.GPUType.ValueString(), GPUCount: int(m.GPUCount.ValueInt64()),
		Vars: vars, MaxAttempts: int(m.MaxProvisioningAttempts.ValueInt64()), Volumes: volumes}
}

// stateSetter is resp.State of Create and Update.
type stateSetter interface {
	Set(ctx context.Context, val any) diag.Diagnostics
}

// saver records each step of the machine's lifecycle in the resource's state, so the state keeps the
// machine whatever happens next. A price the plan knows stays (Terraform forbids an apply to change a
// known planned value): the next refresh records the billed one.
func (r *gpuInstanceResource) saver(ctx context.Context, m *gpuInstanceModel, state stateSetter, diags *diag.Diagnostics) func(controlplane.Record) {
	planned := m.PricePerHour
	return func(rec controlplane.Record) {
		m.setRecord(rec)
		if !planned.IsUnknown() {
			m.PricePerHour = planned
		}
		diags.Append(state.Set(ctx, m)...)
	}
}

// settle ends Create and Update after the control plane's bring-up: an interrupted one is kept in
// state, resumable, with a warning; a failed one is an error (the machine stays in state); a
// successful one records the planned digest. It reports whether the machine is ready.
func (r *gpuInstanceResource) settle(ctx context.Context, m *gpuInstanceModel, planned types.String, err error, summary string, state stateSetter, diags *diag.Diagnostics) bool {
	// Returned without an error, the state must agree with the plan's known values; status says the
	// machine is not provisioned yet, so the next plan resumes it.
	if !planned.IsUnknown() && (err == nil || interrupted(ctx)) {
		m.ProvisioningDigest = planned
		diags.Append(state.Set(ctx, m)...)
	}
	var boot *controlplane.BootError
	var failed *controlplane.ProvisioningFailedError
	switch {
	case interrupted(ctx):
		interruptedWarning(diags, summary, machineSubject.thing, m.Status, m.CloudInstanceID, "waits for it and provisions it", "buying another")
	case errors.As(err, &boot):
		diags.AddError(summary, err.Error()+"\n\nThe machine is kept in state (tainted) so it is not forgotten; the next apply replaces it.")
	case errors.As(err, &failed):
		diags.AddError(summary, err.Error()+"\n\nThe machine is kept in state so it is not forgotten.")
	case err != nil:
		diags.AddError(summary, err.Error())
	}
	return !interrupted(ctx) && err == nil && !diags.HasError()
}

// start begins Create, Update or Delete: an operation tied to the provider's lifetime (operation),
// bounded by the resource's timeout for it (timeout, def when unset). end must be called when it ends.
func start(ctx context.Context, timeout func(context.Context, time.Duration) (time.Duration, diag.Diagnostics), def time.Duration, diags *diag.Diagnostics) (_ context.Context, end func()) {
	ctx, done := operation(ctx)
	d, ds := timeout(ctx, def)
	diags.Append(ds...)
	ctx, cancel := context.WithTimeout(ctx, d)
	return ctx, func() { cancel(); done() }
}

// timedOut rewords an error that ended because the operation's timeout passed: what was going on, which
// setting bounds it (timeouts.<op>) and its value, and a value that fits the operation (its default,
// or twice a value already above it), in the attribute syntax the schema takes. Other errors are
// returned as they are.
func timedOut(ctx context.Context, err error, op string, timeout func(context.Context, time.Duration) (time.Duration, diag.Diagnostics), def time.Duration) error {
	if err == nil || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return err
	}
	d, _ := timeout(context.WithoutCancel(ctx), def)
	what := strings.TrimSuffix(strings.TrimSuffix(err.Error(), context.DeadlineExceeded.Error()), ": ")
	suggest := def
	if d >= def {
		suggest = 2 * d
	}
	return &reworded{err: err, msg: fmt.Sprintf("%s: stopped when timeouts.%s ran out.\n\nThe %s did not finish within timeouts.%s = %q. "+
		"If the machine only needs longer, give it more time in this resource: timeouts = { %s = %q }",
		what, op, op, op, durationString(d), op, durationString(suggest))}
}

// reworded is an error shown in other words, still matched by errors.Is and errors.As as the original.
type reworded struct {
	err error
	msg string
}

func (e *reworded) Error() string { return e.msg }
func (e *reworded) Unwrap() error { return e.err }

// durationString writes a duration as the timeouts attributes take it, without zero units ("1h30m",
// "2s").
func durationString(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// interrupted reports whether ctx was cancelled (Ctrl-C: Terraform's StopProvider) rather than timed out.
func interrupted(ctx context.Context) bool {
	return errors.Is(ctx.Err(), context.Canceled)
}

func (r *gpuInstanceResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	ctx, done := operation(ctx)
	defer done()
	m, ok := get[gpuInstanceModel](ctx, req.State, &resp.Diagnostics)
	if !ok {
		return
	}
	name := m.ID.ValueString()
	if r.data != nil {
		r.data.walk.refreshed(name)
	}
	if capacityRecord(&m) {
		// A create that failed for lack of capacity: no machine to read. Terraform plans the tainted
		// record's replacement without its state, right after this refresh: hand the control plane
		// the offers to skip now.
		r.data.rememberCapacity(ctx, req.Private)
		return
	}
	var found bool
	var err error
	if m.CloudInstanceID.IsNull() {
		// Import: everything the cloud knows, and what the machine says of its provisioning.
		var imp controlplane.Imported
		imp, found, err = r.data.cp.Import(ctx, name)
		if found && err == nil {
			m.setImported(imp)
			if imp.MarkerUnread != nil {
				resp.Diagnostics.AddWarning(fmt.Sprintf("importing GPU instance (%s): provisioning marker not read", name),
					fmt.Sprintf("hydra could not read the machine's provisioning marker (%v), so it imports as running and the next "+
						"apply provisions it.", imp.MarkerUnread))
			}
		}
	} else {
		rec := m.record()
		found, err = r.data.cp.Refresh(ctx, &rec)
		m.setRecord(rec)
	}
	if !keptAfterRefresh(ctx, resp, found, err, "GPU instance", name, name, "recreates it") {
		return
	}
	// This state holds the machine (the control plane recorded it at the cloud).
	r.data.walk.hold(m.CloudInstanceID.ValueString())
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *gpuInstanceResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	u, ok := beginUpdate[gpuInstanceModel](ctx, req, resp, "instance", r.data.provisioningUnavailable)
	defer u.end()
	if !ok {
		return
	}
	ctx, plan, state, summary, m := u.ctx, u.plan, u.state, u.summary, u.plan
	vars, _, diags := plan.vars(ctx)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	// The machine as the state holds it; the control plane resumes it, or provisions it again.
	planned := m.ProvisioningDigest
	rec := state.record()
	m.setRecord(rec)
	err := r.data.cp.Resume(ctx, &rec, r.bringUpSpec(&m, vars), r.saver(ctx, &m, &resp.State, &resp.Diagnostics))
	if r.settle(ctx, &m, planned, u.timedOut(err), summary, &resp.State, &resp.Diagnostics) {
		tflog.Info(hydraLog(), "machine ready", map[string]any{"name": rec.Name})
	}
}

func (r *gpuInstanceResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	state, ok := get[gpuInstanceModel](ctx, req.State, &resp.Diagnostics)
	if !ok {
		return
	}
	ctx, end := start(ctx, state.Timeouts.Delete, defaultDeleteTimeout, &resp.Diagnostics)
	defer end()
	dr := controlplane.DeleteRequest{Record: state.record(), GPUType: state.GPUType.ValueString(), GPUCount: int(state.GPUCount.ValueInt64()),
		DrainTimeout: parseDuration(state.DrainTimeout, 0)}
	if u := r.data.provisioningUnavailable; u != nil {
		dr.NoDrain = "provisioning cannot run here: " + u.summary
	}
	if err := r.data.cp.Delete(ctx, dr); err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("deleting GPU instance (%s)", dr.Record.Name), err.Error())
	}
}

// ImportState takes the instance's cloud-side name (pool prefix + name); the prefix routes it to its pool.
func (r *gpuInstanceResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if r.data != nil {
		if err := r.data.cp.CheckImportID(ctx, req.ID); err != nil {
			resp.Diagnostics.AddError(fmt.Sprintf("importing GPU instance (%s)", req.ID), err.Error())
			return
		}
	}
	resource.ImportStatePassthroughID(ctx, path.Root("id"), req, resp)
}
