// Package money is hydra's one money type. Every price, from the moment a cloud's answer or a user's
// configuration is read until it is shown in a plan, is a USD: an exact whole number of micro-dollars
// (millionths of a US dollar). Comparison, ranking and cap checks are integer comparisons, so no
// rounding ever decides which offer wins or whether an offer is within a cap, and nothing a user can
// configure overflows.
package money

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// USD is an amount of US dollars (or US dollars per hour, for prices), in micro-dollars.
type USD int64

// Units and bounds.
const (
	// Micro is the smallest amount hydra represents: a millionth of a dollar.
	Micro USD = 1
	// Cent is a hundredth of a dollar.
	Cent USD = 10_000
	// Dollar is one US dollar.
	Dollar USD = 1_000_000
	// Max is the largest amount hydra accepts anywhere ($1,000,000,000). Prices and caps above it are
	// refused when read, so sums and differences of prices never come near int64's range.
	Max USD = 1_000_000_000 * Dollar
)

// ErrRange is returned for amounts that are negative, not a number, or above Max.
var ErrRange = errors.New("amount out of range")

// FromFloat converts dollars given as a float (a cloud's JSON number, a Terraform number) to USD,
// rounding once to the nearest micro-dollar (halves away from zero). Every decimal with at most six
// digits after the point converts exactly.
func FromFloat(f float64) (USD, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > float64(Max)/float64(Dollar) {
		return 0, fmt.Errorf("%w: %v (expected 0 to %s)", ErrRange, f, Max)
	}
	return USD(math.Round(f * float64(Dollar))), nil
}

// MustFromFloat is FromFloat for amounts known to be in range (constants, tests). It panics otherwise.
func MustFromFloat(f float64) USD {
	u, err := FromFloat(f)
	if err != nil {
		panic(err)
	}
	return u
}

// Parse reads a decimal amount of dollars ("2.39", "0.00005", "12"), exactly. Digits beyond the sixth
// after the point are rounded once, halves up.
func Parse(s string) (USD, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("%q is not an amount of dollars", s)
	}
	whole, frac, _ := strings.Cut(t, ".")
	if whole == "" {
		whole = "0"
	}
	if !allDigits(whole) || !allDigits(frac) || (frac == "" && strings.HasSuffix(t, ".")) {
		return 0, fmt.Errorf("%q is not an amount of dollars", s)
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > int64(Max/Dollar) {
		return 0, fmt.Errorf("%w: %q (expected at most %s)", ErrRange, s, Max)
	}
	roundUp := false
	if len(frac) > 6 {
		roundUp = frac[6] >= '5'
		frac = frac[:6]
	}
	frac += strings.Repeat("0", 6-len(frac))
	f, _ := strconv.ParseInt(frac, 10, 64)
	u := USD(w)*Dollar + USD(f)
	if roundUp {
		u++
	}
	if u > Max {
		return 0, fmt.Errorf("%w: %q (expected at most %s)", ErrRange, s, Max)
	}
	return u, nil
}

func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// Float64 returns the amount in dollars as a float, for Terraform number attributes. The float is the
// nearest to the exact decimal, so it prints back as the same decimal.
func (u USD) Float64() float64 {
	f, _ := strconv.ParseFloat(u.String(), 64)
	return f
}

// String prints the amount in dollars with cents always shown and further digits only where the
// amount has them: "2.39", "12.00", "0.0415", "2.00005". It never rounds, so a price shown within a
// cap is within it.
func (u USD) String() string {
	sign := ""
	if u < 0 {
		sign, u = "-", -u
	}
	s := fmt.Sprintf("%d.%06d", u/Dollar, u%Dollar)
	s = strings.TrimRight(s, "0")
	if i := strings.IndexByte(s, '.'); len(s)-i < 3 {
		s += strings.Repeat("0", 3-(len(s)-i))
	}
	return sign + s
}

// PerHour prints a price per hour: "$2.39/h".
func (u USD) PerHour() string { return "$" + u.String() + "/h" }

// Exchange is hydra's one conversion of the prices a cloud quotes into US dollars.
type Exchange struct {
	// EURToUSD is how many US dollars a euro is (a block's eur_to_usd).
	EURToUSD float64
}

// ToUSD converts a price a cloud quotes: amount of currency ("USD" or "EUR", in any case), in
// hundredths (cents) when cents is true. A dollar price is taken as written, to the micro-dollar. A
// euro price is converted at EURToUSD and rounded up once to the cent, whatever the rate,
// 1 included: a converted price is an estimate of the bill, never shown with digits the bill does not
// have, and never cheaper than the exact product. Both numbers are taken as the decimals they print as.
// Another currency, or an amount out of range, is an error.
func (x Exchange) ToUSD(amount float64, currency string, cents bool) (USD, error) {
	toCents := int64(100)
	if cents {
		toCents = 1
	}
	switch strings.ToUpper(strings.TrimSpace(currency)) {
	case "USD":
		a, ok := new(big.Rat).SetString(strconv.FormatFloat(amount, 'g', -1, 64))
		if !ok || a.Sign() < 0 {
			return 0, fmt.Errorf("%w: %v", ErrRange, amount)
		}
		// dollars x 10^6 micro-dollars, or cents x 10^4; rounded once, halves up.
		a.Mul(a, big.NewRat(int64(Dollar)/100*toCents, 1))
		a.Add(a, big.NewRat(1, 2))
		q := new(big.Int).Quo(a.Num(), a.Denom())
		if !q.IsInt64() || q.Int64() > int64(Max) {
			return 0, fmt.Errorf("%w: %v (expected at most %s)", ErrRange, amount, Max)
		}
		return USD(q.Int64()), nil
	case "EUR":
		return converted(amount, x.EURToUSD, toCents)
	default:
		return 0, fmt.Errorf("price in %q: hydra converts only US dollars and euros", currency)
	}
}

// converted is amount x rate x toCents, rounded up to a whole number of cents.
func converted(amount, rate float64, toCents int64) (USD, error) {
	a, ok1 := new(big.Rat).SetString(strconv.FormatFloat(amount, 'g', -1, 64))
	r, ok2 := new(big.Rat).SetString(strconv.FormatFloat(rate, 'g', -1, 64))
	if !ok1 || !ok2 || a.Sign() < 0 || r.Sign() < 0 {
		return 0, fmt.Errorf("%w: %v x %v", ErrRange, amount, rate)
	}
	cents := a.Mul(a, r)
	cents.Mul(cents, big.NewRat(toCents, 1))
	q, m := new(big.Int).QuoRem(cents.Num(), cents.Denom(), new(big.Int))
	if m.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() || q.Int64() > int64(Max/Cent) {
		return 0, fmt.Errorf("%w: %v x %v (expected at most %s)", ErrRange, amount, rate, Max)
	}
	return USD(q.Int64()) * Cent, nil
}

// Times scales an amount by a factor (an exchange rate, a margin), rounding once to the nearest
// micro-dollar, halves up. The factor is taken as the decimal it prints as (0.7 is seven tenths, not
// the binary float nearest to it), so the product is exact before that one rounding. The result
// saturates at Max; a negative or not-a-number factor gives 0.
func (u USD) Times(factor float64) USD {
	if math.IsNaN(factor) || factor <= 0 || u <= 0 {
		return 0
	}
	if math.IsInf(factor, 1) {
		return Max
	}
	f, ok := new(big.Rat).SetString(strconv.FormatFloat(factor, 'g', -1, 64))
	if !ok {
		return 0
	}
	p := f.Mul(f, new(big.Rat).SetInt64(int64(u)))
	// Round half up: floor(p + 1/2).
	p.Add(p, big.NewRat(1, 2))
	q := new(big.Int).Quo(p.Num(), p.Denom())
	if !q.IsInt64() || q.Int64() >= int64(Max) {
		return Max
	}
	return USD(q.Int64())
}
