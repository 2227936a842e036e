//go:build linux

package onrealos

import (
	"maps"
	"strings"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// The volume_mount role on the real OS, on TestRealOS_BareVMAndExeclet's machines (no machine of its own). A
// container can mount (bind mounts and tmpfs) but has no loop devices, so:
//   - a bind volume (a directory of the machine, fstype none, options bind) goes through the whole path
//     for real: its fstab line, systemd reading fstab again, findmnt, and mount(8) mounting it from
//     fstab;
//   - two block volumes are image files: the real blkid finds none on the fresh one, the real mkfs.ext4
//     makes one; on the used one (ext4 with a file, as a replaced machine's volume is) it finds ext4, and
//     the file system, its UUID and the file stay. A tmpfs mounted before the run stands for each
//     (a loop mount is refused in the container), so findmnt finds them mounted and mount is not run;
//   - a volume the cloud mounts (a tmpfs mounted before the run) is only checked: no fstab line.
//
// execlet.yml's runs after bare-vm.yml's, with the same volumes, change nothing of them (no mkfs, no
// fstab line, no mount).

const (
	volumeDir     = "/srv/hydra-volumes"
	usedVolumeFS  = "3f1c2a54-7b9e-4d15-8c3a-2e6f0b1d9a77"
	usedVolumeTxt = "written by the machine before"
)

// prepareVolumes makes the volumes' stand-ins on the machine and returns their attachments.
func prepareVolumes(t *testing.T, f realOSFixture) []cloudprovider.Attachment {
	t.Helper()
	f.run(t, strings.Join([]string{
		"set -e",
		"mkdir -p " + volumeDir + "/shared /mnt/hydra-fresh /mnt/hydra-used /mnt/hydra-cloud",
		"echo 'on the shared volume' > " + volumeDir + "/shared/hello",
		"truncate -s 16M " + volumeDir + "/fresh.img " + volumeDir + "/used.img",
		"mkfs.ext4 -q -U " + usedVolumeFS + " " + volumeDir + "/used.img",
		"echo '" + usedVolumeTxt + "' > /tmp/hello",
		"debugfs -w -R 'write /tmp/hello hello' " + volumeDir + "/used.img",
		"for m in fresh used cloud; do mount -t tmpfs hydra-$m /mnt/hydra-$m; done",
	}, "\n"))
	return []cloudprovider.Attachment{
		{VolumeID: "vol-shared", Type: cloudprovider.VolumeSharedFS, MountPath: "/mnt/hydra-data",
			Source: volumeDir + "/shared", FSType: "none", Options: "bind"},
		{VolumeID: "vol-fresh", Type: cloudprovider.VolumeBlock, MountPath: "/mnt/hydra-fresh", Device: volumeDir + "/fresh.img"},
		{VolumeID: "vol-used", Type: cloudprovider.VolumeBlock, MountPath: "/mnt/hydra-used", Device: volumeDir + "/used.img"},
		{VolumeID: "vol-cloud", Type: cloudprovider.VolumeSharedFS, MountPath: "/mnt/hydra-cloud", MountedByCloud: true},
	}
}

// prepareBindVolume makes one bind volume's source on a machine without systemd (TestRealOS_Pod: no
// systemd to read fstab again, mount(8) alone) and returns its attachment.
func prepareBindVolume(t *testing.T, f realOSFixture) []cloudprovider.Attachment {
	t.Helper()
	f.run(t, "mkdir -p "+volumeDir+"/shared && echo 'on the shared volume' > "+volumeDir+"/shared/hello")
	return []cloudprovider.Attachment{{VolumeID: "vol-shared", Type: cloudprovider.VolumeSharedFS, MountPath: "/mnt/hydra-data",
		Source: volumeDir + "/shared", FSType: "none", Options: "bind"}}
}

// checkBindVolume checks the bind volume is mounted (read through the mount, written into its source).
func checkBindVolume(t *testing.T, f realOSFixture) {
	t.Helper()
	if got := f.run(t, "findmnt -n -o TARGET --mountpoint /mnt/hydra-data"); got != "/mnt/hydra-data" {
		t.Errorf("the bind volume is not mounted at /mnt/hydra-data: %q", got)
	}
	if got := f.run(t, "cat /mnt/hydra-data/hello && echo through > /mnt/hydra-data/new && cat "+volumeDir+"/shared/new"); got != "on the shared volume\nthrough" {
		t.Errorf("through the bind volume's mount: %q", got)
	}
	if got := f.run(t, "grep -c '^"+volumeDir+"/shared /mnt/hydra-data none bind,nofail 0 0$' /etc/fstab || true"); got != "1" {
		t.Errorf("/etc/fstab has the bind volume's line %s time(s), want once", got)
	}
}

// checkVolumes checks what the runs left: the bind volume mounted from its fstab line, the fresh image
// made ext4, the used one untouched, the cloud's volume without a line.
func checkVolumes(t *testing.T, f realOSFixture) {
	t.Helper()
	if got := f.run(t, "findmnt -n -o TARGET,FSTYPE --mountpoint /mnt/hydra-data"); !strings.HasPrefix(got, "/mnt/hydra-data ") {
		t.Errorf("the bind volume is not mounted at /mnt/hydra-data: %q", got)
	}
	// Written through the mount, read in its source: a bind mount, not a directory of its own.
	if got := f.run(t, "cat /mnt/hydra-data/hello && echo through > /mnt/hydra-data/new && cat "+volumeDir+"/shared/new"); got != "on the shared volume\nthrough" {
		t.Errorf("through the bind volume's mount: %q", got)
	}
	fstab := f.run(t, "cat /etc/fstab")
	for _, line := range []string{
		volumeDir + "/shared /mnt/hydra-data none bind,nofail 0 0",
		volumeDir + "/fresh.img /mnt/hydra-fresh ext4 defaults,nofail 0 2",
		volumeDir + "/used.img /mnt/hydra-used ext4 defaults,nofail 0 2",
	} {
		if strings.Count("\n"+fstab+"\n", "\n"+line+"\n") != 1 {
			t.Errorf("/etc/fstab does not have the line %q once:\n%s", line, fstab)
		}
	}
	if strings.Contains(fstab, "hydra-cloud") {
		t.Errorf("/etc/fstab has a line for the volume the cloud mounts:\n%s", fstab)
	}
	if got := f.run(t, "blkid -o value -s TYPE "+volumeDir+"/fresh.img"); got != "ext4" {
		t.Errorf("the fresh volume's file system: %q, want ext4 (made by the first run)", got)
	}
	if got := f.run(t, "blkid -o value -s UUID "+volumeDir+"/used.img"); got != usedVolumeFS {
		t.Errorf("the used volume's file system is %q, want the one it had (%s): it was made again", got, usedVolumeFS)
	}
	if got := f.run(t, "debugfs -R 'cat hello' "+volumeDir+"/used.img 2>/dev/null"); got != usedVolumeTxt {
		t.Errorf("the used volume's file reads %q, want %q", got, usedVolumeTxt)
	}
}

// withVolumes is vars with the mounts the digest covers (cloudprovider.VolumesVar), as the control plane
// passes them; vars itself when there are no volumes.
func withVolumes(vars map[string]any, vols []cloudprovider.Attachment) map[string]any {
	if len(vols) == 0 {
		return vars
	}
	out := maps.Clone(vars)
	if out == nil {
		out = map[string]any{}
	}
	var mounts []any
	for _, v := range vols {
		mounts = append(mounts, map[string]any{"volume_id": v.VolumeID, "mount_path": v.MountPath})
	}
	out[cloudprovider.VolumesVar] = mounts
	return out
}
