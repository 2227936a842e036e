package provider

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/float64validator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/clouds"
)

// The clouds' provider blocks are derived from the registry (internal/clouds): one block per driver,
// one attribute per setting. This file turns the registry's plain settings into schema attributes and
// the configured blocks back into plain values; it knows no cloud by name.

// cloudBlocks is the schema of every cloud's block.
func cloudBlocks() map[string]schema.Block {
	blocks := map[string]schema.Block{}
	for _, d := range clouds.All() {
		attrs := map[string]schema.Attribute{}
		for _, s := range d.AllSettings() {
			attrs[s.Key] = settingAttribute(s)
		}
		blocks[d.Block] = schema.SingleNestedBlock{MarkdownDescription: d.BlockMarkdown(), Attributes: attrs}
	}
	return blocks
}

// settingAttribute is the schema attribute of one setting.
func settingAttribute(s clouds.Setting) schema.Attribute {
	switch s.Kind {
	case clouds.KindFloat:
		a := schema.Float64Attribute{MarkdownDescription: s.Markdown(), Optional: true, Sensitive: s.Sensitive}
		if r := s.Range; r != nil {
			if math.IsInf(r.Max, 1) {
				a.Validators = []validator.Float64{float64validator.AtLeast(r.Min)}
			} else {
				a.Validators = []validator.Float64{float64validator.Between(r.Min, r.Max)}
			}
		}
		return a
	case clouds.KindBool:
		return schema.BoolAttribute{MarkdownDescription: s.Markdown(), Optional: true, Sensitive: s.Sensitive}
	default:
		return schema.StringAttribute{MarkdownDescription: s.Markdown(), Optional: true, Sensitive: s.Sensitive}
	}
}

// readConfig reads the provider configuration: the clouds' blocks by block name (a null object when
// absent), and every other attribute and block into cfg.
func readConfig(ctx context.Context, config tfsdk.Config, cfg *providerModel) (map[string]types.Object, diag.Diagnostics) {
	var all types.Object
	diags := config.Get(ctx, &all)
	if diags.HasError() {
		return nil, diags
	}
	blocks := map[string]types.Object{}
	rest, restTypes := map[string]attr.Value{}, map[string]attr.Type{}
	attrTypes := all.AttributeTypes(ctx)
	for name, v := range all.Attributes() {
		if clouds.ByBlock(name) != nil {
			obj, ok := v.(types.Object)
			if !ok {
				diags.AddAttributeError(path.Root(name), "Unexpected provider configuration", fmt.Sprintf("block %s is a %T", name, v))
				continue
			}
			blocks[name] = obj
			continue
		}
		rest[name], restTypes[name] = v, attrTypes[name]
	}
	obj, d := types.ObjectValue(restTypes, rest)
	diags.Append(d...)
	if diags.HasError() {
		return nil, diags
	}
	diags.Append(obj.As(ctx, cfg, basetypes.ObjectAsOptions{})...)
	return blocks, diags
}

// blockValues are the settings a block sets (null and unknown values are left out).
func blockValues(obj types.Object) clouds.Values {
	vals := clouds.Values{}
	for key, v := range obj.Attributes() {
		if v.IsNull() || v.IsUnknown() {
			continue
		}
		switch v := v.(type) {
		case types.String:
			vals[key] = v.ValueString()
		case types.Float64:
			vals[key] = v.ValueFloat64()
		case types.Bool:
			vals[key] = v.ValueBool()
		}
	}
	return vals
}

// cloudBackends builds the backend of every cloud whose block is present (and, for the off-by-default
// ones, enabled). emulated is true when any of them runs on its local emulator.
func cloudBackends(blocks map[string]types.Object, env clouds.Env, diags *diag.Diagnostics) (backends []cloudprovider.InstanceManagerBackend, emulated bool) {
	for _, d := range clouds.All() {
		obj, ok := blocks[d.Block]
		if !ok || obj.IsNull() || obj.IsUnknown() {
			continue
		}
		vals := blockValues(obj)
		if !d.Enabled(vals) {
			continue
		}
		c, err := d.Configure(vals, env)
		var missing *clouds.MissingError
		var emu *clouds.EmulatorError
		switch {
		case errors.As(err, &missing):
			diags.AddAttributeError(path.Root(d.Block), fmt.Sprintf("Missing %s credentials", d.Title), err.Error())
		case errors.As(err, &emu):
			diags.AddAttributeError(path.Root(d.Block).AtName(clouds.EmulatorDirKey), fmt.Sprintf("Cannot start the %s emulator", d.Title), err.Error())
		case err != nil:
			diags.AddAttributeError(path.Root(d.Block), fmt.Sprintf("Invalid %s configuration", d.Title), err.Error())
		default:
			backends = append(backends, c.Backend)
			emulated = emulated || c.Emulated
		}
	}
	return backends, emulated
}

// knownCloudsMarkdown lists every cloud name a `clouds` argument accepts, as markdown.
func knownCloudsMarkdown() string { return clouds.NamesMarkdown() }

// cloudBlockList names the real clouds' provider blocks, for messages: "`atlas`, `lambda`, ...".
func cloudBlockList() string {
	var names []string
	for _, d := range clouds.All() {
		names = append(names, "`"+d.Block+"`")
	}
	return strings.Join(names, ", ")
}
