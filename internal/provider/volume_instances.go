package provider

import (
	"context"
	"maps"
	"sort"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
)

// hydra_gpu_instances' volumes: every volume in the configured clouds' volume name spaces, with the
// machines using it.

var listedVolumeAttrTypes = map[string]attr.Type{
	"id":                  types.StringType,
	"name":                types.StringType,
	"cloud":               types.StringType,
	"region":              types.StringType,
	"type":                types.StringType,
	"cloud_volume_id":     types.StringType,
	"cloud_name":          types.StringType,
	"size_gb":             types.Int64Type,
	"used_by":             types.ListType{ElemType: types.StringType},
	"ownership":           types.StringType,
	"price_usd_per_month": types.Float64Type,
}

// volumesAttributes are hydra_gpu_instances' volumes and orphan_volumes.
func volumesAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"volumes": schema.ListNestedAttribute{
			MarkdownDescription: "The volumes in the asked clouds whose name carries one of their pools' prefixes, by cloud and " +
				"cloud-side name, with the machines using each. A cloud without a volume API has none here.",
			Computed: true,
			NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
				"id": schema.StringAttribute{MarkdownDescription: "The `hydra_volume` id, `<cloud>/<region>/<name>`; null for a volume " +
					"whose name is not one hydra makes.", Computed: true},
				"name":            schema.StringAttribute{MarkdownDescription: "The `name` of the `hydra_volume` it was created for.", Computed: true},
				"cloud":           schema.StringAttribute{MarkdownDescription: "The cloud.", Computed: true},
				"region":          schema.StringAttribute{MarkdownDescription: "The cloud's region of the volume.", Computed: true},
				"type":            schema.StringAttribute{MarkdownDescription: "`block` or `shared_fs`.", Computed: true},
				"cloud_volume_id": schema.StringAttribute{MarkdownDescription: "The cloud's own id (`terraform import hydra_volume.<name> <cloud>/<this>`).", Computed: true},
				"cloud_name":      schema.StringAttribute{MarkdownDescription: "The volume's cloud-side name.", Computed: true},
				"size_gb":         schema.Int64Attribute{MarkdownDescription: "Its size in GB; null where the cloud's volumes have no size.", Computed: true},
				"used_by": schema.ListAttribute{MarkdownDescription: "The cloud-side names of the machines using it (a machine outside " +
					"hydra's pools by its cloud id); empty when none.", Computed: true, ElementType: types.StringType},
				"ownership": schema.StringAttribute{MarkdownDescription: "`interrupted` (this working directory's journal names it: a " +
					"volume create cut short), `unrecorded` (only a state knows whether it is held), or `foreign` (no hydra ownership " +
					"token in its name).", Computed: true},
				"price_usd_per_month": schema.Float64Attribute{MarkdownDescription: "What the cloud bills for it a month, in US dollars; " +
					"null when the cloud does not say.", Computed: true},
			}},
		},
		"orphan_volumes": schema.ListAttribute{
			MarkdownDescription: "Cloud-side names of the volumes a cut-short `hydra_volume` create left (`interrupted`): billed, " +
				"and no state holds them. hydra never deletes a volume by itself: import or delete them.",
			Computed:    true,
			ElementType: types.StringType,
		},
	}
}

// listedVolumes are hydra_gpu_instances' volumes and orphan_volumes of a listing.
func listedVolumes(ctx context.Context, res controlplane.ListResult, diags *diag.Diagnostics) (volumes, orphans types.List) {
	rows := make([]attr.Value, 0, len(res.Volumes))
	for _, lv := range res.Volumes {
		v := lv.Volume
		price := types.Float64Null()
		if v.PricePerMonth > 0 {
			price = usdValue(v.PricePerMonth)
		}
		obj, d := types.ObjectValue(listedVolumeAttrTypes, map[string]attr.Value{
			"id": stringOrNull(lv.ID), "name": stringOrNull(lv.Resource), "cloud": types.StringValue(lv.Pool.Cloud),
			"region": stringOrNull(v.Region), "type": stringOrNull(string(v.Type)), "cloud_volume_id": types.StringValue(v.ID),
			"cloud_name": types.StringValue(v.Name), "size_gb": intOrNull(v.SizeGB), "used_by": machineNames(lv.UsedBy, diags),
			"ownership": types.StringValue(string(lv.Ownership)), "price_usd_per_month": price,
		})
		diags.Append(d...)
		rows = append(rows, obj)
	}
	volumes, d := types.ListValue(types.ObjectType{AttrTypes: listedVolumeAttrTypes}, rows)
	diags.Append(d...)
	names := []string{}
	for _, o := range res.OrphanVolumes() {
		names = append(names, o.Volume.Name)
	}
	sort.Strings(names)
	orphans, d = types.ListValueFrom(ctx, types.StringType, names)
	diags.Append(d...)
	return volumes, orphans
}

// withDataSourceAttributes is shared plus own (own wins on a clash).
func withDataSourceAttributes(shared, own map[string]schema.Attribute) map[string]schema.Attribute {
	out := maps.Clone(shared)
	maps.Copy(out, own)
	return out
}
