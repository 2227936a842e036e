package provision

import (
	"context"
	"fmt"
	"maps"
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
	"github.com/hydragpu/terraform-provider-hydra/internal/testsupport"
)

// matrixDistributions are the distributions whose ansible-core TestAnsibleCoreMatrix runs (the
// names tools/ansible-core.sh knows): Debian's and Ubuntu's supported releases. HYDRA_ANSIBLE_MATRIX
// replaces them (space-separated; an entry may also be "<archive URL>,<suite>,<component>,<arch>" for
// any other release, such as an Ubuntu interim release past its end of life).
var matrixDistributions = []string{"debian-12", "ubuntu-24.04", "debian-13", "ubuntu-26.04"}

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

// matrixVM is a VM TestAnsibleCoreMatrix provisions: its GPUs, the variables its run gets, and what
// the first run must show of its fabric.
type matrixVM struct {
	gpu   string
	count int
	vars  map[string]any
	// want and absent are tasks the first run must report ok, and must not run.
	want, absent []string
	// files are files the run writes under the machine's root: what they hold.
	files map[string]string
}

// matrixVMs are the VMs of TestAnsibleCoreMatrix, distribution i provisioning the ith (the first from
// the fourth on): an H100 HGX board (NVSwitch: Fabric Manager), a B200 HGX board (NVLink 5 switches of
// its own, found by their root-only VPD: Fabric Manager and the NVLink 5 modules, no IMEX) and a GB200
// compute tray (no switch of its own, "NVIDIA GB200" never taken for a B200: IMEX with its domain file
// and unit, no Fabric Manager). Each is judged on its fabric by the health check, and each path is run
// twice.
var matrixVMs = []matrixVM{
	// The machine's Fabric Manager runs (the sandbox's image has it enabled): it is left alone.
	{gpu: "h100", count: 8, want: []string{"Run Fabric Manager"}, absent: []string{"Enable and start Fabric Manager"}},
	{gpu: "b200", count: 8,
		want:   []string{"Run Fabric Manager"},
		absent: []string{"Enable and start IMEX", "Enable and start Fabric Manager"},
		files:  map[string]string{"etc/modules-load.d/hydra-nvlink5.conf": "ib_umad"}},
	{gpu: "gb200", count: 4,
		want:   []string{"Enable and start IMEX"},
		absent: []string{"Run Fabric Manager", "Load the NVLink 5 kernel modules at every boot"},
		// The domain's trays as the user lists them (by default the tray's private address).
		vars:  map[string]any{"hydra_imex_nodes": []any{"10.0.7.21", "10.0.7.22"}},
		files: map[string]string{"etc/nvidia-imex/nodes_config.cfg": "10.0.7.21\n10.0.7.22\n"}},
}

// writtenOnce are the tasks that write a file or make a directory the probe reports
// (hydra_machine.files, the customer's keys), or read one it read (the IMEX domain's trays), and the
// volume's fstab line the volume probe found: a second run, which finds them as the first left them,
// skips them, on every ansible-core (the task's when compares the content's SHA-256, or the line, as
// that ansible-core renders it).
var writtenOnce = []string{
	"Keep the volume in fstab",
	"Make IMEX's configuration directory", "Read the IMEX domain's trays",
	"Make the drop-in directory of nvidia-persistenced", "Write the unit and the drop-in of nvidia-persistenced",
	"Make the directory of the modules loaded at boot", "Load the NVLink 5 kernel modules at every boot",
	"Set node_exporter's listen address",
	"Write hydra's dcgm-exporter unit", "Make hydra's configuration directory", "Write the execlet configuration",
	"Write the execlet agent's unit",
	"Make the customer's .ssh directory", "Install the customer's SSH keys",
}

// checkFabric checks a VM's first run against what vm says of its fabric.
func (vm matrixVM) checkFabric(t *testing.T, ep simhost.Endpoint, log string) {
	t.Helper()
	for _, name := range vm.want {
		if !regexp.MustCompile(`task ok .*` + regexp.QuoteMeta(name)).MatchString(log) {
			t.Errorf("%s: %q did not run:\n%s", vm.gpu, name, log)
		}
	}
	for _, name := range vm.absent {
		if regexp.MustCompile(`task ok .*` + regexp.QuoteMeta(name)).MatchString(log) {
			t.Errorf("%s: %q ran:\n%s", vm.gpu, name, log)
		}
	}
	for p, want := range vm.files {
		if b, err := os.ReadFile(filepath.Join(ep.Root, p)); err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s: %s holds %q (%v), want %q", vm.gpu, p, b, err, want)
		}
	}
	// The health check judged the fabric (and IMEX's unit on the tray).
	if !strings.Contains(log, "fabric ok") {
		t.Errorf("%s: the fabric was not judged:\n%s", vm.gpu, log)
	}
}

// TestAnsibleCoreMatrix provisions a VM and an execlet of the sandbox to ready, then provisions both
// again and sees nothing change, with each distribution's own ansible-core (its .deb, run by the system
// Python with the system's python3 packages); the VM differs by distribution (matrixVMs: H100, B200,
// GB200). With the first distribution's (Debian 12's 2.14.18, the system's) it also checks what each
// kind's playbook leaves behind (readyChecks). A version that cannot run on the system Python must be
// refused by hydra's check with ansible-core's own reason, which the test asserts; it is then run with
// tools/ansible-core-python.sh (Debian 13's CPython, built here, and the distribution's Python libraries).
func TestAnsibleCoreMatrix(t *testing.T) {
	requireTools(t)
	dists := matrixDistributions
	if s := os.Getenv("HYDRA_ANSIBLE_MATRIX"); s != "" {
		dists = strings.Fields(s)
	}
	for i, dist := range dists {
		vm := matrixVMs[0]
		if i < len(matrixVMs) {
			vm = matrixVMs[i]
		}
		t.Run(dist, func(t *testing.T) {
			t.Parallel()
			version, playbook := fetchAnsibleCore(t, dist)
			t.Logf("%s: ansible-core %s (%s)", dist, version, playbook)
			// ansible-playbook --version runs only where hydra's check refused it (CheckAnsible runs it
			// once per binary), to read ansible-core's own reason.
			if err := CheckAnsible(playbook); err != nil {
				out, verr := exec.Command(playbook, "--version").CombinedOutput()
				m := needsNewerPython.FindStringSubmatch(string(out))
				if m == nil {
					t.Fatalf("ansible-core %s does not run: %v (hydra's check: %v)\n%s", version, verr, err, out)
				}
				if !strings.Contains(err.Error(), m[0]) {
					t.Fatalf("hydra's check of ansible-core %s, which needs Python %s: %v", version, m[1], err)
				}
				t.Logf("ansible-core %s needs Python %s on the controller; hydra refuses it saying so: %v", version, m[1], err)
				if strings.Contains(dist, ",") {
					return // only a named distribution's Python libraries are known to tools/ansible-core-python.sh
				}
				// Then with Debian 13's CPython (tools/python.sh) and the distribution's own Python libraries.
				version, playbook = fetchWith(t, "ansible-core-python.sh", dist)
				t.Logf("%s: ansible-core %s with a newer Python (%s)", dist, version, playbook)
			}
			if err := CheckAnsible(playbook); err != nil {
				t.Fatalf("CheckAnsible(%s) of ansible-core %s: %v", playbook, version, err)
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
				vm     *matrixVM
			}{{inventory.KindVM, vm.gpu, vm.count, true, &vm}, {inventory.KindExeclet, "l40s", 2, false, nil}}
			// The VM's machine and pinned host key, for taskExceptionIsNamed.
			var vmEP simhost.Endpoint
			var vmHostKey string
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
					if m.vm != nil && m.vm.vars != nil {
						if vars == nil {
							vars = map[string]any{}
						}
						maps.Copy(vars, m.vm.vars)
					}
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
					if m.vm != nil {
						m.vm.checkFabric(t, ep, rec.String())
						vmEP, vmHostKey = ep, res.HostKey
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
					for _, name := range writtenOnce {
						if regexp.MustCompile(`task ok .*` + regexp.QuoteMeta(name)).MatchString(again.String()) {
							t.Errorf("%s with ansible-core %s: the second run ran %q, which the probe saw done:\n%s", m.kind, version, name, again)
						}
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
				taskExceptionIsNamed(t, playbook, version, key, vmEP, vmHostKey)
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

// exceptionPlaybook is taskExceptionIsNamed's pool playbook: its run fails at the batch playbook's
// first task (hydra's own, before any role), so only hydra's variables are loaded.
const exceptionPlaybook = `- name: Fail before any role
  hosts: all
  gather_facts: false
  vars:
    hydra_playbook: exception-test.yml
  roles:
    - hydra_vars
`

// taskExceptionIsNamed provisions a machine (ep, already provisioned and pinned at hostKey, trusting
// key) with an ansible-playbook whose TaskExecutor raises on the first task, and checks that the
// failure names the exception (its type and message), not "the task failed without a message".
func taskExceptionIsNamed(t *testing.T, ansible, version string, key []byte, ep simhost.Endpoint, hostKey string) {
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
	// The wrapper runs the ansible-playbook CheckAnsible accepted: it is not asked its version again.
	stamp, err := stampOf(wrapper)
	if err != nil {
		t.Fatal(err)
	}
	acceptedAnsible.Store(stamp, true)
	r, err := New(Config{AnsiblePlaybook: wrapper, PrivateKey: key, TempDir: shortTemp(t),
		SSHWaitTimeout: 30 * time.Second, SSHPollInterval: 200 * time.Millisecond,
		Playbooks: testsupport.PlaybooksWith(t, map[string]string{"exception-test.yml": exceptionPlaybook})})
	if err != nil {
		t.Fatal(err)
	}
	f := fixture{runner: r, ep: ep}
	rec := &logRecorder{}
	req := f.request(inventory.KindVM, "l4", 1, hostKey, nil, rec)
	req.Pool.Playbook = "exception-test.yml"
	res, err := r.Provision(context.Background(), req)
	// "TypeError: <message>" (2.14 to 2.18), or "Task failed: <message> (TypeError)" (2.19 and later).
	want := regexp.MustCompile(`TypeError: missing 1 required positional argument: 'variable_manager' \(injected\)|` +
		`missing 1 required positional argument: 'variable_manager' \(injected\) \(TypeError\)`)
	if err == nil || !want.MatchString(err.Error()) || !want.MatchString(res.Message) ||
		res.FailedTask != "Load this machine's variables" {
		t.Errorf("ansible-core %s, a task whose validation raised: error %v, result %+v; want the exception named (%s)\nlog:\n%s",
			version, err, res, want, rec)
	}
}
