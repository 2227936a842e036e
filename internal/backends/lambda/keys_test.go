package lambda

import (
	"context"
	"net/http"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/lambda"
)

// TestSSHKeyAddSurvivesOne5xx: one 5xx on POST /ssh-keys, whether Lambda stored the key or not, does not
// fail the create, for a user's key as for the generated no-login key, and the key is registered once;
// a 5xx on every add still fails the create (an unknown outcome) and launches nothing.
func TestSSHKeyAddSurvivesOne5xx(t *testing.T) {
	tests := []struct {
		name     string
		keys     []string
		fails    int
		forward  bool
		wantErr  bool
		wantKeys int
	}{
		{"user key, refused before acting", []string{testKey}, 1, false, false, 1},
		{"user key, answer lost after storing", []string{testKey}, 1, true, false, 1},
		{"user key, every add fails", []string{testKey}, 100, false, true, 0},
		{"no-login key, refused before acting", nil, 1, false, false, 1},
		{"no-login key, answer lost after storing", nil, 1, true, false, 1},
		{"no-login key, every add fails", nil, 100, false, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := startEmulator(t, emu.Options{})
			tr := &backendtest.BadGateway{Next: http.DefaultTransport, Match: backendtest.KeyAdds("/ssh-keys"), Forward: tt.forward, N: tt.fails}
			b := f.backend(t, func(c *Config) { c.Transport = tr })
			_, err := b.Create(context.Background(), request(t, cheapestH100(t, b), "k", tt.keys...))
			switch {
			case tt.wantErr && cloudprovider.KindOf(err) != cloudprovider.ErrOther:
				t.Fatalf("create through failing key adds: %v, want an unknown outcome (ErrOther)", err)
			case !tt.wantErr && err != nil:
				t.Fatalf("create through %d failed key add: %v", tt.fails, err)
			}
			if keys := f.srv.SSHKeyNames(); len(keys) != tt.wantKeys {
				t.Errorf("account keys %v, want %d", keys, tt.wantKeys)
			}
			if n := len(f.srv.Instances()); (n == 1) == tt.wantErr {
				t.Errorf("%d instances launched", n)
			}
		})
	}
}
