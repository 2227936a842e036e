package clouds

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
)

// Configured is a cloud ready for the control plane.
type Configured struct {
	Backend controlplane.InstanceManagerBackend
	// Emulated is true when the backend talks to the cloud's local emulator (emulator_dir).
	Emulated bool
}

// Configure resolves a present, enabled block's settings, starts the cloud's emulator when the block
// sets emulator_dir, and builds the backend. Errors are a *MissingError (credentials), an
// *EmulatorError, or the backend's own (an invalid setting).
func (d *Driver) Configure(block Values, inv *inventory.Inventory, logger hclog.Logger) (Configured, error) {
	s, err := d.Resolve(block)
	if err != nil {
		return Configured{}, err
	}
	s.UserAgent = currentUserAgent()
	var c Configured
	if dir := s.String(EmulatorDirKey); dir != "" {
		emu, err := startEmulator(d, dir)
		if err != nil {
			return Configured{}, err
		}
		for k, v := range emu.Settings {
			s.values[k] = v
		}
		c.Emulated = true
	}
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	c.Backend, err = d.Build(s, inv, logger)
	if err != nil {
		return Configured{}, err
	}
	return c, nil
}

// UserAgent is the User-Agent of hydra's cloud API requests, in the style of HashiCorp's providers:
// "hydra/0.1.0 (+https://registry.terraform.io/providers/hydragpu/hydra) Terraform/1.11.4".
func UserAgent(providerVersion, terraformVersion string) string {
	ua := "hydra/" + providerVersion + " (+" + ProviderURL + ")"
	if terraformVersion != "" {
		ua += " Terraform/" + terraformVersion
	}
	return ua
}

// ProviderURL is the provider's page, named in the User-Agent.
const ProviderURL = "https://registry.terraform.io/providers/hydragpu/hydra"

// userAgent is what SetUserAgent set: Configure's callers hand it only a block.
var userAgent atomic.Value

// SetUserAgent sets the User-Agent of the backends Configure builds from now on (UserAgent). The
// provider sets it once it knows its own version and Terraform's; "" restores restclient's default.
func SetUserAgent(ua string) { userAgent.Store(ua) }

func currentUserAgent() string {
	ua, _ := userAgent.Load().(string)
	return ua
}

// tuning is the client tuning every driver's Build passes to its backend: the defaults, with the
// User-Agent.
func (s Settings) tuning() restclient.Tuning {
	return restclient.Tuning{UserAgent: s.UserAgent}
}

// Emulators started through Configure are shared by every Configure of this process with the same
// cloud and directory (their state lives in the directory anyway), so that configuring the provider
// again, as every Terraform command and test step does, starts no new server. They run until
// StopEmulators.
var (
	emuMu   sync.Mutex
	running = map[emulatorKey]Emulator{}
)

type emulatorKey struct{ cloud, dir string }

func startEmulator(d *Driver, dir string) (Emulator, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Emulator{}, &EmulatorError{Cloud: d.Title, Dir: dir, Err: err}
	}
	key := emulatorKey{d.Name, abs}
	emuMu.Lock()
	defer emuMu.Unlock()
	if emu, ok := running[key]; ok {
		return emu, nil
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return Emulator{}, &EmulatorError{Cloud: d.Title, Dir: dir, Err: err}
	}
	emu, err := d.StartEmulator(abs)
	if err != nil {
		return Emulator{}, &EmulatorError{Cloud: d.Title, Dir: dir, Err: err}
	}
	running[key] = emu
	return emu, nil
}

// StopEmulators shuts down every emulator that Configure started in this process. Call it when the
// provider is done (after the plugin server returns), or in tests.
func StopEmulators(ctx context.Context) error {
	emuMu.Lock()
	defer emuMu.Unlock()
	var errs []error
	for k, emu := range running {
		if err := emu.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stopping the %s emulator in %s: %w", k.cloud, k.dir, err))
		}
		delete(running, k)
	}
	return errors.Join(errs...)
}

// asBackend turns a backend constructor's answer into the interface, without a non-nil interface
// holding a nil pointer when it failed.
func asBackend[B controlplane.InstanceManagerBackend](b B, err error) (controlplane.InstanceManagerBackend, error) {
	if err != nil {
		return nil, err
	}
	return b, nil
}

// serve starts an emulator's server on a loopback port.
func serve(start func(addr string) (string, func(context.Context) error, error), overrides func(baseURL string) Values) (Emulator, error) {
	url, stop, err := start("127.0.0.1:0")
	if err != nil {
		return Emulator{}, err
	}
	return Emulator{Settings: overrides(url), Stop: stop}, nil
}

// endpointSetting is a cloud's base URL, overridable for private endpoints and tests.
func endpointSetting(title, def string) Setting {
	return Setting{Key: "endpoint", Default: def,
		Doc: "Base URL of the " + title + " API, for private endpoints and tests."}
}
