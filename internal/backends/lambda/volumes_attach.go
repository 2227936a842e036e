package lambda

import (
	"cmp"
	"context"
	"slices"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

var _ cloudprovider.VolumeAttacher = (*Backend)(nil)

// Attachment says where Lambda mounted file system v on inst: Lambda mounts a file system itself at
// launch (MountedByCloud), at the mount point of the instance's file_system_mounts entry for it (the
// path CreateWithVolumes asked, so mountPath), or at the file system's own mount_point
// (/lambda/nfs/<name>) when the instance names it in file_system_names. The playbooks only check that
// it is mounted there. An instance without it is ErrInvalid.
func (b *Backend) Attachment(ctx context.Context, inst cloudprovider.Instance, v cloudprovider.Volume, mountPath string) (cloudprovider.Attachment, error) {
	const op = "reading volume attachment"
	in, err := b.client.Instance(ctx, inst.ID)
	if err != nil {
		return cloudprovider.Attachment{}, err
	}
	at := ""
	if i := slices.IndexFunc(in.FileSystemMounts, func(m FileSystemMount) bool { return m.FileSystemID == v.ID }); i >= 0 {
		at = in.FileSystemMounts[i].MountPoint
	} else if slices.Contains(in.FileSystemNames, v.Name) {
		all, err := b.client.FileSystems(ctx)
		if err != nil {
			return cloudprovider.Attachment{}, err
		}
		at = "/lambda/nfs/" + v.Name
		if j := slices.IndexFunc(all, func(fs FileSystem) bool { return fs.ID == v.ID }); j >= 0 && all[j].MountPoint != "" {
			at = all[j].MountPoint
		}
	}
	if at == "" {
		return cloudprovider.Attachment{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op,
			"file system %s is not mounted on machine %s (Lambda mounts file systems only at launch)", cmp.Or(v.Name, v.ID), cmp.Or(inst.Name, inst.ID))
	}
	return cloudprovider.Attachment{VolumeID: v.ID, Type: cloudprovider.VolumeSharedFS, MountPath: at, MountedByCloud: true}, nil
}
