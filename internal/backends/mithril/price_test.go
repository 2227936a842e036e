package mithril

import (
	"encoding/json"
	"testing"
)

func TestParseDollars(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  bool
	}{
		{"$12.50", 1250, false}, {"12.50", 1250, false}, {"$0.29", 29, false}, {"$12", 1200, false}, {"$12.5", 1250, false},
		{" $1,234.56 ", 123456, false}, {"$0.005", 1, false}, {"$0.004", 0, false}, {"$1.999", 200, false}, {".5", 50, false},
		{"-$1.00", -100, false}, {"", 0, true}, {"$", 0, true}, {"abc", 0, true}, {"$1.2.3", 0, true}, {"$1e3", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseDollars(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseDollars(%q) = %d, %v; want %d, err %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestPriceJSON(t *testing.T) {
	decode := map[string]func([]byte) (Cents, error){
		"DollarPrice": func(b []byte) (Cents, error) { var p DollarPrice; err := json.Unmarshal(b, &p); return p.Cents, err },
		"CentPrice":   func(b []byte) (Cents, error) { var p CentPrice; err := json.Unmarshal(b, &p); return p.Cents, err },
	}
	tests := []struct {
		typ, json string
		want      int64
		valid     bool
		err       bool
	}{
		{"DollarPrice", `"$10.00"`, 1000, true, false}, {"DollarPrice", `"10.5"`, 1050, true, false},
		{"DollarPrice", `12.03`, 1203, true, false}, {"DollarPrice", `null`, 0, false, false},
		{"DollarPrice", `""`, 0, false, false}, {"DollarPrice", `"ten"`, 0, false, true}, {"DollarPrice", `true`, 0, false, true},
		{"CentPrice", `1203`, 1203, true, false}, {"CentPrice", `1203.0`, 1203, true, false},
		{"CentPrice", `"1203"`, 1203, true, false}, {"CentPrice", `"$12.03"`, 1203, true, false},
		{"CentPrice", `null`, 0, false, false}, {"CentPrice", `0`, 0, true, false}, {"CentPrice", `"x"`, 0, false, true},
		{"DollarPrice", `"  "`, 0, false, false}, {"CentPrice", `"  "`, 0, false, false}, {"CentPrice", `" $1.00 "`, 100, true, false},
	}
	for _, tt := range tests {
		c, err := decode[tt.typ]([]byte(tt.json))
		if (err != nil) != tt.err || (err == nil && (c.Valid != tt.valid || c.Amount != tt.want)) {
			t.Errorf("%s %s = %+v, %v", tt.typ, tt.json, c, err)
		}
	}
	// Round trips.
	b, _ := json.Marshal(struct {
		D DollarPrice `json:"d"`
		C CentPrice   `json:"c"`
		N CentPrice   `json:"n"`
	}{DollarPrice{CentsOf(1250)}, CentPrice{CentsOf(99)}, CentPrice{}})
	if string(b) != `{"d":"$12.50","c":99,"n":null}` {
		t.Errorf("marshal: %s", b)
	}
	if FormatDollars(5) != "$0.05" || FormatDollars(-150) != "-$1.50" || formatPlain(209) != "2.09" {
		t.Errorf("formatting")
	}
}

func TestAPITime(t *testing.T) {
	for _, s := range []string{`"2025-06-01T12:00:00Z"`, `"2025-06-01T12:00:00.123456+00:00"`, `"2025-06-01T12:00:00.123456"`, `"2025-06-01 12:00:00"`} {
		var at APITime
		if err := json.Unmarshal([]byte(s), &at); err != nil || at.Year() != 2025 || at.Hour() != 12 {
			t.Errorf("%s: %v %v", s, at, err)
		}
	}
	var at APITime
	if err := json.Unmarshal([]byte(`null`), &at); err != nil || !at.IsZero() {
		t.Errorf("null: %v %v", at, err)
	}
}
