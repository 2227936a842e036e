package lambda

import (
	"context"
	"net/http"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/lambda"
)

// TestSSHKeyAddSurvivesOne5xx: one 5xx on POST /ssh-keys, whether Lambda stored the key or not, does not
// fail the create, for a user's key as for the generated no-login key, and the key is registered once;
// a 5xx on every add still fails the create (an unknown outcome) and launches nothing.
func TestSSHKeyAddSurvivesOne5xx(t *testing.T) {
	for name, keys := range map[string][]string{"user key": {testKey}, "no-login key": nil} {
		t.Run(name, func(t *testing.T) {
			backendtest.WantKeyAddSurvives5xx(t, "/ssh-keys", func(t *testing.T, tr http.RoundTripper) (int, int, error) {
				f := startEmulator(t, emu.Options{})
				b := f.backend(t, func(c *Config) { c.Transport = tr })
				_, err := b.Create(context.Background(), request(t, cheapestH100(t, b), "k", keys...))
				return len(f.srv.SSHKeyNames()), len(f.srv.Instances()), err
			})
		})
	}
}
