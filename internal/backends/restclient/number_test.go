package restclient

import "testing"

func TestDecodeNumber(t *testing.T) {
	tests := []struct {
		in      string
		want    float64
		wantOK  bool
		wantErr bool
	}{
		{in: ``}, {in: `null`}, {in: `""`}, {in: `"  "`},
		{in: `0.6`, want: 0.6, wantOK: true},
		{in: ` "3.95" `, want: 3.95, wantOK: true},
		{in: `9.7e-05`, want: 9.7e-05, wantOK: true},
		{in: `"abc"`, wantErr: true},
		{in: `true`, wantErr: true},
	}
	for _, tt := range tests {
		v, ok, err := DecodeNumber([]byte(tt.in))
		if v != tt.want || ok != tt.wantOK || (err != nil) != tt.wantErr {
			t.Errorf("DecodeNumber(%s) = %v, %v, %v; want %v, %v, error %v", tt.in, v, ok, err, tt.want, tt.wantOK, tt.wantErr)
		}
	}
}

// FlexFloat decodes what DecodeNumber reads; null and "" are 0, and what is no number is an error.
func TestFlexFloat(t *testing.T) {
	for in, want := range map[string]FlexFloat{`0.6`: 0.6, `"3.95"`: 3.95, `null`: 0, `""`: 0} {
		var f FlexFloat
		if err := f.UnmarshalJSON([]byte(in)); err != nil || f != want {
			t.Errorf("%s: %v, %v; want %v", in, f, err, want)
		}
	}
	var f FlexFloat
	if err := f.UnmarshalJSON([]byte(`"abc"`)); err == nil {
		t.Error(`"abc" decoded`)
	}
}
