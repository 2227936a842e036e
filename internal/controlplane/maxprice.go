package controlplane

import (
	"fmt"
	"math"
	"strconv"

	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// The bounds of max_price_per_hour: from a cent to a million dollars an hour, to the micro-dollar.
const (
	MinMaxPrice = money.Cent
	MaxMaxPrice = 1_000_000 * money.Dollar
)

// ParseMaxPrice reads max_price_per_hour given as a number (a Terraform number), exactly: the one
// check of its bounds (MinMaxPrice to MaxMaxPrice) and precision (a millionth of a dollar), so that the
// cap a plan shows is the cap applied. Validate applies the same bounds to an OfferRequest.
func ParseMaxPrice(f float64) (money.USD, error) {
	return parsePriceCap("max_price_per_hour", f)
}

// parsePriceCap is ParseMaxPrice's check for any price cap attribute, named attr in the messages.
func parsePriceCap(attr string, f float64) (money.USD, error) {
	u, err := money.FromFloat(f)
	if err != nil || checkMaxPrice(u) != nil {
		return 0, fmt.Errorf("%s is %s; expected US dollars per hour from 0.01 to 1000000, such as 2.5", attr, AsWritten(f))
	}
	if u.Float64() != f {
		return 0, fmt.Errorf("%s is %s, which has more than six digits after the decimal point; hydra prices "+
			"are exact to a millionth of a dollar (for example %s)", attr, AsWritten(f), u)
	}
	return u, nil
}

// checkMaxPrice checks a cap's bounds; 0 (no cap) is not a cap and must be checked by the caller.
func checkMaxPrice(u money.USD) error {
	if u < MinMaxPrice || u > MaxMaxPrice {
		return fmt.Errorf("max_price_per_hour must be from %s to %s US dollars per hour, got %s", MinMaxPrice, MaxMaxPrice, u)
	}
	return nil
}

// AsWritten prints a number from the configuration as its user most likely wrote it: the shortest
// decimal that reads back as the same float64, without an exponent (1000000.000001, not
// 1.000000000001e+06; 0.0000001, not 1e-07). Numbers beyond any price (1e21 and up) keep the exponent.
func AsWritten(f float64) string {
	if math.Abs(f) >= 1e21 || math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}
