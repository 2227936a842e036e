package money

import (
	"errors"
	"math"
	"testing"
)

func TestFromFloat(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want USD
	}{
		{0, 0},
		{0.70005, 700_050},
		{2.00005, 2_000_050},
		{0.1 + 0.2, 300_000},
		{24, 24 * Dollar},
		{0.0000005, 1}, // half a micro rounds away from zero
		{1e9, Max},
	} {
		got, err := FromFloat(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("FromFloat(%v) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []float64{-0.01, math.NaN(), math.Inf(1), 1e9 + 1, 9.3e18} {
		if _, err := FromFloat(bad); !errors.Is(err, ErrRange) {
			t.Errorf("FromFloat(%v): err %v, want ErrRange", bad, err)
		}
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want USD
	}{
		{"2.39", 2_390_000},
		{"12", 12 * Dollar},
		{".5", 500_000},
		{"0.00005", 50},
		{"0.0000004", 0},
		{"0.0000005", 1},
		{"1000000000", Max},
	} {
		got, err := Parse(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "-1", "1.", "1e3", "abc", "1.2.3", "1000000000.000001", "99999999999999999999"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

func TestString(t *testing.T) {
	for _, tc := range []struct {
		in   USD
		want string
	}{
		{0, "0.00"},
		{700_050, "0.70005"},
		{2_000_050, "2.00005"},
		{12 * Dollar, "12.00"},
		{2_390_000, "2.39"},
		{41_500, "0.0415"},
		{1, "0.000001"},
		{Max, "1000000000.00"},
		{-50, "-0.00005"},
	} {
		if got := tc.in.String(); got != tc.want {
			t.Errorf("%d.String() = %q, want %q", tc.in, got, tc.want)
		}
		if back, err := Parse(tc.in.String()); tc.in >= 0 && (err != nil || back != tc.in) {
			t.Errorf("Parse(String(%d)) = %d, %v", tc.in, back, err)
		}
		if tc.in >= 0 {
			if back, _ := FromFloat(tc.in.Float64()); back != tc.in {
				t.Errorf("FromFloat(Float64(%d)) = %d", tc.in, back)
			}
		}
	}
}

func TestTimes(t *testing.T) {
	if got := (2 * Dollar).Times(1.08); got != 2_160_000 {
		t.Errorf("2 x 1.08 = %d", got)
	}
	if got := Max.Times(2); got != Max {
		t.Errorf("Max x 2 = %d, want saturation at Max", got)
	}
	if got := (7 * Cent).Times(0.5); got != 35_000 {
		t.Errorf("0.07 x 0.5 = %d", got)
	}
	// The exact product is rounded once, halves up, whatever the factor's binary form: 1.320005 x 0.7
	// is 0.9240035 exactly (the float product is 924003.4999...).
	for _, tc := range []struct {
		u      USD
		factor float64
		want   USD
	}{
		{1_320_005, 0.7, 924_004},
		{21_780_050, 0.35, 7_623_018},
		{23_613_745, 0.7, 16_529_622},
		{1_000_001, 0.5, 500_001},
		{3, 1.0 / 3, 1},
		{Dollar, 0, 0},
		{Dollar, -1, 0},
	} {
		if got := tc.u.Times(tc.factor); got != tc.want {
			t.Errorf("%s x %v = %d, want %d", tc.u, tc.factor, got, tc.want)
		}
	}
}

// TestExchange: the one conversion. Dollars are taken as written; euros are converted and rounded up
// once to the cent, whatever the rate (1 included), whether quoted in euros or in euro cents.
func TestExchange(t *testing.T) {
	for _, tc := range []struct {
		name     string
		amount   float64
		currency string
		cents    bool
		rate     float64
		want     USD
	}{
		{"euros, rounded up", 2.53, "EUR", false, 1.08, 2_740_000}, // 2.7324 -> 2.74
		{"euros, exact", 2.50, "eur", false, 1.08, 2_700_000},
		{"euros, many digits", 1.111607, "EUR", false, 1.08, 1_210_000}, // 1.20053556 -> 1.21
		{"euro cents, rounded up", 253, "EUR", true, 1.08, 2_740_000},   // 273.24 cents -> 2.74
		{"euro cents at rate 1 are still rounded up", 132.6889, "EUR", true, 1, 1_330_000},
		{"euro cents at rate 1, whole cents", 250, "EUR", true, 1, 2_500_000},
		{"dollars as written", 1.326889, "USD", false, 0, 1_326_889},
		{"dollar cents as written", 132.6889, "usd", true, 0, 1_326_889},
		{"dollar cents, beyond the micro-dollar: rounded once", 0.00005, "USD", true, 0, 1},
		{"zero", 0, "EUR", false, 1.08, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Exchange{EURToUSD: tc.rate}.ToUSD(tc.amount, tc.currency, tc.cents)
			if err != nil || got != tc.want {
				t.Errorf("ToUSD(%v %s, cents %v) at %v = %s, %v; want %s", tc.amount, tc.currency, tc.cents, tc.rate, got, err, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		name     string
		amount   float64
		currency string
	}{
		{"negative euros", -1, "EUR"},
		{"negative dollars", -1, "USD"},
		{"euros above Max", 1e12, "EUR"},
		{"dollars above Max", 1e12, "USD"},
		{"another currency", 1, "GBP"},
		{"no currency", 1, ""},
	} {
		if got, err := (Exchange{EURToUSD: 1.08}).ToUSD(tc.amount, tc.currency, false); err == nil {
			t.Errorf("%s: ToUSD(%v, %q) = %s, want an error", tc.name, tc.amount, tc.currency, got)
		}
	}
}
