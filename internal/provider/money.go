package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// maxPriceDescription is appended to every max_price_per_hour description.
const maxPriceDescription = " Accepted: 0.01 to 1000000, with at most six digits after the point (a millionth of a dollar). " +
	"Compared exactly with each offer's billed price: an offer one millionth of a dollar above it is not eligible."

// maxPriceValidators check max_price_per_hour at validate time, with the control plane's one check
// (controlplane.ParseMaxPrice).
func maxPriceValidators() []validator.Float64 {
	return []validator.Float64{priceCap{summary: "Invalid price", parse: controlplane.ParseMaxPrice}}
}

// priceCap accepts the price caps (US dollars per hour) that parse, the control plane's check of the
// attribute, accepts; summary heads the error it reports.
type priceCap struct {
	summary string
	parse   func(float64) (money.USD, error)
}

func (priceCap) Description(context.Context) string {
	return "value must be from 0.01 to 1000000 (US dollars per hour) with at most six digits after the decimal point"
}

func (v priceCap) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v priceCap) ValidateFloat64(_ context.Context, req validator.Float64Request, resp *validator.Float64Response) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if _, err := v.parse(req.ConfigValue.ValueFloat64()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, v.summary, err.Error()+".")
	}
}

// capOf reads max_price_per_hour with the parse that validated it (controlplane.ParseMaxPrice), so
// the cap applied is the cap the validator accepted. Null and unknown read as 0 (no cap); a value the
// validators refused (it never gets here) reads as the largest amount, never below the user's figure.
func capOf(v types.Float64) money.USD {
	if v.IsNull() || v.IsUnknown() {
		return 0
	}
	u, err := controlplane.ParseMaxPrice(v.ValueFloat64())
	if err != nil {
		return money.Max
	}
	return u
}

// usdOf reads a price attribute (null and unknown read as 0: no cap). Values out of range were
// refused by the validators; should one get here, it reads as the largest amount, never as a
// negative or wrapped one.
func usdOf(v types.Float64) money.USD {
	if v.IsNull() || v.IsUnknown() {
		return 0
	}
	u, err := money.FromFloat(v.ValueFloat64())
	if err != nil {
		if v.ValueFloat64() > 0 {
			return money.Max
		}
		return 0
	}
	return u
}

// usdValue is a price as a Terraform number; it prints as the exact decimal.
func usdValue(u money.USD) types.Float64 { return types.Float64Value(u.Float64()) }
