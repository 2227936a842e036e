package cloudprovider

import (
	"math/big"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// Facts are what a cloud states about itself beyond its backend's calls. A backend states them through
// FactStater; the zero value is a cloud that states nothing.
type Facts struct {
	// BillingUnit is the billing granularity the cloud documents: a started unit is billed whole. 0: it
	// documents none, and a machine accrues to the second.
	BillingUnit time.Duration
	// Billing says in a sentence, for the docs, how the cloud bills when it documents a BillingUnit.
	Billing string
	// Signal is the file the cloud writes inside its machines when it gives notice of an interruption
	// (zero: none). Provisioning installs a watcher for it.
	Signal InterruptionSignal
	// VolumeMountPath is where the cloud mounts a machine's volume itself, whatever path was asked ("":
	// the playbooks mount a volume at the path the machine asks for).
	VolumeMountPath string
}

// FactStater is implemented by backends whose cloud states Facts.
type FactStater interface {
	Facts() Facts
}

// FactsOf returns what b states of its cloud (the zero Facts when b states nothing).
func FactsOf(b InstanceManagerBackend) Facts {
	if f, ok := b.(FactStater); ok {
		return f.Facts()
	}
	return Facts{}
}

// Unit is the billing granularity: BillingUnit, or a second when the cloud documents none.
func (f Facts) Unit() time.Duration {
	if f.BillingUnit > 0 {
		return f.BillingUnit
	}
	return time.Second
}

// Accrued is what a machine billed at price per hour has cost from created to now: the time since
// creation, rounded up to the billing Unit, times the price, rounded once to the nearest micro-dollar
// (halves up). A zero created time, a zero price or a now before created accrue nothing.
func (f Facts) Accrued(price money.USD, created, now time.Time) money.USD {
	if created.IsZero() || price <= 0 || !now.After(created) {
		return 0
	}
	unit := f.Unit()
	units := (now.Sub(created) + unit - 1) / unit
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
