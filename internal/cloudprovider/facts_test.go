package cloudprovider

import (
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

func TestAccrued(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	hourly := Facts{BillingUnit: time.Hour}
	tests := []struct {
		name    string
		facts   Facts
		price   money.USD
		elapsed time.Duration
		want    money.USD
	}{
		{"per second, 90 minutes", Facts{}, 2 * money.Dollar, 90 * time.Minute, 3 * money.Dollar},
		{"per second, a started second is billed", Facts{}, 3600 * money.Dollar, 1500 * time.Millisecond, 2 * money.Dollar},
		{"per second, rounded to the micro-dollar", Facts{}, money.MustFromFloat(2.49), 7 * time.Second, money.MustFromFloat(0.004842)},
		{"hourly: a started hour is billed", hourly, money.MustFromFloat(1.5), 61 * time.Minute, 3 * money.Dollar},
		{"hourly: exactly an hour", hourly, money.MustFromFloat(1.5), time.Hour, money.MustFromFloat(1.5)},
		{"hourly: one second", hourly, money.MustFromFloat(1.5), time.Second, money.MustFromFloat(1.5)},
		{"not yet created", Facts{}, money.Dollar, 0, 0},
		{"no price", Facts{}, 0, time.Hour, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.facts.Accrued(tt.price, t0, t0.Add(tt.elapsed)); got != tt.want {
				t.Errorf("Accrued(%s, %s) with unit %s = %s, want %s", tt.price, tt.elapsed, tt.facts.Unit(), got, tt.want)
			}
		})
	}
	if got := (Facts{}).Accrued(money.Dollar, time.Time{}, t0); got != 0 {
		t.Errorf("zero created time accrued %s", got)
	}
}

type statingBackend struct{ InstanceManagerBackend }

func (statingBackend) Facts() Facts { return Facts{BillingUnit: time.Hour} }

func TestFactsOf(t *testing.T) {
	if got := FactsOf(statingBackend{}).Unit(); got != time.Hour {
		t.Errorf("a backend stating an hourly unit: Unit() = %s", got)
	}
	var silent struct{ InstanceManagerBackend }
	if got := FactsOf(silent).Unit(); got != time.Second {
		t.Errorf("a backend stating nothing: Unit() = %s, want a second", got)
	}
}
