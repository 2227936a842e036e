package primeintellect

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/primeintellect"
)

// failKeyAdds answers the first n POST /api/v1/ssh_keys/ with 502, after passing the request on
// when forward is set (the key is stored, the answer lost) or without (nothing stored).
type failKeyAdds struct {
	next    http.RoundTripper
	forward bool
	mu      sync.Mutex
	n       int
}

func (t *failKeyAdds) RoundTrip(r *http.Request) (*http.Response, error) {
	t.mu.Lock()
	hit := t.n > 0 && r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/api/v1/ssh_keys")
	if hit {
		t.n--
	}
	t.mu.Unlock()
	if !hit {
		return t.next.RoundTrip(r)
	}
	if t.forward {
		resp, err := t.next.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		resp.Body.Close()
	}
	return &http.Response{StatusCode: http.StatusBadGateway, Header: http.Header{"Content-Type": {"text/html"}},
		Body: io.NopCloser(strings.NewReader("<html>502 Bad Gateway</html>")), Request: r}, nil
}

// TestSSHKeyAddSurvivesOne5xx: one 5xx on POST /ssh_keys, whether Prime stored the key or not, does
// not fail the create, and the key is registered once; a 5xx on every add still fails it.
func TestSSHKeyAddSurvivesOne5xx(t *testing.T) {
	tests := []struct {
		name     string
		fails    int
		forward  bool
		wantErr  bool
		wantKeys int
	}{
		{"refused before acting", 1, false, false, 1},
		{"answer lost after storing", 1, true, false, 1},
		{"every add fails", 100, false, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, emu.Options{})
			tr := &failKeyAdds{next: http.DefaultTransport, forward: tt.forward, n: tt.fails}
			b := e.backend(t, func(c *Config) { c.Transport = tr })
			offers, err := b.Offers(ctx)
			if err != nil {
				t.Fatal(err)
			}
			_, err = b.Create(ctx, createReq(findOffer(t, offers, "runpod", "L4_24GB", 1, false), "pi-vm-k"))
			switch {
			case tt.wantErr && controlplane.KindOf(err) != controlplane.ErrOther:
				t.Fatalf("create through failing key adds: %v, want an unknown outcome (ErrOther)", err)
			case !tt.wantErr && err != nil:
				t.Fatalf("create through %d failed key add: %v", tt.fails, err)
			}
			keys, err := b.Client().SSHKeys(ctx)
			if err != nil || len(keys) != tt.wantKeys {
				t.Fatalf("keys at Prime = %+v %v, want %d", keys, err, tt.wantKeys)
			}
			if tt.wantErr && e.emu.CreateCount() != 0 {
				t.Fatal("a pod was created without its key")
			}
		})
	}
}
