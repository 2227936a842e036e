package jsonshape

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Compare holds an answer to a recording, both taken as schemas (Learn): it returns, sorted and once
// each, every key the recording has that the answer lacks where the answer has objects at all, every
// place whose JSON types (null aside) differ, and every place where one side is null and the other
// never is. Keys only the answer has are not reported (the clouds' documentation names more keys than
// any recording shows; tests that need it use Check). Arrays compare the union of their elements; an
// empty array on either side says nothing. maps lists the paths of objects whose keys are data ("" for
// the root, "prices.zone[]" for a price list's zones, in Check's notation): their values are compared
// whatever their keys, under path+"{}". Paths are Check's ("items[].disk.step", "(root)").
func Compare(recorded, got *Schema, maps ...string) []string {
	var diffs []string
	compare("", recorded, got, maps, &diffs)
	sort.Strings(diffs)
	return slices.Compact(diffs)
}

func compare(path string, rec, got *Schema, maps []string, diffs *[]string) {
	if rec == nil || got == nil || len(rec.Kinds) == 0 || len(got.Kinds) == 0 {
		return
	}
	rk, gk := nonNull(rec.Kinds), nonNull(got.Kinds)
	if len(rk) > 0 && len(gk) > 0 && !slices.Equal(rk, gk) {
		*diffs = append(*diffs, fmt.Sprintf("%s: %s, recorded %s", show(path), strings.Join(gk, " or "), strings.Join(rk, " or ")))
	}
	switch {
	case rec.Kinds[Null] && !got.Kinds[Null]:
		*diffs = append(*diffs, fmt.Sprintf("%s: never null, recorded null", show(path)))
	case got.Kinds[Null] && !rec.Kinds[Null]:
		*diffs = append(*diffs, fmt.Sprintf("%s: null, never recorded null", show(path)))
	}
	if rec.Kinds[Object] && got.Kinds[Object] {
		if slices.Contains(maps, path) {
			compare(path+"{}", rec.Values, got.Values, maps, diffs)
		} else {
			for key, child := range rec.Keys {
				if g, ok := got.Keys[key]; ok {
					compare(join(path, key), child, g, maps, diffs)
				} else {
					*diffs = append(*diffs, fmt.Sprintf("%s: missing key %q", show(path), key))
				}
			}
		}
	}
	if rec.Kinds[Array] && got.Kinds[Array] {
		compare(path+"[]", rec.Elem, got.Elem, maps, diffs)
	}
}

// nonNull lists the kinds other than null, sorted.
func nonNull(kinds map[Kind]bool) []string {
	var out []string
	for k := range kinds {
		if k != Null {
			out = append(out, string(k))
		}
	}
	sort.Strings(out)
	return out
}
