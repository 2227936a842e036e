package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// volumeTypes are the values a volume's type accepts.
var volumeTypes = []string{string(cloudprovider.VolumeBlock), string(cloudprovider.VolumeSharedFS)}

// maxVolumeSizeGB is the largest size_gb accepted: above every cloud's largest volume, and far from
// overflowing anything the size passes through.
const maxVolumeSizeGB = 1 << 20

func (r *volumeResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Storage at one cloud, in one region, that outlives the machines using it: a `block` device (one " +
			"machine at a time) or a `shared_fs` file system (several machines of the region at once). A `hydra_gpu_instance` or " +
			"`hydra_gpu_cluster` lists it in `volumes`; the plan then places the machine in the volume's cloud and region, the " +
			"machine gets the volume at launch and provisioning mounts it. A replacement of the machine gets the same volume, with " +
			"its data. Destroying a machine never deletes a volume; destroying a volume that a machine still uses fails and " +
			"deletes nothing.\n\n" +
			"The plan checks that the cloud has volumes of `type` in `region` (a cloud without them fails the plan, listing what " +
			"it has); `hydra_gpu_offer`'s `volume_type` finds the clouds and regions that do.",
		Attributes: map[string]schema.Attribute{
			"id": keptString("`<cloud>/<region>/<name>`, known at plan: what a machine's `volumes[*].volume_id` takes, so a " +
				"machine planned in the same run as its volume is placed at plan."),
			"name": schema.StringAttribute{
				MarkdownDescription: "The volume's name: lower case letters and digits with single dashes between them, at most 48 " +
					"characters (as a machine's). The cloud-side name is the cloud's pool prefix, this name, `--` and the " +
					"volume's ownership token (`cloud_name`). Changing it replaces the volume (a new, empty one).",
				Required:      true,
				Validators:    nameValidators(),
				PlanModifiers: replace,
			},
			"type": schema.StringAttribute{
				MarkdownDescription: "`block`: a block device attached to one machine at a time; provisioning makes an ext4 file " +
					"system on it only when it has none, then mounts it. `shared_fs`: a network file system that every machine of " +
					"the region that lists it mounts at once. Changing it replaces the volume.",
				Required:      true,
				Validators:    []validator.String{stringvalidator.OneOf(volumeTypes...)},
				PlanModifiers: replace,
			},
			"size_gb": schema.Int64Attribute{
				MarkdownDescription: fmt.Sprintf("The volume's size in GB, 1 to %d. A cloud whose file systems have no size (they "+
					"grow with their data) ignores it; it stays in state as configured. hydra does not resize volumes: changing it "+
					"replaces the volume with a new, empty one, and the old one is deleted with its data (or, while a machine uses "+
					"it, the apply fails and nothing is deleted). The plan warns when it would.", maxVolumeSizeGB),
				Required:      true,
				Validators:    []validator.Int64{volumeSize},
				PlanModifiers: []planmodifier.Int64{int64planmodifier.RequiresReplaceIf(replaceIfSized, replaceIfSizedWhy, replaceIfSizedWhy)},
			},
			"cloud": schema.StringAttribute{
				MarkdownDescription: "The cloud that keeps the volume (" + knownCloudsMarkdown() + "); its block must be in the " +
					"provider configuration. Changing it replaces the volume.",
				Required:      true,
				Validators:    []validator.String{knownCloud()},
				PlanModifiers: replace,
			},
			"region": schema.StringAttribute{
				MarkdownDescription: "The cloud's region (or location code) of the volume; machines that use it run there. " +
					"Changing it replaces the volume.",
				Required:      true,
				Validators:    []validator.String{stringvalidator.LengthAtLeast(1)},
				PlanModifiers: replace,
			},
			"cloud_volume_id": keptString("The cloud's own id of the volume (what `terraform import` takes after `<cloud>/`)."),
			"cloud_name": keptString("The volume's name at the cloud: the pool prefix, `name`, `--` and its ownership token " +
				"(e.g. `sbx-vm-data--ab12cd34`), as `hydra_gpu_instances` lists it."),
			"attached_to": schema.ListAttribute{
				MarkdownDescription: "The cloud-side names of the machines using the volume, as last read; empty when none.",
				Computed:            true,
				ElementType:         types.StringType,
				PlanModifiers:       []planmodifier.List{listplanmodifier.UseStateForUnknown()},
			},
			"price_usd_per_month": keptFloat64("What the cloud bills for the volume a month, in US dollars, exact; null when the cloud does " +
				"not say (its price list then has it)."),
			"timeouts": timeouts.Attributes(ctx, timeouts.Opts{Create: true, Delete: true,
				CreateDescription: "How long apply waits for the cloud to create the volume, as a Go duration. Default `\"10m\"`.",
				DeleteDescription: "How long destroy waits for the cloud to delete the volume, as a Go duration. Default `\"10m\"`.",
			}),
		},
	}
}

// volumeSize accepts 1 to maxVolumeSizeGB GB.
var volumeSize = numberCheck{description: description(fmt.Sprintf("from 1 to %d (GB)", maxVolumeSizeGB)), summary: "Invalid volume size",
	problem: func(n float64) string {
		if n < 1 || n > maxVolumeSizeGB {
			return fmt.Sprintf("a volume's size is from 1 to %d GB.", maxVolumeSizeGB)
		}
		return ""
	}}

// knownCloud accepts one of the registry's cloud names.
func knownCloud() validator.String {
	return problemCheck{description: description("one of " + quotedCloudNames()), summary: "Unknown cloud", problem: cloudProblem}
}

// replaceIfSizedWhy describes replaceIfSized.
const replaceIfSizedWhy = "Replaces the volume when its size changes; a size the state does not hold (an imported volume " +
	"whose cloud states none) is only recorded."

// replaceIfSized replaces a volume whose size changes, unless the state holds no size: a volume
// imported from a cloud whose volumes have no size then takes the configured one in place.
func replaceIfSized(_ context.Context, req planmodifier.Int64Request, resp *int64planmodifier.RequiresReplaceIfFuncResponse) {
	resp.RequiresReplace = !req.StateValue.IsNull()
}
