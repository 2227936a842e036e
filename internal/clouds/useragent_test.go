package clouds

import (
	"context"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"
)

func TestUserAgentString(t *testing.T) {
	want := "hydra/0.1.0-dev (+https://registry.terraform.io/providers/hydragpu/hydra) Terraform/1.11.4"
	if got := UserAgent("0.1.0-dev", "1.11.4"); got != want {
		t.Errorf("UserAgent = %q, want %q", got, want)
	}
	if got := UserAgent("0.1.0", ""); got != "hydra/0.1.0 (+https://registry.terraform.io/providers/hydragpu/hydra)" {
		t.Errorf("without a Terraform version: %q", got)
	}
}

// Every cloud's requests carry the User-Agent the provider handed Configure (Env.UserAgent): each cloud is configured the provider's
// way (Configure) against its emulator, behind a proxy that records the User-Agent of every request.
func TestConfigureSendsUserAgent(t *testing.T) {
	clearEnv(t)
	inv := backendtest.Inventory(t)
	ua := UserAgent("9.8.7-test", "1.11.4")
	for _, d := range All() {
		t.Run(d.Name, func(t *testing.T) {
			emu, err := d.StartEmulator(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			defer func() { _ = emu.Stop(context.Background()) }()
			endpoint, _ := emu.Settings["endpoint"].(string)
			target, err := url.Parse(endpoint)
			if err != nil || endpoint == "" {
				t.Fatalf("the emulator's endpoint %q: %v", endpoint, err)
			}
			var mu sync.Mutex
			var seen []string
			proxy := httputil.NewSingleHostReverseProxy(target)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				seen = append(seen, r.Header.Get("User-Agent"))
				mu.Unlock()
				proxy.ServeHTTP(w, r)
			}))
			defer srv.Close()
			// The emulator's credentials, with the proxy as the endpoint (a path the emulator's URL has
			// is kept by the proxy).
			block := Values{}
			for k, v := range emu.Settings {
				block[k] = v
			}
			block["endpoint"] = srv.URL
			c, err := d.Configure(block, Env{Inventory: inv, UserAgent: ua})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Backend.Offers(ctx); err != nil {
				t.Fatalf("offers through the proxy: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) == 0 {
				t.Fatal("no request reached the proxy")
			}
			for i, got := range seen {
				if got != ua {
					t.Errorf("request %d: User-Agent %q, want %q", i+1, got, ua)
				}
			}
		})
	}
}
