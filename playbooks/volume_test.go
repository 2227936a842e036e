package playbooks

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestVolumeProbe runs the volume_mount role's probe (roles/volume_mount/files/probe.py) on this host
// with the host's own blkid and findmnt: an empty device has no file system (blkid's rc 2), one made
// ext4 has it, a missing device is reported as such (never asked about, so it cannot look empty and
// be formatted), "/" is mounted and a plain directory is not.
func TestVolumeProbe(t *testing.T) {
	for _, tool := range []string{"python3", "blkid", "findmnt", "mkfs.ext4"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("SKIPPING: %s is not installed (util-linux, e2fsprogs)", tool)
		}
	}
	script, err := FS.ReadFile("roles/volume_mount/files/probe.py")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for _, name := range []string{"empty.img", "ext4.img"} {
		if err := os.WriteFile(filepath.Join(root, name), make([]byte, 4<<20), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", filepath.Join(root, "ext4.img")).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v: %s", err, out)
	}
	vols := []map[string]any{
		{"volume_id": "empty", "type": "block", "device": filepath.Join(root, "empty.img"), "mount_path": "/"},
		{"volume_id": "ext4", "type": "block", "device": filepath.Join(root, "ext4.img"), "mount_path": root},
		{"volume_id": "missing", "type": "block", "device": "/dev/disk/by-id/none", "mount_path": root},
		{"volume_id": "nfs", "type": "shared_fs", "source": "srv:/x", "fstype": "nfs", "mount_path": root},
		{"volume_id": "cloud", "type": "block", "device": "/missing", "mounted_by_cloud": true, "mount_path": "/"},
	}
	arg, _ := json.Marshal(vols)
	// hydra_prefix is "" on a real machine: the devices are the host's own files.
	out, err := exec.Command("python3", "-S", "-c", string(script), string(arg), "", "0").Output()
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	type result struct {
		BlkidRC   *int   `json:"blkid_rc"`
		FSType    string `json:"fstype"`
		FindmntRC int    `json:"findmnt_rc"`
		Stderr    string `json:"stderr"`
	}
	var got []result
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(vols) {
		t.Fatalf("probe printed %s (%v)", out, err)
	}
	rc := func(n int) *int { return &n }
	for i, want := range []result{
		{BlkidRC: rc(2), FindmntRC: 0},
		{BlkidRC: rc(0), FSType: "ext4", FindmntRC: 1},
		{BlkidRC: rc(-1), FindmntRC: 1, Stderr: "no such device: /dev/disk/by-id/none (waited 0 s for it)"},
		{FindmntRC: 1},
		{FindmntRC: 0},
	} {
		g := got[i]
		if (g.BlkidRC == nil) != (want.BlkidRC == nil) || g.BlkidRC != nil && *g.BlkidRC != *want.BlkidRC ||
			g.FSType != want.FSType || g.FindmntRC != want.FindmntRC || g.Stderr != want.Stderr {
			t.Errorf("volume %s: probe says %s, want blkid rc %v, type %q, findmnt rc %d, stderr %q",
				vols[i]["volume_id"], mustJSON(g), deref(want.BlkidRC), want.FSType, want.FindmntRC, want.Stderr)
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}
