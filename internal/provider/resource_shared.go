package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
)

// hydraResource is what each of hydra's resources implements besides its CRUD methods: it is
// configured with the provider's data (resourceBase), validates its configuration, plans with the
// control plane and imports.
type hydraResource interface {
	resource.ResourceWithConfigure
	resource.ResourceWithModifyPlan
	resource.ResourceWithImportState
	resource.ResourceWithValidateConfig
}

// base is what every resource and data source embeds (as resourceBase or dataSourceBase): its type
// name (after `hydra_`) and the provider's data, set by Configure (nil until the provider is configured).
type base struct {
	typeName string
	data     *providerData
}

// resourceBase is base for a resource.
type resourceBase struct{ base }

func (b *resourceBase) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_" + b.typeName
}

func (b *resourceBase) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	b.data = configuredData(req.ProviderData, resp.Diagnostics.AddError)
}

// dataSourceBase is base for a data source.
type dataSourceBase struct{ base }

func (b *dataSourceBase) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_" + b.typeName
}

func (b *dataSourceBase) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	b.data = configuredData(req.ProviderData, resp.Diagnostics.AddError)
}

// lifecycleModel is what hydra_gpu_instance's and hydra_gpu_cluster's models tell the lifecycle steps
// they share.
type lifecycleModel interface {
	timeoutsValue() timeouts.Value
	statusValue() types.String
	idValue() types.String
	nameValue() types.String
}

func (m *resourceModel) timeoutsValue() timeouts.Value { return m.Timeouts }
func (m *resourceModel) statusValue() types.String     { return m.Status }
func (m *resourceModel) idValue() types.String         { return m.ID }
func (m *resourceModel) nameValue() types.String       { return m.Name }

// decided reports a plan decision's notices, and its error when there is one: it says whether the
// decision stands (no error).
func decided(diags *diag.Diagnostics, notices []controlplane.Notice, err error) bool {
	addNotices(diags, notices)
	if err != nil {
		addPlanError(diags, err)
	}
	return err == nil
}

// changeDecided is decided for the change plan of an existing machine or cluster: ok is false when
// there is no decision; otherwise change becomes a replacement where the plan gives volumes the state's
// machine cannot take in place (volumesAdopted), and digest is the planned provisioning digest.
func changeDecided(diags *diag.Diagnostics, change *controlplane.ChangePlan, err error, state, plan *resourceModel) (digest types.String, ok bool) {
	if !decided(diags, change.Notices, err) {
		return digest, false
	}
	if !volumesAdopted(state.Volumes, plan.Volumes, state.ProvisioningDigest, *change) {
		change.Change, change.ReplaceBecause = controlplane.Replace, "volumes"
	}
	return digestValue(change.Digest, change.DigestKnown), true
}

// nullTimeouts is an unset timeouts block (create, update, delete), as an import leaves it.
func nullTimeouts() timeouts.Value {
	return timeouts.Value{Object: types.ObjectNull(map[string]attr.Type{"create": types.StringType, "update": types.StringType, "delete": types.StringType})}
}

// step is a Create or Update under way: its context (bounded by timeouts.<op>), the plan and the state
// as the resource's model, the summary of its diagnostics and when it started. end must be called when
// it ends.
type step[M any] struct {
	ctx         context.Context
	end         func()
	plan, state M
	summary     string
	started     time.Time
	op          string // "create" or "update"
	timeout     func(context.Context, time.Duration) (time.Duration, diag.Diagnostics)
	def         time.Duration
}

// bound bounds the step by its timeout (timeouts.<op>, def when unset).
func (s *step[M]) bound(ctx context.Context, op string, timeout func(context.Context, time.Duration) (time.Duration, diag.Diagnostics), def time.Duration, diags *diag.Diagnostics) {
	s.started, s.op, s.timeout, s.def = time.Now(), op, timeout, def
	s.ctx, s.end = start(ctx, timeout, def, diags)
}

// timedOut is timedOut for the step's operation and timeout.
func (s *step[M]) timedOut(err error) error {
	return timedOut(s.ctx, err, s.op, s.timeout, s.def)
}

// took is how long the step has taken, in whole seconds, for its log.
func (s *step[M]) took() string {
	return time.Since(s.started).Round(time.Second).String()
}

// beginCreate starts a Create of a GPU noun ("instance", "cluster"), bounded by timeouts.create (def
// when unset). ok is false when the create is already over: the plan could not be read, or
// provisioning cannot run here (the plan refuses this; a plan made where provisioning could run still
// must not create here).
func beginCreate[M any, P interface {
	*M
	lifecycleModel
}](ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse, noun string, def time.Duration, unavailable *provisioningUnavailable) (s step[M], ok bool) {
	s.ctx, s.end = ctx, func() {}
	if s.plan, ok = get[M](ctx, req.Plan, &resp.Diagnostics); !ok {
		return s, false
	}
	s.bound(ctx, "create", P(&s.plan).timeoutsValue().Create, def, &resp.Diagnostics)
	s.summary = fmt.Sprintf("creating GPU %s (%s)", noun, P(&s.plan).nameValue().ValueString())
	if unavailable != nil {
		unavailable.error(&resp.Diagnostics, s.summary)
		return s, false
	}
	return s, true
}

// beginUpdate starts an Update of a GPU noun ("instance", "cluster"). ok is false when the update is
// already over: the plan or state could not be read, only inputs that need no action changed (the
// planned status is known: the plan is saved as it is), or provisioning cannot run here.
func beginUpdate[M any, P interface {
	*M
	lifecycleModel
}](ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse, noun string, unavailable *provisioningUnavailable) (u step[M], ok bool) {
	resp.Diagnostics.Append(req.Plan.Get(ctx, &u.plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &u.state)...)
	u.ctx, u.end = ctx, func() {}
	if resp.Diagnostics.HasError() {
		return u, false
	}
	u.bound(ctx, "update", P(&u.plan).timeoutsValue().Update, defaultUpdateTimeout, &resp.Diagnostics)
	u.summary = fmt.Sprintf("updating GPU %s (%s)", noun, P(&u.state).idValue().ValueString())
	if !P(&u.plan).statusValue().IsUnknown() {
		// Only inputs that need no action changed (max price, timeouts, ...).
		resp.Diagnostics.Append(resp.State.Set(u.ctx, &u.plan)...)
		return u, false
	}
	if unavailable != nil {
		unavailable.error(&resp.Diagnostics, u.summary)
		return u, false
	}
	return u, true
}

// keptAfterRefresh ends a Read's refresh of a thing ("GPU instance", "volume"; shown in diagnostics as
// shown, logged as id): an error is the diagnostic "reading <thing> (<shown>)", a thing gone at the
// cloud leaves the state (logged, with what the next plan then does). It reports whether the refreshed
// record is to be saved.
func keptAfterRefresh(ctx context.Context, resp *resource.ReadResponse, found bool, err error, thing, shown, id, nextPlan string) bool {
	if err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("reading %s (%s)", thing, shown), err.Error())
		return false
	}
	if !found {
		tflog.Warn(hydraLog(), thing+" is gone at the cloud; removing it from state so the next plan "+nextPlan, map[string]any{"id": id})
		resp.State.RemoveResource(ctx)
		return false
	}
	return true
}

// interruptedWarning is the warning of a create or update cut short by Ctrl-C: the thing ("machine",
// "cluster") is kept in state in its status, resumable; resumes says what the next apply does to it,
// instead what it does not.
func interruptedWarning(diags *diag.Diagnostics, summary, thing string, status, cloudID types.String, resumes, instead string) {
	diags.AddWarning(summary+": interrupted",
		fmt.Sprintf("Interrupted while the %s was %s. It is kept in state as %q (cloud id %s), not tainted: the next "+
			"`terraform apply` resumes it in place (%s) instead of %s.",
			thing, status.ValueString(), status.ValueString(), cloudID.ValueString(), resumes, instead))
}
