package provider

import (
	"maps"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/setvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
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

	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
)

// attrTypes are the value types of a nested object's attributes (a resource's or a data source's), as
// its schema defines them: an element's type is written once.
func attrTypes[A interface{ GetType() attr.Type }](attrs map[string]A) map[string]attr.Type {
	out := make(map[string]attr.Type, len(attrs))
	for name, a := range attrs {
		out[name] = a.GetType()
	}
	return out
}

// subject is what a resource rents, as its attributes' descriptions name it.
type subject struct {
	// thing is "machine" or "cluster"; gpus says where gpu_count's GPUs are ("in the machine").
	thing, gpus string
}

var (
	machineSubject = subject{thing: "machine", gpus: "in the machine"}
	clusterSubject = subject{thing: "cluster", gpus: "in each node"}
)

// requestAttributes are the attributes hydra_gpu_instance and hydra_gpu_cluster share: the request
// (name, GPU shape, kind, market, clouds, regions, price cap), the keys and variables provisioning
// installs, the drain before destroy, and what the plan shows of the chosen offer.
func requestAttributes(s subject) map[string]schema.Attribute {
	the := "the " + s.thing
	replaces := " Changing it replaces " + the + "."
	return map[string]schema.Attribute{
		"name": schema.StringAttribute{
			MarkdownDescription: "The " + s.thing + "'s name: lower case letters and digits with single dashes between them, at most 48 " +
				"characters. It must be unique: two resources of one configuration with the same name fail at plan, and so does " +
				"a name whose " + s.thing + " another Terraform state (another working directory) already holds at the cloud. The " +
				"cloud-side name is the pool's prefix, this name, `--` and " + the + "'s ownership token." + replaces,
			Required:      true,
			Validators:    nameValidators(),
			PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
		},
		"gpu_type": schema.StringAttribute{
			MarkdownDescription: "hydra's GPU type, from `supported_gpus.yml` (embedded default: `a100-80gb`, `b200`, `h100`, `h200`, " +
				"`l4`, `l40s`, `rtx6000ada`, `rtxpro6000`)." + replaces,
			Required:      true,
			PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
		},
		"gpu_count": schema.Int64Attribute{
			MarkdownDescription: "GPUs " + s.gpus + ", at most the type's `max_count` in `supported_gpus.yml`. Default `1`." + replaces,
			Optional:            true,
			Computed:            true,
			Default:             int64default.StaticInt64(1),
			Validators:          []validator.Int64{int64validator.AtLeast(1)},
			PlanModifiers:       []planmodifier.Int64{int64planmodifier.RequiresReplace()},
		},
		"kind": schema.StringAttribute{
			MarkdownDescription: "`vm` (a bare VM handed to a customer) or `execlet` (a machine prepared to run customer workloads). " +
				"The kind selects the pools and the provisioning playbook. Default `vm`." + replaces,
			Optional:      true,
			Computed:      true,
			Default:       stringdefault.StaticString(inventory.KindVM),
			Validators:    []validator.String{stringvalidator.OneOf(inventory.Kinds...)},
			PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
		},
		"spot": schema.BoolAttribute{
			MarkdownDescription: "Allow spot (preemptible) capacity to compete with on-demand offers. Default `false`." + replaces,
			Optional:            true,
			Computed:            true,
			Default:             booldefault.StaticBool(false),
			PlanModifiers:       []planmodifier.Bool{boolplanmodifier.RequiresReplace()},
		},
		"clouds": schema.SetAttribute{
			MarkdownDescription: "Only these clouds may serve " + the + " (" + knownCloudsMarkdown() + "). " +
				"Default: every configured cloud. Changing it replaces " + the + " only when its cloud is no longer allowed.",
			Optional:      true,
			ElementType:   types.StringType,
			Validators:    knownCloudsValidators(),
			PlanModifiers: []planmodifier.Set{replaceUnlessAllowed("cloud", the)},
		},
		"regions": schema.SetAttribute{
			MarkdownDescription: "Only these regions (each cloud's own region or location codes) may serve " + the + ". Default: any. " +
				"Changing it replaces " + the + " only when its region is no longer allowed.",
			Optional:      true,
			ElementType:   types.StringType,
			Validators:    []validator.Set{setvalidator.SizeAtLeast(1)},
			PlanModifiers: []planmodifier.Set{replaceUnlessAllowed("region", the)},
		},
		"max_price_per_hour": schema.Float64Attribute{
			MarkdownDescription: "The most you will pay for the whole " + s.thing + ", in US dollars per hour. Offers above it are never chosen, " +
				"and a plan where every offer is above it fails. Default: no limit. Changing it later does not move " + the + "." + maxPriceDescription,
			Optional:   true,
			Validators: maxPriceValidators(),
		},
		"drain_timeout": schema.StringAttribute{
			MarkdownDescription: "For `kind = \"execlet\"`: before " + the + " is destroyed or replaced, hydra drains it (the agent " +
				"stops taking work, then hydra waits for running work to finish) for at most this long, then deletes it whatever " +
				"happened (drained, timed out, unreachable: each is logged). A Go duration from `1s` to `24h`. Default `\"10m\"`. " +
				"With `create_before_destroy`, the replacement is ready before the old " + s.thing + " is drained and deleted: zero downtime.",
			Optional:   true,
			Validators: []validator.String{durationBetween(time.Second, 24*time.Hour)},
		},
		"ssh_public_keys": schema.ListAttribute{
			MarkdownDescription: "SSH public keys (authorized_keys lines) of the people who will use " + the + ". They are installed " +
				"for the login user at creation and by provisioning (`customer_ssh_keys`). Changing them re-runs provisioning in place.",
			Optional:    true,
			ElementType: types.StringType,
		},
		"provisioning_vars": schema.DynamicAttribute{
			MarkdownDescription: "Extra variables for the provisioning playbook: any HCL value (strings, numbers, lists, maps). " +
				"They reach Ansible through a JSON file, literally (never templated). Changing them re-runs provisioning in place.",
			Optional: true,
		},
		"cloud":  keptString("The cloud that serves " + the + ", chosen at plan time."),
		"pool":   keptString("The pool that serves " + the + " (e.g. `verda-vm-pool`)."),
		"region": keptString("The cloud's region or location of " + the + "."),
		"other_clouds": schema.MapAttribute{
			MarkdownDescription: "Why each other asked cloud lost when " + the + " was chosen: its cheapest matching offer and how much " +
				"more it costs, or why it had none (no capacity, timed out, above the max price, a bid that would not clear). " +
				"Null when the offer was pinned through `offer_id`.",
			Computed:      true,
			ElementType:   types.StringType,
			PlanModifiers: []planmodifier.Map{mapplanmodifier.UseStateForUnknown()},
		},
		"provisioning_digest": keptString("Digest of the playbook files and variables " + the + " was provisioned with. A change re-runs " +
			"provisioning in place; an unchanged digest means provisioning is never re-run."),
	}
}

// keptString, keptInt64, keptFloat64 and keptBool are computed attributes that keep their state
// value when the plan does not change them.
func keptString(description string) schema.StringAttribute {
	return schema.StringAttribute{MarkdownDescription: description, Computed: true,
		PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}}
}

func keptInt64(description string) schema.Int64Attribute {
	return schema.Int64Attribute{MarkdownDescription: description, Computed: true,
		PlanModifiers: []planmodifier.Int64{int64planmodifier.UseStateForUnknown()}}
}

func keptFloat64(description string) schema.Float64Attribute {
	return schema.Float64Attribute{MarkdownDescription: description, Computed: true,
		PlanModifiers: []planmodifier.Float64{float64planmodifier.UseStateForUnknown()}}
}

func keptBool(description string) schema.BoolAttribute {
	return schema.BoolAttribute{MarkdownDescription: description, Computed: true,
		PlanModifiers: []planmodifier.Bool{boolplanmodifier.UseStateForUnknown()}}
}

// replaceUnlessAllowed replaces the resource when its current cloud or region (attrName) leaves the
// allowed set.
func replaceUnlessAllowed(attrName, the string) planmodifier.Set {
	why := "Replaces " + the + " when its " + attrName + " is no longer allowed."
	return setplanmodifier.RequiresReplaceIf(replaceIfNotAllowed(attrName), why, why)
}

// withAttributes is shared plus own (own wins on a clash).
func withAttributes(shared, own map[string]schema.Attribute) map[string]schema.Attribute {
	out := maps.Clone(shared)
	maps.Copy(out, own)
	return out
}
