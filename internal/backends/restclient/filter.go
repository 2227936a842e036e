package restclient

import (
	"net/url"
	"strings"
)

// Allowed reports whether a configured filter lets v through: an empty filter allows everything, else v
// must be one of its entries, ignoring case (region, location and zone lists of a backend's Config).
func Allowed(filter []string, v string) bool {
	if len(filter) == 0 {
		return true
	}
	for _, f := range filter {
		if strings.EqualFold(f, v) {
			return true
		}
	}
	return false
}

// Query adds name, value pairs to q (a new one when nil) and returns it, leaving out the pairs whose
// value is empty: optional query parameters.
func Query(q url.Values, pairs ...string) url.Values {
	if q == nil {
		q = url.Values{}
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			q.Set(pairs[i], pairs[i+1])
		}
	}
	return q
}
