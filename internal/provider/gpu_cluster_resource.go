package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/clouds"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
)

// The resource maps hydra_gpu_cluster's schema to the control plane's cluster spec and record, one
// control-plane call per Terraform operation: PlanNewCluster or PlanClusterChange (plan),
// CreateCluster, RefreshCluster or ImportCluster (read), ResumeCluster (update), DeleteCluster.

var _ hydraResource = (*gpuClusterResource)(nil)

// defaultClusterCreateTimeout bounds a cluster's create: every node's boot and provisioning (in
// parallel), then the cluster check.
const defaultClusterCreateTimeout = 120 * time.Minute

// clusterQuoteKey is the key of a cluster create's quote in its private plan data.
const clusterQuoteKey = "hydra_cluster_quote"

// NewGPUClusterResource is the hydra_gpu_cluster resource.
func NewGPUClusterResource() resource.Resource {
	return &gpuClusterResource{resourceBase{base{typeName: "gpu_cluster"}}}
}

type gpuClusterResource struct{ resourceBase }

// clusterQuote is a plan's choice for one new cluster, kept like a machine's quote so that the
// apply-time re-plan shows the same values.
type clusterQuote struct {
	Plan    controlplane.ClusterPlan `json:"cluster_plan"`
	Expires time.Time                `json:"expires"`
}

// walkName is the cluster's name in the walk, apart from a machine of the same name.
func walkName(name string) string { return "cluster:" + name }

func (r *gpuClusterResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var name types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("name"), &name)...)
	if r.data != nil && !name.IsNull() && !name.IsUnknown() {
		r.data.walk.validated(walkName(name.ValueString()))
	}
	var volumes types.List
	var allowedClouds, allowedRegions types.Set
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("volumes"), &volumes)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("clouds"), &allowedClouds)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("regions"), &allowedRegions)...)
	resp.Diagnostics.Append(volumesPlacementProblems(ctx, volumes, allowedClouds, allowedRegions, clusterSubject.thing)...)
}

// sharedClusterName is the diagnostic for two clusters with one name.
func sharedClusterName(diags *diag.Diagnostics, name string) {
	diags.AddAttributeError(path.Root("name"), "Two GPU clusters share one name",
		fmt.Sprintf("More than one hydra_gpu_cluster in this configuration is named %q. Each cluster needs its own name: the name is "+
			"how hydra finds the cluster an interrupted create left behind. Give each resource a distinct name (with count or "+
			"for_each, include count.index or each.key in it).", name))
}

func (r *gpuClusterResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if r.data == nil || req.Plan.Raw.IsNull() || r.data.command == commandDestroys {
		return // not configured yet; a destroy; or a destroy's refresh, whose plan is thrown away
	}
	r.data.rememberCapacity(ctx, req.Private)
	ctx, done := operation(ctx)
	defer done()
	plan, ok := get[gpuClusterModel](ctx, req.Plan, &resp.Diagnostics)
	if !ok {
		return
	}
	if !plan.Name.IsUnknown() && r.data.walk.sharedName(walkName(plan.Name.ValueString())) {
		sharedClusterName(&resp.Diagnostics, plan.Name.ValueString())
		return
	}
	if !req.State.Raw.IsNull() {
		r.planChange(ctx, req, resp, &plan)
		return
	}
	if u := r.data.provisioningUnavailable; u != nil {
		u.error(&resp.Diagnostics, "A new GPU cluster")
		return
	}
	spec, known, diags := plan.spec(ctx, r.data.sshPublicKeys)
	resp.Diagnostics.Append(diags...)
	if !known || resp.Diagnostics.HasError() {
		return // decided once the inputs are known
	}
	// The quote of an earlier plan of this create; otherwise the control plane chooses now.
	key := clusterKey(spec)
	var earlier *controlplane.ClusterQuote
	q, qpath, found := earlierQuote(ctx, req.Private, r.data.quotes, clusterQuoteKey, key, func(q clusterQuote) time.Time { return q.Expires }, &resp.Diagnostics)
	if found {
		earlier = &controlplane.ClusterQuote{Plan: q.Plan, Path: qpath, Expires: q.Expires}
	}
	chosen, err := r.data.cp.PlanNewCluster(ctx, spec, earlier)
	if !decided(&resp.Diagnostics, chosen.Notices, err) {
		return
	}
	if earlier == nil {
		chosen.Notices = nil
		q = clusterQuote{Plan: chosen, Expires: r.data.quotes.expiry()}
	}
	pinQuote(ctx, r.data.quotes, resp.Private, clusterQuoteKey, key, q, earlier == nil, &resp.Diagnostics)
	plan.setPlan(ctx, q.Plan, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// clusterKey is the quote key of a cluster create: the inputs that decide its choice.
func clusterKey(spec controlplane.ClusterSpec) string {
	return quoteKey("cluster", spec.Name, spec.GPUType, spec.GPUCount, spec.Nodes, spec.Kind, spec.Clouds, spec.Regions, spec.Spot,
		spec.MaxPricePerHour, spec.Interconnect, spec.Volumes)
}

// planChange plans an existing cluster: the control plane decides whether it is kept, provisioned
// again in place or replaced, and why.
func (r *gpuClusterResource) planChange(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse, plan *gpuClusterModel) {
	state, ok := get[gpuClusterModel](ctx, req.State, &resp.Diagnostics)
	if !ok {
		return
	}
	spec, _, diags := plan.spec(ctx, r.data.sshPublicKeys)
	resp.Diagnostics.Append(diags...)
	_, varsKnown, _ := plan.vars(ctx)
	_, volumesKnown := controlPlaneVolumes(plan.Volumes)
	spec.ProvisioningVarsUnknown = !varsKnown || !volumesKnown
	spec.ReplaceWhenUnhealthy = plan.ReplaceWhenUnhealthy.ValueBool()
	spec.ReplaceWhenPreempted = plan.ReplaceWhenPreempted.ValueBool()
	rec := state.record(ctx, &resp.Diagnostics)
	change, err := r.data.cp.PlanClusterChange(spec, rec)
	digest, ok := changeDecided(&resp.Diagnostics, &change, err, &state.resourceModel, &plan.resourceModel)
	if !ok {
		return
	}
	switch change.Change {
	case controlplane.Replace:
		// Terraform replaces for a path whose value changes: the status (and the nodes, whose health
		// may be the reason) are new with the replacement.
		plan.Status, plan.Node = types.StringUnknown(), types.ListUnknown(plan.Node.ElementType(ctx))
		plan.Interruption = types.ObjectUnknown(interruptionTypes)
		resp.RequiresReplace.Append(path.Root(replacedBecause(change.ReplaceBecause)), path.Root("status"))
	case controlplane.Reprovision:
		if u := r.data.provisioningUnavailable; u != nil {
			u.error(&resp.Diagnostics, fmt.Sprintf("hydra_gpu_cluster %q (%s)", state.Name.ValueString(), state.ID.ValueString()))
			return
		}
		plan.ProvisioningDigest, plan.Status = digest, types.StringUnknown()
		// Provisioning and the cluster check tell every node's status, health and key again; an
		// interrupted create may not know every node's address yet.
		plan.Node, plan.Hostfile, plan.NCCLEnv, plan.BusBandwidth = types.ListUnknown(plan.Node.ElementType(ctx)), types.StringUnknown(), types.MapUnknown(types.StringType), types.Float64Unknown()
		plan.ProvisioningError = types.StringUnknown()
	default:
		plan.ProvisioningDigest = digest
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, plan)...)
}

// replacedBecause is the attribute a replacement is shown on: the control plane's reason, or the
// node list for a node's health.
func replacedBecause(why string) string {
	switch why {
	case "health":
		return "node"
	case "":
		return "status"
	}
	return why
}

func (r *gpuClusterResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	c, ok := beginCreate[gpuClusterModel](ctx, req, resp, "cluster", defaultClusterCreateTimeout, r.data.provisioningUnavailable)
	defer c.end()
	if !ok {
		return
	}
	ctx, plan, summary, name := c.ctx, c.plan, c.summary, c.plan.Name.ValueString()
	if r.data.walk.sharedName(walkName(name)) {
		sharedClusterName(&resp.Diagnostics, name)
		return
	}
	spec, _, diags := plan.spec(ctx, r.data.sshPublicKeys)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	planned := controlplane.ClusterPlan{Cloud: plan.Cloud.ValueString(), Pool: plan.Pool.ValueString(), Region: plan.Region.ValueString(),
		OfferID: plan.OfferID.ValueString(), PricePerHour: usdOf(plan.PricePerHour)}
	m := plan
	save := r.saver(ctx, &m, &resp.State, &resp.Diagnostics)
	rec, err := r.data.cp.CreateCluster(ctx, spec, planned, save)
	// The quote is spent (created) or refused: the next plan quotes afresh.
	if ferr := r.data.quotes.remove(clusterKey(spec)); ferr != nil {
		tflog.Warn(hydraLog(), "could not remove the plan quote", map[string]any{"error": ferr.Error()})
	}
	var capErr *controlplane.ClusterCapacityError
	switch {
	case errors.As(err, &capErr):
		if capErr.Capacity != nil {
			saveCapacityMisses(ctx, req.Plan, &resp.State, resp.Private, *capErr.Capacity, "cloud_cluster_id", clusterSubject.thing, &resp.Diagnostics)
		}
		resp.Diagnostics.AddError(summary, err.Error()+".\n\nThe cloud's cluster order is all or nothing: hydra terminated every node "+
			"it had started, so no node stays billed. Run `terraform plan` again to choose another offer (or widen clouds or regions).")
		return
	case rec.ID == "" && m.ID.IsUnknown():
		// Never accepted by the cloud: nothing is in state, nothing is billed.
		if err == nil {
			err = errors.New("the control plane returned no cluster")
		}
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	if err == nil {
		save(rec)
	}
	if r.settle(ctx, &m, c.timedOut(err), summary, &resp.Diagnostics) {
		tflog.Info(hydraLog(), "cluster ready", map[string]any{"name": m.ID.ValueString(), "took": c.took()})
	}
}

// saver records each step of the cluster's lifecycle in the resource's state, so the state keeps the
// cluster whatever happens next.
func (r *gpuClusterResource) saver(ctx context.Context, m *gpuClusterModel, state stateSetter, diags *diag.Diagnostics) func(controlplane.ClusterRecord) {
	return func(rec controlplane.ClusterRecord) {
		m.setRecord(ctx, rec, true, diags)
		diags.Append(state.Set(ctx, m)...)
	}
}

// settle ends Create and Update: an interrupted one is kept in state, resumable, with a warning; a
// failed one is an error (the cluster stays in state). It reports whether the cluster is ready.
func (r *gpuClusterResource) settle(ctx context.Context, m *gpuClusterModel, err error, summary string, diags *diag.Diagnostics) bool {
	switch {
	case interrupted(ctx):
		interruptedWarning(diags, summary, clusterSubject.thing, m.Status, m.CloudClusterID,
			"waits for its nodes, provisions them and checks the cluster", "ordering another")
	case err != nil:
		diags.AddError(summary, err.Error()+"\n\nThe cluster is kept in state (tainted) so it is not forgotten; the next apply replaces it, "+
			"and destroy deletes every node.")
	}
	return !interrupted(ctx) && err == nil && !diags.HasError()
}

// clusterCapacityRecord says whether the state is a failed create's capacity record: no cluster.
func clusterCapacityRecord(m *gpuClusterModel) bool {
	return !m.CloudClusterID.IsNull() && m.CloudClusterID.ValueString() == "" && m.Status.ValueString() == string(cloudprovider.StatusError)
}

func (r *gpuClusterResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	ctx, done := operation(ctx)
	defer done()
	m, ok := get[gpuClusterModel](ctx, req.State, &resp.Diagnostics)
	if !ok {
		return
	}
	if clusterCapacityRecord(&m) {
		r.data.rememberCapacity(ctx, req.Private)
		return
	}
	id := m.ID.ValueString()
	if m.CloudClusterID.IsNull() {
		// Import (ImportState put `<cloud>/<cluster id>` in id): everything the cloud and the nodes tell.
		rec, ok := importedRecord(ctx, clusterImportID, id, r.data.cp.ImportCluster, &resp.Diagnostics)
		if !ok {
			return
		}
		r.setImported(ctx, &m, rec, &resp.Diagnostics)
		resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
		return
	}
	rec := m.record(ctx, &resp.Diagnostics)
	found, err := r.data.cp.RefreshCluster(ctx, &rec)
	if !keptAfterRefresh(ctx, resp, found, err, "GPU cluster", id, id, "recreates it") {
		return
	}
	m.setRecord(ctx, rec, false, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// setImported fills every attribute an imported cluster can tell; its kind is its pool's.
func (r *gpuClusterResource) setImported(ctx context.Context, m *gpuClusterModel, rec controlplane.ClusterRecord, diags *diag.Diagnostics) {
	m.setImported(ctx, rec, diags)
	if p, ok := r.data.cp.Inventory().PoolByName(rec.Pool); ok {
		m.Kind = types.StringValue(p.Kind)
	}
}

func (r *gpuClusterResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	u, ok := beginUpdate[gpuClusterModel](ctx, req, resp, "cluster", r.data.provisioningUnavailable)
	defer u.end()
	if !ok {
		return
	}
	ctx, plan, state, summary, m := u.ctx, u.plan, u.state, u.summary, u.plan
	spec, _, diags := plan.spec(ctx, r.data.sshPublicKeys)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	rec := state.record(ctx, &resp.Diagnostics)
	m.setRecord(ctx, rec, true, &resp.Diagnostics)
	save := r.saver(ctx, &m, &resp.State, &resp.Diagnostics)
	err := r.data.cp.ResumeCluster(ctx, spec, &rec, save)
	if err == nil {
		save(rec)
	}
	if r.settle(ctx, &m, u.timedOut(err), summary, &resp.Diagnostics) {
		tflog.Info(hydraLog(), "cluster ready", map[string]any{"name": rec.ID})
	}
}

func (r *gpuClusterResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	state, ok := get[gpuClusterModel](ctx, req.State, &resp.Diagnostics)
	if !ok || clusterCapacityRecord(&state) {
		return // a capacity record holds no cluster: nothing to delete
	}
	ctx, end := start(ctx, state.Timeouts.Delete, defaultDeleteTimeout, &resp.Diagnostics)
	defer end()
	rec := state.record(ctx, &resp.Diagnostics)
	if err := r.data.cp.DeleteCluster(ctx, rec, parseDuration(state.DrainTimeout, 0)); err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("deleting GPU cluster (%s)", rec.ID), err.Error())
	}
}

// ImportState takes `<cloud>/<cluster id>` (the cloud's own id of the cluster); Read imports it.
func (r *gpuClusterResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	clusterImportID.importState(ctx, req, resp)
}

var clusterImportID = cloudImportID{
	thing: "GPU cluster",
	own:   "cluster id",
	accepted: "a cluster is imported as <cloud>/<cluster id>: the cloud's name and the cloud's own id of the cluster " +
		"(hydra_gpu_cluster's cloud_cluster_id), for example `terraform import hydra_gpu_cluster.train " + clouds.Names()[0] + "/<cluster id>`",
}
