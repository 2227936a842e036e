package restclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Every request, retries included, carries the configured User-Agent: Config's, else Tuning's, else
// DefaultUserAgent.
func TestUserAgent(t *testing.T) {
	const provider = "hydra/1.2.3 (+https://registry.terraform.io/providers/hydragpu/hydra) Terraform/1.11.4"
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"tuning", Config{Tuning: Tuning{UserAgent: provider}}, provider},
		{"config wins", Config{Tuning: Tuning{UserAgent: provider}, UserAgent: "other/1"}, "other/1"},
		{"default", Config{}, DefaultUserAgent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var seen []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				seen = append(seen, r.Header.Get("User-Agent"))
				n := len(seen)
				mu.Unlock()
				if n == 1 {
					w.WriteHeader(http.StatusServiceUnavailable) // retried: the retry must carry it too
					return
				}
				_, _ = w.Write([]byte(`{}`))
			}))
			defer srv.Close()
			cfg := tc.cfg
			cfg.Cloud, cfg.BaseURL = "test", srv.URL
			cfg.RequestsPerSecond, cfg.Burst, cfg.RetryWaitMin, cfg.RetryWaitMax = 1000, 1000, 1, 1
			c, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.DoJSON(context.Background(), Request{Method: http.MethodGet, Path: "/x"}, nil); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != 2 {
				t.Fatalf("%d requests, want 2 (one retry)", len(seen))
			}
			for i, ua := range seen {
				if ua != tc.want {
					t.Errorf("request %d: User-Agent %q, want %q", i+1, ua, tc.want)
				}
			}
		})
	}
}
