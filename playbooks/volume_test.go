package playbooks

import (
	"encoding/json"
	"fmt"
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

// TestVolumeProbeFstabLine: the probe names, per volume, the fstab line the role's lineinfile task would
// replace (the last one of its device or source, or of its mount path, newline included) and fstab's
// mode and owner, so that the task is skipped only where that line is already the one it would write.
func TestVolumeProbeFstabLine(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is missing")
	}
	script, err := FS.ReadFile("roles/volume_mount/files/probe.py")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	fstab := "# /etc/fstab\nUUID=1 / ext4 defaults 0 1\nsrv:/x /old nfs defaults 0 0\nsrv:/x /data nfs defaults,nofail 0 0\n" +
		"  other:/y /scratch nfs defaults 0 0\nsrv:/z /scratchy nfs defaults 0 0"
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc", "fstab"), []byte(fstab), 0o644); err != nil {
		t.Fatal(err)
	}
	vols := []map[string]any{
		// Its source's lines: the last one.
		{"volume_id": "data", "type": "shared_fs", "source": "srv:/x", "fstype": "nfs", "mount_path": "/data"},
		// Another source at a mount path of the table (leading blanks as lineinfile's \s* takes them; the
		// path /scratchy is not /scratch).
		{"volume_id": "scratch", "type": "shared_fs", "source": "srv:/new", "fstype": "nfs", "mount_path": "/scratch"},
		// Its source's line, the table's last, without a newline (lineinfile would add one).
		{"volume_id": "z", "type": "shared_fs", "source": "srv:/z", "fstype": "nfs", "mount_path": "/z"},
		{"volume_id": "none", "type": "shared_fs", "source": "srv:/none", "fstype": "nfs", "mount_path": "/none"},
		{"volume_id": "cloud", "type": "block", "device": "/missing", "mounted_by_cloud": true, "mount_path": "/data"},
	}
	arg, _ := json.Marshal(vols)
	out, err := exec.Command("python3", "-S", "-c", string(script), string(arg), root, "0").Output()
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	var got []struct {
		Line  *string `json:"fstab_line"`
		Attrs string  `json:"fstab_attrs"`
	}
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(vols) {
		t.Fatalf("probe printed %s (%v)", out, err)
	}
	attrs := fmt.Sprintf("0644 %d %d", os.Getuid(), os.Getgid())
	for i, want := range []string{"srv:/x /data nfs defaults,nofail 0 0\n", "  other:/y /scratch nfs defaults 0 0\n", "srv:/z /scratchy nfs defaults 0 0", "", ""} {
		line := ""
		if got[i].Line != nil {
			line = *got[i].Line
		}
		if line != want || got[i].Attrs != attrs {
			t.Errorf("volume %s: fstab line %q, attributes %q; want %q, %q", vols[i]["volume_id"], line, got[i].Attrs, want, attrs)
		}
	}
}
