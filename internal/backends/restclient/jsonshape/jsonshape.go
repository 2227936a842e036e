// Package jsonshape compares the shape of JSON answers: which keys an object has and which JSON type
// each value is, recursively. Tests use it to hold an emulator's answers to the shapes a cloud's
// recorded answers show (nulls, numbers sent as strings, keys present or absent), without comparing
// the values.
package jsonshape

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Kind is a JSON type.
type Kind string

// The JSON types.
const (
	Null   Kind = "null"
	Bool   Kind = "bool"
	Number Kind = "number"
	String Kind = "string"
	Object Kind = "object"
	Array  Kind = "array"
)

// KindOf is the JSON type of a value decoded by encoding/json into an any.
func KindOf(v any) Kind {
	switch v.(type) {
	case nil:
		return Null
	case bool:
		return Bool
	case float64, json.Number:
		return Number
	case string:
		return String
	case map[string]any:
		return Object
	case []any:
		return Array
	}
	return Kind(fmt.Sprintf("%T", v))
}

// Schema is what a set of recorded values says of their shape: the types seen, for objects the keys
// seen (and how many of the objects had each), for arrays the union of their elements.
type Schema struct {
	Kinds   map[Kind]bool
	Objects int
	Keys    map[string]*Schema
	// seen counts, per key, the objects that had it.
	seen map[string]int
	// Values is the union of the objects' values whatever their key, for objects whose keys are data
	// (maps: GPU type to offers, say).
	Values *Schema
	Elem   *Schema
}

// Learn builds the schema of recorded values (each decoded by encoding/json into an any). Values
// seen at the same place are merged: an array's elements into one schema, and several recordings of
// one endpoint into one.
func Learn(values ...any) *Schema {
	s := &Schema{}
	for _, v := range values {
		s.add(v)
	}
	return s
}

func (s *Schema) add(v any) {
	if s.Kinds == nil {
		s.Kinds = map[Kind]bool{}
	}
	s.Kinds[KindOf(v)] = true
	switch x := v.(type) {
	case map[string]any:
		if s.Keys == nil {
			s.Keys, s.seen = map[string]*Schema{}, map[string]int{}
		}
		s.Objects++
		if s.Values == nil {
			s.Values = &Schema{}
		}
		for k, e := range x {
			if s.Keys[k] == nil {
				s.Keys[k] = &Schema{}
			}
			s.Keys[k].add(e)
			s.seen[k]++
			s.Values.add(e)
		}
	case []any:
		if s.Elem == nil {
			s.Elem = &Schema{}
		}
		for _, e := range x {
			s.Elem.add(e)
		}
	}
}

// Decode decodes JSON text for Learn and Check; text that is not JSON fails.
func Decode(data []byte) (any, error) {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// Check compares got with the schema and returns the differences, sorted and once each: a value of a type the
// recordings never had there, a key every recorded object had that got lacks, and a key no recorded
// object had. Keys some recorded objects lack may be missing. Paths name the place: "items[].disk.step"
// (a key of an object in the array under items), "[]" (an element of a top-level array), "" (the root).
//
// allowed lists the paths where got may go beyond the recordings, for what the cloud's documentation
// says and the recordings happen not to show: a key named there may be present although no recording
// had it, and its value is not checked; a path ending in ":<kind>" ("[].ip:null") allows that one
// extra type there, the value still being checked when it is of a recorded type; a path ending in "{}"
// declares the object before it a map whose keys are data ("{}" for a top-level object keyed by GPU
// type): its values, whatever their keys, are checked against all the values recorded there, under
// that path ("{}[].gpuType").
func (s *Schema) Check(got any, allowed ...string) []string {
	allow := map[string]bool{}
	for _, a := range allowed {
		allow[a] = true
	}
	var diffs []string
	s.check("", got, allow, &diffs)
	sort.Strings(diffs)
	return slices.Compact(diffs)
}

func (s *Schema) check(path string, v any, allow map[string]bool, diffs *[]string) {
	k := KindOf(v)
	if !s.Kinds[k] {
		if !allow[path+":"+string(k)] {
			*diffs = append(*diffs, fmt.Sprintf("%s: %s, recorded %s", show(path), k, s.kinds()))
		}
		return
	}
	switch x := v.(type) {
	case map[string]any:
		if allow[path+"{}"] {
			// A map: its keys are data, each value is checked against every recorded value.
			for _, e := range x {
				s.Values.check(path+"{}", e, allow, diffs)
			}
			return
		}
		for key := range s.Keys {
			if _, ok := x[key]; !ok && s.seen[key] == s.Objects {
				*diffs = append(*diffs, fmt.Sprintf("%s: missing key %q", show(path), key))
			}
		}
		for key, e := range x {
			p := join(path, key)
			child := s.Keys[key]
			switch {
			case allow[p]:
			case child == nil:
				*diffs = append(*diffs, fmt.Sprintf("%s: key %q never recorded", show(path), key))
			default:
				child.check(p, e, allow, diffs)
			}
		}
	case []any:
		if s.Elem == nil || len(s.Elem.Kinds) == 0 {
			return // the recordings only had empty arrays here: any element goes
		}
		for _, e := range x {
			s.Elem.check(path+"[]", e, allow, diffs)
		}
	}
}

func (s *Schema) kinds() string {
	var ks []string
	for k := range s.Kinds {
		ks = append(ks, string(k))
	}
	sort.Strings(ks)
	return strings.Join(ks, " or ")
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func show(path string) string {
	if path == "" {
		return "(root)"
	}
	return path
}
