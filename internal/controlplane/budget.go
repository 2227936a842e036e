package controlplane

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// Budget caps what the machines of one configuration cost per hour together
// (max_total_price_per_hour). Every instance a plan sees, kept from the state or planned anew, adds
// its known price per hour under its name (a name counted again replaces its earlier figure); the
// instance whose price takes the total over the budget is refused, so the plan fails before anything
// is created. Instances are planned concurrently, so which one is refused depends on the order they
// reach the budget; the total that is refused does not. A Budget lives as long as one plan (one
// provider process), like the Fleet.
type Budget struct {
	limit money.USD

	mu    sync.Mutex
	spent map[string]budgetItem
}

type budgetItem struct {
	price money.USD
	what  string // the offer, or how the price is known
}

// NewBudget returns a Budget of limit dollars per hour; 0 means no budget.
func NewBudget(limit money.USD) *Budget {
	return &Budget{limit: limit, spent: map[string]budgetItem{}}
}

// ParseBudget reads max_total_price_per_hour: the same bounds and precision as max_price_per_hour
// (ParseMaxPrice), with the attribute's own name in the message.
func ParseBudget(f float64) (money.USD, error) {
	return parsePriceCap("max_total_price_per_hour", f)
}

// Count adds the hourly price of the instance name (what says which offer or machine it is) and
// returns a *Refusal when the total of every instance counted so far is over the budget. A price of 0
// (unknown, or nothing billed) counts nothing.
func (b *Budget) Count(name, what string, price money.USD) error {
	if b == nil || b.limit == 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if price <= 0 {
		delete(b.spent, name)
		return nil
	}
	b.spent[name] = budgetItem{price: price, what: what}
	var total money.USD
	for _, it := range b.spent {
		total += it.price
	}
	if total <= b.limit {
		return nil
	}
	return refuse("", "Over the budget of max_total_price_per_hour", b.overDetail(name, total))
}

// overDetail names the total, the budget and the largest machines. Called with b.mu held.
func (b *Budget) overDetail(name string, total money.USD) string {
	names := make([]string, 0, len(b.spent))
	for n := range b.spent {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		pi, pj := b.spent[names[i]].price, b.spent[names[j]].price
		if pi != pj {
			return pi > pj
		}
		return names[i] < names[j]
	})
	var sb strings.Builder
	fmt.Fprintf(&sb, "Planning hydra_gpu_instance %q brings the machines of this configuration to %s, over the provider's "+
		"max_total_price_per_hour of %s (by %s); nothing is created. The total counts the machines in state that are kept and the "+
		"machines planned so far (%d), at their known prices. The largest:", name, total.PerHour(), b.limit.PerHour(), (total - b.limit).PerHour(), len(names))
	for i, n := range names {
		if i == 5 {
			fmt.Fprintf(&sb, "\n  ... and %d more", len(names)-i)
			break
		}
		fmt.Fprintf(&sb, "\n  %s: %s (%s)", n, b.spent[n].price.PerHour(), b.spent[n].what)
	}
	sb.WriteString("\nLower count, choose smaller or cheaper machines (gpu_type, gpu_count, max_price_per_hour), or raise max_total_price_per_hour.")
	return sb.String()
}

// CountBudget counts the hourly price of instance name in this plan's budget (max_total_price_per_hour)
// and refuses, with a *Refusal naming the total, the budget and the largest machines, the instance that
// takes the total over it. what names the offer or machine. Without a budget it never refuses.
func (cp *ControlPlane) CountBudget(name, what string, price money.USD) error {
	return cp.budget.Count(name, what, price)
}
