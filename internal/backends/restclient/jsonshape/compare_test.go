package jsonshape

import (
	"strings"
	"testing"
)

func TestCompare(t *testing.T) {
	const recorded = `{"items":[{"id":"a","ip":null,"price":"3.95","tags":[],"disk":{"size":1}},{"id":"b","ip":"1.2.3.4","price":"1"}],
		"zones":{"fi":{"amount":1},"de":{"amount":2}},"total":2}`
	tests := []struct {
		name string
		got  string
		maps []string
		want []string
	}{
		{name: "same shape", got: `{"items":[{"id":"x","ip":null,"price":"1","disk":{"size":2}},{"id":"y","ip":"5.6.7.8","price":"2","tags":[{"k":1}]}],
			"zones":{"fi":{"amount":1},"de":{"amount":1}},"total":1,"extra":true}`},
		{name: "missing keys, nested too", got: `{"items":[{"id":"x","ip":null,"price":"1","disk":{}},{"id":"y","ip":"1","price":"2"}],"zones":{"fi":{"amount":1},"de":{"amount":1}}}`,
			want: []string{`(root): missing key "total"`, `items[].disk: missing key "size"`, `items[]: missing key "tags"`}},
		{name: "a type differs", got: `{"items":[{"id":"x","ip":null,"price":1,"tags":[],"disk":{"size":1}},{"id":"y","ip":"1","price":2}],"zones":{"fi":{"amount":1},"de":{"amount":1}},"total":2}`,
			want: []string{`items[].price: number, recorded string`}},
		{name: "null where never recorded, never null where recorded", got: `{"items":[{"id":null,"ip":"1","price":"1","tags":[],"disk":{"size":1}}],"zones":{"fi":{"amount":1},"de":{"amount":1}},"total":2}`,
			want: []string{`items[].id: null, never recorded null`, `items[].ip: never null, recorded null`}},
		{name: "map keys are data", maps: []string{"zones"}, got: `{"items":[{"id":"x","ip":null,"price":"1","tags":[],"disk":{"size":1}},{"id":"y","ip":"1","price":"2"}],"zones":{"us":{}},"total":2}`,
			want: []string{`zones{}: missing key "amount"`}},
		{name: "map keys as keys", got: `{"items":[{"id":"x","ip":null,"price":"1","tags":[],"disk":{"size":1}},{"id":"y","ip":"1","price":"2"}],"zones":{"us":{"amount":1}},"total":2}`,
			want: []string{`zones: missing key "de"`, `zones: missing key "fi"`}},
		{name: "an empty array says nothing", got: `{"items":[],"zones":{"fi":{"amount":1},"de":{"amount":1}},"total":0}`},
	}
	rec, err := Decode([]byte(recorded))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode([]byte(tt.got))
			if err != nil {
				t.Fatal(err)
			}
			diffs := Compare(Learn(rec), Learn(got), tt.maps...)
			if strings.Join(diffs, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("differences:\n%s\nwant:\n%s", strings.Join(diffs, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
