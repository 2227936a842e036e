package simhost

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// recorded is one command of standins/recordings/debian12-volume-tools.txt: its output and status.
type recorded struct {
	stdout, stderr string
	rc             int
}

// volumeRecording reads the recording: each "$ COMMAND" and what it printed, by "COMMAND#N" (its Nth
// run, from 1).
func volumeRecording(t *testing.T) map[string]recorded {
	t.Helper()
	b, err := standins.ReadFile("standins/recordings/debian12-volume-tools.txt")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]recorded{}
	seen := map[string]int{}
	var (
		key string
		cur recorded
	)
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "$ "):
			cmd := strings.TrimPrefix(line, "$ ")
			seen[cmd]++
			key, cur = fmt.Sprintf("%s#%d", cmd, seen[cmd]), recorded{}
		case key == "":
		case strings.HasPrefix(line, "[stderr] "):
			cur.stderr += strings.TrimPrefix(line, "[stderr] ") + "\n"
		case strings.HasPrefix(line, "[rc "):
			if _, err := fmt.Sscanf(line, "[rc %d]", &cur.rc); err != nil {
				t.Fatalf("recording: %q: %v", line, err)
			}
			out[key], key = cur, ""
		default:
			cur.stdout += line + "\n"
		}
	}
	return out
}

// standin runs a stand-in of the machine in dir on its own (no stand-in server), as its PATH would.
func standin(t *testing.T, dir string, args ...string) recorded {
	t.Helper()
	cmd := exec.Command(filepath.Join(dir, "bin", args[0]), args[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	rc := 0
	switch {
	case errors.As(err, &exit):
		rc = exit.ExitCode()
	case err != nil:
		t.Fatalf("%v: %v", args, err)
	}
	return recorded{stdout: stdout.String(), stderr: stderr.String(), rc: rc}
}

// volumeMachine writes the files of a machine with a 50 GiB block volume (store) and a shared one
// (shared), and an fstab naming them and two devices it does not have.
func volumeMachine(t *testing.T, store, shared string) (dir string) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is missing")
	}
	dir = t.TempDir()
	spec := Spec{GPUModel: "NVIDIA L4", GPUCount: 1, Volumes: []Volume{
		{ID: "sbxv-1", Device: "/dev/disk/by-id/hydra-sbx-sbxv-1", SizeGB: 50, Store: store},
		{ID: "sbxv-2", Source: "sbx-nfs:/volumes/sbxv-2", Store: shared},
	}}
	if err := writeMachineFiles(dir, spec); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "root")
	fstab := "# the playbooks' lines\n" +
		"/dev/disk/by-id/hydra-sbx-sbxv-1 /data ext4 defaults,nofail 0 2\n" +
		"sbx-nfs:/volumes/sbxv-2 /shared nfs defaults,nofail 0 0\n" +
		"/dev/disk/by-id/nope /nodev ext4 defaults,nofail 0 2\n" +
		"/dev/disk/by-id/nope /nodev2 ext4 defaults 0 2\n" +
		"/dev/disk/by-id/hydra-sbx-sbxv-1 /nomnt ext4 defaults,nofail 0 2\n"
	for _, d := range []string{"etc", "data", "shared", "nodev", "nodev2"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "etc", "fstab"), []byte(fstab), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// TestVolumeStandinsReplayTheRecording runs the volume stand-ins through a volume's life (no file
// system, mkfs, mount, the failures) and compares each answer with the real tools' recorded one for
// the same situation, the recording's paths made the machine's (UUIDs, and for findmnt's table the
// padding, compared as shapes).
func TestVolumeStandinsReplayTheRecording(t *testing.T) {
	t.Parallel()
	rec := volumeRecording(t)
	dir := volumeMachine(t, filepath.Join(t.TempDir(), "store"), filepath.Join(t.TempDir(), "shared"))
	const dev = "/dev/disk/by-id/hydra-sbx-sbxv-1"
	steps := []struct {
		args     string
		recorded string
		// swap turns the recording's paths into the machine's (old, new pairs).
		swap  []string
		table bool // compare with runs of spaces as one (findmnt pads its columns to the values)
	}{
		{args: "blkid -o value -s TYPE " + dev, recorded: "blkid -o value -s TYPE disk.img#1"},
		{args: "blkid " + dev, recorded: "blkid disk.img#1"},
		{args: "blkid -p " + dev, recorded: "blkid -p disk.img#1"},
		{args: "blkid -o value -s TYPE /dev/disk/by-id/nope", recorded: "blkid -o value -s TYPE /dev/disk/by-id/nope#1"},
		{args: "mkfs.ext4 -q /dev/disk/by-id/nope", recorded: "mkfs.ext4 -q /dev/disk/by-id/nope#1"},
		{args: "findmnt --mountpoint /data", recorded: "findmnt --mountpoint /tmp/rec/mnt#1"},
		{args: "mount /data", recorded: "mount -T /tmp/rec/fstab /tmp/rec/empty#2", swap: []string{"/tmp/rec/empty", "/data", "/dev/loop1", dev}},
		{args: "mkfs.ext4 -q " + dev, recorded: "mkfs.ext4 -q disk.img#1"},
		{args: "blkid -o value -s TYPE " + dev, recorded: "blkid -o value -s TYPE disk.img#2"},
		{args: "blkid " + dev, recorded: "blkid disk.img#2", swap: []string{"disk.img", dev}},
		{args: "blkid -p " + dev, recorded: "blkid -p disk.img#2", swap: []string{"disk.img", dev}},
		{args: "blkid -o export " + dev, recorded: "blkid -o export disk.img#1", swap: []string{"disk.img", dev}},
		{args: "blkid -o value -s TYPE -s UUID " + dev, recorded: "blkid -o value -s TYPE -s UUID disk.img#1"},
		{args: "blkid -s TYPE " + dev, recorded: "blkid -s TYPE disk.img#1", swap: []string{"disk.img", dev}},
		{args: "blkid -o device " + dev, recorded: "blkid -o device disk.img#1", swap: []string{"disk.img", dev}},
		{args: "blkid -o value -s LABEL " + dev, recorded: "blkid -o value -s LABEL disk.img#1"},
		{args: "blkid -o bogus " + dev, recorded: "blkid -o bogus disk.img#1"},
		{args: "mount /data", recorded: "mount -T /tmp/rec/fstab /tmp/rec/mnt#1"},
		{args: "findmnt --mountpoint /data", recorded: "findmnt --mountpoint /tmp/rec/mnt#2", swap: []string{"/tmp/rec/mnt", "/data", "/dev/loop0", dev}, table: true},
		{args: "findmnt -n -o SOURCE,FSTYPE --mountpoint /data", recorded: "findmnt -n -o SOURCE,FSTYPE --mountpoint /tmp/rec/mnt#1", swap: []string{"/dev/loop0", dev}},
		{args: "findmnt -r --mountpoint /data", recorded: "findmnt -r --mountpoint /tmp/rec/mnt#1", swap: []string{"/tmp/rec/mnt", "/data", "/dev/loop0", dev}},
		{args: "findmnt -n -o SOURCE --mountpoint /data", recorded: "findmnt -n -o SOURCE --mountpoint /tmp/rec/mnt#1", swap: []string{"/dev/loop0", dev}},
		{args: "mount /data", recorded: "mount -T /tmp/rec/fstab /tmp/rec/mnt#2", swap: []string{"/tmp/rec/mnt", "/data", "/tmp/rec/disk.img", dev}},
		{args: "mkfs.ext4 -q " + dev, recorded: "mkfs.ext4 -q disk.img#2", swap: []string{"disk.img", dev}},
		{args: "mount /nomnt", recorded: "mount -T /tmp/rec/fstab /tmp/rec/empty#1", swap: []string{"/tmp/rec/empty", "/nomnt"}},
		{args: "mount /nodev", recorded: "mount -T /tmp/rec/fstab /tmp/rec/nodev#1"},
		{args: "findmnt --mountpoint /nodev", recorded: "findmnt --mountpoint /tmp/rec/nodev#1"},
		{args: "mount /nodev2", recorded: "mount -T /tmp/rec/fstab /tmp/rec/nodev2#1", swap: []string{"/tmp/rec/nodev2", "/nodev2"}},
		{args: "mount /other", recorded: "mount -T /tmp/rec/fstab /tmp/rec/other#1", swap: []string{"/tmp/rec/other", "/other"}},
		{args: "umount /data", recorded: "umount /tmp/rec/mnt#1"},
		{args: "umount /data", recorded: "umount /tmp/rec/data#2", swap: []string{"/tmp/rec/data", "/data"}},
		{args: "umount /nowhere", recorded: "umount /tmp/rec/nowhere#1", swap: []string{"/tmp/rec/nowhere", "/nowhere"}},
		{args: "findmnt --mountpoint /data", recorded: "findmnt --mountpoint /tmp/rec/mnt#3"},
		{args: "findmnt --mountpoint", recorded: "findmnt --mountpoint#1"},
	}
	for i, s := range steps {
		want, ok := rec[s.recorded]
		if !ok {
			t.Fatalf("step %d: the recording has no %q", i, s.recorded)
		}
		r := strings.NewReplacer(s.swap...)
		want.stdout, want.stderr = r.Replace(want.stdout), r.Replace(want.stderr)
		got := standin(t, dir, strings.Fields(s.args)...)
		for _, x := range []*recorded{&want, &got} {
			x.stdout = uuidRE.ReplaceAllString(x.stdout, "UUID")
			if s.table {
				x.stdout = regexp.MustCompile(` +`).ReplaceAllString(x.stdout, " ")
			}
		}
		if got != want {
			t.Errorf("step %d: %s:\n got rc %d, stdout %q, stderr %q\nwant rc %d, stdout %q, stderr %q (recorded: %s)",
				i, s.args, got.rc, got.stdout, got.stderr, want.rc, want.stdout, want.stderr, s.recorded)
		}
	}
}

// TestMkfsOutputIsRecordedMke2fs compares mkfs.ext4's output for devices of the recorded sizes with
// what e2fsprogs 1.47.0 printed for them (the recording's device discarded its blocks; the sandbox's
// does not, so that line is left out).
func TestMkfsOutputIsRecordedMke2fs(t *testing.T) {
	t.Parallel()
	rec := volumeRecording(t)
	for _, tc := range []struct {
		sizeGB   int
		recorded string
	}{
		{1, "truncate -s 1G s1.img; mkfs.ext4 s1.img#1"},
		{10, "truncate -s 10G s10.img; mkfs.ext4 s10.img#1"},
		{50, "mkfs.ext4 disk.img#1"},
		{100, "truncate -s 100G s100.img; mkfs.ext4 s100.img#1"},
		{200, "truncate -s 200G s200.img; mkfs.ext4 s200.img#1"},
	} {
		t.Run(fmt.Sprintf("%dGiB", tc.sizeGB), func(t *testing.T) {
			t.Parallel()
			if _, err := exec.LookPath("python3"); err != nil {
				t.Skip("python3 is missing")
			}
			dir := t.TempDir()
			spec := Spec{Volumes: []Volume{{ID: "v", Device: "/dev/disk/by-id/hydra-sbx-v", SizeGB: tc.sizeGB, Store: filepath.Join(dir, "store")}}}
			if err := writeMachineFiles(dir, spec); err != nil {
				t.Fatal(err)
			}
			want := rec[tc.recorded]
			want.stdout = regexp.MustCompile(`(?m)^Discarding device blocks:.*\n`).ReplaceAllString(want.stdout, "")
			got := standin(t, dir, "mkfs.ext4", "/dev/disk/by-id/hydra-sbx-v")
			want.stdout, got.stdout = uuidRE.ReplaceAllString(want.stdout, "UUID"), uuidRE.ReplaceAllString(got.stdout, "UUID")
			if got != want {
				t.Errorf("mkfs.ext4 of %d GiB:\n got rc %d, stderr %q, stdout\n%q\nwant rc %d, stderr %q, stdout\n%q", tc.sizeGB, got.rc, got.stderr, got.stdout, want.rc, want.stderr, want.stdout)
			}
		})
	}
}

// TestVolumeData: mkfs.ext4 wipes the volume; mount makes $HYDRA_ROOT/<path> the store's data, the
// mount point's own files set aside until umount; a second machine given the same store sees the
// file the first wrote, with no new file system made; a shared volume is the same store on both.
func TestVolumeData(t *testing.T) {
	t.Parallel()
	store, shared := filepath.Join(t.TempDir(), "store"), filepath.Join(t.TempDir(), "shared")
	first := volumeMachine(t, store, shared)
	const dev = "/dev/disk/by-id/hydra-sbx-sbxv-1"
	mustRun := func(dir string, args ...string) string {
		t.Helper()
		r := standin(t, dir, args...)
		if r.rc != 0 {
			t.Fatalf("%v: rc %d, %s", args, r.rc, r.stderr)
		}
		return r.stdout
	}
	if err := os.WriteFile(filepath.Join(StoreData(store), "old"), []byte("old data"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(first, "mkfs.ext4", "-q", dev)
	if left, _ := os.ReadDir(StoreData(store)); len(left) != 0 {
		t.Errorf("mkfs.ext4 left %d files on the volume", len(left))
	}
	fs, err := StoreFS(store)
	if err != nil || fs == nil || fs.Type != "ext4" {
		t.Fatalf("the store's file system after mkfs.ext4: %+v, %v", fs, err)
	}

	// A file at the mount point before the mount is hidden by the volume and back after umount.
	root := filepath.Join(first, "root")
	if err := os.WriteFile(filepath.Join(root, "data", "underneath"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(first, "mount", root+"/data") // a path under the machine's root names the same mount point
	if err := os.WriteFile(filepath.Join(root, "data", "x"), []byte("written on the first machine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(StoreData(store), "x")); err != nil || string(b) != "written on the first machine" {
		t.Errorf("the file written at $HYDRA_ROOT/data/x is not the store's: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(root, "data", "underneath")); err == nil {
		t.Error("the mount point's own file shows through the mounted volume")
	}
	mustRun(first, "mount", "/shared")
	if err := os.WriteFile(filepath.Join(root, "shared", "s"), []byte("shared"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(first, "umount", "/data")
	if b, err := os.ReadFile(filepath.Join(root, "data", "underneath")); err != nil || string(b) != "mine" {
		t.Errorf("after umount the mount point's own file is %q, %v", b, err)
	}

	// The second machine: the volume has its file system (blkid finds it, so no mkfs) and the file.
	second := volumeMachine(t, store, shared)
	if got := mustRun(second, "blkid", "-o", "value", "-s", "TYPE", dev); got != "ext4\n" {
		t.Errorf("blkid on the second machine: %q, want ext4", got)
	}
	if r := standin(t, second, "findmnt", "--mountpoint", "/data"); r.rc != 1 {
		t.Errorf("findmnt on the second machine before its mount: rc %d, want 1", r.rc)
	}
	mustRun(second, "mount", "/data")
	mustRun(second, "mount", "/shared")
	root2 := filepath.Join(second, "root")
	for path, want := range map[string]string{"data/x": "written on the first machine", "shared/s": "shared"} {
		if b, err := os.ReadFile(filepath.Join(root2, path)); err != nil || string(b) != want {
			t.Errorf("the second machine reads %s: %q, %v; want %q", path, b, err, want)
		}
	}
	if got := mustRun(second, "findmnt", "-n", "-o", "SOURCE,FSTYPE", "--mountpoint", "/shared"); got != "sbx-nfs:/volumes/sbxv-2 nfs\n" {
		t.Errorf("findmnt of the shared volume: %q", got)
	}
	if again, err := StoreFS(store); err != nil || again == nil || again.UUID != fs.UUID {
		t.Errorf("the file system changed between the machines: %+v, was %+v", again, fs)
	}
}

// TestVolumesOverSSH: over real SSH sessions (the stand-in server answering), the first machine makes
// the file system and writes a file under $HYDRA_ROOT; after it stops, a second machine with the same
// store finds the file system (blkid), mounts it and reads the file.
func TestVolumesOverSSH(t *testing.T) {
	t.Parallel()
	store := filepath.Join(t.TempDir(), "store")
	spec := Spec{GPUModel: "NVIDIA L4", GPUCount: 1, Volumes: []Volume{{ID: "v", Device: "/dev/disk/by-id/hydra-sbx-v", SizeGB: 10, Store: store}}}
	setup := `printf '/dev/disk/by-id/hydra-sbx-v /data ext4 defaults,nofail 0 2\n' > "$HYDRA_ROOT/etc/fstab" && mkdir -p "$HYDRA_ROOT/data" && `
	dir1, _, ep1, signer1 := startMachine(t, spec)
	out, err := run(t, ep1, signer1, setup+`{ blkid -o value -s TYPE /dev/disk/by-id/hydra-sbx-v; echo "blkid $?"; } && mkfs.ext4 -q /dev/disk/by-id/hydra-sbx-v && mount /data && echo kept > "$HYDRA_ROOT/data/x" && findmnt -n -o TARGET --mountpoint /data`)
	if err != nil || out != "blkid 2\n/data\n" {
		t.Fatalf("the first machine: %q, %v", out, err)
	}
	if err := Stop(dir1); err != nil {
		t.Fatal(err)
	}
	_, _, ep2, signer2 := startMachine(t, spec)
	out, err = run(t, ep2, signer2, setup+`blkid -o value -s TYPE /dev/disk/by-id/hydra-sbx-v && { findmnt --mountpoint /data; echo "findmnt $?"; } && mount /data && cat "$HYDRA_ROOT/data/x"`)
	if err != nil || out != "ext4\nfindmnt 1\nkept\n" {
		t.Fatalf("the second machine: %q, %v", out, err)
	}
}
