package provider

import (
	"context"
	"regexp"
	"slices"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/setplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// namePattern: lower-case letters and digits in groups joined by single dashes. "--" is reserved: it
// joins the name and the ownership token in the cloud-side name.
var namePattern = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

func (r *gpuInstanceResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		// Version 1 names the prices' currency and unit (price_usd_per_hour); see UpgradeState.
		Version: 1,
		MarkdownDescription: "A GPU machine rented from the cheapest cloud that can serve it, provisioned and `ready`.\n\n" +
			"During `terraform plan` hydra asks every eligible pool for offers and shows the cheapest as known values " +
			"(`cloud`, `pool`, `region`, `instance_type`, `price_usd_per_hour`, `offer_id`). `terraform apply` creates that " +
			"machine and blocks until provisioning reaches `ready`. After creation nothing moves: a cheaper offer " +
			"appearing later never produces a diff.",
		Attributes: withAttributes(requestAttributes(machineSubject), map[string]schema.Attribute{
			"id": keptString("The machine's cloud-side name: the pool's prefix, `name`, `--` and the machine's ownership " +
				"token (e.g. `sbx-vm-trainer--k3j9x2ab`). The token ties the machine to this resource alone, so no other " +
				"resource ever adopts, changes or deletes it. Known once the machine is created. `terraform import` takes this name."),
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
				Validators:    []validator.String{stringvalidator.OneOf(cloudprovider.FormFactors...)},
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
			"volumes":                volumesAttribute(machineSubject),
			"replace_when_preempted": replaceWhenPreemptedSchema(),
			"interruption":           interruptionSchema(),
			"health": keptString("The machine's GPU health as last read: `healthy`, `unhealthy` or `unknown` (the machine could not " +
				"be reached or read). Provisioning sets it; every refresh (`terraform plan`) checks a `ready` machine again, " +
				"read-only and within a few seconds, with the same criteria provisioning applies (the promised GPUs visible, no " +
				"uncorrectable or lifetime ECC errors, no pending row remapping, no fatal Xid event since boot, NVLink and fabric " +
				"on SXM machines, exporters answering). Null with provisioning off."),
			"health_checked_at": keptString("When `health` was last read (RFC 3339, UTC)."),
			"health_reason":     keptString("Why the machine is `unhealthy` (every failed check) or `unknown`; null when healthy."),
			"allow_fallback": schema.BoolAttribute{
				MarkdownDescription: "Leave the offer to apply time: the plan shows `estimated_price_usd_per_hour` and the offer fields as " +
					"`(known after apply)`, and if the cheapest offer has run out when apply creates the machine, the next cheapest " +
					"within the same limits (GPU type and count, kind, spot, clouds, regions, `max_price_per_hour`) is taken. Default `false`.",
				Optional: true,
				Computed: true,
				Default:  booldefault.StaticBool(false),
			},
			"max_provisioning_attempts": schema.Int64Attribute{
				MarkdownDescription: "Provisioning attempts for this machine, 1 to 20, overriding the provider's `provisioning.max_attempts` (default 3).",
				Optional:            true,
				Validators:          []validator.Int64{int64validator.Between(1, 20)},
			},
			"cloud_instance_id": keptString("The cloud's own identifier of the machine."),
			"instance_type":     keptString("The cloud's own name for the machine's shape."),
			"price_usd_per_hour": keptFloat64("The price the cloud bills for the whole machine, in US dollars per hour, exact (cents, and further " +
				"digits only where the cloud's price has them); `max_price_per_hour` caps it. The plan shows the quoted price; where " +
				"the cloud bills another one at create (the price dropped after the plan), apply warns with both and the next " +
				"refresh records the billed one, as it does whenever the cloud reports a new price for the machine (never a diff). " +
				"A cloud preferred in the ranking (Atlas) shows its billed price here and its ranking figure in `offer_details`. " +
				"Unknown until apply with `allow_fallback`."),
			"estimated_price_usd_per_hour": keptFloat64("Only with `allow_fallback = true`, where apply chooses the offer: the cheapest matching price at plan " +
				"time, in US dollars per hour (the machine's own price is `price_usd_per_hour`, known after apply). Null otherwise."),
			"is_spot":         keptBool("Whether the machine is spot (preemptible) capacity."),
			"gpu_form_factor": keptString("The form factor of the machine's GPUs as its cloud states it: `sxm` or `pcie`; null when the cloud does not say."),
			"gpu_memory_gb":   keptInt64("Memory of one GPU, in GB; null when the cloud does not say."),
			"vcpus":           keptInt64("Virtual CPUs of the whole machine; null when the cloud does not say."),
			"memory_gb":       keptInt64("RAM of the whole machine, in GB; null when the cloud does not say."),
			"offer_details": schema.MapAttribute{
				MarkdownDescription: "What the chosen offer's cloud says about it beyond the price: for Mithril the bid and the " +
					"auction's last clearing price, for Atlas its list price before the in-house discount, for Prime Intellect the " +
					"upstream provider and data center, and so on. Null when the offer was pinned through `offer_id`.",
				Computed:      true,
				ElementType:   types.StringType,
				PlanModifiers: []planmodifier.Map{mapplanmodifier.UseStateForUnknown()},
			},
			"status":       keptString("hydra's status: `pending`, `running`, `provisioning`, `ready`, `terminated` or `error`."),
			"cloud_status": keptString("The cloud's own word for the machine's status, as last read."),
			"created_at": keptString("When the cloud created the machine (RFC 3339, UTC), where its bill starts; when the cloud " +
				"does not say, when hydra's create returned. `hydra_gpu_instances` shows what it has cost since (`accrued_usd`)."),
			"ready_at":              keptString("When provisioning last succeeded (RFC 3339, UTC)."),
			"provisioning_attempts": keptInt64("Attempts the last provisioning run took."),
			"provisioning_error":    keptString("Summary of the last failed provisioning (host, task and message), or null."),
			"host_key":              keptString("The machine's SSH host key, pinned: reported by the cloud, or trusted on first contact and checked on every later run."),
			"ssh_host":              keptString("Address to reach the machine over SSH."),
			"ssh_port":              keptInt64("SSH port of the machine."),
			"ssh_user":              keptString("SSH login user of the machine."),
			"timeouts": timeouts.Attributes(ctx, timeouts.Opts{Create: true, Update: true, Delete: true,
				CreateDescription: "How long apply may take to create the machine and provision it to `ready` (the wait for boot, an " +
					"auction's `bid_timeout`, SSH and every provisioning attempt), as a Go duration. Default `\"60m\"`. A create that " +
					"runs out keeps the machine in state, tainted, so it is replaced and never forgotten.",
				UpdateDescription: "How long an in-place update (provisioning run again) may take, as a Go duration. Default `\"60m\"`.",
				DeleteDescription: "How long destroy waits for the cloud to say the machine is gone, as a Go duration. Default `\"30m\"`.",
			}),
		}),
	}
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
		resp.RequiresReplace = !slices.Contains(allowed, current.ValueString())
	}
}
