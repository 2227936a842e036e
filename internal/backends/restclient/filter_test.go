package restclient

import (
	"net/url"
	"testing"
)

func TestAllowed(t *testing.T) {
	tests := []struct {
		filter []string
		v      string
		want   bool
	}{
		{nil, "FIN-01", true},
		{[]string{"fin-01", "ICE-01"}, "FIN-01", true},
		{[]string{"fin-01"}, "ice-01", false},
	}
	for _, tt := range tests {
		if got := Allowed(tt.filter, tt.v); got != tt.want {
			t.Errorf("Allowed(%v, %q) = %v, want %v", tt.filter, tt.v, got, tt.want)
		}
	}
}

func TestQuery(t *testing.T) {
	q := Query(nil, "a", "1", "b", "", "c", "x y")
	if got := q.Encode(); got != "a=1&c=x+y" {
		t.Fatalf("got %q", got)
	}
	base := url.Values{"limit": {"5"}}
	if got := Query(base, "page", "p2").Encode(); got != "limit=5&page=p2" {
		t.Fatalf("got %q", got)
	}
}
