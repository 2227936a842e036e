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

// FlexFloat is a decimal a cloud sends either as a JSON number (0.6) or as a numeric string ("3.95");
// null and "" decode to 0.
type FlexFloat float64

// UnmarshalJSON accepts a number, a numeric string, an empty string or null (DecodeNumber).
func (f *FlexFloat) UnmarshalJSON(b []byte) error {
	v, _, err := DecodeNumber(b)
	if err != nil {
		return err
	}
	*f = FlexFloat(v)
	return nil
}
