package controlplane

import (
	"errors"
	"strings"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

func TestBudgetCount(t *testing.T) {
	type add struct {
		name  string
		price money.USD
	}
	tests := []struct {
		name    string
		limit   money.USD
		adds    []add
		refused []bool
		want    []string // in the last refusal's detail
	}{
		{name: "no budget", limit: 0, adds: []add{{"a", 100 * money.Dollar}}, refused: []bool{false}},
		{name: "exactly the budget", limit: 3 * money.Dollar, adds: []add{{"a", money.Dollar}, {"b", 2 * money.Dollar}}, refused: []bool{false, false}},
		{name: "count over", limit: 3 * money.Dollar,
			adds:    []add{{"gpu-0", 2 * money.Dollar}, {"gpu-1", 2 * money.Dollar}, {"gpu-2", 2 * money.Dollar}},
			refused: []bool{false, true, true},
			want:    []string{"$6.00/h", "max_total_price_per_hour of $3.00/h", "gpu-0: $2.00/h", "gpu-2: $2.00/h", "(3)"}},
		{name: "a name counted again replaces its figure", limit: 3 * money.Dollar,
			adds: []add{{"a", 2 * money.Dollar}, {"a", 2 * money.Dollar}, {"b", money.Dollar}}, refused: []bool{false, false, false}},
		{name: "unknown price counts nothing", limit: money.Dollar,
			adds: []add{{"a", 0}, {"b", money.Dollar}}, refused: []bool{false, false}},
		{name: "largest first", limit: money.Dollar,
			adds:    []add{{"small", money.Dollar / 2}, {"big", 5 * money.Dollar}},
			refused: []bool{false, true}, want: []string{"largest:\n  big: $5.00/h (offer)\n  small: $0.50/h"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBudget(tt.limit)
			var last error
			for i, a := range tt.adds {
				err := b.Count(a.name, "offer", a.price)
				var rf *Refusal
				if (err != nil) != tt.refused[i] || (err != nil && !errors.As(err, &rf)) {
					t.Fatalf("add %d (%s %s): err %v, want refused %v", i, a.name, a.price, err, tt.refused[i])
				}
				if err != nil {
					last = err
				}
			}
			for _, w := range tt.want {
				if !strings.Contains(last.Error(), w) {
					t.Errorf("refusal %q lacks %q", last, w)
				}
			}
		})
	}
}

func TestParseBudgetNamesItsAttribute(t *testing.T) {
	if u, err := ParseBudget(12.5); err != nil || u != 12*money.Dollar+money.Dollar/2 {
		t.Fatalf("ParseBudget(12.5) = %v, %v", u, err)
	}
	for _, f := range []float64{0, -1, 0.001, 2e6, 1.0000001} {
		_, err := ParseBudget(f)
		if err == nil || !strings.Contains(err.Error(), "max_total_price_per_hour is ") {
			t.Errorf("ParseBudget(%v) = %v, want an error naming max_total_price_per_hour", f, err)
		}
	}
	if _, err := ParseMaxPrice(0); err == nil || !strings.Contains(err.Error(), "max_price_per_hour is 0") {
		t.Errorf("ParseMaxPrice(0) = %v", err)
	}
}
