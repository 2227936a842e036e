package jsonshape

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	recorded := []string{
		`[{"id":"a","ip":"1.2.3.4","price":"3.95","p2p":null,"storage":{"description":"dynamic"},"tags":[]},
		  {"id":"b","ip":"1.2.3.5","price":"1.20","p2p":"50GB/s","storage":{"description":"x","size":225},"tags":[]}]`,
	}
	tests := []struct {
		name    string
		got     string
		allowed []string
		want    []string
	}{
		{name: "same shape", got: `[{"id":"c","ip":"9.9.9.9","price":"1","p2p":null,"storage":{"description":"d"},"tags":[{"k":"v"}]}]`},
		{name: "optional key present", got: `[{"id":"c","ip":"9.9.9.9","price":"1","p2p":"x","storage":{"description":"d","size":1},"tags":[]}]`},
		{name: "empty array", got: `[]`},
		{name: "a number where strings were recorded", got: `[{"id":"c","ip":"9.9.9.9","price":1,"p2p":null,"storage":{"description":"d"},"tags":[]}]`,
			want: []string{"[].price: number, recorded string"}},
		{name: "null where strings were recorded", got: `[{"id":"c","ip":null,"price":"1","p2p":null,"storage":{"description":"d"},"tags":[]}]`,
			want: []string{"[].ip: null, recorded string"}},
		{name: "null allowed where documented", got: `[{"id":"c","ip":null,"price":"1","p2p":null,"storage":{"description":"d"},"tags":[]}]`,
			allowed: []string{"[].ip:null"}},
		{name: "missing key", got: `[{"id":"c","price":"1","p2p":null,"storage":{},"tags":[]}]`,
			want: []string{`[].storage: missing key "description"`, `[]: missing key "ip"`}},
		{name: "extra key", got: `[{"id":"c","ip":"1","price":"1","p2p":null,"storage":{"description":"d"},"tags":[],"new":1}]`,
			want: []string{`[]: key "new" never recorded`}},
		{name: "extra key allowed where documented", got: `[{"id":"c","ip":"1","price":"1","p2p":null,"storage":{"description":"d"},"tags":[],"new":{"x":1}}]`,
			allowed: []string{"[].new"}},
		{name: "an object where an array was recorded", got: `{"items":[]}`, want: []string{"(root): object, recorded array"}},
	}
	var values []any
	for _, r := range recorded {
		v, err := Decode([]byte(r))
		if err != nil {
			t.Fatal(err)
		}
		values = append(values, v)
	}
	s := Learn(values...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode([]byte(tt.got))
			if err != nil {
				t.Fatal(err)
			}
			diffs := s.Check(got, tt.allowed...)
			if strings.Join(diffs, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("differences:\n%s\nwant:\n%s", strings.Join(diffs, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestLearnMergesRecordings(t *testing.T) {
	a, _ := Decode([]byte(`{"n":1,"s":"x"}`))
	b, _ := Decode([]byte(`{"n":"2"}`))
	s := Learn(a, b)
	for _, tt := range []struct {
		got  string
		want int
	}{{`{"n":3}`, 0}, {`{"n":"3","s":"y"}`, 0}, {`{"n":null}`, 1}, {`{}`, 1}} {
		v, _ := Decode([]byte(tt.got))
		if d := s.Check(v); len(d) != tt.want {
			t.Errorf("%s: %v, want %d differences", tt.got, d, tt.want)
		}
	}
	m, _ := Decode([]byte(`{"A100_80GB":{"1":{"cheapest":{"onDemand":0.99,"spotPrice":null},"eu":{"onDemand":1,"spotPrice":0.5}}}}`))
	maps := Learn(m)
	for _, tt := range []struct {
		got  string
		want int
	}{
		{`{"H100_80GB":{"8":{"eu_north":{"onDemand":1.5,"spotPrice":0.5}}}}`, 0},
		{`{"H100_80GB":{"8":{"eu_north":{"onDemand":"1.5","spotPrice":null}}}}`, 1},
		{`{"H100_80GB":{"8":{"eu_north":{"spotPrice":null}}}}`, 1},
	} {
		v, _ := Decode([]byte(tt.got))
		if d := maps.Check(v, "{}", "{}{}", "{}{}{}"); len(d) != tt.want {
			t.Errorf("%s: %v, want %d differences", tt.got, d, tt.want)
		}
		if d := maps.Check(v); len(d) == 0 {
			t.Errorf("%s: keys that are data were taken for names", tt.got)
		}
	}
	if KindOf(true) != Bool || KindOf(nil) != Null || KindOf([]any{}) != Array {
		t.Error("KindOf")
	}
	if _, err := Decode([]byte("plain text")); err == nil {
		t.Error("plain text decoded")
	}
}
