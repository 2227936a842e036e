package primeintellect

import (
	"reflect"
	"testing"
)

// The lists of every GPU type become one list of items, counted; another shape yields none.
func TestLegacyAvailabilityItems(t *testing.T) {
	a, b, c := map[string]any{"id": "a"}, map[string]any{"id": "b"}, map[string]any{"id": "c"}
	got := LegacyAvailabilityItems(map[string]any{"H100_80GB": []any{a, b}, "A100_80GB": []any{c}})
	items, _ := got["items"].([]any)
	if len(items) != 3 || got["totalCount"] != 3.0 {
		t.Fatalf("got %v, want 3 items counted", got)
	}
	for _, want := range []any{a, b, c} {
		found := false
		for _, it := range items {
			found = found || reflect.DeepEqual(it, want)
		}
		if !found {
			t.Errorf("item %v missing from %v", want, items)
		}
	}
	if got := LegacyAvailabilityItems([]any{a}); got["totalCount"] != 0.0 || len(got["items"].([]any)) != 0 {
		t.Errorf("a list, not an object: %v", got)
	}
}
