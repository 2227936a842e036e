package primeintellect

// LegacyAvailabilityItems turns a decoded answer of the legacy GET /api/v1/availability (an object of
// lists of offers, keyed by GPU type) into the shape of GET /api/v1/availability/gpus ({"items": [...],
// "totalCount": n}) with the same offers. Tests that compare answers with recordings learn the shape of
// /availability/gpus items from both captures: the trimmed /availability/gpus capture holds 8 items, the
// legacy capture the same kind of items from 8 providers. A value of another shape yields no items.
func LegacyAvailabilityItems(legacy any) map[string]any {
	lists, _ := legacy.(map[string]any)
	var items []any
	for _, list := range lists {
		l, _ := list.([]any)
		items = append(items, l...)
	}
	return map[string]any{"items": items, "totalCount": float64(len(items))}
}
