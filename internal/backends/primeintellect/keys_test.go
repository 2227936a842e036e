package primeintellect

import (
	"context"
	"net/http"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/primeintellect"
)

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
			tr := &backendtest.BadGateway{Next: http.DefaultTransport, Match: backendtest.KeyAdds("/api/v1/ssh_keys"), Forward: tt.forward, N: tt.fails}
			b := e.backend(t, func(c *Config) { c.Transport = tr })
			offers, err := b.Offers(ctx)
			if err != nil {
				t.Fatal(err)
			}
			_, err = b.Create(ctx, createReq(findOffer(t, offers, "runpod", "L4_24GB", 1, false), "pi-vm-k"))
			switch {
			case tt.wantErr && cloudprovider.KindOf(err) != cloudprovider.ErrOther:
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
