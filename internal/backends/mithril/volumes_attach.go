package mithril

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// How a Mithril volume appears inside a bid's instance.
//
// File (shared_fs): Mithril mounts a file share itself at /mnt/<volume name> (docs.mithril.ai, "Hosted
// Kubernetes clusters": pods reach it with hostPath /mnt/your-fileshare-name; Mithril's Flow SDK finds
// it there as a virtiofs mount and bind-mounts it to the path asked). The attachment is that bind mount:
// source /mnt/<name>, fstype none, options bind; at /mnt/<name> itself it is mounted by the cloud.
//
// Block: NOT documented by Mithril. The VolumeModel's attachments map has no description, and no page
// found says which device a block volume becomes. Mithril's Flow SDK (volume_operations.py) expects the
// i-th volume of the bid's launch_specification.volumes (counting every volume, from 0) at /dev/vd<d+i>
// (vdd, vde, ...) and falls back to /dev/xvd<letter>, NVMe by-id links and the first unmounted disk;
// Attachment reports the SDK's first guess, /dev/vd<d+i>. Verify on a live machine before relying on it.

var _ cloudprovider.VolumeAttacher = (*Backend)(nil)

// firstBlockLetter is the device letter the Flow SDK expects for a bid's first volume.
const firstBlockLetter = 'd'

// Attachment says how volume v appears inside inst (a machine, or a node of a cluster bid) whose bid
// names it in launch_specification.volumes. A machine whose bid does not name it is ErrInvalid.
func (b *Backend) Attachment(ctx context.Context, inst cloudprovider.Instance, v cloudprovider.Volume, mountPath string) (cloudprovider.Attachment, error) {
	const op = "reading volume attachment"
	vol, err := b.volume(ctx, v.ID)
	if err != nil {
		return cloudprovider.Attachment{}, err
	}
	bid, err := b.bidOf(ctx, inst, vol)
	if err != nil {
		return cloudprovider.Attachment{}, err
	}
	idx := slices.Index(bid.LaunchSpecification.Volumes, vol.FID)
	if idx < 0 {
		return cloudprovider.Attachment{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op,
			"volume %s is not in the launch specification of machine %s (bid %s)", vol.Name, cmp.Or(inst.Name, inst.ID), bid.FID)
	}
	return attachmentOf(vol, idx, mountPath)
}

// bidOf reads the bid inst belongs to: a machine's id is its bid's FID, a cluster node's Cluster is;
// a node known only by its instance FID is found among the bids using vol.
func (b *Backend) bidOf(ctx context.Context, inst cloudprovider.Instance, vol Volume) (Bid, error) {
	bid, err := b.client.GetBid(ctx, cmp.Or(inst.Cluster, inst.ID))
	if err == nil || inst.Cluster != "" || !cloudprovider.IsNotFound(err) {
		return bid, err
	}
	for _, fid := range vol.Bids {
		other, gerr := b.client.GetBid(ctx, fid)
		if gerr == nil && slices.Contains(other.Instances, inst.ID) {
			return other, nil
		}
	}
	return Bid{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, "reading volume attachment",
		"no bid using volume %s has machine %s", vol.Name, cmp.Or(inst.Name, inst.ID))
}

// attachmentOf is how vol, the idx-th volume of its bid's launch specification, appears inside the
// bid's instances, to be mounted at mountPath.
func attachmentOf(vol Volume, idx int, mountPath string) (cloudprovider.Attachment, error) {
	out := cloudprovider.Attachment{VolumeID: vol.FID, MountPath: mountPath}
	if vol.Interface == DiskInterfaceFile {
		out.Type = cloudprovider.VolumeSharedFS
		at := "/mnt/" + vol.Name
		if strings.TrimSuffix(mountPath, "/") == at {
			out.MountedByCloud = true
			return out, nil
		}
		out.Source, out.FSType, out.Options = at, "none", "bind"
		return out, nil
	}
	letter := firstBlockLetter + idx
	if letter > 'z' {
		return cloudprovider.Attachment{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, "reading volume attachment",
			"volume %s is volume %d of its bid; hydra knows device names for the first %d only", vol.Name, idx+1, 'z'-firstBlockLetter+1)
	}
	out.Type, out.Device = cloudprovider.VolumeBlock, fmt.Sprintf("/dev/vd%c", rune(letter))
	return out, nil
}
