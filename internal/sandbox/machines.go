package sandbox

import (
	"fmt"
	"os"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox/simhost"
)

// SSHMachines makes sandbox instances real SSH servers on loopback (internal/sandbox/simhost) whose GPU layer
// is simulated, so hydra's playbooks and health checks run on them unchanged. An instance of a catalog
// entry with "machine": "container" is a container without systemd; every other one a virtual machine.
type SSHMachines struct{}

var _ Machines = SSHMachines{}

// Start starts (or finds running) the machine of one instance. The sandbox does not report host keys,
// so provisioning trusts the key it first sees and pins it.
func (SSHMachines) Start(dir string, rec Record) (cloudprovider.SSHEndpoint, error) {
	// simhost locks the machine's directory itself, across processes.
	ep, err := simhost.Ensure(dir, simhost.Spec{
		GPUModel:       simhost.NVIDIAName(rec.GPUType),
		GPUCount:       rec.GPUCount,
		AuthorizedKeys: rec.SSHKeys,
		// A catalog entry with "machine": "container" rents containers without systemd.
		Container: rec.Machine == "container",
		// A cluster's node: sshd listens on its private address too; a fabric cluster's has InfiniBand.
		PrivateAddr: rec.PrivateAddr,
		Fabric:      rec.Fabric,
		// The volumes it got at create: their stores are in the sandbox directory (see volumes.go).
		Volumes: machineVolumes(dir, rec.Volumes),
	})
	if err != nil {
		return cloudprovider.SSHEndpoint{}, fmt.Errorf("starting the machine of %s: %w", rec.Name, err)
	}
	return cloudprovider.SSHEndpoint{Host: ep.Host, Port: ep.Port, User: ep.User}, nil
}

// Stop ends the machine's processes.
func (SSHMachines) Stop(dir string) error {
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return nil
	}
	return simhost.Stop(dir)
}
