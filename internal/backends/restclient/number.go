package restclient

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// DecodeNumber reads a JSON value that clouds send as a number or as a numeric string. null, "" and
// an empty value are no number (ok false, no error).
func DecodeNumber(b []byte) (v float64, ok bool, err error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || string(b) == "null" {
		return 0, false, nil
	}
	if b[0] != '"' {
		if err := json.Unmarshal(b, &v); err != nil {
			return 0, false, err
		}
		return v, true, nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return 0, false, err
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false, nil
	}
	v, err = strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, false, fmt.Errorf("not a number: %q", s)
	}
	return v, true, nil
}
