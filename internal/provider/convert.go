package provider

import (
	"context"
	"fmt"
	"math/big"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
)

// dynamicToGo turns an HCL value of any type into plain Go values (string, float64 or int64, bool,
// []any, map[string]any) for the provisioning variables. ok is false when part of it is unknown.
func dynamicToGo(v attr.Value) (out any, ok bool, err error) {
	if v == nil || v.IsNull() {
		return nil, true, nil
	}
	if v.IsUnknown() {
		return nil, false, nil
	}
	switch tv := v.(type) {
	case types.Dynamic:
		return dynamicToGo(tv.UnderlyingValue())
	case types.String:
		return tv.ValueString(), true, nil
	case types.Bool:
		return tv.ValueBool(), true, nil
	case types.Int64:
		return tv.ValueInt64(), true, nil
	case types.Float64:
		return tv.ValueFloat64(), true, nil
	case types.Number:
		f := tv.ValueBigFloat()
		if f.IsInt() {
			if i, acc := f.Int64(); acc == big.Exact {
				return i, true, nil
			}
		}
		x, _ := f.Float64()
		return x, true, nil
	case types.List:
		return elemsToGo(tv.Elements())
	case types.Set:
		return elemsToGo(tv.Elements())
	case types.Tuple:
		return elemsToGo(tv.Elements())
	case types.Map:
		return attrsToGo(tv.Elements())
	case types.Object:
		return attrsToGo(tv.Attributes())
	default:
		return nil, false, fmt.Errorf("unsupported value type %T", v)
	}
}

func elemsToGo(elems []attr.Value) (any, bool, error) {
	out := make([]any, 0, len(elems))
	for _, e := range elems {
		g, ok, err := dynamicToGo(e)
		if err != nil || !ok {
			return nil, ok, err
		}
		out = append(out, g)
	}
	return out, true, nil
}

func attrsToGo(m map[string]attr.Value) (any, bool, error) {
	out := make(map[string]any, len(m))
	for k, e := range m {
		g, ok, err := dynamicToGo(e)
		if err != nil || !ok {
			return nil, ok, err
		}
		out[k] = g
	}
	return out, true, nil
}

// stringsOf reads a list or set of strings; ok is false when it is unknown.
func stringsOf(ctx context.Context, v attr.Value) ([]string, bool, diag.Diagnostics) {
	var diags diag.Diagnostics
	if v == nil || v.IsNull() {
		return nil, true, diags
	}
	if v.IsUnknown() {
		return nil, false, diags
	}
	var out []string
	switch tv := v.(type) {
	case basetypes.SetValue:
		for _, e := range tv.Elements() {
			if e.IsUnknown() {
				return nil, false, diags
			}
		}
		diags.Append(tv.ElementsAs(ctx, &out, false)...)
	case basetypes.ListValue:
		for _, e := range tv.Elements() {
			if e.IsUnknown() {
				return nil, false, diags
			}
		}
		diags.Append(tv.ElementsAs(ctx, &out, false)...)
	}
	return out, true, diags
}
