package restclient

import (
	"net/url"
	"testing"
)

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
