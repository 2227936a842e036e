package provider

import (
	"context"
	"errors"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/provision"
)

// The values of health.
const (
	healthHealthy   = "healthy"
	healthUnhealthy = "unhealthy"
	healthUnknown   = "unknown"
)

// defaultDrainTimeout bounds an execlet's drain when drain_timeout is not set.
const defaultDrainTimeout = 10 * time.Minute

// readHealth checks a ready, provisioned machine's health during a refresh: read-only, with the
// pinned host key, within provision.HealthProbeTimeout. A machine that cannot be reached or read is
// "unknown", never "unhealthy". With provisioning off there is nothing to check (health stays null).
func (r *gpuInstanceResource) readHealth(ctx context.Context, m *gpuInstanceModel, inst controlplane.Instance) {
	if !r.data.provisioning || r.data.runner == nil || m.Status.ValueString() != string(controlplane.StatusReady) {
		return
	}
	now := types.StringValue(time.Now().UTC().Format(time.RFC3339))
	if inst.SSH == nil {
		m.Health, m.HealthCheckedAt, m.HealthReason = types.StringValue(healthUnknown), now, types.StringValue("the cloud reports no SSH address")
		return
	}
	h, err := r.data.runner.ProbeHealth(ctx, *inst.SSH, m.HostKey.ValueString())
	m.HealthCheckedAt = now
	switch {
	case err != nil:
		m.Health, m.HealthReason = types.StringValue(healthUnknown), types.StringValue(truncate(err.Error(), 1024))
		level := tflog.Warn
		if !errors.Is(err, provision.ErrHealthUnknown) {
			level = tflog.Error
		}
		level(hydraLog(), "machine health unknown", map[string]any{"name": inst.Name, "why": err.Error()})
	case h.Healthy:
		m.Health, m.HealthReason = types.StringValue(healthHealthy), types.StringNull()
		tflog.Debug(hydraLog(), "machine healthy", map[string]any{"name": inst.Name})
	default:
		m.Health, m.HealthReason = types.StringValue(healthUnhealthy), types.StringValue(truncate(h.Reason(), 1024))
		tflog.Warn(hydraLog(), "machine unhealthy", map[string]any{"name": inst.Name, "failed": h.Failed, "why": h.Reason()})
	}
}

// drain runs an execlet's drain before it is deleted, bounded by drain_timeout, and logs what happened
// (drained, timed out, unreachable). It never blocks or fails the destroy.
func (r *gpuInstanceResource) drain(ctx context.Context, state *gpuInstanceModel) {
	if state.Kind.ValueString() != inventory.KindExeclet || !r.data.provisioning || r.data.runner == nil ||
		state.SSHHost.IsNull() || state.SSHHost.ValueString() == "" {
		return
	}
	name := state.ID.ValueString()
	if u := r.data.provisioningUnavailable; u != nil {
		tflog.Warn(hydraLog(), "execlet not drained: provisioning cannot run here", map[string]any{"name": name, "why": u.summary})
		return
	}
	timeout := parseDuration(state.DrainTimeout, defaultDrainTimeout)
	pm, err := r.data.cp.Manager().Route(name)
	if err != nil {
		tflog.Warn(hydraLog(), "execlet not drained: its pool is not configured", map[string]any{"name": name, "why": err.Error()})
		return
	}
	inst := controlplane.Instance{Name: name, ID: state.CloudInstanceID.ValueString(), SSH: &controlplane.SSHEndpoint{
		Host: state.SSHHost.ValueString(), Port: int(state.SSHPort.ValueInt64()), User: state.SSHUser.ValueString()}}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	started := time.Now()
	tflog.Info(hydraLog(), "draining execlet", map[string]any{"name": name, "drain_timeout": timeout.String()})
	err = r.data.runner.Drain(dctx, inst, pm.Pool, state.GPUType.ValueString(), int(state.GPUCount.ValueInt64()), state.HostKey.ValueString())
	took := time.Since(started).Round(time.Second).String()
	switch {
	case err == nil:
		tflog.Info(hydraLog(), "execlet drained", map[string]any{"name": name, "took": took})
	case errors.Is(dctx.Err(), context.DeadlineExceeded):
		tflog.Warn(hydraLog(), "execlet drain timed out; deleting it with its work still running", map[string]any{"name": name, "drain_timeout": timeout.String()})
	default:
		tflog.Warn(hydraLog(), "execlet could not be drained (unreachable or failed); deleting it", map[string]any{"name": name, "took": took, "why": err.Error()})
	}
}
