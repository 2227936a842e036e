package provision

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox/simhost"
)

// matrixDistributions are the distributions whose ansible-core TestAnsibleCoreMatrix runs (the
// names tools/ansible-core.sh knows); HYDRA_ANSIBLE_MATRIX replaces them (space-separated; an entry
// may also be "<archive URL>,<suite>,<component>,<arch>" for any other release).
var matrixDistributions = []string{"debian-12", "ubuntu-24.04", "debian-13", "ubuntu-25.10", "ubuntu-26.04"}

// fetchAnsibleCore runs tools/ansible-core.sh for one distribution: the .deb from its archive, checked
// and unpacked once into the cache. It returns ansible-core's version and its ansible-playbook.
func fetchAnsibleCore(t *testing.T, dist string) (version, playbook string) {
	return fetchWith(t, "ansible-core.sh", dist)
}

// fetchWith runs tools/<script> for one distribution; it prints what tools/ansible-core.sh prints.
func fetchWith(t *testing.T, tool, dist string) (version, playbook string) {
	t.Helper()
	// go test runs in the package's directory; runtime.Caller names no file under -trimpath (make test).
	script := filepath.Join("..", "..", "tools", tool)
	args := append([]string{script}, strings.Split(dist, ",")...)
	cmd := exec.Command("bash", args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil && os.Getenv("HYDRA_ANSIBLE_OFFLINE") == "1" {
		msg := "SKIPPING: HYDRA_ANSIBLE_OFFLINE=1 and " + dist + "'s ansible-core is not in the cache: " + strings.TrimSpace(stderr.String())
		fmt.Fprintln(os.Stderr, msg)
		t.Skip(msg)
	}
	if err != nil {
		t.Fatalf("fetching %s's ansible-core (offline, HYDRA_ANSIBLE_OFFLINE=1 uses only the cache): %v\n%s", dist, err, stderr.String())
	}
	if s := strings.TrimSpace(stderr.String()); s != "" {
		t.Log(s)
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		t.Fatalf("tools/ansible-core.sh %s printed %q", dist, out)
	}
	return f[0], f[1]
}

// needsNewerPython matches what ansible-core says when the system Python is older than it supports.
var needsNewerPython = regexp.MustCompile(`Ansible requires Python (\d+\.\d+) or newer on the controller`)

// TestAnsibleCoreMatrix provisions a VM and an execlet of the sandbox to ready, then provisions both
// again and sees nothing change, with each distribution's own ansible-core (its .deb, run by the system
// Python with the system's python3 packages). With the first distribution's (Debian 12's 2.14.18, the
// system's) it also checks what each kind's playbook leaves behind (readyChecks). A version that cannot run on the system Python must be
// refused by hydra's check with ansible-core's own reason, which the test asserts; it is then run with
// tools/ansible-core-python.sh (Debian 13's CPython, built here, and the distribution's Python libraries).
func TestAnsibleCoreMatrix(t *testing.T) {
	requireTools(t)
	dists := matrixDistributions
	if s := os.Getenv("HYDRA_ANSIBLE_MATRIX"); s != "" {
		dists = strings.Fields(s)
	}
	for _, dist := range dists {
		t.Run(dist, func(t *testing.T) {
			t.Parallel()
			version, playbook := fetchAnsibleCore(t, dist)
			t.Logf("%s: ansible-core %s (%s)", dist, version, playbook)
			if out, err := exec.Command(playbook, "--version").CombinedOutput(); err != nil {
				m := needsNewerPython.FindStringSubmatch(string(out))
				if m == nil {
					t.Fatalf("ansible-core %s does not run: %v\n%s", version, err, out)
				}
				err := CheckAnsible(playbook)
				if err == nil || !strings.Contains(err.Error(), m[0]) {
					t.Fatalf("hydra's check of ansible-core %s, which needs Python %s: %v", version, m[1], err)
				}
				t.Logf("ansible-core %s needs Python %s on the controller; hydra refuses it saying so: %v", version, m[1], err)
				if strings.Contains(dist, ",") {
					return // only a named distribution's Python libraries are known to tools/ansible-core-python.sh
				}
				// Then with Debian 13's CPython (tools/python.sh) and the distribution's own Python libraries.
				version, playbook = fetchWith(t, "ansible-core-python.sh", dist)
				t.Logf("%s: ansible-core %s with a newer Python (%s)", dist, version, playbook)
				if out, err := exec.Command(playbook, "--version").CombinedOutput(); err != nil {
					t.Fatalf("ansible-core %s does not run with tools/python.sh's Python: %v\n%s", version, err, out)
				}
			}
			if err := CheckAnsible(playbook); err != nil {
				t.Fatalf("CheckAnsible(%s): %v", playbook, err)
			}
			key, pub := clientKey(t)
			tmp := shortTemp(t)
			r, err := New(Config{
				AnsiblePlaybook: playbook, PrivateKey: key, TempDir: tmp,
				SSHWaitTimeout: 30 * time.Second, SSHPollInterval: 200 * time.Millisecond,
			})
			if err != nil {
				t.Fatal(err)
			}
			machines := []struct {
				kind, gpu string
				count     int
				// volume: the machine has a block volume (the volume_mount role makes its file system
				// and mounts it in the first run; the second changes nothing), on every ansible-core of
				// the range: about 2.5 CPU-s each.
				volume bool
			}{{inventory.KindVM, "h100", 8, true}, {inventory.KindExeclet, "l40s", 2, false}}
			var wg sync.WaitGroup
			for _, m := range machines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					spec := simhost.Spec{GPUModel: simhost.NVIDIAName(m.gpu), GPUCount: m.count, AuthorizedKeys: []string{pub}}
					var vols []cloudprovider.Attachment
					store := filepath.Join(t.TempDir(), "vol-1")
					if m.volume {
						spec.Volumes = []simhost.Volume{{ID: "vol-1", Device: "/dev/disk/by-id/hydra-sbx-vol-1", SizeGB: 10, Store: store}}
						vols = []cloudprovider.Attachment{{VolumeID: "vol-1", Type: cloudprovider.VolumeBlock, MountPath: "/data", Device: "/dev/disk/by-id/hydra-sbx-vol-1"}}
					}
					vars := volumeUses(vols)
					ep := startMachine(t, spec)
					var ready readyCheck
					if dist == dists[0] {
						ready = readyChecks[m.kind]
						for k, v := range ready.vars {
							if vars == nil {
								vars = map[string]any{}
							}
							vars[k] = v
						}
						if ready.prepare != nil && !ready.prepare(t, ep) {
							return
						}
					}
					f := fixture{runner: r, ep: ep, tmpBase: tmp}
					rec := &logRecorder{}
					started := time.Now()
					first := f.request(m.kind, m.gpu, m.count, "", vars, rec)
					first.Volumes = vols
					res, err := r.Provision(context.Background(), first)
					if err != nil {
						t.Errorf("%s with ansible-core %s: %v\nlog:\n%s", m.kind, version, err, rec)
						return
					}
					if ready.check != nil {
						checkReadyRun(t, m.kind, m.count, ep, res, rec)
						ready.check(t, ep)
					}
					if fsys, err := simhost.StoreFS(store); m.volume && (err != nil || fsys == nil || fsys.Type != "ext4" || !isLink(filepath.Join(ep.Root, "data"))) {
						t.Errorf("%s with ansible-core %s: the volume's file system %+v (%v), want ext4 mounted at /data\nlog:\n%s", m.kind, version, fsys, err, rec)
					}
					marker := checkMarker(t, f, m.kind, vars, res.HostKey, started)
					again := &logRecorder{}
					req := f.request(m.kind, m.gpu, m.count, res.HostKey, vars, again)
					req.Volumes = vols
					req.Attempt = 2
					if _, err := r.Provision(context.Background(), req); err != nil {
						t.Errorf("%s with ansible-core %s, second run: %v\nlog:\n%s", m.kind, version, err, again)
						return
					}
					if strings.Contains(again.String(), "changed:true") {
						t.Errorf("%s with ansible-core %s: the second run changed something:\n%s", m.kind, version, again)
					}
					if !strings.Contains(again.String(), "playbook succeeded") {
						t.Errorf("%s with ansible-core %s: the second run's log lacks its success:\n%s", m.kind, version, again)
					}
					if m2 := checkMarker(t, f, m.kind, vars, res.HostKey, started); !m2.ProvisionedAt.Equal(marker.ProvisionedAt) {
						t.Errorf("%s with ansible-core %s: the second run rewrote the marker", m.kind, version)
					}
					if ready.check != nil {
						ready.check(t, ep)
					}
				}()
			}
			wg.Wait()
			assertEmptyDir(t, tmp)
			if !t.Failed() {
				taskExceptionIsNamed(t, playbook, version)
			}
		})
	}
}

// machineryFault is a sitecustomize.py that makes Ansible's own final validation of the task that loads
// a machine's variables raise a TypeError (not an Ansible error), wherever the task runs (a worker, or
// hydra_free in the controller): on 2.14 to 2.18 Ansible reports such a task failed with the traceback
// and no message.
const machineryFault = `try:
    from ansible.playbook.task import Task
    _post_validate = Task.post_validate

    def _faulty(self, *args, **kwargs):
        if "Load this machine's variables" in str(self.name):
            raise TypeError("missing 1 required positional argument: 'variable_manager' (injected)")
        return _post_validate(self, *args, **kwargs)
    Task.post_validate = _faulty
except ImportError:
    pass
`

// taskExceptionIsNamed provisions a machine with an ansible-playbook whose TaskExecutor raises on the
// first task, and checks that the failure names the exception (its type and message), not "the task
// failed without a message".
func taskExceptionIsNamed(t *testing.T, ansible, version string) {
	dir := t.TempDir()
	site := filepath.Join(dir, "site")
	if err := os.MkdirAll(site, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(site, "sitecustomize.py"), []byte(machineryFault), 0o600); err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(dir, "ansible-playbook")
	if err := os.WriteFile(wrapper, []byte("#!/bin/sh\nPYTHONPATH="+site+" exec "+ansible+" \"$@\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	key, pub := clientKey(t)
	r, err := New(Config{AnsiblePlaybook: wrapper, PrivateKey: key, TempDir: shortTemp(t),
		SSHWaitTimeout: 30 * time.Second, SSHPollInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ep := startMachine(t, simhost.Spec{GPUModel: simhost.NVIDIAName("l4"), GPUCount: 1, AuthorizedKeys: []string{pub}})
	f := fixture{runner: r, ep: ep}
	rec := &logRecorder{}
	res, err := r.Provision(context.Background(), f.request(inventory.KindVM, "l4", 1, "", nil, rec))
	// "TypeError: <message>" (2.14 to 2.18), or "Task failed: <message> (TypeError)" (2.19 and later).
	want := regexp.MustCompile(`TypeError: missing 1 required positional argument: 'variable_manager' \(injected\)|` +
		`missing 1 required positional argument: 'variable_manager' \(injected\) \(TypeError\)`)
	if err == nil || !want.MatchString(err.Error()) || !want.MatchString(res.Message) ||
		res.FailedTask != "Load this machine's variables" {
		t.Errorf("ansible-core %s, a task whose validation raised: error %v, result %+v; want the exception named (%s)\nlog:\n%s",
			version, err, res, want, rec)
	}
}
