package provider

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
)

// volumePlaces are the clouds and regions that have one type of volume (hydra_gpu_offer's
// volume_type): cloud -> regions, as the control plane's VolumeRegions answers.
type volumePlaces struct {
	typ     cloudprovider.VolumeType
	regions map[string][]string
}

// serves reports whether cloud has the type in region.
func (p volumePlaces) serves(cloud, region string) bool {
	return slices.Contains(p.regions[cloud], region)
}

// clouds narrows asked (every configured cloud when empty) to the clouds that have the type anywhere,
// sorted; without names the answer is every such cloud. The clouds left out are in lacking, each with
// why.
func (p volumePlaces) clouds(asked []string) (keep []string, lacking map[string]string) {
	lacking = map[string]string{}
	if len(asked) == 0 {
		asked = slices.Sorted(maps.Keys(p.regions))
	}
	for _, c := range asked {
		if len(p.regions[c]) == 0 {
			lacking[c] = fmt.Sprintf("no %s volumes", p.typ)
			continue
		}
		keep = append(keep, c)
	}
	slices.Sort(keep)
	return keep, lacking
}

// filter keeps the offers in a region with the type. A cloud whose every offer is dropped gets a
// reason in why (its offers' regions lack the type; the regions that have it are named).
func (p volumePlaces) filter(offers []cloudprovider.Offer, why map[string]string) []cloudprovider.Offer {
	var out []cloudprovider.Offer
	dropped := map[string]bool{}
	for _, o := range offers {
		if p.serves(o.Cloud, o.Region) {
			out = append(out, o)
			continue
		}
		dropped[o.Cloud] = true
	}
	for c := range dropped {
		if slices.ContainsFunc(out, func(o cloudprovider.Offer) bool { return o.Cloud == c }) {
			continue
		}
		if _, ok := why[c]; !ok {
			why[c] = fmt.Sprintf("no offer in a region with %s volumes (%s)", p.typ, strings.Join(p.regions[c], ", "))
		}
	}
	return out
}

// volumeFilter starts a hydra_gpu_offer read with volume_type: it narrows the request's clouds to
// those with the type and returns the places that have it, and why each asked cloud without it lost.
// ok is false when the read is over (no cloud has the type; the error is in diags).
func (d *gpuOfferDataSource) volumeFilter(ctx context.Context, m *gpuOfferModel, oreq *controlplane.OfferRequest, diags *diag.Diagnostics) (
	places *volumePlaces, why map[string]string, ok bool) {
	if m.VolumeType.IsNull() || m.VolumeType.IsUnknown() {
		return nil, map[string]string{}, true
	}
	configured := d.data.cp.Clouds()
	if slices.ContainsFunc(oreq.Clouds, func(c string) bool { return !slices.Contains(configured, c) }) {
		return nil, map[string]string{}, true // the offers' read says which cloud is not configured
	}
	typ := cloudprovider.VolumeType(m.VolumeType.ValueString())
	regions, err := d.data.cp.VolumeRegions(ctx, typ)
	switch {
	case err != nil && len(regions) == 0:
		diags.AddAttributeError(path.Root("volume_type"), "Cannot list volume regions", err.Error())
		return nil, nil, false
	case err != nil:
		diags.AddAttributeWarning(path.Root("volume_type"), "Some clouds' volume types could not be read",
			err.Error()+"\nThose clouds' offers are left out this time.")
	}
	p := volumePlaces{typ: typ, regions: regions}
	keep, why := p.clouds(oreq.Clouds)
	if len(keep) == 0 {
		var lines []string
		for _, c := range slices.Sorted(maps.Keys(why)) {
			lines = append(lines, fmt.Sprintf("- %s: %s", c, why[c]))
		}
		diags.AddAttributeError(path.Root("volume_type"), fmt.Sprintf("No cloud has %s volumes", typ),
			fmt.Sprintf("No asked cloud keeps %s volumes:\n%s\nAsk for the other volume type, or configure a cloud that has it "+
				"(the guide \"Keeping data across machines\" says what each cloud has).", typ, strings.Join(lines, "\n")))
		return nil, nil, false
	}
	oreq.Clouds = keep
	return &p, why, true
}

// filterClusters is filter for cluster offers.
func (p volumePlaces) filterClusters(offers []cloudprovider.ClusterOffer, why map[string]string) []cloudprovider.ClusterOffer {
	plain := make([]cloudprovider.Offer, len(offers))
	for i, o := range offers {
		plain[i] = o.Offer
	}
	p.filter(plain, why)
	return slices.DeleteFunc(slices.Clone(offers), func(o cloudprovider.ClusterOffer) bool { return !p.serves(o.Cloud, o.Region) })
}

// noVolumeOffer is the error of a hydra_gpu_offer read whose every offer is in a region without the
// volume type.
func noVolumeOffer(diags *diag.Diagnostics, typ cloudprovider.VolumeType, why map[string]string) {
	var lines []string
	for _, c := range slices.Sorted(maps.Keys(why)) {
		lines = append(lines, fmt.Sprintf("- %s: %s", c, why[c]))
	}
	diags.AddError("No GPU offer matches hydra_gpu_offer",
		fmt.Sprintf("Offers match, but none is in a region that keeps %s volumes (volume_type). Why each cloud said no:\n%s\n"+
			"Leave regions out or widen them, or ask for the other volume type.", typ, strings.Join(lines, "\n")))
}
