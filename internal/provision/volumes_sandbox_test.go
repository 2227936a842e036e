package provision

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox/simhost"
	"github.com/hydragpu/terraform-provider-hydra/internal/testsupport"
)

// volumesPlaybook runs only what the volume_mount role needs (hydra's variables, the preflight's probe
// of the machine), so the cases below cost a few tasks each; the kinds' playbooks include the role the
// same way (TestAnsibleCoreMatrix runs it inside bare-vm.yml).
const volumesPlaybook = `- name: Mount the machine's volumes
  hosts: all
  gather_facts: false
  vars:
    hydra_playbook: volumes-test.yml
  roles:
    - hydra_vars
    - preflight
    - volume_mount
`

// TestVolumeMount runs the volume_mount role on sandbox machines (simhost's blkid, mkfs.ext4, mount and
// findmnt act on the volumes' stores): --check changes nothing (with the system's ansible-core:
// TestCheckModeChangesNothing); the first run makes a file system on the
// empty block volume and mounts it and a shared file system from their fstab lines (nofail); a second run
// with the block volume's mount path changed finds the file system and makes none, replaces its fstab
// line, mounts it there and lets go of the old path, and changes nothing of the shared one; a volume the
// cloud should have mounted but did not fails that run, after the volumes before it, naming the volume
// and its path. (A second run with nothing changed changes nothing: TestAnsibleCoreMatrix's, with a
// block volume.)
// It runs with the system's ansible-core (Debian 12's 2.14, the oldest hydra supports) and, when
// HYDRA_ANSIBLE_MATRIX names distributions, with theirs too.
func TestVolumeMount(t *testing.T) {
	requireTools(t)
	t.Parallel()
	t.Run("system", func(t *testing.T) {
		t.Parallel()
		testVolumeMount(t, "")
	})
	for _, dist := range strings.Fields(os.Getenv("HYDRA_ANSIBLE_MATRIX")) {
		t.Run(dist, func(t *testing.T) {
			t.Parallel()
			_, playbook := fetchAnsibleCore(t, dist)
			if err := CheckAnsible(playbook); err != nil {
				_, playbook = fetchWith(t, "ansible-core-python.sh", dist)
			}
			testVolumeMount(t, playbook)
		})
	}
}

// sandboxVolumes is an empty block volume and a shared file system for a sandbox machine (their stores
// in a directory of the test's), and their attachments at /data and /shared.
type sandboxVolumes struct {
	vols                 []simhost.Volume
	blockStore, nfsStore string
	block, nfs           cloudprovider.Attachment
}

func newSandboxVolumes(t *testing.T) sandboxVolumes {
	stores := t.TempDir()
	v := sandboxVolumes{blockStore: filepath.Join(stores, "vol-block"), nfsStore: filepath.Join(stores, "vol-nfs")}
	v.vols = []simhost.Volume{
		{ID: "vol-block", Device: "/dev/disk/by-id/hydra-sbx-vol-block", SizeGB: 10, Store: v.blockStore},
		{ID: "vol-nfs", Source: "sbx-nfs:/volumes/vol-nfs", Store: v.nfsStore},
	}
	v.block = cloudprovider.Attachment{VolumeID: "vol-block", Type: cloudprovider.VolumeBlock, MountPath: "/data",
		Device: "/dev/disk/by-id/hydra-sbx-vol-block"}
	v.nfs = cloudprovider.Attachment{VolumeID: "vol-nfs", Type: cloudprovider.VolumeSharedFS, MountPath: "/shared",
		Source: "sbx-nfs:/volumes/vol-nfs", FSType: "nfs", Options: "nconnect=16"}
	return v
}

// checkVolumesUnchanged checks what --check left of v: no file system made, and the --diff of the
// block volume's fstab line under root named in the log.
func checkVolumesUnchanged(t *testing.T, v sandboxVolumes, root string, rec *logRecorder) {
	t.Helper()
	if fsys, _ := simhost.StoreFS(v.blockStore); fsys != nil {
		t.Errorf("--check made a file system: %+v", fsys)
	}
	if !strings.Contains(rec.String(), "changed:true diff:["+filepath.Join(root, "etc/fstab")+" (content)] role:volume_mount task:volume_mount : Keep the volume in fstab") {
		t.Errorf("--check --diff does not name the fstab line it would write:\n%s", rec)
	}
}

func testVolumeMount(t *testing.T, ansible string) {
	v := newSandboxVolumes(t)
	vols, blockStore, nfsStore, block, nfs := v.vols, v.blockStore, v.nfsStore, v.block, v.nfs
	key, pub := clientKey(t)
	r, err := New(Config{AnsiblePlaybook: ansible, PrivateKey: key, TempDir: shortTemp(t), Playbooks: testsupport.PlaybooksWith(t, map[string]string{"volumes-test.yml": volumesPlaybook})})
	if err != nil {
		t.Fatal(err)
	}
	gpu := simhost.Spec{GPUModel: simhost.NVIDIAName("h100"), GPUCount: 1, AuthorizedKeys: []string{pub}, Volumes: vols}
	run := func(t *testing.T, ep simhost.Endpoint, atts ...cloudprovider.Attachment) (*logRecorder, error) {
		t.Helper()
		f := fixture{runner: r, ep: ep}
		rec := &logRecorder{}
		req := f.request(inventory.KindVM, "h100", 1, ep.HostKey, volumeUses(atts), rec)
		req.Pool.Playbook = "volumes-test.yml"
		req.Volumes = atts
		res, err := r.Provision(context.Background(), req)
		if err != nil {
			return rec, &runError{err: err, res: res}
		}
		return rec, nil
	}
	// wantChanged checks that a run (what, its log rec) changed the tasks of want, in any order.
	wantChanged := func(what string, rec *logRecorder, want ...string) {
		t.Helper()
		var got []string
		for _, l := range strings.Split(rec.String(), "\n") {
			if strings.Contains(l, "task ok") && strings.Contains(l, "changed:true") {
				got = append(got, l[strings.Index(l, "task:"):])
			}
		}
		if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
			t.Errorf("%s changed:\n  %s\nwant\n  %s\nlog:\n%s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "), rec)
		}
	}
	read := func(p string) string {
		b, _ := os.ReadFile(p)
		return string(b)
	}

	// The machine: --check (with the system's ansible-core, TestCheckModeChangesNothing's machine has
	// these volumes), then two runs.
	a := startMachine(t, gpu)
	if ansible != "" {
		before := tree(t, a.Root)
		r.checkMode = true
		rec, err := run(t, a, block, nfs)
		r.checkMode = false
		if err != nil {
			t.Fatalf("--check: %v\nlog:\n%s", err, rec)
		}
		if after := tree(t, a.Root); !slices.Equal(before, after) {
			t.Errorf("--check changed the machine:\nbefore %v\nafter  %v", before, after)
		}
		checkVolumesUnchanged(t, v, a.Root, rec)
	}

	rec, err := run(t, a, block, nfs)
	if err != nil {
		t.Fatalf("first run: %v\nlog:\n%s", err, rec)
	}
	wantChanged("first run", rec,
		"task:volume_mount : Make a file system on the empty device]",
		"task:volume_mount : Keep the volume in fstab]",
		"task:volume_mount : Make the mount point]",
		"task:volume_mount : Mount the volume at its path]",
		"task:volume_mount : Keep the volume in fstab]",
		"task:volume_mount : Make the mount point]",
		"task:volume_mount : Mount the volume at its path]")
	fsys, err := simhost.StoreFS(blockStore)
	if err != nil || fsys == nil || fsys.Type != "ext4" {
		t.Fatalf("the block volume's file system after the first run: %+v, %v; want ext4", fsys, err)
	}
	fstab := read(filepath.Join(a.Root, "etc/fstab"))
	for _, line := range []string{
		"/dev/disk/by-id/hydra-sbx-vol-block /data ext4 defaults,nofail 0 2\n",
		"sbx-nfs:/volumes/vol-nfs /shared nfs nconnect=16,nofail 0 0\n",
	} {
		if strings.Count(fstab, line) != 1 {
			t.Errorf("fstab lacks %q once:\n%s", line, fstab)
		}
	}
	for dir, store := range map[string]string{"data": blockStore, "shared": nfsStore} {
		if err := os.WriteFile(filepath.Join(a.Root, dir, "from-a"), []byte("written on machine A\n"), 0o644); err != nil {
			t.Fatalf("writing on the volume mounted at /%s: %v", dir, err)
		}
		if got := read(filepath.Join(simhost.StoreData(store), "from-a")); got != "written on machine A\n" {
			t.Errorf("the file written at /%s is not in the volume's store (%q): not mounted", dir, got)
		}
	}

	// The block volume's path changes on the same machine: its line is replaced, not added to, the old
	// path let go; nothing of the shared one changes. The run also has a volume the cloud mounts itself,
	// but nothing is mounted there: the run fails at it (the volumes before it mounted), naming the
	// volume and its path.
	moved := block
	moved.MountPath = "/srv/data"
	cloud := cloudprovider.Attachment{VolumeID: "vol-lambda-fs", Type: cloudprovider.VolumeSharedFS, MountPath: "/lambda/nfs/team", MountedByCloud: true}
	rec, err = run(t, a, moved, nfs, cloud)
	var re *runError
	if err == nil || !asRunError(err, &re) || !strings.Contains(re.res.Message, "volume vol-lambda-fs: the cloud mounts it at /lambda/nfs/team itself, but nothing is mounted there") {
		t.Errorf("a volume the cloud did not mount: %v, want the run failed naming it\nlog:\n%s", err, rec)
	}
	wantChanged("the second run, only the block volume's path changed,", rec,
		"task:volume_mount : Keep the volume in fstab]",
		"task:volume_mount : Make the mount point]",
		"task:volume_mount : Mount the volume at its path]",
		"task:volume_mount : Unmount the volume from its old path]")
	if again, _ := simhost.StoreFS(blockStore); again == nil || again.UUID != fsys.UUID {
		t.Errorf("the block volume's file system after the second run: %+v, want the one the first made (%s)", again, fsys.UUID)
	}
	fstab = read(filepath.Join(a.Root, "etc/fstab"))
	if strings.Count(fstab, "hydra-sbx-vol-block") != 1 || !strings.Contains(fstab, "/dev/disk/by-id/hydra-sbx-vol-block /srv/data ext4 defaults,nofail 0 2\n") {
		t.Errorf("fstab after the mount path changed to /srv/data:\n%s", fstab)
	}
	if strings.Contains(fstab, "/lambda/nfs/team") {
		t.Errorf("fstab has a line for the volume the cloud mounts:\n%s", fstab)
	}
	for _, p := range []string{"srv/data/from-a", "shared/from-a"} {
		if got := read(filepath.Join(a.Root, p)); got != "written on machine A\n" {
			t.Errorf("machine A reads /%s as %q", p, got)
		}
	}
	if isLink(filepath.Join(a.Root, "data")) {
		t.Errorf("the volume is still mounted at its old path /data too\nlog:\n%s", rec)
	}
}

// volumeUses is the digest's entry for atts (cloudprovider.VolumesVar), as the control plane passes it.
func volumeUses(atts []cloudprovider.Attachment) map[string]any {
	if len(atts) == 0 {
		return nil
	}
	var list []any
	for _, a := range atts {
		list = append(list, map[string]any{"volume_id": "sandbox/sbx-us-1/" + a.VolumeID, "mount_path": a.MountPath})
	}
	return map[string]any{cloudprovider.VolumesVar: list}
}

type runError struct {
	err error
	res cloudprovider.ProvisionResult
}

func (e *runError) Error() string {
	return e.err.Error() + ": " + e.res.FailedTask + ": " + e.res.Message
}

func asRunError(err error, target **runError) bool {
	re, ok := err.(*runError)
	*target = re
	return ok
}

// isLink says whether p is a symbolic link (how simhost's mount mounts a volume).
func isLink(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode()&os.ModeSymlink != 0
}
