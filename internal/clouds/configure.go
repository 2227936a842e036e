package clouds

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
)

// Configured is a cloud ready for the control plane.
type Configured struct {
	Backend cloudprovider.InstanceManagerBackend
	// Emulated is true when the backend talks to the cloud's local emulator (emulator_dir).
	Emulated bool
	// StateDir is a simulated cloud's directory (the sandbox's dir), "" for a real cloud.
	StateDir string
}

// Env is what Configure needs besides a block, handed in by its caller (the provider): nothing of it is
// kept in this package between calls.
type Env struct {
	// Inventory is the validated inventory the backend maps GPU names and pools with.
	Inventory *inventory.Inventory
	// Logger receives the backend's logs (nil: none).
	Logger hclog.Logger
	// UserAgent is the User-Agent of the cloud's API requests (UserAgent; "" for restclient's default).
	UserAgent string
	// Tuning is the API client's tuning (retries, timeouts, rate limit, transport); its zero value is
	// restclient's defaults. UserAgent, when set, replaces Tuning's.
	Tuning restclient.Tuning
	// Emulators are the running emulators a block's emulator_dir reuses or adds to; nil fails such a
	// block (an *EmulatorError).
	Emulators *Emulators
	// Provisioning says machines are provisioned over SSH: a simulated cloud then starts machines that
	// provisioning can reach (the sandbox's sshd on loopback).
	Provisioning bool
}

// Configure resolves a present, enabled block's settings, starts the cloud's emulator when the block
// sets emulator_dir (or reuses the one env.Emulators runs for that directory), and builds the backend.
// Errors are a *MissingError (credentials), an *EmulatorError, or the backend's own (an invalid
// setting).
func (d *Driver) Configure(block Values, env Env) (Configured, error) {
	s, err := d.Resolve(block)
	if err != nil {
		return Configured{}, err
	}
	s.UserAgent = env.UserAgent
	s.base = env.Tuning
	s.provisioning = env.Provisioning
	var c Configured
	if dir := s.String(EmulatorDirKey); dir != "" {
		emu, err := env.Emulators.start(d, dir)
		if err != nil {
			return Configured{}, err
		}
		for k, v := range emu.Settings {
			s.values[k] = v
		}
		c.Emulated = true
	}
	logger := env.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	c.Backend, err = d.Build(s, env.Inventory, logger)
	if err != nil {
		return Configured{}, err
	}
	if d.Simulated {
		c.StateDir = sandboxDir(s)
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

// tuning is the client tuning every driver's Build passes to its backend: Env.Tuning (the defaults
// unless the caller tunes), with the User-Agent.
func (s Settings) tuning() restclient.Tuning {
	t := s.base
	if s.UserAgent != "" {
		t.UserAgent = s.UserAgent
	}
	return t
}

// Emulators are the local emulators a process runs for emulator_dir, one per cloud and directory. Every
// Configure handed the same Emulators shares them (their state lives in the directory anyway), so that
// configuring the provider again, as every Terraform command and test step does, starts no new server.
// They run until Stop. The zero value is not usable: use NewEmulators.
type Emulators struct {
	mu      sync.Mutex
	running map[emulatorKey]Emulator
}

type emulatorKey struct{ cloud, dir string }

// NewEmulators returns an empty set of running emulators.
func NewEmulators() *Emulators {
	return &Emulators{running: map[emulatorKey]Emulator{}}
}

// Len is how many emulators run.
func (e *Emulators) Len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.running)
}

func (e *Emulators) start(d *Driver, dir string) (Emulator, error) {
	if e == nil {
		return Emulator{}, &EmulatorError{Cloud: d.Title, Dir: dir, Err: errors.New("this program runs no emulators")}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Emulator{}, &EmulatorError{Cloud: d.Title, Dir: dir, Err: err}
	}
	key := emulatorKey{d.Name, abs}
	e.mu.Lock()
	defer e.mu.Unlock()
	if emu, ok := e.running[key]; ok {
		return emu, nil
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return Emulator{}, &EmulatorError{Cloud: d.Title, Dir: dir, Err: err}
	}
	emu, err := d.StartEmulator(abs)
	if err != nil {
		return Emulator{}, &EmulatorError{Cloud: d.Title, Dir: dir, Err: err}
	}
	e.running[key] = emu
	return emu, nil
}

// Stop shuts down every emulator of the set. Call it when the provider is done (after the plugin
// server returns), or in tests.
func (e *Emulators) Stop(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var errs []error
	for k, emu := range e.running {
		if err := emu.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stopping the %s emulator in %s: %w", k.cloud, k.dir, err))
		}
		delete(e.running, k)
	}
	return errors.Join(errs...)
}

// asBackend turns a backend constructor's answer into the interface, without a non-nil interface
// holding a nil pointer when it failed.
func asBackend[B cloudprovider.InstanceManagerBackend](b B, err error) (cloudprovider.InstanceManagerBackend, error) {
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
