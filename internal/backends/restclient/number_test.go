package restclient

import "testing"

// DecodeNumber reads a JSON number or numeric string; null, "" and an empty value are no number (ok
// false, no error); anything else is an error. FlexFloat decodes each the same, no number as 0.
func TestDecodeNumber(t *testing.T) {
	check := func(in string, want float64, wantOK, wantErr bool) {
		t.Helper()
		v, ok, err := DecodeNumber([]byte(in))
		if v != want || ok != wantOK || (err != nil) != wantErr {
			t.Errorf("DecodeNumber(%s) = %v, %v, %v; want %v, %v, error %v", in, v, ok, err, want, wantOK, wantErr)
		}
		var f FlexFloat
		if err := f.UnmarshalJSON([]byte(in)); float64(f) != want || (err != nil) != wantErr {
			t.Errorf("FlexFloat %s: %v, %v; want %v, error %v", in, f, err, want, wantErr)
		}
	}
	for in, want := range map[string]float64{`0.6`: 0.6, `"3.95"`: 3.95, ` "3.95" `: 3.95, `9.7e-05`: 9.7e-05} {
		check(in, want, true, false)
	}
	for _, in := range []string{``, `null`, `""`, `"  "`} {
		check(in, 0, false, false)
	}
	for _, in := range []string{`"abc"`, `true`} {
		check(in, 0, false, true)
	}
}
