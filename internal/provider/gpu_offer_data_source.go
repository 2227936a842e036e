package provider

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/setvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
)

var (
	_ datasource.DataSourceWithConfigure = (*gpuOfferDataSource)(nil)
)

// NewGPUOfferDataSource is the hydra_gpu_offer data source.
func NewGPUOfferDataSource() datasource.DataSource {
	return &gpuOfferDataSource{dataSourceBase{base{typeName: "gpu_offer"}}}
}

type gpuOfferDataSource struct{ dataSourceBase }

type gpuOfferModel struct {
	offerRequestModel
	ID           types.String  `tfsdk:"id"`
	Cloud        types.String  `tfsdk:"cloud"`
	Pool         types.String  `tfsdk:"pool"`
	Region       types.String  `tfsdk:"region"`
	InstanceType types.String  `tfsdk:"instance_type"`
	PricePerHour types.Float64 `tfsdk:"price_usd_per_hour"`
	IsSpot       types.Bool    `tfsdk:"is_spot"`
	hardwareModel
	Offers     types.List `tfsdk:"offers"`
	Rejections types.Map  `tfsdk:"rejections"`
	Unmapped   types.Map  `tfsdk:"unmapped"`
	// Nodes and Interconnect ask for cluster offers (clusterOffers).
	Nodes        types.Int64  `tfsdk:"nodes"`
	Interconnect types.String `tfsdk:"interconnect"`
	// VolumeType keeps only offers in regions with that type of volume (volume_offers.go).
	VolumeType types.String `tfsdk:"volume_type"`
}

// offerAttrTypes is one element of offers.
var offerAttrTypes = attrTypes(offerAttributes())

func (d *gpuOfferDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The cheapest GPU offer across every configured cloud for a request, every matching offer sorted " +
			"by price, and why each cloud that offered nothing said no. Data sources are read once during plan and frozen " +
			"into a saved plan, so `offer_id = data.hydra_gpu_offer.<name>.id` on a `hydra_gpu_instance` pins the choice " +
			"even when plan and apply run on different machines. Reading it fails when nothing matches.",
		Attributes: map[string]schema.Attribute{
			"gpu_type": schema.StringAttribute{
				MarkdownDescription: "hydra's GPU type, from `supported_gpus.yml` (e.g. `h100`, `l40s`).",
				Required:            true,
			},
			"gpu_count": schema.Int64Attribute{
				MarkdownDescription: "GPUs per machine. Default `1`.",
				Optional:            true,
				Validators:          []validator.Int64{int64validator.AtLeast(1)},
			},
			"kind": schema.StringAttribute{
				MarkdownDescription: "`vm` or `execlet`. Default `vm`.",
				Optional:            true,
				Validators:          []validator.String{stringvalidator.OneOf(inventory.Kinds...)},
			},
			"spot": schema.BoolAttribute{
				MarkdownDescription: "Allow spot (preemptible) offers to compete. Default `false`.",
				Optional:            true,
			},
			"clouds": schema.SetAttribute{
				MarkdownDescription: "Only these clouds. Default: every configured cloud.",
				Optional:            true,
				ElementType:         types.StringType,
				Validators:          knownCloudsValidators(),
			},
			"regions": schema.SetAttribute{
				MarkdownDescription: "Only these regions. Default: any.",
				Optional:            true,
				ElementType:         types.StringType,
				Validators:          []validator.Set{setvalidator.SizeAtLeast(1)},
			},
			"max_price_per_hour": schema.Float64Attribute{
				MarkdownDescription: "Ceiling for the whole machine in US dollars per hour. Default: none." + maxPriceDescription,
				Optional:            true,
				Validators:          maxPriceValidators(),
			},
			"id": schema.StringAttribute{
				MarkdownDescription: "The cheapest offer's ID, `<pool>/<region>/<instance type>/<ondemand|spot>@<price>`; pass it to `hydra_gpu_instance.offer_id`.",
				Computed:            true,
			},
			"cloud":              schema.StringAttribute{MarkdownDescription: "The cheapest offer's cloud.", Computed: true},
			"pool":               schema.StringAttribute{MarkdownDescription: "The cheapest offer's pool.", Computed: true},
			"region":             schema.StringAttribute{MarkdownDescription: "The cheapest offer's region.", Computed: true},
			"instance_type":      schema.StringAttribute{MarkdownDescription: "The cheapest offer's instance type (the cloud's own name).", Computed: true},
			"price_usd_per_hour": schema.Float64Attribute{MarkdownDescription: "The cheapest offer's price for the whole machine, US dollars per hour.", Computed: true},
			"is_spot":            schema.BoolAttribute{MarkdownDescription: "Whether the cheapest offer is spot capacity.", Computed: true},
			"form_factor": schema.StringAttribute{
				MarkdownDescription: "Require a GPU form factor: `sxm` or `pcie`. Offers whose cloud does not say their form factor do not match it. Default: any.",
				Optional:            true,
				Validators:          []validator.String{stringvalidator.OneOf(cloudprovider.FormFactors...)},
			},
			"gpu_form_factor": schema.StringAttribute{MarkdownDescription: "The cheapest offer's GPU form factor (`sxm` or `pcie`); null when its cloud does not say.", Computed: true},
			"gpu_memory_gb":   schema.Int64Attribute{MarkdownDescription: "The cheapest offer's memory per GPU, in GB; null when its cloud does not say.", Computed: true},
			"vcpus":           schema.Int64Attribute{MarkdownDescription: "The cheapest offer's virtual CPUs; null when its cloud does not say.", Computed: true},
			"memory_gb":       schema.Int64Attribute{MarkdownDescription: "The cheapest offer's RAM, in GB; null when its cloud does not say.", Computed: true},
			"offers": schema.ListNestedAttribute{
				MarkdownDescription: "Every matching offer, eligible ones cheapest first, then the ineligible ones with the reason.",
				Computed:            true,
				NestedObject:        schema.NestedAttributeObject{Attributes: offerAttributes()},
			},
			"nodes": schema.Int64Attribute{
				MarkdownDescription: "Ask for cluster offers instead of machine offers: this many nodes (at least 2) of `gpu_count` " +
					"`gpu_type` GPUs each, ordered as one cluster (as `hydra_gpu_cluster` rents them). The prices are then the whole " +
					"cluster's, `instance_type` is one node's, and `id` is a cluster offer ID " +
					"(`<pool>/<region>/<nodes>x<instance type>/<ondemand|spot>@<price>`). Default: machine offers.",
				Optional:   true,
				Validators: []validator.Int64{clusterNodes},
			},
			"interconnect": schema.StringAttribute{
				MarkdownDescription: "With `nodes`: `fabric` (the default; every node on one high-speed fabric as the cloud " +
					"promises it) or `any` (the nodes in one region, through the cloud's own cluster mechanism).",
				Optional:   true,
				Validators: []validator.String{stringvalidator.OneOf(interconnects...)},
			},
			"volume_type": schema.StringAttribute{
				MarkdownDescription: "Only offers in the clouds and regions that keep volumes of this type, `block` or `shared_fs`, " +
					"so a `hydra_volume` of that type can be created where the answer is (`cloud`, `region`) and used by the " +
					"machine. The clouds without it are in `rejections` (\"no shared_fs volumes\"). Default: any region.",
				Optional:   true,
				Validators: []validator.String{stringvalidator.OneOf(volumeTypes...)},
			},
			"unmapped": schema.MapAttribute{
				MarkdownDescription: "For each asked cloud that offers GPUs hydra's inventory does not name, those GPUs' exact names as the " +
					"cloud writes them. To rent one, add its name under `api_names.<cloud>` of a GPU type in your `supported_gpus.yml` " +
					"(see `inventory_dir`). Empty when every GPU offered is mapped.",
				Computed:    true,
				ElementType: types.ListType{ElemType: types.StringType},
			},
			"rejections": schema.MapAttribute{
				MarkdownDescription: "For each asked cloud with no eligible offer, why (no capacity, timed out, above the max price, ...).",
				Computed:            true,
				ElementType:         types.StringType,
			},
		},
	}
}

// offerAttributes are one element of offers.
func offerAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"id":                 schema.StringAttribute{MarkdownDescription: "Offer ID.", Computed: true},
		"cloud":              schema.StringAttribute{MarkdownDescription: "Cloud.", Computed: true},
		"pool":               schema.StringAttribute{MarkdownDescription: "Pool.", Computed: true},
		"region":             schema.StringAttribute{MarkdownDescription: "Region.", Computed: true},
		"instance_type":      schema.StringAttribute{MarkdownDescription: "The cloud's instance type.", Computed: true},
		"price_usd_per_hour": schema.Float64Attribute{MarkdownDescription: "US dollars per hour for the whole machine.", Computed: true},
		"spot":               schema.BoolAttribute{MarkdownDescription: "Spot capacity.", Computed: true},
		"resale_of":          schema.StringAttribute{MarkdownDescription: "The cloud that really runs the hardware when this offer resells it, else null.", Computed: true},
		"eligible":           schema.BoolAttribute{MarkdownDescription: "Whether hydra would choose this offer.", Computed: true},
		"ineligible_why":     schema.StringAttribute{MarkdownDescription: "Why the offer is not eligible (e.g. an auction bid that would not clear), else null.", Computed: true},
		"stock_unknown": schema.BoolAttribute{MarkdownDescription: "True when the cloud's stock could not be read this time (its availability call failed): " +
			"such an offer ranks behind every offer with known stock, whatever its price.", Computed: true},
		"available":     schema.Int64Attribute{MarkdownDescription: "How many machines of this offer the cloud says it can start now; null when it does not say. A sold-out offer (0) is listed, not eligible.", Computed: true},
		"form_factor":   schema.StringAttribute{MarkdownDescription: "GPU form factor (`sxm` or `pcie`); null when the cloud does not say.", Computed: true},
		"gpu_memory_gb": schema.Int64Attribute{MarkdownDescription: "Memory per GPU, in GB; null when the cloud does not say.", Computed: true},
		"vcpus":         schema.Int64Attribute{MarkdownDescription: "Virtual CPUs; null when the cloud does not say.", Computed: true},
		"memory_gb":     schema.Int64Attribute{MarkdownDescription: "RAM, in GB; null when the cloud does not say.", Computed: true},
		"details": schema.MapAttribute{MarkdownDescription: "What the cloud says of the offer beyond the above (for a Mithril auction: the bid, the last clearing price and the lowest winning bid).",
			Computed: true, ElementType: types.StringType},
		"nodes":        schema.Int64Attribute{MarkdownDescription: "For a cluster offer (with `nodes`): its node count; null for a machine offer.", Computed: true},
		"interconnect": schema.StringAttribute{MarkdownDescription: "For a cluster offer: `fabric` or `any`; null for a machine offer.", Computed: true},
	}
}

func (d *gpuOfferDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	ctx = withControlPlaneLogger(ctx)
	m, ok := get[gpuOfferModel](ctx, req.Config, &resp.Diagnostics)
	if !ok {
		return
	}
	oreq, _, diags := m.request(ctx)
	resp.Diagnostics.Append(diags...)
	places, volumeWhy, ok := d.volumeFilter(ctx, &m, &oreq, &resp.Diagnostics)
	if !ok {
		return
	}
	if !m.Nodes.IsNull() || !m.Interconnect.IsNull() {
		d.clusterOffers(ctx, &m, oreq, places, volumeWhy, resp)
		return
	}
	res, err := d.data.cp.FindOffers(ctx, oreq)
	var none *controlplane.NoOfferError
	if errors.As(err, &none) {
		d.data.warnUnmapped(res.Unmapped, &resp.Diagnostics)
		resp.Diagnostics.AddError("No GPU offer matches hydra_gpu_offer", none.Error())
		return
	}
	if err != nil {
		addPlanError(&resp.Diagnostics, err)
		return
	}
	if places != nil {
		res.Offers, res.Ineligible = places.filter(res.Offers, volumeWhy), places.filter(res.Ineligible, map[string]string{})
		if len(res.Offers) == 0 {
			noVolumeOffer(&resp.Diagnostics, places.typ, volumeWhy)
			return
		}
	}
	best, _ := res.Cheapest()
	m.setCheapest(best)

	var elems []attr.Value
	for _, o := range append(append([]cloudprovider.Offer{}, res.Offers...), res.Ineligible...) {
		elems = append(elems, offerRow(ctx, o, types.Int64Null(), types.StringNull(), &resp.Diagnostics))
	}
	m.Offers = offerList(elems, &resp.Diagnostics)
	rej := map[string]attr.Value{}
	for _, r := range res.Rejections {
		rej[r.Cloud] = types.StringValue(r.Reason)
	}
	for c, why := range volumeWhy {
		if _, ok := rej[c]; !ok {
			rej[c] = types.StringValue(why)
		}
	}
	rmap, diags := types.MapValue(types.StringType, rej)
	resp.Diagnostics.Append(diags...)
	m.Rejections = rmap
	m.Unmapped = unmappedValue(ctx, res.Unmapped, &resp.Diagnostics)
	d.data.warnUnmapped(res.Unmapped, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// setCheapest shows the best offer.
func (m *gpuOfferModel) setCheapest(best cloudprovider.Offer) {
	m.ID, m.Cloud, m.Pool, m.Region = types.StringValue(best.ID), types.StringValue(best.Cloud), types.StringValue(best.Pool), types.StringValue(best.Region)
	m.InstanceType, m.PricePerHour, m.IsSpot = types.StringValue(best.InstanceType), usdValue(best.PricePerHour), types.BoolValue(best.Spot)
	m.setHardware(best.Hardware)
}

// offerRow is one element of offers (nodes and interconnect null for a machine offer).
func offerRow(ctx context.Context, o cloudprovider.Offer, nodes types.Int64, interconnect types.String, diags *diag.Diagnostics) attr.Value {
	obj, d := types.ObjectValue(offerAttrTypes, map[string]attr.Value{
		"id": types.StringValue(o.ID), "cloud": types.StringValue(o.Cloud), "pool": types.StringValue(o.Pool),
		"region": types.StringValue(o.Region), "instance_type": types.StringValue(o.InstanceType),
		"price_usd_per_hour": usdValue(o.PricePerHour), "spot": types.BoolValue(o.Spot),
		"resale_of": stringOrNull(o.ResaleOf), "eligible": types.BoolValue(o.Ineligible == ""),
		"ineligible_why": stringOrNull(o.Ineligible), "stock_unknown": types.BoolValue(o.StockUnknown),
		"available": availableValue(o.Available), "form_factor": stringOrNull(o.FormFactor),
		"gpu_memory_gb": intOrNull(o.GPUMemoryGB), "vcpus": intOrNull(o.VCPUs), "memory_gb": intOrNull(o.MemoryGB),
		"details": stringMap(ctx, o.Details, diags), "nodes": nodes, "interconnect": interconnect,
	})
	diags.Append(d...)
	return obj
}

// offerList is offers' list value.
func offerList(elems []attr.Value, diags *diag.Diagnostics) types.List {
	list, d := types.ListValue(types.ObjectType{AttrTypes: offerAttrTypes}, elems)
	diags.Append(d...)
	return list
}

// clusterOffers reads the cluster offers (nodes set): the best, every eligible one, and why each
// other asked cloud has none ("no cluster API", "no fabric", ...).
func (d *gpuOfferDataSource) clusterOffers(ctx context.Context, m *gpuOfferModel, oreq controlplane.OfferRequest, places *volumePlaces,
	volumeWhy map[string]string, resp *datasource.ReadResponse) {
	if m.Nodes.IsNull() {
		resp.Diagnostics.AddAttributeError(path.Root("interconnect"), "interconnect without nodes",
			"interconnect applies to cluster offers only; set nodes (at least 2) to ask for cluster offers, or leave interconnect out.")
		return
	}
	if !m.FormFactor.IsNull() {
		resp.Diagnostics.AddAttributeError(path.Root("form_factor"), "form_factor with nodes",
			"form_factor applies to machine offers only; cluster offers are chosen by GPU type and count per node, nodes and interconnect. Leave form_factor out.")
		return
	}
	offers, why, err := d.data.cp.ClusterOffers(ctx, clusterSpecOf(oreq, "", m.Nodes, m.Interconnect))
	if err != nil {
		addPlanError(&resp.Diagnostics, err)
		return
	}
	if places != nil {
		if why == nil {
			why = map[string]string{}
		}
		offers = places.filterClusters(offers, why)
		maps.Copy(why, volumeWhy)
	}
	if len(offers) == 0 {
		var lines []string
		for _, c := range slices.Sorted(maps.Keys(why)) {
			lines = append(lines, fmt.Sprintf("- %s: %s", c, why[c]))
		}
		resp.Diagnostics.AddError("No GPU cluster offer matches hydra_gpu_offer",
			fmt.Sprintf("No configured cloud can rent %d nodes of %dx %s now. Why each cloud said no:\n%s", m.Nodes.ValueInt64(), oreq.GPUCount, oreq.GPUType, strings.Join(lines, "\n")))
		return
	}
	m.setCheapest(offers[0].Offer)
	var elems []attr.Value
	for _, o := range offers {
		elems = append(elems, offerRow(ctx, o.Offer, types.Int64Value(int64(o.Nodes)), types.StringValue(string(o.Interconnect)), &resp.Diagnostics))
	}
	m.Offers = offerList(elems, &resp.Diagnostics)
	m.Rejections = stringMap(ctx, why, &resp.Diagnostics)
	m.Unmapped = unmappedValue(ctx, nil, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, m)...)
}

// availableValue is a stock figure: null when the cloud does not say (-1).
func availableValue(n int) types.Int64 {
	if n < 0 {
		return types.Int64Null()
	}
	return types.Int64Value(int64(n))
}
