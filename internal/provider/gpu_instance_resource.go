package provider

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/setvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/float64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/setplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/provision"
)

var (
	_ resource.Resource                   = (*gpuInstanceResource)(nil)
	_ resource.ResourceWithConfigure      = (*gpuInstanceResource)(nil)
	_ resource.ResourceWithModifyPlan     = (*gpuInstanceResource)(nil)
	_ resource.ResourceWithImportState    = (*gpuInstanceResource)(nil)
	_ resource.ResourceWithValidateConfig = (*gpuInstanceResource)(nil)
)

const (
	defaultCreateTimeout = 60 * time.Minute
	defaultUpdateTimeout = 60 * time.Minute
	defaultDeleteTimeout = 30 * time.Minute
)

// namePattern: lower-case letters and digits in groups joined by single dashes. "--" is reserved: it
// joins the name and the ownership token in the cloud-side name.
var namePattern = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// NewGPUInstanceResource is the hydra_gpu_instance resource.
func NewGPUInstanceResource() resource.Resource { return &gpuInstanceResource{} }

type gpuInstanceResource struct {
	data *providerData
}

type gpuInstanceModel struct {
	ID                      types.String   `tfsdk:"id"`
	Name                    types.String   `tfsdk:"name"`
	GPUType                 types.String   `tfsdk:"gpu_type"`
	GPUCount                types.Int64    `tfsdk:"gpu_count"`
	Kind                    types.String   `tfsdk:"kind"`
	Spot                    types.Bool     `tfsdk:"spot"`
	Clouds                  types.Set      `tfsdk:"clouds"`
	Regions                 types.Set      `tfsdk:"regions"`
	MaxPricePerHour         types.Float64  `tfsdk:"max_price_per_hour"`
	FormFactor              types.String   `tfsdk:"form_factor"`
	OfferID                 types.String   `tfsdk:"offer_id"`
	AllowFallback           types.Bool     `tfsdk:"allow_fallback"`
	BidTimeout              types.String   `tfsdk:"bid_timeout"`
	ReplaceWhenUnhealthy    types.Bool     `tfsdk:"replace_when_unhealthy"`
	DrainTimeout            types.String   `tfsdk:"drain_timeout"`
	Health                  types.String   `tfsdk:"health"`
	HealthCheckedAt         types.String   `tfsdk:"health_checked_at"`
	HealthReason            types.String   `tfsdk:"health_reason"`
	SSHPublicKeys           types.List     `tfsdk:"ssh_public_keys"`
	ProvisioningVars        types.Dynamic  `tfsdk:"provisioning_vars"`
	MaxProvisioningAttempts types.Int64    `tfsdk:"max_provisioning_attempts"`
	CloudInstanceID         types.String   `tfsdk:"cloud_instance_id"`
	Cloud                   types.String   `tfsdk:"cloud"`
	Pool                    types.String   `tfsdk:"pool"`
	Region                  types.String   `tfsdk:"region"`
	InstanceType            types.String   `tfsdk:"instance_type"`
	PricePerHour            types.Float64  `tfsdk:"price_usd_per_hour"`
	EstimatedPricePerHour   types.Float64  `tfsdk:"estimated_price_usd_per_hour"`
	IsSpot                  types.Bool     `tfsdk:"is_spot"`
	GPUFormFactor           types.String   `tfsdk:"gpu_form_factor"`
	GPUMemoryGB             types.Int64    `tfsdk:"gpu_memory_gb"`
	VCPUs                   types.Int64    `tfsdk:"vcpus"`
	MemoryGB                types.Int64    `tfsdk:"memory_gb"`
	OtherClouds             types.Map      `tfsdk:"other_clouds"`
	OfferDetails            types.Map      `tfsdk:"offer_details"`
	Status                  types.String   `tfsdk:"status"`
	CloudStatus             types.String   `tfsdk:"cloud_status"`
	ReadyAt                 types.String   `tfsdk:"ready_at"`
	ProvisioningAttempts    types.Int64    `tfsdk:"provisioning_attempts"`
	ProvisioningDigest      types.String   `tfsdk:"provisioning_digest"`
	ProvisioningError       types.String   `tfsdk:"provisioning_error"`
	HostKey                 types.String   `tfsdk:"host_key"`
	SSHHost                 types.String   `tfsdk:"ssh_host"`
	SSHPort                 types.Int64    `tfsdk:"ssh_port"`
	SSHUser                 types.String   `tfsdk:"ssh_user"`
	Timeouts                timeouts.Value `tfsdk:"timeouts"`
}

func (r *gpuInstanceResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_gpu_instance"
}

func (r *gpuInstanceResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	keep := []planmodifier.String{stringplanmodifier.UseStateForUnknown()}
	resp.Schema = schema.Schema{
		// Version 1 names the prices' currency and unit (price_usd_per_hour); see UpgradeState.
		Version: 1,
		MarkdownDescription: "A GPU machine rented from the cheapest cloud that can serve it, provisioned and `ready`.\n\n" +
			"During `terraform plan` hydra asks every eligible pool for offers and shows the cheapest as known values " +
			"(`cloud`, `pool`, `region`, `instance_type`, `price_usd_per_hour`, `offer_id`). `terraform apply` creates that " +
			"machine and blocks until provisioning reaches `ready`. After creation nothing moves: a cheaper offer " +
			"appearing later never produces a diff.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				MarkdownDescription: "The machine's cloud-side name: the pool's prefix, `name`, `--` and the machine's ownership " +
					"token (e.g. `sbx-vm-trainer--k3j9x2ab`). The token ties the machine to this resource alone, so no other " +
					"resource ever adopts, changes or deletes it. Known once the machine is created. `terraform import` takes this name.",
				Computed:      true,
				PlanModifiers: keep,
			},
			"name": schema.StringAttribute{
				MarkdownDescription: "The machine's name: lower case letters and digits with single dashes between them, at most 48 " +
					"characters. It must be unique: two resources of one configuration with the same name fail at plan, and so does " +
					"a name whose machine another Terraform state (another working directory) already holds at the cloud. The " +
					"cloud-side name is the pool's prefix, this name, `--` and the machine's ownership token. Changing it replaces the machine.",
				Required:      true,
				Validators:    nameValidators(),
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"gpu_type": schema.StringAttribute{
				MarkdownDescription: "hydra's GPU type, from `supported_gpus.yml` (embedded default: `a100-80gb`, `b200`, `h100`, `h200`, " +
					"`l4`, `l40s`, `rtx6000ada`, `rtxpro6000`). Changing it replaces the machine.",
				Required:      true,
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"gpu_count": schema.Int64Attribute{
				MarkdownDescription: "GPUs in the machine, at most the type's `max_count` in `supported_gpus.yml`. Default `1`. Changing it replaces the machine.",
				Optional:            true,
				Computed:            true,
				Default:             int64default.StaticInt64(1),
				Validators:          []validator.Int64{int64validator.AtLeast(1)},
				PlanModifiers:       []planmodifier.Int64{int64planmodifier.RequiresReplace()},
			},
			"kind": schema.StringAttribute{
				MarkdownDescription: "`vm` (a bare VM handed to a customer) or `execlet` (a machine prepared to run customer workloads). " +
					"The kind selects the pools and the provisioning playbook. Default `vm`. Changing it replaces the machine.",
				Optional:      true,
				Computed:      true,
				Default:       stringdefault.StaticString(inventory.KindVM),
				Validators:    []validator.String{stringvalidator.OneOf(inventory.Kinds...)},
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"spot": schema.BoolAttribute{
				MarkdownDescription: "Allow spot (preemptible) capacity to compete with on-demand offers. Default `false`. " +
					"Changing it replaces the machine.",
				Optional:      true,
				Computed:      true,
				Default:       booldefault.StaticBool(false),
				PlanModifiers: []planmodifier.Bool{boolplanmodifier.RequiresReplace()},
			},
			"clouds": schema.SetAttribute{
				MarkdownDescription: "Only these clouds may serve the machine (" + knownCloudsMarkdown() + "). " +
					"Default: every configured cloud. Changing it replaces the machine only when its cloud is no longer allowed.",
				Optional:      true,
				ElementType:   types.StringType,
				Validators:    knownCloudsValidators(),
				PlanModifiers: []planmodifier.Set{setplanmodifier.RequiresReplaceIf(replaceIfNotAllowed("cloud"), "Replaces the machine when its cloud is no longer allowed.", "Replaces the machine when its cloud is no longer allowed.")},
			},
			"regions": schema.SetAttribute{
				MarkdownDescription: "Only these regions (each cloud's own region or location codes) may serve the machine. Default: any. " +
					"Changing it replaces the machine only when its region is no longer allowed.",
				Optional:      true,
				ElementType:   types.StringType,
				Validators:    []validator.Set{setvalidator.SizeAtLeast(1)},
				PlanModifiers: []planmodifier.Set{setplanmodifier.RequiresReplaceIf(replaceIfNotAllowed("region"), "Replaces the machine when its region is no longer allowed.", "Replaces the machine when its region is no longer allowed.")},
			},
			"max_price_per_hour": schema.Float64Attribute{
				MarkdownDescription: "The most you will pay for the whole machine, in US dollars per hour. Offers above it are never chosen, " +
					"and a plan where every offer is above it fails. Default: no limit. Changing it later does not move the machine." + maxPriceDescription,
				Optional:   true,
				Validators: maxPriceValidators(),
			},
			"offer_id": schema.StringAttribute{
				MarkdownDescription: "The chosen offer, `<pool>/<region>/<instance type>/<ondemand|spot>@<price>`. Leave it unset to let hydra " +
					"choose the cheapest at plan time, or set it from `data.hydra_gpu_offer.<name>.id` to pin the choice (the robust way " +
					"for pipelines that plan and apply on different machines). It must fit this resource's request (`gpu_type`, `gpu_count`, " +
					"`kind`, `spot`, `clouds`, `regions`, `max_price_per_hour`): a plan with one that does not fails, naming both sides. " +
					"Changing a configured value replaces the machine.",
				Optional:      true,
				Computed:      true,
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown(), stringplanmodifier.RequiresReplaceIfConfigured()},
			},
			"form_factor": schema.StringAttribute{
				MarkdownDescription: "Require a GPU form factor: `sxm` (SXM modules, NVLink between the GPUs) or `pcie` (PCIe cards). " +
					"Offers whose cloud does not say their form factor do not match a requirement. Default: any form factor " +
					"(`gpu_form_factor` shows what was chosen). Setting it on an existing machine of another form factor replaces it.",
				Optional:      true,
				Validators:    []validator.String{stringvalidator.OneOf(controlplane.FormFactors...)},
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplaceIf(replaceIfFormFactorDiffers, "Replaces the machine when it has another form factor.", "Replaces the machine when it has another form factor.")},
			},
			"bid_timeout": schema.StringAttribute{
				MarkdownDescription: "For auction offers (Mithril): how long apply waits for the bid to win before it cancels the bid " +
					"(nothing is billed for a bid that did not win). With `allow_fallback = true` apply then moves on to the next " +
					"cheapest offer; otherwise it fails and the next plan quotes afresh. A Go duration such as `10m` or `90s`, " +
					"from `1s` to `24h`. Default: `15m`. Counted within `timeouts.create`.",
				Optional:   true,
				Validators: []validator.String{durationBetween(time.Second, 24*time.Hour)},
			},
			"replace_when_unhealthy": schema.BoolAttribute{
				MarkdownDescription: "Replace a `ready` machine whose health check (run on every refresh, see `health`) finds it " +
					"unhealthy: the plan replaces it and says why. Default `false`: the plan shows the reason and changes nothing. A " +
					"machine that cannot be reached is `unknown`, never replaced for that.",
				Optional: true,
				Computed: true,
				Default:  booldefault.StaticBool(false),
			},
			"drain_timeout": schema.StringAttribute{
				MarkdownDescription: "For `kind = \"execlet\"`: before the machine is destroyed or replaced, hydra drains it (the agent " +
					"stops taking work, then hydra waits for running work to finish) for at most this long, then deletes it whatever " +
					"happened (drained, timed out, unreachable: each is logged). A Go duration from `1s` to `24h`. Default `\"10m\"`. " +
					"With `create_before_destroy`, the replacement is ready before the old machine is drained and deleted: zero downtime.",
				Optional:   true,
				Validators: []validator.String{durationBetween(time.Second, 24*time.Hour)},
			},
			"health": schema.StringAttribute{
				MarkdownDescription: "The machine's GPU health as last read: `healthy`, `unhealthy` or `unknown` (the machine could not " +
					"be reached or read). Provisioning sets it; every refresh (`terraform plan`) checks a `ready` machine again, " +
					"read-only and within a few seconds, with the same criteria provisioning applies (the promised GPUs visible, no " +
					"uncorrectable or lifetime ECC errors, no pending row remapping, no fatal Xid event since boot, NVLink and fabric " +
					"on SXM machines, exporters answering). Null with provisioning off.",
				Computed:      true,
				PlanModifiers: keep,
			},
			"health_checked_at": schema.StringAttribute{
				MarkdownDescription: "When `health` was last read (RFC 3339, UTC).",
				Computed:            true,
				PlanModifiers:       keep,
			},
			"health_reason": schema.StringAttribute{
				MarkdownDescription: "Why the machine is `unhealthy` (every failed check) or `unknown`; null when healthy.",
				Computed:            true,
				PlanModifiers:       keep,
			},
			"allow_fallback": schema.BoolAttribute{
				MarkdownDescription: "Leave the offer to apply time: the plan shows `estimated_price_usd_per_hour` and the offer fields as " +
					"`(known after apply)`, and if the cheapest offer has run out when apply creates the machine, the next cheapest " +
					"within the same limits (GPU type and count, kind, spot, clouds, regions, `max_price_per_hour`) is taken. Default `false`.",
				Optional: true,
				Computed: true,
				Default:  booldefault.StaticBool(false),
			},
			"ssh_public_keys": schema.ListAttribute{
				MarkdownDescription: "SSH public keys (authorized_keys lines) of the people who will use the machine. They are installed " +
					"for the login user at creation and by provisioning (`customer_ssh_keys`). Changing them re-runs provisioning in place.",
				Optional:    true,
				ElementType: types.StringType,
			},
			"provisioning_vars": schema.DynamicAttribute{
				MarkdownDescription: "Extra variables for the provisioning playbook: any HCL value (strings, numbers, lists, maps). " +
					"They reach Ansible through a JSON file, literally (never templated). Changing them re-runs provisioning in place.",
				Optional: true,
			},
			"max_provisioning_attempts": schema.Int64Attribute{
				MarkdownDescription: "Provisioning attempts for this machine, 1 to 20, overriding the provider's `provisioning.max_attempts` (default 3).",
				Optional:            true,
				Validators:          []validator.Int64{int64validator.Between(1, 20)},
			},
			"cloud_instance_id": schema.StringAttribute{
				MarkdownDescription: "The cloud's own identifier of the machine.",
				Computed:            true,
				PlanModifiers:       keep,
			},
			"cloud": schema.StringAttribute{
				MarkdownDescription: "The cloud that serves the machine, chosen at plan time.",
				Computed:            true,
				PlanModifiers:       keep,
			},
			"pool": schema.StringAttribute{
				MarkdownDescription: "The pool that serves the machine (e.g. `verda-vm-pool`).",
				Computed:            true,
				PlanModifiers:       keep,
			},
			"region": schema.StringAttribute{
				MarkdownDescription: "The cloud's region or location of the machine.",
				Computed:            true,
				PlanModifiers:       keep,
			},
			"instance_type": schema.StringAttribute{
				MarkdownDescription: "The cloud's own name for the machine's shape.",
				Computed:            true,
				PlanModifiers:       keep,
			},
			"price_usd_per_hour": schema.Float64Attribute{
				MarkdownDescription: "The price the cloud bills for the whole machine, in US dollars per hour, exact (cents, and further " +
					"digits only where the cloud's price has them), quoted when the machine was planned; `max_price_per_hour` caps it. " +
					"A cloud preferred in the ranking (Atlas) shows its billed price here and its ranking figure in `offer_details`. " +
					"Kept for the machine's life: later price moves never produce a diff. Unknown until apply with `allow_fallback`.",
				Computed:      true,
				PlanModifiers: []planmodifier.Float64{float64planmodifier.UseStateForUnknown()},
			},
			"estimated_price_usd_per_hour": schema.Float64Attribute{
				MarkdownDescription: "Only with `allow_fallback = true`, where apply chooses the offer: the cheapest matching price at plan " +
					"time, in US dollars per hour (the machine's own price is `price_usd_per_hour`, known after apply). Null otherwise.",
				Computed:      true,
				PlanModifiers: []planmodifier.Float64{float64planmodifier.UseStateForUnknown()},
			},
			"is_spot": schema.BoolAttribute{
				MarkdownDescription: "Whether the machine is spot (preemptible) capacity.",
				Computed:            true,
				PlanModifiers:       []planmodifier.Bool{boolplanmodifier.UseStateForUnknown()},
			},
			"gpu_form_factor": schema.StringAttribute{
				MarkdownDescription: "The form factor of the machine's GPUs as its cloud states it: `sxm` or `pcie`; null when the cloud does not say.",
				Computed:            true,
				PlanModifiers:       keep,
			},
			"gpu_memory_gb": schema.Int64Attribute{
				MarkdownDescription: "Memory of one GPU, in GB; null when the cloud does not say.",
				Computed:            true,
				PlanModifiers:       []planmodifier.Int64{int64planmodifier.UseStateForUnknown()},
			},
			"vcpus": schema.Int64Attribute{
				MarkdownDescription: "Virtual CPUs of the whole machine; null when the cloud does not say.",
				Computed:            true,
				PlanModifiers:       []planmodifier.Int64{int64planmodifier.UseStateForUnknown()},
			},
			"memory_gb": schema.Int64Attribute{
				MarkdownDescription: "RAM of the whole machine, in GB; null when the cloud does not say.",
				Computed:            true,
				PlanModifiers:       []planmodifier.Int64{int64planmodifier.UseStateForUnknown()},
			},
			"offer_details": schema.MapAttribute{
				MarkdownDescription: "What the chosen offer's cloud says about it beyond the price: for Mithril the bid and the " +
					"auction's last clearing price, for Atlas its list price before the in-house discount, for Prime Intellect the " +
					"upstream provider and data center, and so on. Null when the offer was pinned through `offer_id`.",
				Computed:      true,
				ElementType:   types.StringType,
				PlanModifiers: []planmodifier.Map{mapplanmodifier.UseStateForUnknown()},
			},
			"other_clouds": schema.MapAttribute{
				MarkdownDescription: "Why each other asked cloud lost when the machine was chosen: its cheapest matching offer and how much " +
					"more it costs, or why it had none (no capacity, timed out, above the max price, a bid that would not clear). " +
					"Null when the offer was pinned through `offer_id`.",
				Computed:      true,
				ElementType:   types.StringType,
				PlanModifiers: []planmodifier.Map{mapplanmodifier.UseStateForUnknown()},
			},
			"status": schema.StringAttribute{
				MarkdownDescription: "hydra's status: `pending`, `running`, `provisioning`, `ready`, `terminated` or `error`.",
				Computed:            true,
				PlanModifiers:       keep,
			},
			"cloud_status": schema.StringAttribute{
				MarkdownDescription: "The cloud's own word for the machine's status, as last read.",
				Computed:            true,
				PlanModifiers:       keep,
			},
			"ready_at": schema.StringAttribute{
				MarkdownDescription: "When provisioning last succeeded (RFC 3339, UTC).",
				Computed:            true,
				PlanModifiers:       keep,
			},
			"provisioning_attempts": schema.Int64Attribute{
				MarkdownDescription: "Attempts the last provisioning run took.",
				Computed:            true,
				PlanModifiers:       []planmodifier.Int64{int64planmodifier.UseStateForUnknown()},
			},
			"provisioning_digest": schema.StringAttribute{
				MarkdownDescription: "Digest of the playbook files and variables the machine was provisioned with. A change re-runs " +
					"provisioning in place; an unchanged digest means provisioning is never re-run.",
				Computed:      true,
				PlanModifiers: keep,
			},
			"provisioning_error": schema.StringAttribute{
				MarkdownDescription: "Summary of the last failed provisioning (host, task and message), or null.",
				Computed:            true,
				PlanModifiers:       keep,
			},
			"host_key": schema.StringAttribute{
				MarkdownDescription: "The machine's SSH host key, pinned: reported by the cloud, or trusted on first contact and checked on every later run.",
				Computed:            true,
				PlanModifiers:       keep,
			},
			"ssh_host": schema.StringAttribute{
				MarkdownDescription: "Address to reach the machine over SSH.",
				Computed:            true,
				PlanModifiers:       keep,
			},
			"ssh_port": schema.Int64Attribute{
				MarkdownDescription: "SSH port of the machine.",
				Computed:            true,
				PlanModifiers:       []planmodifier.Int64{int64planmodifier.UseStateForUnknown()},
			},
			"ssh_user": schema.StringAttribute{
				MarkdownDescription: "SSH login user of the machine.",
				Computed:            true,
				PlanModifiers:       keep,
			},
			"timeouts": timeouts.Attributes(ctx, timeouts.Opts{Create: true, Update: true, Delete: true,
				CreateDescription: "How long apply may take to create the machine and provision it to `ready` (the wait for boot, an " +
					"auction's `bid_timeout`, SSH and every provisioning attempt), as a Go duration. Default `\"60m\"`. A create that " +
					"runs out keeps the machine in state, tainted, so it is replaced and never forgotten.",
				UpdateDescription: "How long an in-place update (provisioning run again) may take, as a Go duration. Default `\"60m\"`.",
				DeleteDescription: "How long destroy waits for the cloud to say the machine is gone, as a Go duration. Default `\"30m\"`.",
			}),
		},
	}
}

func (r *gpuInstanceResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = configuredData(req.ProviderData, resp.Diagnostics.AddError)
}

// replaceIfNotAllowed replaces the machine when its current cloud or region leaves the allowed set.
func replaceIfNotAllowed(attrName string) setplanmodifier.RequiresReplaceIfFunc {
	return func(ctx context.Context, req planmodifier.SetRequest, resp *setplanmodifier.RequiresReplaceIfFuncResponse) {
		if req.State.Raw.IsNull() || req.PlanValue.IsNull() || req.PlanValue.IsUnknown() {
			return
		}
		var current types.String
		resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root(attrName), &current)...)
		allowed, ok, diags := stringsOf(ctx, req.PlanValue)
		resp.Diagnostics.Append(diags...)
		if !ok || current.IsNull() {
			return
		}
		resp.RequiresReplace = !containsString(allowed, current.ValueString())
	}
}

func (r *gpuInstanceResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m gpuInstanceModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if r.data != nil && !m.Name.IsNull() && !m.Name.IsUnknown() {
		// Terraform validates each resource instance once per walk, right before planning it.
		r.data.walk.validated(m.Name.ValueString())
	}
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

// offerRequest is offerRequest with what the provider adds: whether the machine would be created
// without any SSH key (no ssh_public_keys and provisioning off), which some clouds refuse.
func (r *gpuInstanceResource) offerRequest(ctx context.Context, m *gpuInstanceModel) (controlplane.OfferRequest, bool, diag.Diagnostics) {
	req, ok, diags := offerRequest(ctx, m)
	if m.SSHPublicKeys.IsUnknown() {
		return req, false, diags
	}
	keys, _, d := stringsOf(ctx, m.SSHPublicKeys)
	diags.Append(d...)
	req.WithoutSSHKey = len(keys) == 0 && len(r.data.sshPublicKeys) == 0
	return req, ok, diags
}

// offerRequest builds the control plane's request from the model; ok is false while inputs are unknown.
func offerRequest(ctx context.Context, m *gpuInstanceModel) (controlplane.OfferRequest, bool, diag.Diagnostics) {
	var diags diag.Diagnostics
	for _, v := range []attr.Value{m.GPUType, m.GPUCount, m.Kind, m.Spot, m.Clouds, m.Regions, m.MaxPricePerHour, m.FormFactor} {
		if v.IsUnknown() {
			return controlplane.OfferRequest{}, false, diags
		}
	}
	clouds, ok1, d1 := stringsOf(ctx, m.Clouds)
	regions, ok2, d2 := stringsOf(ctx, m.Regions)
	diags.Append(d1...)
	diags.Append(d2...)
	sort.Strings(clouds)
	sort.Strings(regions)
	return controlplane.OfferRequest{
		GPUType: m.GPUType.ValueString(), GPUCount: int(m.GPUCount.ValueInt64()), Kind: m.Kind.ValueString(),
		AllowSpot: m.Spot.ValueBool(), Clouds: clouds, Regions: regions, MaxPricePerHour: usdOf(m.MaxPricePerHour),
		FormFactor: m.FormFactor.ValueString(),
	}, ok1 && ok2, diags
}

// addRequestError reports an impossible request on the attribute it concerns.
func addRequestError(diags *diag.Diagnostics, err error) {
	var re *controlplane.RequestError
	if errors.As(err, &re) {
		diags.AddAttributeError(path.Root(re.Field), "Impossible GPU request", re.Msg)
		return
	}
	diags.AddError("Cannot list GPU offers", err.Error())
}

func noOfferDetail(req controlplane.OfferRequest, res controlplane.OfferResult, closest []controlplane.Near) string {
	what := fmt.Sprintf("%dx %s (%s", req.GPUCount, req.GPUType, req.Kind)
	if req.AllowSpot {
		what += ", spot allowed"
	}
	if req.FormFactor != "" {
		what += ", form factor " + req.FormFactor
	}
	if req.MaxPricePerHour > 0 {
		what += ", at most " + req.MaxPricePerHour.PerHour()
	}
	what += ")"
	var b strings.Builder
	fmt.Fprintf(&b, "No cloud can rent %s right now. Why each cloud said no:\n%s", what, res.Explain())
	if len(closest) > 0 {
		b.WriteString("\n\nClosest offers, each with one setting relaxed:")
		for _, n := range closest {
			b.WriteString("\n  - " + n.String())
		}
	}
	b.WriteString("\n\nNothing was created.")
	return b.String()
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
	if req.Plan.Raw.IsNull() {
		return // destroy
	}
	ctx, done := operation(ctx)
	defer done()
	var plan gpuInstanceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !plan.Name.IsUnknown() && r.data.walk.sharedName(plan.Name.ValueString()) {
		resp.Diagnostics.AddAttributeError(path.Root("name"), "Two GPU instances share one name", sharedNameDetail(plan.Name.ValueString()))
		return
	}
	if !req.State.Raw.IsNull() {
		r.modifyUpdatePlan(ctx, req, resp, &plan)
		return
	}

	// Create (or replace): every new machine is provisioned, which must be possible here.
	if u := r.data.provisioningUnavailable; u != nil {
		u.error(&resp.Diagnostics, "A new GPU instance")
		return
	}
	// Choose the offer now.
	offerReq, known, diags := r.offerRequest(ctx, &plan)
	resp.Diagnostics.Append(diags...)
	var configuredOffer types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("offer_id"), &configuredOffer)...)
	if !known || plan.Name.IsUnknown() || configuredOffer.IsUnknown() {
		return // decided once the inputs are known
	}
	if err := r.data.cp.Validate(offerReq); err != nil {
		addRequestError(&resp.Diagnostics, err)
		return
	}
	r.planDigest(ctx, &plan, offerReq.Kind, &resp.Diagnostics)

	// An offer ID from the configuration (or the data source) pins everything shown.
	if !plan.OfferID.IsUnknown() && !plan.OfferID.IsNull() {
		parsed, err := controlplane.ParseOfferID(plan.OfferID.ValueString())
		if err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("offer_id"), "Invalid offer_id", err.Error())
			return
		}
		if err := r.data.cp.CheckPinned(parsed, offerReq); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("offer_id"), "Offer does not match the request", pinnedMismatchDetail(err))
			return
		}
		if _, found, err := r.data.cp.CheckPinnedHardware(ctx, parsed, offerReq); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("offer_id"), "Offer does not match the request", pinnedMismatchDetail(err))
			return
		} else if !found {
			resp.Diagnostics.AddAttributeWarning(path.Root("offer_id"), "Pinned offer not listed now",
				fmt.Sprintf("The cloud does not list offer_id %s now, so its GPUs could not be checked against gpu_type %q and "+
					"gpu_count %d; apply creates it only if the cloud still has it.", plan.OfferID.ValueString(), offerReq.GPUType, offerReq.GPUCount))
		}
		setOfferFields(&plan, r.data.cp, parsed)
		plan.EstimatedPricePerHour = types.Float64Null()
		plan.OtherClouds = types.MapNull(types.StringType)
		plan.OfferDetails = types.MapNull(types.StringType)
		if pm, ok := r.data.cp.Manager().Pool(parsed.Pool); ok {
			// A pinned plan may be re-planned during an apply on another machine, where hydra cannot
			// tell another state's machine from this configuration's own: a warning, not an error.
			r.collisions(ctx, plan.Name.ValueString(), offerReq.Kind, []string{pm.Pool.Cloud}, false, &resp.Diagnostics)
		}
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
		return
	}

	key := quoteKey(plan.Name.ValueString(), offerReq, plan.AllowFallback.ValueBool())
	q, pinned, err := r.data.quotes.get(key)
	if err != nil {
		resp.Diagnostics.AddWarning("Plan quote unavailable", err.Error()+"\nThe choice below is not pinned; if prices move before apply, apply may fail.")
	}
	if !pinned {
		// The first plan of this create (a re-plan reuses the quote): is the name free?
		r.collisions(ctx, plan.Name.ValueString(), offerReq.Kind, offerReq.Clouds, true, &resp.Diagnostics)
		if resp.Diagnostics.HasError() {
			return
		}
		res, err := r.data.cp.Offers(ctx, offerReq, false)
		if err != nil {
			addRequestError(&resp.Diagnostics, err)
			return
		}
		r.data.warnUnmapped(res.Unmapped, &resp.Diagnostics)
		if _, ok := res.Cheapest(); !ok {
			resp.Diagnostics.AddError("No GPU offer matches hydra_gpu_instance "+plan.Name.ValueString(), noOfferDetail(offerReq, res, r.data.cp.Closest(ctx, offerReq)))
			return
		}
		// Instances planned in this run share the known stock (deterministically, by name).
		choice, ok, err := r.data.fleet.Choose(ctx, plan.Name.ValueString(), res.Offers)
		if err != nil {
			resp.Diagnostics.AddError("Planning hydra_gpu_instance "+plan.Name.ValueString(), err.Error())
			return
		}
		if !ok {
			resp.Diagnostics.AddError("No GPU offer left for hydra_gpu_instance "+plan.Name.ValueString(), fleetExhaustedDetail(choice))
			return
		}
		best := choice.Offer
		if len(choice.Passed) > 0 {
			resp.Diagnostics.AddWarning("Cheaper stock taken by other instances of this plan", fleetPassedDetail(plan.Name.ValueString(), choice))
		}
		q = quote{OfferID: best.ID, Estimate: best.PricePerHour, WhyNot: res.WhyNot(best), Details: shownDetails(best), Hardware: best.Hardware, Known: true}
		if err := r.data.quotes.put(key, q); err != nil {
			resp.Diagnostics.AddWarning("Plan quote unavailable", err.Error())
		}
		logOfferChoice(plan.Name.ValueString(), best, res)
	} else if !plan.AllowFallback.ValueBool() {
		r.warnStaleQuote(ctx, key, q, offerReq, &resp.Diagnostics)
	}
	plan.EstimatedPricePerHour = types.Float64Null()
	if plan.AllowFallback.ValueBool() {
		plan.EstimatedPricePerHour = usdValue(q.Estimate)
	}
	if q.Known && !plan.AllowFallback.ValueBool() {
		setHardware(&plan, q.Hardware)
	}
	if q.WhyNot == nil {
		q.WhyNot = map[string]string{} // an empty map, not null, on both plans (JSON drops empty maps)
	}
	whyNot, d := types.MapValueFrom(ctx, types.StringType, q.WhyNot)
	resp.Diagnostics.Append(d...)
	plan.OtherClouds = whyNot
	if plan.AllowFallback.ValueBool() {
		// The offer, and so its details, are decided at apply.
		resp.Diagnostics.AddWarning("GPU offer chosen at apply time",
			fmt.Sprintf("allow_fallback is set for %q: the cheapest offer now is %s at %s; apply takes the cheapest offer within the same limits when it creates the machine.",
				plan.Name.ValueString(), q.OfferID, q.Estimate.PerHour()))
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
		return
	}
	parsed, err := controlplane.ParseOfferID(q.OfferID)
	if err != nil {
		resp.Diagnostics.AddError("Corrupt plan quote", err.Error())
		return
	}
	plan.OfferID = types.StringValue(q.OfferID)
	setOfferFields(&plan, r.data.cp, parsed)
	plan.OfferDetails = stringMap(ctx, q.Details, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// warnStaleQuote says when a reused quote no longer shows the market: the quoted offer's live price
// moved, or a cheaper offer exists now. The quote still pins the plan (so an apply agrees with its
// plan); the warning gives both figures and the way to re-quote at once.
func (r *gpuInstanceResource) warnStaleQuote(ctx context.Context, key string, q quote, req controlplane.OfferRequest, diags *diag.Diagnostics) {
	quoted, err := controlplane.ParseOfferID(q.OfferID)
	if err != nil {
		return
	}
	res, err := r.data.cp.Offers(ctx, req, false)
	if err != nil {
		return
	}
	var notes []string
	for _, o := range append(res.Offers, res.Ineligible...) {
		if o.Pool == quoted.Pool && o.Region == quoted.Region && o.InstanceType == quoted.InstanceType && o.Spot == quoted.Spot &&
			o.PricePerHour != quoted.PricePerHour {
			notes = append(notes, fmt.Sprintf("the quoted offer now costs %s (quoted %s)", o.PricePerHour.PerHour(), quoted.PricePerHour.PerHour()))
		}
	}
	if best, ok := res.Cheapest(); ok && best.ID != q.OfferID && best.PricePerHour < quoted.PricePerHour {
		notes = append(notes, fmt.Sprintf("a cheaper offer exists now: %s at %s", best.ID, best.PricePerHour.PerHour()))
	}
	if len(notes) == 0 {
		return
	}
	diags.AddWarning("This plan reuses an earlier quote",
		fmt.Sprintf("The offer %s was quoted by an earlier plan and is reused so that plan and apply agree, but %s. To re-quote now, "+
			"delete %s and plan again (quotes otherwise expire at %s, after plan_quote_ttl).",
			q.OfferID, strings.Join(notes, "; "), r.data.quotes.path(key), q.Expires.Format(time.RFC3339)))
}

// stringMap converts a Go map into a known map value (empty, never null).
func stringMap(ctx context.Context, m map[string]string, diags *diag.Diagnostics) types.Map {
	if m == nil {
		m = map[string]string{}
	}
	v, d := types.MapValueFrom(ctx, types.StringType, m)
	diags.Append(d...)
	return v
}

// logOfferChoice is the plan's one INFO line per new machine; why each other cloud lost is DEBUG.
func logOfferChoice(name string, best controlplane.Offer, res controlplane.OfferResult) {
	tflog.Info(hydraLog(), "offer chosen", map[string]any{"name": name, "offer": best.ID, "price": best.PricePerHour.PerHour(), "eligible": len(res.Offers)})
	for _, rej := range res.Rejections {
		tflog.Debug(hydraLog(), "cloud had no eligible offer", map[string]any{"name": name, "cloud": rej.Cloud, "why": rej.Reason})
	}
}

// pinnedMismatchDetail words a pinned offer's mismatch in the resource's attribute names.
func pinnedMismatchDetail(err error) string {
	var me *controlplane.MismatchError
	if !errors.As(err, &me) {
		return err.Error()
	}
	attr := map[string]string{"kind": "kind", "clouds": "clouds", "regions": "regions", "spot": "spot",
		"max_price_per_hour": "max_price_per_hour", "gpu_type": "gpu_type", "gpu_count": "gpu_count"}[me.Field]
	if attr == "" {
		return fmt.Sprintf("offer_id %s does not fit: %s.", me.OfferID, me.Msg)
	}
	return fmt.Sprintf("offer_id %s does not fit this resource's `%s`: %s. Pin an offer that matches (for example from a "+
		"hydra_gpu_offer data source with the same request), or leave offer_id unset to let hydra choose.", me.OfferID, attr, me.Msg)
}

func setOfferFields(m *gpuInstanceModel, cp *controlplane.ControlPlane, p controlplane.ParsedOfferID) {
	cloud := ""
	if pm, ok := cp.Manager().Pool(p.Pool); ok {
		cloud = pm.Pool.Cloud
	}
	m.Cloud = types.StringValue(cloud)
	m.Pool = types.StringValue(p.Pool)
	m.Region = types.StringValue(p.Region)
	m.InstanceType = types.StringValue(p.InstanceType)
	m.PricePerHour = usdValue(p.PricePerHour)
	m.IsSpot = types.BoolValue(p.Spot)
}

// provisioningVars collects the variables handed to the playbook; ok is false while any is unknown.
func provisioningVars(ctx context.Context, m *gpuInstanceModel) (map[string]any, bool, diag.Diagnostics) {
	var diags diag.Diagnostics
	vars := map[string]any{}
	if !m.ProvisioningVars.IsNull() {
		v, ok, err := dynamicToGo(m.ProvisioningVars)
		if err != nil {
			diags.AddAttributeError(path.Root("provisioning_vars"), "Invalid provisioning_vars", err.Error())
			return nil, false, diags
		}
		if !ok {
			return nil, false, diags
		}
		if v != nil {
			mv, isMap := v.(map[string]any)
			if !isMap {
				diags.AddAttributeError(path.Root("provisioning_vars"), "Invalid provisioning_vars",
					fmt.Sprintf("provisioning_vars must be a map or object of variable names to values, got %T", v))
				return nil, false, diags
			}
			for k, val := range mv {
				vars[k] = val
			}
		}
	}
	keys, ok, d := stringsOf(ctx, m.SSHPublicKeys)
	diags.Append(d...)
	if !ok {
		return nil, false, diags
	}
	if keys == nil {
		keys = []string{}
	}
	vars["customer_ssh_keys"] = keys
	return vars, true, diags
}

// planDigest sets the planned provisioning digest (unknown while the variables are).
func (r *gpuInstanceResource) planDigest(ctx context.Context, m *gpuInstanceModel, kind string, diags *diag.Diagnostics) {
	if !r.data.provisioning {
		m.ProvisioningDigest = types.StringNull()
		return
	}
	vars, ok, d := provisioningVars(ctx, m)
	diags.Append(d...)
	if !ok {
		m.ProvisioningDigest = types.StringUnknown()
		return
	}
	pool := r.poolForKind(m, kind)
	digest, err := r.data.cp.Provisioner().Digest(pool, vars)
	if err != nil {
		diags.AddError("Cannot compute the provisioning digest", err.Error())
		return
	}
	if digest == "" {
		m.ProvisioningDigest = types.StringNull()
		return
	}
	m.ProvisioningDigest = types.StringValue(digest)
}

// poolForKind returns the machine's pool, or any pool of its kind (playbooks go by kind).
func (r *gpuInstanceResource) poolForKind(m *gpuInstanceModel, kind string) inventory.Pool {
	if !m.Pool.IsNull() && !m.Pool.IsUnknown() {
		if pm, ok := r.data.cp.Manager().Pool(m.Pool.ValueString()); ok {
			return pm.Pool
		}
	}
	for _, pm := range r.data.cp.Manager().Pools() {
		if pm.Pool.Kind == kind {
			return pm.Pool
		}
	}
	return inventory.Pool{Kind: kind, Playbook: inventory.DefaultPlaybook(kind)}
}

// modifyUpdatePlan keeps the machine where it is and plans a provisioning run when the playbook or
// its variables changed, or when the last run did not end ready.
func (r *gpuInstanceResource) modifyUpdatePlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse, plan *gpuInstanceModel) {
	var state gpuInstanceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	// An unhealthy machine: the plan says why, and replaces it when asked to.
	if state.Health.ValueString() == healthUnhealthy && state.Status.ValueString() == string(controlplane.StatusReady) {
		name := state.Name.ValueString()
		if plan.ReplaceWhenUnhealthy.ValueBool() {
			resp.Diagnostics.AddWarning("Replacing an unhealthy GPU machine",
				fmt.Sprintf("hydra_gpu_instance %q (%s) is unhealthy: %s. replace_when_unhealthy is set, so this plan replaces it.",
					name, state.ID.ValueString(), state.HealthReason.ValueString()))
			plan.Health = types.StringUnknown()
			resp.RequiresReplace.Append(path.Root("health"))
			resp.Diagnostics.Append(resp.Plan.Set(ctx, plan)...)
			return
		}
		resp.Diagnostics.AddWarning("Unhealthy GPU machine",
			fmt.Sprintf("hydra_gpu_instance %q (%s) is unhealthy: %s (checked %s). Nothing changes; set replace_when_unhealthy = true "+
				"to replace it, or `terraform apply -replace` it.", name, state.ID.ValueString(), state.HealthReason.ValueString(), state.HealthCheckedAt.ValueString()))
	}
	// A machine that failed at the cloud cannot be repaired in place.
	if state.Status.ValueString() == string(controlplane.StatusError) && state.ProvisioningError.IsNull() {
		plan.Status = types.StringUnknown()
		resp.RequiresReplace.Append(path.Root("status"))
		resp.Diagnostics.Append(resp.Plan.Set(ctx, plan)...)
		return
	}
	r.planDigest(ctx, plan, state.Kind.ValueString(), &resp.Diagnostics)
	reprovision := plan.ProvisioningDigest.IsUnknown() ||
		!plan.ProvisioningDigest.Equal(state.ProvisioningDigest) ||
		state.Status.ValueString() != string(controlplane.StatusReady)
	if reprovision && r.data.provisioningUnavailable != nil {
		r.data.provisioningUnavailable.error(&resp.Diagnostics, fmt.Sprintf("hydra_gpu_instance %q (%s)", state.Name.ValueString(), state.ID.ValueString()))
		return
	}
	if reprovision {
		switch status := state.Status.ValueString(); {
		case status == string(controlplane.StatusPending) || status == string(controlplane.StatusProvisioning):
			resp.Diagnostics.AddWarning("GPU instance will be resumed",
				fmt.Sprintf("%s was left %s by an interrupted apply; apply resumes it in place (waits for it and provisions it).", state.ID.ValueString(), status))
		case status == string(controlplane.StatusRunning) && state.ProvisioningDigest.IsNull() && r.data.provisioning:
			resp.Diagnostics.AddWarning("GPU instance will be provisioned",
				fmt.Sprintf("%s carries no record of a provisioning with the current playbooks and variables (for example it was "+
					"imported, or provisioned by other means); apply provisions it in place.", state.ID.ValueString()))
		}
		plan.Status = types.StringUnknown()
		plan.CloudStatus = types.StringUnknown()
		plan.ReadyAt = types.StringUnknown()
		plan.ProvisioningAttempts = types.Int64Unknown()
		plan.ProvisioningError = types.StringUnknown()
		plan.HostKey = types.StringUnknown()
		// Provisioning ends with the health checks: health is known after apply.
		plan.Health, plan.HealthCheckedAt, plan.HealthReason = types.StringUnknown(), types.StringUnknown(), types.StringUnknown()
		if !r.data.provisioning {
			plan.HostKey = state.HostKey
			plan.Health, plan.HealthCheckedAt, plan.HealthReason = state.Health, state.HealthCheckedAt, state.HealthReason
		}
		if state.SSHHost.IsNull() {
			// Not reachable yet (an interrupted boot): the address comes while resuming.
			plan.SSHHost, plan.SSHPort, plan.SSHUser = types.StringUnknown(), types.Int64Unknown(), types.StringUnknown()
		}
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, plan)...)
}

func (r *gpuInstanceResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	ctx, done := operation(ctx)
	defer done()
	var plan gpuInstanceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	createStarted := time.Now()
	timeout, d := plan.Timeouts.Create(ctx, defaultCreateTimeout)
	resp.Diagnostics.Append(d...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	name := plan.Name.ValueString()
	summary := fmt.Sprintf("creating GPU instance (%s)", name)
	if u := r.data.provisioningUnavailable; u != nil {
		// The plan refuses this; a plan made where provisioning could run still must not create here.
		u.error(&resp.Diagnostics, summary)
		return
	}

	offerReq, _, diags := r.offerRequest(ctx, &plan)
	resp.Diagnostics.Append(diags...)
	vars, _, diags := provisioningVars(ctx, &plan)
	resp.Diagnostics.Append(diags...)
	sshKeys, _, diags := stringsOf(ctx, plan.SSHPublicKeys)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}

	qkey := quoteKey(name, offerReq, plan.AllowFallback.ValueBool())
	// An apply that refuses the planned offer forgets its quote, so the next plan quotes afresh.
	forgetQuote := func() {
		if err := r.data.quotes.remove(qkey); err != nil {
			tflog.Warn(hydraLog(), "could not remove the plan quote", map[string]any{"error": err.Error()})
		}
	}
	offers, err := r.candidateOffers(ctx, &plan, offerReq)
	if err != nil {
		var rose *controlplane.PriceRoseError
		if errors.As(err, &rose) {
			forgetQuote()
		}
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	launched, err := r.data.cp.Launch(ctx, controlplane.LaunchRequest{
		Name: name, Offers: offers, MaxPricePerHour: offerReq.MaxPricePerHour, BidTimeout: bidTimeout(plan.BidTimeout),
		SSHPublicKeys: append(append([]string{}, r.data.sshPublicKeys...), sshKeys...),
	})
	var soldOut *controlplane.SoldOutError
	if errors.As(err, &soldOut) {
		forgetQuote()
		resp.Diagnostics.AddError(summary, err.Error()+"; run `terraform plan` again to choose another offer, or set "+
			"allow_fallback = true to let apply take the next cheapest one. Nothing was created.")
		return
	}
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	forgetQuote()

	// The machine exists and is billed: record it before any wait, so no error or interrupt can make
	// Terraform forget it. Once Create returns, Terraform holds it: confirm the ownership at the cloud
	// and forget the journaled intent.
	m := plan
	parsed, _ := controlplane.ParseOfferID(launched.Offer.ID)
	m.OfferID = types.StringValue(launched.Offer.ID)
	setOfferFields(&m, r.data.cp, parsed)
	m.ID = types.StringValue(launched.Instance.Name)
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
		m.OfferDetails = stringMap(ctx, shownDetails(launched.Offer), &resp.Diagnostics)
	}
	m.CloudInstanceID = types.StringValue(launched.Instance.ID)
	m.Health, m.HealthCheckedAt, m.HealthReason = types.StringNull(), types.StringNull(), types.StringNull()
	if m.GPUFormFactor.IsUnknown() {
		// Left to apply (a pinned offer, or allow_fallback): what the launched offer's cloud said.
		setHardware(&m, launched.Offer.Hardware)
	}
	applyInstance(&m, launched.Instance)
	m.ReadyAt = types.StringNull()
	m.ProvisioningAttempts = types.Int64Value(0)
	m.ProvisioningError = types.StringNull()
	m.HostKey = stringOrNull(launched.Instance.HostKey)
	plannedDigest := m.ProvisioningDigest
	m.ProvisioningDigest = types.StringNull()
	save := func() { resp.Diagnostics.Append(resp.State.Set(ctx, &m)...) }
	save()
	defer func() {
		// Terraform holds the machine once Create returns, unless Terraform itself is gone (then the
		// journaled intent stays: the next plan names the machine and the next apply adopts it).
		if !terraformGone(ctx.Err() != nil) {
			r.data.cp.Settle(ctx, name, launched.Instance)
		}
	}()
	if launched.Adopted {
		tflog.Warn(hydraLog(), "adopted the machine an interrupted create of this resource left, instead of buying another", map[string]any{"id": launched.Instance.ID, "name": launched.Instance.Name})
	}

	bring := bringUp{r: r, m: &m, pool: launched.Pool, vars: vars, save: save, summary: summary}.run(ctx, launched.Instance)
	if interrupted(ctx) {
		// Returned without an error, the state must agree with the plan's known values; status says
		// the machine is not provisioned yet, so the next plan resumes it.
		if !plannedDigest.IsUnknown() {
			m.ProvisioningDigest = plannedDigest
		}
		save()
		resp.Diagnostics.Append(warnInterrupted(&m, summary)...)
		return
	}
	resp.Diagnostics.Append(bring...)
	if !resp.Diagnostics.HasError() && !plannedDigest.IsUnknown() {
		m.ProvisioningDigest = plannedDigest
		save()
	}
	if !resp.Diagnostics.HasError() {
		tflog.Info(hydraLog(), "machine ready", map[string]any{"name": launched.Instance.Name, "took": time.Since(createStarted).Round(time.Second).String()})
	}
}

// interrupted reports whether ctx was cancelled (Ctrl-C: Terraform's StopProvider) rather than timed out.
func interrupted(ctx context.Context) bool {
	return errors.Is(ctx.Err(), context.Canceled)
}

// warnInterrupted is the diagnostic of an operation cut short by Ctrl-C: the machine stays in state in
// a resumable status, not tainted, and the next apply continues it.
func warnInterrupted(m *gpuInstanceModel, summary string) diag.Diagnostics {
	var d diag.Diagnostics
	d.AddWarning(summary+": interrupted",
		fmt.Sprintf("Interrupted while the machine was %s. It is kept in state as %q (cloud id %s), not tainted: the next "+
			"`terraform apply` resumes it in place (waits for it and provisions it) instead of buying another.",
			m.Status.ValueString(), m.Status.ValueString(), m.CloudInstanceID.ValueString()))
	return d
}

// candidateOffers returns the offers Create may launch, best first: the planned one, or with
// allow_fallback every acceptable offer right now. The rules live in the control plane; this words
// its refusals for Terraform users.
func (r *gpuInstanceResource) candidateOffers(ctx context.Context, plan *gpuInstanceModel, req controlplane.OfferRequest) ([]controlplane.Offer, error) {
	pinned := ""
	if !plan.OfferID.IsUnknown() && !plan.OfferID.IsNull() {
		pinned = plan.OfferID.ValueString()
	}
	offers, err := r.data.cp.LaunchOffers(ctx, req, pinned)
	var rose *controlplane.PriceRoseError
	var none *controlplane.NoOfferError
	switch {
	case errors.As(err, &rose):
		return nil, fmt.Errorf("%w; run `terraform plan` again to see the new price", err)
	case errors.As(err, &none):
		return nil, errors.New(noOfferDetail(none.Request, none.Result, r.data.cp.Closest(ctx, none.Request)))
	}
	return offers, err
}

// bringUp takes one machine from wherever it is to ready: it waits for the machine to run, then
// provisions it (or marks it ready when provisioning is off), recording every step in the resource's
// state through save, so the state keeps the machine whatever happens.
type bringUp struct {
	r       *gpuInstanceResource
	m       *gpuInstanceModel
	pool    inventory.Pool
	vars    map[string]any
	save    func()
	summary string
}

// run waits for inst to run and provisions it.
func (b bringUp) run(ctx context.Context, inst controlplane.Instance) diag.Diagnostics {
	var diags diag.Diagnostics
	inst, err := b.r.data.cp.WaitRunning(ctx, inst, func(i controlplane.Instance) {
		applyInstance(b.m, i)
		b.save()
	})
	applyInstance(b.m, inst)
	if err != nil {
		b.save()
		if !interrupted(ctx) {
			diags.AddError(b.summary, err.Error()+"\n\nThe machine is kept in state (tainted) so it is not forgotten; the next apply replaces it.")
		}
		return diags
	}
	if inst.HostKey != "" {
		b.m.HostKey = types.StringValue(inst.HostKey)
	}
	return b.provision(ctx, inst)
}

// provision runs provisioning on a running inst (or marks it ready when provisioning is off).
func (b bringUp) provision(ctx context.Context, inst controlplane.Instance) diag.Diagnostics {
	var diags diag.Diagnostics
	m := b.m
	if !b.r.data.provisioning {
		m.Status = types.StringValue(string(controlplane.StatusReady))
		m.ReadyAt = types.StringValue(time.Now().UTC().Format(time.RFC3339))
		m.Health, m.HealthCheckedAt, m.HealthReason = types.StringNull(), types.StringNull(), types.StringNull()
		m.ProvisioningAttempts = types.Int64Value(0)
		m.ProvisioningError = types.StringNull()
		b.save()
		return diags
	}
	m.Status = types.StringValue(string(controlplane.StatusProvisioning))
	b.save()
	spec := controlplane.ProvisionSpec{
		Pool: b.pool, GPUType: m.GPUType.ValueString(), GPUCount: int(m.GPUCount.ValueInt64()),
		HostKey: m.HostKey.ValueString(), Vars: b.vars, MaxAttempts: int(m.MaxProvisioningAttempts.ValueInt64()),
	}
	out, err := b.r.data.cp.Provision(ctx, inst, spec, func(attempt int) {
		m.ProvisioningAttempts = types.Int64Value(int64(attempt))
		b.save()
	})
	m.ProvisioningAttempts = types.Int64Value(int64(out.Attempts))
	m.HostKey = stringOrNull(out.HostKey)
	if err != nil && interrupted(ctx) {
		b.save() // still provisioning: the next apply resumes it
		return diags
	}
	if err != nil {
		m.Status = types.StringValue(string(controlplane.StatusError))
		msg := err.Error()
		if out.FailedTask != "" {
			msg = fmt.Sprintf("host %s, task %q: %s", inst.Name, out.FailedTask, out.Message)
		}
		m.ProvisioningError = types.StringValue(truncate(msg, 1024))
		b.save()
		diags.AddError(b.summary, fmt.Sprintf("provisioning failed after %d attempt(s): %s\n\nThe machine is kept in state so it is not forgotten.", out.Attempts, err))
		return diags
	}
	m.Status = types.StringValue(string(controlplane.StatusReady))
	m.ReadyAt = types.StringValue(out.ReadyAt.Format(time.RFC3339))
	// Provisioning ends with the health checks: the machine is healthy as of now.
	m.Health, m.HealthCheckedAt, m.HealthReason = types.StringValue(healthHealthy), m.ReadyAt, types.StringNull()
	m.ProvisioningError = types.StringNull()
	m.ProvisioningDigest = stringOrNull(out.Digest)
	b.save()
	return diags
}

// applyInstance copies what the cloud reports into the model.
func applyInstance(m *gpuInstanceModel, inst controlplane.Instance) {
	m.CloudStatus = types.StringValue(inst.CloudStatus)
	switch inst.Status {
	case controlplane.StatusPending, controlplane.StatusError, controlplane.StatusTerminated:
		m.Status = types.StringValue(string(inst.Status))
	case controlplane.StatusRunning:
		switch m.Status.ValueString() {
		case string(controlplane.StatusReady), string(controlplane.StatusProvisioning):
		case string(controlplane.StatusError):
			if m.ProvisioningError.IsNull() || m.ProvisioningError.IsUnknown() {
				m.Status = types.StringValue(string(controlplane.StatusRunning))
			}
		default:
			m.Status = types.StringValue(string(controlplane.StatusRunning))
		}
	}
	if inst.SSH != nil {
		m.SSHHost = types.StringValue(inst.SSH.Host)
		m.SSHPort = types.Int64Value(int64(inst.SSH.Port))
		m.SSHUser = types.StringValue(inst.SSH.User)
	} else {
		if m.SSHHost.IsUnknown() {
			m.SSHHost = types.StringNull()
		}
		if m.SSHPort.IsUnknown() {
			m.SSHPort = types.Int64Null()
		}
		if m.SSHUser.IsUnknown() {
			m.SSHUser = types.StringNull()
		}
	}
}

func (r *gpuInstanceResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	ctx, done := operation(ctx)
	defer done()
	var m gpuInstanceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	ref := controlplane.InstanceRef{Name: m.ID.ValueString(), ID: m.CloudInstanceID.ValueString()}
	inst, err := r.data.cp.Manager().Get(ctx, ref)
	if controlplane.IsNotFound(err) || err == nil && inst.Status == controlplane.StatusTerminated {
		tflog.Warn(hydraLog(), "GPU instance is gone at the cloud; removing it from state so the next plan recreates it", map[string]any{"id": ref.Name})
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("reading GPU instance (%s)", ref.Name), err.Error())
		return
	}
	if m.CloudInstanceID.IsNull() {
		// Import: fill everything the cloud knows, and what the machine says of its provisioning.
		if err := r.fillFromInstance(&m, inst); err != nil {
			resp.Diagnostics.AddError(fmt.Sprintf("importing GPU instance (%s)", ref.Name), err.Error())
			return
		}
		r.readProvisioningMarker(ctx, &m, inst, &resp.Diagnostics)
	}
	// This state holds the machine: record that at the cloud (a refresh or an import confirms it).
	r.data.walk.hold(inst.ID)
	r.data.cp.Held(ctx, inst)
	applyInstance(&m, inst)
	r.readHealth(ctx, &m, inst)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// readProvisioningMarker sets an imported machine's provisioning record from the marker hydra's
// playbooks leave on every machine they provisioned: with a marker, the machine is ready with that
// digest (so the plan after import is empty when the playbooks and variables are the same); without
// one it stays running, and the next plan provisions it and says why. With provisioning off, a
// running machine is ready.
func (r *gpuInstanceResource) readProvisioningMarker(ctx context.Context, m *gpuInstanceModel, inst controlplane.Instance, diags *diag.Diagnostics) {
	if inst.Status != controlplane.StatusRunning {
		return
	}
	if !r.data.provisioning {
		m.Status = types.StringValue(string(controlplane.StatusReady))
		m.ReadyAt = types.StringValue(time.Now().UTC().Format(time.RFC3339))
		return
	}
	if r.data.runner == nil || inst.SSH == nil {
		return
	}
	marker, hostKey, err := r.data.runner.ReadMarker(ctx, *inst.SSH, inst.HostKey)
	if hostKey != "" {
		m.HostKey = types.StringValue(hostKey)
	}
	switch {
	case err == nil:
		m.Status = types.StringValue(string(controlplane.StatusReady))
		m.ProvisioningDigest = stringOrNull(marker.Digest)
		m.ReadyAt = types.StringValue(marker.ProvisionedAt.UTC().Format(time.RFC3339))
		tflog.Info(hydraLog(), "imported machine carries hydra's provisioning marker", map[string]any{"digest": marker.Digest, "playbook": marker.Playbook})
	case errors.Is(err, provision.ErrNoMarker):
		tflog.Info(hydraLog(), "imported machine carries no provisioning marker: the next apply provisions it", map[string]any{"id": inst.Name})
	default:
		diags.AddWarning(fmt.Sprintf("importing GPU instance (%s): provisioning marker not read", inst.Name),
			fmt.Sprintf("hydra could not read the machine's provisioning marker (%v), so it imports as running and the next "+
				"apply provisions it.", err))
	}
}

// fillFromInstance sets every attribute an imported instance can tell.
func (r *gpuInstanceResource) fillFromInstance(m *gpuInstanceModel, inst controlplane.Instance) error {
	pm, err := r.data.cp.Manager().Route(inst.Name)
	if err != nil {
		return err
	}
	name, _, _ := controlplane.ParseCloudName(pm.Pool, inst.Name)
	m.ID = types.StringValue(inst.Name)
	m.CloudInstanceID = types.StringValue(inst.ID)
	m.Name = types.StringValue(name)
	m.GPUType = types.StringValue(inst.GPUType)
	m.GPUCount = types.Int64Value(int64(inst.GPUCount))
	m.Kind = types.StringValue(pm.Pool.Kind)
	m.Spot = types.BoolValue(inst.Spot)
	m.AllowFallback = types.BoolValue(false)
	m.ReplaceWhenUnhealthy = types.BoolValue(false)
	offer := controlplane.Offer{Pool: pm.Pool.Name, Region: inst.Region, InstanceType: inst.InstanceType, Spot: inst.Spot, PricePerHour: inst.PricePerHour}
	m.OfferID = types.StringValue(controlplane.OfferID(offer))
	m.Cloud = types.StringValue(pm.Pool.Cloud)
	m.Pool = types.StringValue(pm.Pool.Name)
	m.Region = types.StringValue(inst.Region)
	m.InstanceType = types.StringValue(inst.InstanceType)
	m.PricePerHour = usdValue(inst.PricePerHour)
	m.EstimatedPricePerHour = types.Float64Null()
	m.IsSpot = types.BoolValue(inst.Spot)
	setHardware(m, inst.Hardware)
	m.OtherClouds = types.MapNull(types.StringType)
	m.OfferDetails = types.MapNull(types.StringType)
	m.Status = types.StringValue(string(controlplane.StatusRunning))
	m.ReadyAt = types.StringNull()
	m.ProvisioningAttempts = types.Int64Value(0)
	m.ProvisioningDigest = types.StringNull()
	m.ProvisioningError = types.StringNull()
	m.HostKey = stringOrNull(inst.HostKey)
	m.SSHHost, m.SSHUser, m.SSHPort = types.StringNull(), types.StringNull(), types.Int64Null()
	m.Timeouts = timeouts.Value{Object: types.ObjectNull(map[string]attr.Type{"create": types.StringType, "update": types.StringType, "delete": types.StringType})}
	return nil
}

func (r *gpuInstanceResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	ctx, done := operation(ctx)
	defer done()
	var plan, state gpuInstanceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := plan.Timeouts.Update(ctx, defaultUpdateTimeout)
	resp.Diagnostics.Append(d...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	summary := fmt.Sprintf("updating GPU instance (%s)", state.ID.ValueString())

	m := plan
	if !m.Status.IsUnknown() {
		// Only inputs that need no action changed (max price, fallback, timeouts).
		resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
		return
	}
	if u := r.data.provisioningUnavailable; u != nil {
		u.error(&resp.Diagnostics, summary)
		return
	}
	vars, _, diags := provisioningVars(ctx, &plan)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ref := controlplane.InstanceRef{Name: state.ID.ValueString(), ID: state.CloudInstanceID.ValueString()}
	inst, err := r.data.cp.Manager().Get(ctx, ref)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	pm, err := r.data.cp.Manager().Route(ref.Name)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	m.Status = state.Status
	m.ReadyAt = state.ReadyAt
	m.ProvisioningAttempts = state.ProvisioningAttempts
	m.ProvisioningError = state.ProvisioningError
	m.HostKey = state.HostKey
	m.CloudStatus = state.CloudStatus
	plannedDigest := m.ProvisioningDigest
	m.ProvisioningDigest = state.ProvisioningDigest
	save := func() { resp.Diagnostics.Append(resp.State.Set(ctx, &m)...) }
	applyInstance(&m, inst)
	up := bringUp{r: r, m: &m, pool: pm.Pool, vars: vars, save: save, summary: summary}
	var bring diag.Diagnostics
	if inst.Status != controlplane.StatusRunning {
		bring = up.run(ctx, inst)
	} else {
		bring = up.provision(ctx, inst)
	}
	if interrupted(ctx) {
		if !plannedDigest.IsUnknown() {
			m.ProvisioningDigest = plannedDigest
		}
		save()
		resp.Diagnostics.Append(warnInterrupted(&m, summary)...)
		return
	}
	resp.Diagnostics.Append(bring...)
	if !resp.Diagnostics.HasError() && !plannedDigest.IsUnknown() {
		m.ProvisioningDigest = plannedDigest
		save()
	}
	if !resp.Diagnostics.HasError() {
		tflog.Info(hydraLog(), "machine ready", map[string]any{"name": inst.Name})
	}
}

func (r *gpuInstanceResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	ctx, done := operation(ctx)
	defer done()
	var state gpuInstanceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := state.Timeouts.Delete(ctx, defaultDeleteTimeout)
	resp.Diagnostics.Append(d...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ref := controlplane.InstanceRef{Name: state.ID.ValueString(), ID: state.CloudInstanceID.ValueString()}
	r.drain(ctx, &state)
	if err := r.data.cp.Terminate(ctx, ref); err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("deleting GPU instance (%s)", ref.Name), err.Error())
	}
}

// ImportState takes the instance's cloud-side name (pool prefix + name); the prefix routes it to its pool.
func (r *gpuInstanceResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if r.data != nil {
		if problem := importIDProblem(ctx, r.data.cp, req.ID); problem != "" {
			resp.Diagnostics.AddError(fmt.Sprintf("importing GPU instance (%s)", req.ID), problem)
			return
		}
		if _, err := r.data.cp.Manager().Route(req.ID); err != nil {
			resp.Diagnostics.AddError(fmt.Sprintf("importing GPU instance (%s)", req.ID), err.Error())
			return
		}
	}
	resource.ImportStatePassthroughID(ctx, path.Root("id"), req, resp)
}

func stringOrNull(s string) types.String {
	if s == "" {
		return types.StringNull()
	}
	return types.StringValue(s)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
