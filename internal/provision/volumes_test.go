package provision

import (
	"reflect"
	"strings"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
)

// TestVolumesVar: the playbooks get the machine's attachments as hydra_volumes (strings unsafe, the
// digest's entry replaced); the digest follows the mounts the variables list; a request whose variables
// do not list its volumes' mount paths is refused.
func TestVolumesVar(t *testing.T) {
	r := testRunner(t, nil)
	pool := inventory.Pool{Name: "sandbox-vm-pool", Kind: "vm"}
	block := cloudprovider.Attachment{VolumeID: "vol-1", Type: cloudprovider.VolumeBlock, MountPath: "/data",
		Device: "/dev/disk/by-id/hydra-sbx-vol-1"}
	nfs := cloudprovider.Attachment{VolumeID: "vol-2", Type: cloudprovider.VolumeSharedFS, MountPath: "/shared",
		Source: "sbx-nfs:/volumes/vol-2", FSType: "nfs", Options: "nconnect=16"}
	mounts := func(paths ...string) []any {
		var out []any
		for i, p := range paths {
			out = append(out, map[string]any{"volume_id": "sandbox/sbx-us-1/v" + string(rune('a'+i)), "mount_path": p})
		}
		return out
	}
	req := func(vars map[string]any, vols ...cloudprovider.Attachment) cloudprovider.ProvisionRequest {
		return cloudprovider.ProvisionRequest{Instance: cloudprovider.Instance{Name: "sbx-vm-a", Cloud: "sandbox"},
			Pool: pool, GPUType: "h100", GPUCount: 1, Vars: vars, Volumes: vols}
	}

	t.Run("no volumes", func(t *testing.T) {
		vars, err := r.playbookVars(req(nil))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(vars[cloudprovider.VolumesVar], []any{}) {
			t.Errorf("%s = %#v, want an empty list", cloudprovider.VolumesVar, vars[cloudprovider.VolumesVar])
		}
	})

	t.Run("attachments replace the digest's entry", func(t *testing.T) {
		vars, err := r.playbookVars(req(map[string]any{cloudprovider.VolumesVar: mounts("/shared", "/data")}, block, nfs))
		if err != nil {
			t.Fatal(err)
		}
		u := func(s string) map[string]any { return map[string]any{"__ansible_unsafe": s} }
		want := []any{
			map[string]any{"volume_id": u("vol-1"), "type": u("block"), "mount_path": u("/data"),
				"device": u("/dev/disk/by-id/hydra-sbx-vol-1"), "source": u(""), "fstype": u(""), "options": u(""), "mounted_by_cloud": false},
			map[string]any{"volume_id": u("vol-2"), "type": u("shared_fs"), "mount_path": u("/shared"),
				"device": u(""), "source": u("sbx-nfs:/volumes/vol-2"), "fstype": u("nfs"), "options": u("nconnect=16"), "mounted_by_cloud": false},
		}
		if !reflect.DeepEqual(vars[cloudprovider.VolumesVar], want) {
			t.Errorf("%s =\n%#v\nwant\n%#v", cloudprovider.VolumesVar, vars[cloudprovider.VolumesVar], want)
		}
	})

	t.Run("the digest follows the mounts", func(t *testing.T) {
		digest := func(vars map[string]any) string {
			t.Helper()
			d, err := r.Digest(pool, vars)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		none, data, moved := digest(nil), digest(map[string]any{cloudprovider.VolumesVar: mounts("/data")}), digest(map[string]any{cloudprovider.VolumesVar: mounts("/srv/data")})
		if none == data || data == moved || none == moved {
			t.Errorf("digests without volumes, at /data and at /srv/data: %s, %s, %s; want three different", none, data, moved)
		}
		vars, err := r.playbookVars(req(map[string]any{cloudprovider.VolumesVar: mounts("/data")}, block))
		if err != nil {
			t.Fatal(err)
		}
		if got := vars["hydra_provisioning_digest"]; !reflect.DeepEqual(got, map[string]any{"__ansible_unsafe": data}) {
			t.Errorf("the marker's digest %v, want the digest of the variables %s", got, data)
		}
	})

	for _, tc := range []struct {
		name string
		vars map[string]any
		vols []cloudprovider.Attachment
		want string
	}{
		{"volumes not listed", nil, []cloudprovider.Attachment{block}, "mount paths [] under hydra_volumes, the machine's volumes are mounted at [/data]"},
		{"another mount path", map[string]any{cloudprovider.VolumesVar: mounts("/old")}, []cloudprovider.Attachment{block}, "mount paths [/old]"},
		{"one missing", map[string]any{cloudprovider.VolumesVar: mounts("/data")}, []cloudprovider.Attachment{block, nfs}, "mounted at [/data, /shared]"},
		{"listed without volumes", map[string]any{cloudprovider.VolumesVar: mounts("/data")}, nil, "variable hydra_volumes is hydra's own"},
		{"not a list", map[string]any{cloudprovider.VolumesVar: "/data"}, []cloudprovider.Attachment{block}, "must be a list"},
		{"no mount path", map[string]any{cloudprovider.VolumesVar: []any{map[string]any{"volume_id": "x"}}}, []cloudprovider.Attachment{block}, "must be a list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.playbookVars(req(tc.vars, tc.vols...))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
