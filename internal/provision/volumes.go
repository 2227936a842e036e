package provision

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// The playbooks get a machine's volumes under cloudprovider.VolumesVar: a list of maps with volume_id,
// type, mount_path, device, source, fstype, options and mounted_by_cloud, one per
// ProvisionRequest.Volumes entry.

// volumesVar is the value of cloudprovider.VolumesVar for the playbooks: the attachments in order ([] for none).
func volumesVar(vols []cloudprovider.Attachment) []any {
	out := make([]any, 0, len(vols))
	for _, v := range vols {
		out = append(out, map[string]any{
			"volume_id":        v.VolumeID,
			"type":             string(v.Type),
			"mount_path":       path.Clean(v.MountPath),
			"device":           v.Device,
			"source":           v.Source,
			"fstype":           v.FSType,
			"options":          v.Options,
			"mounted_by_cloud": v.MountedByCloud,
		})
	}
	return out
}

// checkVolumesDigested checks that vars (the digested variables) list the mount paths of vols under
// cloudprovider.VolumesVar, so that the digest covers the machine's mounts. No volumes and no entry is fine.
func checkVolumesDigested(vars map[string]any, vols []cloudprovider.Attachment) error {
	var want []string
	for _, v := range vols {
		want = append(want, path.Clean(v.MountPath))
	}
	var got []string
	entry, listed := vars[cloudprovider.VolumesVar]
	if listed && len(vols) == 0 {
		return fmt.Errorf("variable %s is hydra's own: it lists the machine's volumes (its volumes blocks); remove it from the provisioning variables", cloudprovider.VolumesVar)
	}
	if listed {
		norm, err := normalize(entry)
		if err != nil {
			return err
		}
		items, ok := norm.([]any)
		if !ok {
			return fmt.Errorf("variable %s must be a list of {volume_id, mount_path} maps, not %T", cloudprovider.VolumesVar, entry)
		}
		for _, it := range items {
			m, ok := it.(map[string]any)
			p, isString := m["mount_path"].(string)
			if !ok || !isString {
				return fmt.Errorf("variable %s must be a list of {volume_id, mount_path} maps, not %v", cloudprovider.VolumesVar, entry)
			}
			got = append(got, path.Clean(p))
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(want, got) {
		return fmt.Errorf("the provisioning digest would not describe the machine's volumes: its variables list "+
			"mount paths [%s] under %s, the machine's volumes are mounted at [%s]",
			strings.Join(got, ", "), cloudprovider.VolumesVar, strings.Join(want, ", "))
	}
	return nil
}
