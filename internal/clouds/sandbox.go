package clouds

import (
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox"
)

// Defaults of the sandbox's settings.
const (
	SandboxDefaultDir      = ".hydra-sandbox"
	SandboxDefaultBootTime = 2 * time.Second
)

// Sandbox is hydra's simulated cloud on this machine: offers, instances and faults kept in a directory.
// It is a registered cloud like the others (ByName, Names, Configure), but Simulated: nothing real is
// rented, it has no emulator, and the provider uses it only on purpose, when its block is present or
// when no real cloud's block is (All leaves it out).
var Sandbox = &Driver{
	Name:        sandbox.CloudName,
	Block:       "sandbox",
	Title:       "Sandbox",
	Simulated:   true,
	Facts:       sandbox.Facts,
	Description: "The simulated cloud: offers, instances and faults kept in a directory on this machine. Used automatically when no cloud block is configured.",
	Settings: []Setting{
		{Key: "dir", Doc: "Directory holding the sandbox's state (`catalog.json`, `faults.json`, `state.json`). Default `\".hydra-sandbox\"`."},
		{Key: "boot_time", Doc: "How long a new sandbox instance stays `pending`, as a Go duration. Default `\"2s\"`."},
	},
	Build: func(s Settings, inv *inventory.Inventory, logger hclog.Logger) (cloudprovider.InstanceManagerBackend, error) {
		cfg := sandbox.Config{Dir: sandboxDir(s), BootTime: SandboxDefaultBootTime}
		if v := s.String("boot_time"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("the sandbox block's boot_time %q is not a positive Go duration, such as \"90s\"", v)
			}
			cfg.BootTime = d
		}
		if s.provisioning {
			cfg.Machines = sandbox.SSHMachines{} // machines that provisioning reaches over SSH
		}
		return asBackend(sandbox.New(cfg, inv, logger))
	},
}

// sandboxDir is the sandbox's directory: its dir setting, else SandboxDefaultDir.
func sandboxDir(s Settings) string {
	if dir := s.String("dir"); dir != "" {
		return dir
	}
	return SandboxDefaultDir
}
