package provision

import (
	"context"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
)

// DrainPlaybook drains an execlet before it is removed: it stops the agent taking work and waits for
// the running work to finish (see playbooks/drain.yml).
const DrainPlaybook = "drain.yml"

// Drain runs the drain playbook on inst with the pinned host key until the running work has finished
// or ctx ends (the caller bounds it with the resource's drain_timeout). The result is only reported:
// a machine is deleted whatever its drain did.
func (r *Runner) Drain(ctx context.Context, inst cloudprovider.Instance, pool inventory.Pool, gpuType string, gpuCount int, hostKey string) error {
	p := pool
	p.Playbook = DrainPlaybook
	_, err := r.Provision(ctx, cloudprovider.ProvisionRequest{Instance: inst, Pool: p, GPUType: gpuType, GPUCount: gpuCount, HostKey: hostKey, Attempt: 1})
	return err
}
