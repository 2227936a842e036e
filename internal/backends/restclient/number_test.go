package restclient

import (
	"encoding/json"
	"testing"
)

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

// FlexFloat decodes what DecodeNumber reads, in a struct field; null and "" are 0.
func TestFlexFloat(t *testing.T) {
	for in, want := range map[string]FlexFloat{`{"p":0.6}`: 0.6, `{"p":"3.95"}`: 3.95, `{"p":null}`: 0, `{"p":""}`: 0} {
		var v struct {
			P FlexFloat `json:"p"`
		}
		if err := json.Unmarshal([]byte(in), &v); err != nil || v.P != want {
			t.Errorf("%s: %v, %v; want %v", in, v.P, err, want)
		}
	}
	var v struct {
		P FlexFloat `json:"p"`
	}
	if err := json.Unmarshal([]byte(`{"p":"abc"}`), &v); err == nil {
		t.Error(`"abc" decoded`)
	}
}
