package provider

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
)

var (
	_ datasource.DataSourceWithConfigure = (*gpuInstancesDataSource)(nil)
)

// NewGPUInstancesDataSource is the hydra_gpu_instances data source.
func NewGPUInstancesDataSource() datasource.DataSource {
	return &gpuInstancesDataSource{dataSourceBase{base{typeName: "gpu_instances"}}}
}

type gpuInstancesDataSource struct{ dataSourceBase }

type gpuInstancesModel struct {
	Clouds      types.Set    `tfsdk:"clouds"`
	ID          types.String `tfsdk:"id"`
	Instances   types.List   `tfsdk:"instances"`
	Orphans     types.List   `tfsdk:"orphans"`
	Unreachable types.Map    `tfsdk:"unreachable"`
	// TotalPerHour and TotalAccrued add up the machines' figures (cost.go).
	TotalPerHour types.Float64 `tfsdk:"total_usd_per_hour"`
	TotalAccrued types.Float64 `tfsdk:"total_accrued_usd"`
	// Volumes and OrphanVolumes list the clouds' volumes (listedVolumes).
	Volumes       types.List `tfsdk:"volumes"`
	OrphanVolumes types.List `tfsdk:"orphan_volumes"`
}

// machineAttrTypes is one element of instances.
var machineAttrTypes = attrTypes(machineAttributes())

// listedVolumeAttrTypes is one element of volumes.
var listedVolumeAttrTypes = attrTypes(listedVolumeAttributes())

func (d *gpuInstancesDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Every machine in the configured clouds' hydra pools, with who holds it, and every volume with " +
			"the machines using it: for leak checks in CI (fail a pipeline when `orphans` or `orphan_volumes` is not empty) and " +
			"for finding what to `terraform import`. A cloud that cannot be listed is named in `unreachable` rather than failing " +
			"the read.",
		Attributes: map[string]schema.Attribute{
			"clouds": schema.SetAttribute{
				MarkdownDescription: "List only these clouds. Default: every configured cloud.",
				Optional:            true,
				ElementType:         types.StringType,
			},
			"id": schema.StringAttribute{
				MarkdownDescription: "A summary of the read (machine and orphan counts), for Terraform's bookkeeping.",
				Computed:            true,
			},
			"instances": schema.ListNestedAttribute{
				MarkdownDescription: "The machines, by cloud and cloud-side name.",
				Computed:            true,
				NestedObject:        schema.NestedAttributeObject{Attributes: machineAttributes()},
			},
			"orphans": schema.ListAttribute{
				MarkdownDescription: "Cloud-side names of the machines that are probably billed with no Terraform state holding them: " +
					"`interrupted` ones, and `unconfirmed` ones older than the provider's `orphan_grace`.",
				Computed:    true,
				ElementType: types.StringType,
			},
			"total_usd_per_hour": totalPerHourSchema(),
			"total_accrued_usd":  totalAccruedSchema(),
			"unreachable": schema.MapAttribute{
				MarkdownDescription: "Clouds that could not be listed, with the reason.",
				Computed:            true,
				ElementType:         types.StringType,
			},
			"volumes": schema.ListNestedAttribute{
				MarkdownDescription: "The volumes in the asked clouds whose name carries one of their pools' prefixes, by cloud and " +
					"cloud-side name, with the machines using each. A cloud without a volume API has none here.",
				Computed:     true,
				NestedObject: schema.NestedAttributeObject{Attributes: listedVolumeAttributes()},
			},
			"orphan_volumes": schema.ListAttribute{
				MarkdownDescription: "Cloud-side names of the volumes a cut-short `hydra_volume` create left (`interrupted`): billed, " +
					"and no state holds them. hydra never deletes a volume by itself: import or delete them.",
				Computed:    true,
				ElementType: types.StringType,
			},
		},
	}
}

// machineAttributes are one element of instances.
func machineAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"id":                schema.StringAttribute{MarkdownDescription: "The cloud-side name (what `terraform import` takes).", Computed: true},
		"name":              schema.StringAttribute{MarkdownDescription: "The `name` of the resource the machine was created for.", Computed: true},
		"cloud":             schema.StringAttribute{MarkdownDescription: "The cloud.", Computed: true},
		"pool":              schema.StringAttribute{MarkdownDescription: "The pool.", Computed: true},
		"cloud_instance_id": schema.StringAttribute{MarkdownDescription: "The cloud's own id of the machine.", Computed: true},
		"region":            schema.StringAttribute{MarkdownDescription: "The cloud's region, when it reports one.", Computed: true},
		"instance_type":     schema.StringAttribute{MarkdownDescription: "The cloud's instance type.", Computed: true},
		"status":            schema.StringAttribute{MarkdownDescription: "hydra's status as the cloud reports it (`pending`, `running`, `error`).", Computed: true},
		"ownership": schema.StringAttribute{MarkdownDescription: "`confirmed` (a completed create, refresh or import recorded that a state holds it), " +
			"`unconfirmed` (never confirmed: in flight, or left by a create cut short), `interrupted` (this working directory's " +
			"journal names it: a create cut short; the next apply adopts it), `unrecorded` (the cloud cannot record confirmation; " +
			"only a state knows), or `foreign` (no hydra ownership record).", Computed: true},
		"created_at":         schema.StringAttribute{MarkdownDescription: "When the cloud created it (RFC 3339), when it says.", Computed: true},
		"price_usd_per_hour": schema.Float64Attribute{MarkdownDescription: "Its billed price in US dollars per hour, when the cloud reports it.", Computed: true},
		"accrued_usd":        accruedSchema(),
		"cluster": schema.StringAttribute{MarkdownDescription: "The cloud's id of the cluster the machine is a node of " +
			"(a `hydra_gpu_cluster`'s `cloud_cluster_id`); null for a machine of its own. A node is part of its cluster, " +
			"never a stray machine: its ownership is the cluster's.", Computed: true},
	}
}

// listedVolumeAttributes are one element of volumes.
func listedVolumeAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
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
	}
}

func (d *gpuInstancesDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	ctx, done := operation(ctx)
	defer done()
	m, ok := get[gpuInstancesModel](ctx, req.Config, &resp.Diagnostics)
	if !ok {
		return
	}
	clouds, _, diags := stringsOf(ctx, m.Clouds)
	resp.Diagnostics.Append(diags...)
	res := d.data.cp.Machines(ctx, clouds)
	var rows []attr.Value
	var cost costTotals
	now := res.At
	for _, mc := range res.Machines {
		accrued := cost.add(mc, now)
		created := types.StringNull()
		if !mc.Instance.CreatedAt.IsZero() {
			created = types.StringValue(mc.Instance.CreatedAt.UTC().Format(time.RFC3339))
		}
		obj, dd := types.ObjectValue(machineAttrTypes, map[string]attr.Value{
			"id":                 types.StringValue(mc.Instance.Name),
			"name":               types.StringValue(mc.Resource),
			"cloud":              types.StringValue(mc.Pool.Cloud),
			"pool":               types.StringValue(mc.Pool.Name),
			"cloud_instance_id":  types.StringValue(mc.Instance.ID),
			"region":             types.StringValue(mc.Instance.Region),
			"instance_type":      types.StringValue(mc.Instance.InstanceType),
			"status":             types.StringValue(string(mc.Instance.Status)),
			"ownership":          types.StringValue(string(mc.Ownership)),
			"created_at":         created,
			"price_usd_per_hour": usdValue(mc.Instance.PricePerHour),
			"accrued_usd":        accrued,
			"cluster":            stringOrNull(mc.Instance.Cluster),
		})
		resp.Diagnostics.Append(dd...)
		rows = append(rows, obj)
	}
	list, dd := types.ListValue(types.ObjectType{AttrTypes: machineAttrTypes}, rows)
	resp.Diagnostics.Append(dd...)
	m.Instances = list
	var orphans []string
	for _, o := range res.Orphans(res.Grace) {
		orphans = append(orphans, o.Instance.Name)
	}
	sort.Strings(orphans)
	ol, dd := types.ListValueFrom(ctx, types.StringType, orphans)
	resp.Diagnostics.Append(dd...)
	if orphans == nil {
		ol = types.ListValueMust(types.StringType, []attr.Value{})
	}
	m.Orphans = ol
	m.Unreachable = stringMap(ctx, res.Unreachable, &resp.Diagnostics)
	m.TotalPerHour, m.TotalAccrued = usdValue(cost.perHour), usdValue(cost.accrued)
	m.Volumes, m.OrphanVolumes = listedVolumes(ctx, res, &resp.Diagnostics)
	clouds = append([]string(nil), clouds...)
	sort.Strings(clouds)
	m.ID = types.StringValue(fmt.Sprintf("%s:%d machines:%d orphans", strings.Join(clouds, ","), len(rows), len(orphans)))
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
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
