package controlplane

import (
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/wait"
)

// sortedUses is uses sorted by mount path (a parent directory mounts before what is under it).
func sortedUses(uses []VolumeUse) []VolumeUse {
	out := slices.Clone(uses)
	slices.SortStableFunc(out, func(a, b VolumeUse) int { return strings.Compare(path.Clean(a.MountPath), path.Clean(b.MountPath)) })
	return out
}

// volumeVars is vars with the machine's volumes under cloudprovider.VolumesVar, for the provisioning digest; vars
// itself (not a copy) without volumes, so a machine without any keeps the digest it had.
func volumeVars(vars map[string]any, uses []VolumeUse) map[string]any {
	if len(uses) == 0 {
		return vars
	}
	out := maps.Clone(vars)
	if out == nil {
		out = map[string]any{}
	}
	list := make([]any, 0, len(uses))
	for _, u := range sortedUses(uses) {
		list = append(list, map[string]any{"volume_id": u.ID, "mount_path": path.Clean(u.MountPath)})
	}
	out[cloudprovider.VolumesVar] = list
	return out
}

// resolveMounts finds the cloud's volume of each use (resolveVolume) for a launch.
func (cp *ControlPlane) resolveMounts(ctx context.Context, uses []VolumeUse) ([]cloudprovider.VolumeMount, error) {
	var out []cloudprovider.VolumeMount
	for _, u := range sortedUses(uses) {
		v, err := cp.resolveVolume(ctx, u.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, cloudprovider.VolumeMount{VolumeID: v.ID, MountPath: path.Clean(u.MountPath)})
	}
	return out, nil
}

// attachAttempts bounds how often attachments asks a cloud about one volume that is not attached yet
// (about 4 minutes with the default poll pauses).
const attachAttempts = 20

// attachments asks inst's backend how each volume appears inside inst (VolumeAttacher), sorted by
// mount path. A volume the cloud has not attached yet (ErrOther) is asked again (attachAttempts). A
// backend without VolumeAttacher, and a volume its cloud mounts itself elsewhere than its mount path,
// are ErrInvalid errors saying so.
func (cp *ControlPlane) attachments(ctx context.Context, inst cloudprovider.Instance, uses []VolumeUse) ([]cloudprovider.Attachment, error) {
	if len(uses) == 0 {
		return nil, nil
	}
	pm, err := cp.manager.Route(inst.Name)
	if err != nil {
		return nil, err
	}
	va, ok := pm.Backend.(cloudprovider.VolumeAttacher)
	if !ok {
		return nil, cloudprovider.Errorf(cloudprovider.ErrInvalid, pm.Pool.Cloud, "mounting volumes",
			"%s's backend cannot say how a volume appears inside a machine (no VolumeAttacher), so hydra cannot mount %s's volumes", pm.Pool.Cloud, inst.Name)
	}
	var out []cloudprovider.Attachment
	for _, u := range sortedUses(uses) {
		v, err := cp.resolveVolume(ctx, u.ID)
		if err != nil {
			return nil, err
		}
		asked := path.Clean(u.MountPath)
		var a cloudprovider.Attachment
		// A cloud may not have attached or mounted it yet (ErrOther): asked again, as a boot is polled.
		err = wait.Until(ctx, "volume "+u.ID+" on "+inst.Name, wait.Backoff{First: cp.opts.PollInterval, Factor: 1.5, Max: cp.opts.PollMax, Attempts: attachAttempts},
			func(ctx context.Context) (bool, error) {
				var err error
				if a, err = va.Attachment(ctx, inst, v, asked); err != nil && cloudprovider.KindOf(err) == cloudprovider.ErrOther {
					return false, wait.Transient(err)
				}
				return err == nil, err
			})
		if err != nil {
			return nil, fmt.Errorf("how volume %s appears inside %s: %w", u.ID, inst.Name, err)
		}
		if a.MountedByCloud && path.Clean(a.MountPath) != asked {
			// The data would not be where the user looks for it (nor in the digest's mounts).
			return nil, cloudprovider.Errorf(cloudprovider.ErrInvalid, pm.Pool.Cloud, "mounting volumes",
				"%s mounts volume %s at %s itself, not at mount_path %s, and hydra cannot move it: set mount_path = %q", pm.Pool.Cloud, u.ID, a.MountPath, asked, a.MountPath)
		}
		out = append(out, a)
	}
	return out, nil
}

// createWithVolumes starts an instance in pm's pool with mounts attached (VolumeLauncher), as
// SinglePoolInstManager.Create does without.
func createWithVolumes(ctx context.Context, pm *SinglePoolInstManager, req cloudprovider.CreateRequest, mounts []cloudprovider.VolumeMount) (cloudprovider.Instance, error) {
	if !strings.HasPrefix(req.Name, pm.Pool.Prefix) {
		return cloudprovider.Instance{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, pm.Pool.Cloud, "creating instance", "name %q does not start with pool %s's prefix %q", req.Name, pm.Pool.Name, pm.Pool.Prefix)
	}
	vl, ok := pm.Backend.(cloudprovider.VolumeLauncher)
	if !ok {
		return cloudprovider.Instance{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, pm.Pool.Cloud, "creating instance",
			"%s cannot create a machine with volumes (its backend has no launch with volumes); nothing was created", pm.Pool.Cloud)
	}
	req.Pool = pm.Pool
	inst, err := vl.CreateWithVolumes(ctx, req, mounts)
	return cloudprovider.WithOwner(pm.Pool, inst), err
}
