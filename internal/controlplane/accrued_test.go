package controlplane

import (
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

func TestAccrued(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		cloud   string
		price   money.USD
		elapsed time.Duration
		want    money.USD
	}{
		{"per second, 90 minutes", "sandbox", 2 * money.Dollar, 90 * time.Minute, 3 * money.Dollar},
		{"per second, a started second is billed", "verda", 3600 * money.Dollar, 1500 * time.Millisecond, 2 * money.Dollar},
		{"per second, rounded to the micro-dollar", "lambda", money.MustFromFloat(2.49), 7 * time.Second, money.MustFromFloat(0.004842)},
		{"UpCloud bills a started hour", "upcloud", money.MustFromFloat(1.5), 61 * time.Minute, 3 * money.Dollar},
		{"UpCloud, exactly an hour", "upcloud", money.MustFromFloat(1.5), time.Hour, money.MustFromFloat(1.5)},
		{"UpCloud, one second", "upcloud", money.MustFromFloat(1.5), time.Second, money.MustFromFloat(1.5)},
		{"not yet created", "sandbox", money.Dollar, 0, 0},
		{"no price", "sandbox", 0, time.Hour, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Accrued(tt.cloud, tt.price, t0, t0.Add(tt.elapsed)); got != tt.want {
				t.Errorf("Accrued(%s, %s, %s) = %s, want %s", tt.cloud, tt.price, tt.elapsed, got, tt.want)
			}
		})
	}
	if got := Accrued("sandbox", money.Dollar, time.Time{}, t0); got != 0 {
		t.Errorf("zero created time accrued %s", got)
	}
}
