package realos

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

// The apt proxy fetches from the mirror only; what never changes under its URL (a package in the pool,
// an index named by its hash) is fetched once and served from the cache after, InRelease every time;
// a failed fetch is not kept.
func TestAptProxy(t *testing.T) {
	var hits atomic.Int64
	mirror := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch {
		case strings.HasSuffix(r.URL.Path, "/missing.deb"):
			http.NotFound(w, r)
		default:
			_, _ = io.WriteString(w, "content of "+r.URL.Path)
		}
	}))
	defer mirror.Close()
	p, err := newAptProxy(t.TempDir(), mirror.URL+"/debian")
	if err != nil {
		t.Fatal(err)
	}
	proxy := httptest.NewServer(p)
	defer proxy.Close()
	pu, _ := url.Parse(proxy.URL)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
	get := func(u string) (int, string) {
		t.Helper()
		resp, err := client.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		path     string
		status   int
		mirrored int64 // requests the mirror sees for two GETs
	}{
		{"/debian/pool/main/p/prometheus-node-exporter/prometheus-node-exporter_1.5.0-1_amd64.deb", http.StatusOK, 1},
		{"/debian/dists/bookworm/main/binary-amd64/by-hash/SHA256/0123abcd", http.StatusOK, 1},
		{"/debian/dists/bookworm/InRelease", http.StatusOK, 2},
		{"/debian/pool/main/m/missing.deb", http.StatusNotFound, 2},
	} {
		before := hits.Load()
		for range 2 {
			status, body := get(mirror.URL + tc.path)
			if status != tc.status || (status == http.StatusOK && body != "content of "+tc.path) {
				t.Errorf("GET %s through the proxy: %d %q, want %d with the mirror's content", tc.path, status, body, tc.status)
			}
		}
		if n := hits.Load() - before; n != tc.mirrored {
			t.Errorf("GET %s twice: the mirror was asked %d time(s), want %d", tc.path, n, tc.mirrored)
		}
	}
	if status, _ := get("http://example.invalid/debian/pool/x.deb"); status != http.StatusForbidden {
		t.Errorf("a host other than the mirror's: HTTP %d, want 403", status)
	}
}
