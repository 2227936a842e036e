package verda

import (
	"cmp"
	"context"
	"regexp"
	"slices"
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/verda/verdaapi"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// How a Verda volume appears inside its machine. A block volume (NVMe, HDD) is a virtio disk whose name
// Verda reports as the volume's target ("vdb"; the OS volume is vda): the device is /dev/<target>. A
// shared volume (NVMe_Shared) is no block device but an NFS export: its mount_command says how to mount
// it ("mount -t nfs -o nconnect=16 nfs.fin-01.datacrunch.io:<pseudo path> /mnt/<dir>", as the SDKs'
// fixtures and Verda's dashboard show it), and the source and options are read from there; without one,
// from the target (the endpoint itself on a live account) or the pseudo path on
// nfs.<location in lower case>.datacrunch.io, with nconnect=16. Verda mounts nothing itself.

var _ cloudprovider.VolumeAttacher = (*Backend)(nil)

// DefaultNFSOptions are the mount options Verda's displayed mount command carries for a shared volume.
const DefaultNFSOptions = "nconnect=16"

var (
	deviceNameRE = regexp.MustCompile(`^[a-z][a-z0-9]*$`)
	nfsSourceRE  = regexp.MustCompile(`^[A-Za-z0-9.-]+:/?[A-Za-z0-9._/-]*$`)
	mountOptsRE  = regexp.MustCompile(`^[A-Za-z0-9=,._-]*$`)
)

// Attachment says how volume v appears inside inst (a machine or a cluster's node that got it at
// launch): a block volume's device, a shared volume's NFS source and options. A machine the volume is
// not on (not among the volume's instances, and for a cluster's node not among its cluster's shared
// volumes either) is ErrInvalid; a volume Verda reports without a device or endpoint yet is ErrOther (asked
// again later it may have one).
func (b *Backend) Attachment(ctx context.Context, inst cloudprovider.Instance, v cloudprovider.Volume, mountPath string) (cloudprovider.Attachment, error) {
	const op = "reading volume attachment"
	raw, err := b.readVolume(ctx, v.ID)
	if err != nil {
		return cloudprovider.Attachment{}, err
	}
	on := attachedTo(raw)
	if !slices.Contains(on, inst.ID) && (inst.Cluster == "" || !slices.Contains(on, inst.Cluster)) {
		// A cluster's node: the cluster may list the volume among its shared volumes instead.
		if ok, err := b.clusterHas(ctx, inst.Cluster, raw.ID); err != nil || !ok {
			if err != nil {
				return cloudprovider.Attachment{}, err
			}
			return cloudprovider.Attachment{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op,
				"volume %s is not attached to machine %s (it is on %v)", raw.Name, cmp.Or(inst.Name, inst.ID), on)
		}
	}
	out := cloudprovider.Attachment{VolumeID: raw.ID, Type: cloudprovider.VolumeBlock, MountPath: mountPath}
	if raw.Type == verdaapi.VolumeTypeNVMeShared {
		out.Type, out.FSType = cloudprovider.VolumeSharedFS, "nfs"
		out.Source, out.Options = sharedMount(raw)
		if !nfsSourceRE.MatchString(out.Source) || !mountOptsRE.MatchString(out.Options) {
			return cloudprovider.Attachment{}, cloudprovider.Errorf(cloudprovider.ErrOther, CloudName, op,
				"Verda gives shared volume %s no usable NFS endpoint yet (source %q, options %q)", raw.Name, out.Source, out.Options)
		}
		return out, nil
	}
	target := strings.TrimPrefix(strings.TrimSpace(deref(raw.Target)), "/dev/")
	if !deviceNameRE.MatchString(target) {
		return cloudprovider.Attachment{}, cloudprovider.Errorf(cloudprovider.ErrOther, CloudName, op,
			"Verda reports no device for volume %s on machine %s yet (target %q)", raw.Name, cmp.Or(inst.Name, inst.ID), target)
	}
	out.Device = "/dev/" + target
	return out, nil
}

// clusterHas reports whether cluster id (none: false) lists volume volumeID among its shared volumes.
func (b *Backend) clusterHas(ctx context.Context, id, volumeID string) (bool, error) {
	if id == "" {
		return false, nil
	}
	vc, err := b.client.Cluster(ctx, id)
	if err != nil {
		return false, clusterGone(err)
	}
	return slices.ContainsFunc(vc.SharedVolumes, func(v verdaapi.ClusterSharedVolume) bool { return v.ID == volumeID }), nil
}

// sharedMount reads a shared volume's NFS source and mount options: from its mount_command, else its
// target when that is an endpoint, else its pseudo path on Verda's NFS host of its location.
func sharedMount(v verdaapi.Volume) (source, options string) {
	fields := strings.Fields(deref(v.MountCommand))
	parsed := false
	for i := 0; i < len(fields); i++ {
		switch f := fields[i]; {
		case f == "-o" && i+1 < len(fields):
			options, parsed = fields[i+1], true
			i++
		case f == "-t" && i+1 < len(fields):
			i++
		case source == "" && !strings.HasPrefix(f, "-") && strings.Contains(f, ":"):
			source = f
		}
	}
	if source != "" {
		if !parsed {
			options = ""
		}
		return source, options
	}
	if t := strings.TrimSpace(deref(v.Target)); strings.Contains(t, ":") {
		return t, DefaultNFSOptions
	}
	if p := strings.TrimSpace(deref(v.PseudoPath)); p != "" && v.Location != "" {
		return "nfs." + strings.ToLower(v.Location) + ".datacrunch.io:" + p, DefaultNFSOptions
	}
	return "", ""
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
