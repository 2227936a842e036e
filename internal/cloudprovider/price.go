package cloudprovider

import "github.com/hydragpu/terraform-provider-hydra/internal/money"

// AboveCap reports whether price is above the user's cap per hour (max_price_per_hour; 0 is no cap).
// It is hydra's one comparison of a price with the cap: the control plane applies it when it ranks
// offers (an offer above the cap is not eligible), and a backend at create, through CheckPriceCap,
// where its cloud can move the price after the plan.
func AboveCap(price, maxPrice money.USD) bool { return maxPrice > 0 && price > maxPrice }

// CheckPriceCap is a backend's check at create of the price its cloud asks now for what (the offer,
// "plan X in fi-hel1"): above maxPrice it is ErrCapacity, as a sold-out offer is, and the backend must
// create nothing.
func CheckPriceCap(cloud, op, what string, price, maxPrice money.USD) error {
	if !AboveCap(price, maxPrice) {
		return nil
	}
	return Errorf(ErrCapacity, cloud, op, "%s now costs %s, above the maximum %s", what, price.PerHour(), maxPrice.PerHour())
}
