package mithril

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// Cents is an amount of US dollars held as whole cents, so bid arithmetic never drifts the way float
// dollars do. Valid reports whether the API sent a value at all (prices may be null).
type Cents struct {
	Amount int64
	Valid  bool
}

// CentsOf returns a valid amount of n cents.
func CentsOf(n int64) Cents { return Cents{Amount: n, Valid: true} }

// USD returns the amount as hydra's money type, exactly (one cent is money.Cent); 0 when not valid.
func (c Cents) USD() money.USD {
	if !c.Valid {
		return 0
	}
	return centsToUSD(c.Amount)
}

// centsToUSD converts whole cents to money.USD exactly.
func centsToUSD(cents int64) money.USD { return money.USD(cents) * money.Cent }

// usdToCentsFloor converts an amount (another cloud's price, a user's max price) to the largest whole
// number of cents at or below it: $2.999999 is 299 cents. Integer arithmetic: nothing is rounded up.
func usdToCentsFloor(u money.USD) int64 {
	if u <= 0 {
		return 0
	}
	return int64(u / money.Cent)
}

// usdToCentsNearest converts an amount to the nearest whole number of cents (halves up), for a price
// signal read back from Offer.PricePerHour.
func usdToCentsNearest(u money.USD) int64 {
	if u <= 0 {
		return 0
	}
	return int64((u + money.Cent/2) / money.Cent)
}

// String formats the amount the way Mithril writes prices: "$12.50" ("" when not valid).
func (c Cents) String() string {
	if !c.Valid {
		return ""
	}
	return FormatDollars(c.Amount)
}

// FormatDollars writes whole cents as a Mithril dollar string, e.g. 1250 -> "$12.50".
func FormatDollars(cents int64) string {
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	return fmt.Sprintf("%s$%d.%02d", sign, cents/100, cents%100)
}

// formatPlain writes whole cents as a plain decimal, e.g. 1250 -> "12.50" (Offer.Details values).
func formatPlain(cents int64) string {
	return strings.TrimPrefix(FormatDollars(cents), "$")
}

// ParseDollars parses a dollar amount written as Mithril writes it ("$12.50"), or without the sign
// ("12.50", "12.5", "12", "$1,234.56"), into whole cents. Fractions of a cent are rounded half up.
// Parsing is decimal (no floats), so "$0.29" is exactly 29 cents.
func ParseDollars(s string) (int64, error) {
	orig := s
	s = strings.TrimSpace(s)
	neg := false
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	}
	s = strings.TrimPrefix(s, "$")
	s = strings.ReplaceAll(s, ",", "")
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("invalid price %q", orig)
	}
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" {
		whole = "0"
	}
	for _, part := range []string{whole, frac} {
		for _, r := range part {
			if r < '0' || r > '9' {
				return 0, fmt.Errorf("invalid price %q", orig)
			}
		}
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > math.MaxInt64/100-1 {
		return 0, fmt.Errorf("invalid price %q", orig)
	}
	frac += "000"
	c, _ := strconv.ParseInt(frac[:2], 10, 64)
	cents := w*100 + c
	if frac[2] >= '5' {
		cents++
	}
	if neg {
		cents = -cents
	}
	return cents, nil
}

// DollarPrice is a price the API writes in dollars: normally a "$X.XX" string (spot availability,
// bids), also accepted as a bare number of dollars. JSON null leaves it invalid.
type DollarPrice struct{ Cents }

// UnmarshalJSON accepts "$12.50", "12.50", 12.5 and null.
func (p *DollarPrice) UnmarshalJSON(b []byte) error {
	s, quoted, ok, err := priceJSON(b)
	if err != nil || !ok {
		*p = DollarPrice{}
		return err
	}
	c, err := ParseDollars(s)
	if err != nil && !quoted {
		err = fmt.Errorf("invalid price %s", b)
	}
	if err != nil {
		return err
	}
	*p = DollarPrice{CentsOf(c)}
	return nil
}

// priceJSON reads a price's JSON: ok is false for null, nothing or an empty string; else s is the
// number's text or the string's trimmed contents, and quoted says which.
func priceJSON(b []byte) (s string, quoted, ok bool, err error) {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) || len(b) == 0 {
		return "", false, false, nil
	}
	if b[0] != '"' {
		return string(b), false, true, nil
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return "", true, false, err
	}
	s = strings.TrimSpace(s)
	return s, true, s != "", nil
}

// MarshalJSON writes the "$X.XX" string (null when invalid).
func (p DollarPrice) MarshalJSON() ([]byte, error) {
	if !p.Valid {
		return []byte("null"), nil
	}
	return json.Marshal(p.String())
}

// CentPrice is a price the API writes as integer cents (/v2/pricing/current). A "$X.XX" string is also
// accepted (as dollars), and so is a numeric string of cents. JSON null leaves it invalid.
type CentPrice struct{ Cents }

// UnmarshalJSON accepts 1250, 1250.0, "1250", "$12.50" and null.
func (p *CentPrice) UnmarshalJSON(b []byte) error {
	s, quoted, ok, err := priceJSON(b)
	if err != nil || !ok {
		*p = CentPrice{}
		return err
	}
	if quoted && strings.Contains(s, "$") {
		c, err := ParseDollars(s)
		if err != nil {
			return err
		}
		*p = CentPrice{CentsOf(c)}
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("invalid cents value %s", b)
	}
	*p = CentPrice{CentsOf(int64(math.Round(f)))}
	return nil
}

// MarshalJSON writes the integer cents (null when invalid).
func (p CentPrice) MarshalJSON() ([]byte, error) {
	if !p.Valid {
		return []byte("null"), nil
	}
	return []byte(strconv.FormatInt(p.Amount, 10)), nil
}

// OptInt is an integer the API may send as null (or, tolerated, as a numeric string).
type OptInt struct {
	Value int64
	Valid bool
}

// UnmarshalJSON accepts 3, 3.0, "3" and null.
func (o *OptInt) UnmarshalJSON(b []byte) error {
	v, ok, err := restclient.DecodeNumber(b)
	if err != nil {
		return fmt.Errorf("invalid integer %s", bytes.TrimSpace(b))
	}
	*o = OptInt{Value: int64(v), Valid: ok}
	return nil
}

// MarshalJSON writes the integer (null when invalid).
func (o OptInt) MarshalJSON() ([]byte, error) {
	if !o.Valid {
		return []byte("null"), nil
	}
	return []byte(strconv.FormatInt(o.Value, 10)), nil
}

// APITime is a timestamp as the API writes it: RFC 3339 with or without fractional seconds, or a
// naive ISO time without a zone (taken as UTC, as FastAPI writes naive datetimes). Null is zero.
type APITime struct{ time.Time }

var timeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999"}

// UnmarshalJSON accepts the layouts above and null.
func (t *APITime) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*t = APITime{}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("invalid time %s", b)
	}
	if s == "" {
		*t = APITime{}
		return nil
	}
	for _, l := range timeLayouts {
		if v, err := time.Parse(l, s); err == nil {
			*t = APITime{v.UTC()}
			return nil
		}
	}
	return fmt.Errorf("invalid time %q", s)
}

// MarshalJSON writes RFC 3339 (null when zero).
func (t APITime) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	return json.Marshal(t.UTC().Format(time.RFC3339Nano))
}
