package controlplane

import (
	"math/big"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// billingUnits are the billing granularities the clouds' own documentation states: a started unit is
// billed whole. UpCloud documents hourly billing (capped at the monthly price, 672 hours a month,
// which Accrued does not apply). Verda, Prime Intellect, Lambda, Mithril and the sandbox state none
// that hydra has found (nor does Atlas), so their machines accrue to the second.
var billingUnits = map[string]time.Duration{
	"upcloud": time.Hour,
}

// BillingUnit is the billing granularity of cloud: a whole hour for UpCloud, else a second (no
// documented granularity).
func BillingUnit(cloud string) time.Duration {
	if u, ok := billingUnits[cloud]; ok {
		return u
	}
	return time.Second
}

// Accrued is what a machine of cloud billed at price per hour has cost from created to now: the time
// since creation, rounded up to the cloud's BillingUnit, times the price, rounded once to the nearest
// micro-dollar (halves up). A zero created time, a zero price or a now before created accrue nothing.
func Accrued(cloud string, price money.USD, created, now time.Time) money.USD {
	if created.IsZero() || price <= 0 || !now.After(created) {
		return 0
	}
	unit := BillingUnit(cloud)
	elapsed := now.Sub(created)
	units := (elapsed + unit - 1) / unit
	// price x units x unit / hour, exactly, then rounded half up.
	p := new(big.Rat).SetFrac(new(big.Int).Mul(big.NewInt(int64(price)), new(big.Int).Mul(big.NewInt(int64(units)), big.NewInt(int64(unit)))),
		big.NewInt(int64(time.Hour)))
	p.Add(p, big.NewRat(1, 2))
	q := new(big.Int).Quo(p.Num(), p.Denom())
	if !q.IsInt64() || q.Int64() >= int64(money.Max) {
		return money.Max
	}
	return money.USD(q.Int64())
}

// Now is the control plane's clock (Options.Now; time.Now by default), which cost figures are
// computed against.
func (cp *ControlPlane) Now() time.Time {
	if cp.opts.Now != nil {
		return cp.opts.Now()
	}
	return time.Now()
}
