package restclient

import (
	"net/url"
)

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
