package upcloud

import (
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// TestCentsToUSD: a euro price list is converted and rounded up once to the cent at every rate, 1.0
// included (it is not taken for a dollar list); a list that states US dollars is taken as written.
func TestCentsToUSD(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cents    FlexFloat
		currency string
		rate     float64
		want     money.USD
	}{
		{"euro cents at eur_to_usd 1.0 round up to the cent", 132.6889, "EUR", 1.0, money.MustFromFloat(1.33)},
		{"euro cents at the default rate", 132.6889, "EUR", DefaultEURToUSD, money.MustFromFloat(1.44)}, // 143.304012 cents
		{"whole euro cents at 1.0 stay", 250, "EUR", 1.0, money.MustFromFloat(2.5)},
		{"a list without a currency is in euros", 132.6889, "", 1.0, money.MustFromFloat(1.33)},
		{"a dollar list is taken as written", 132.6889, "USD", 1.08, money.MustFromFloat(1.326889)},
		{"a negative price is no offer", -5, "EUR", 1.08, 0},
		{"another currency is no offer", 100, "GBP", 1.08, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &Backend{cfg: Config{EURToUSD: tc.rate}}
			prices := &PriceList{}
			prices.Prices.Currency = tc.currency
			if got := b.centsToUSD(tc.cents, currency(prices)); got != tc.want {
				t.Errorf("centsToUSD(%v %q) at %v = %s, want %s", float64(tc.cents), tc.currency, tc.rate, got, tc.want)
			}
		})
	}
}
