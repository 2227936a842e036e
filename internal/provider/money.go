package provider

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// Bounds of max_price_per_hour: from a cent to a million dollars an hour, to the micro-dollar.
const (
	minMaxPrice = 0.01
	maxMaxPrice = 1_000_000
)

// maxPriceDescription is appended to every max_price_per_hour description.
const maxPriceDescription = " Accepted: 0.01 to 1000000, with at most six digits after the point (a millionth of a dollar). " +
	"Compared exactly with each offer's billed price: an offer one millionth of a dollar above it is not eligible."

// maxPriceValidators check max_price_per_hour at validate time.
func maxPriceValidators() []validator.Float64 {
	return []validator.Float64{microDollars{}}
}

// microDollars accepts prices from minMaxPrice to maxMaxPrice with no more precision than hydra's money
// type holds, so that the cap a plan shows is the cap applied.
type microDollars struct{}

func (microDollars) Description(context.Context) string {
	return "value must be from 0.01 to 1000000 (US dollars per hour) with at most six digits after the decimal point"
}

func (v microDollars) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (microDollars) ValidateFloat64(_ context.Context, req validator.Float64Request, resp *validator.Float64Response) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	f := req.ConfigValue.ValueFloat64()
	u, err := money.FromFloat(f)
	if err != nil || f < minMaxPrice || f > maxMaxPrice {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid price",
			fmt.Sprintf("%s is %s; expected US dollars per hour from 0.01 to 1000000, such as 2.5.", req.Path, asWritten(f)))
		return
	}
	if u.Float64() != f {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid price",
			fmt.Sprintf("%s is %s, which has more than six digits after the decimal point; hydra prices are exact to a millionth of a dollar (for example %s).",
				req.Path, asWritten(f), u))
	}
}

// asWritten prints a number from the configuration as its user most likely wrote it: the shortest
// decimal that reads back as the same float64, without an exponent (1000000.000001, not
// 1.000000000001e+06; 0.0000001, not 1e-07). Numbers beyond any price (1e21 and up) keep the exponent.
func asWritten(f float64) string {
	if math.Abs(f) >= 1e21 || math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
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
