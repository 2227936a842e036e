package realos

import (
	"bufio"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/osproc"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox/simhost"
)

func requireRealOS(t *testing.T) Image {
	t.Helper()
	requireTools(t)
	img, err := EnsureImage(context.Background(), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// requireTools skips the test (fails it with HYDRA_REALOS_REQUIRED=1) where real-OS machines cannot run.
func requireTools(t *testing.T) {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv("HYDRA_REALOS_REQUIRED") == "1" {
			t.Fatalf("the real-OS test cannot run here, and HYDRA_REALOS_REQUIRED=1: %v", err)
		}
		t.Skipf("no real-OS machine here: %v", err)
	}
}

func testKey(t *testing.T) ([]byte, string) {
	t.Helper()
	key, pub, err := simhost.NewKeyPair("realos-test")
	if err != nil {
		t.Fatal(err)
	}
	return key, pub
}

// bootL4 boots a machine of img (with systemd as PID 1 or, as a pod, without it) with a fresh key and
// one simulated L4; the test's cleanup stops it, and fails the test if Stop does.
func bootL4(t *testing.T, img Image, systemd bool) *Machine {
	t.Helper()
	key, pub := testKey(t)
	m, err := Boot(context.Background(), img, key, Options{Systemd: systemd, AuthorizedKey: pub, Logf: t.Logf, GPU: oneL4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Stop(); err != nil {
			t.Error(err)
		}
	})
	return m
}

// TestRealOS_MachineLifecycle: a machine boots with systemd as PID 1 (or, as a pod, without it),
// answers over SSH with its pinned host key, runs the GPU stand-ins from the image's packages and the
// real systemctl and dpkg-query, in cgroups of its own (the two run side by side), and leaves no
// process, file or cgroup behind when stopped.
func TestRealOS_MachineLifecycle(t *testing.T) {
	t.Parallel()
	img := requireRealOS(t)
	for _, systemd := range []bool{true, false} {
		name := map[bool]string{true: "systemd", false: "pod"}[systemd]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m := bootL4(t, img, systemd)
			ctx := context.Background()
			want := map[string]string{
				"cat /proc/1/comm":                                  map[bool]string{true: "systemd", false: "(sd-stubinit)"}[systemd],
				"systemd-detect-virt --container":                   "systemd-nspawn",
				"nvidia-smi --query-gpu=name --format=csv,noheader": "NVIDIA L4",
				"dpkg-query -W -f '${db:Status-Abbrev}' nvidia-utils-570 datacenter-gpu-manager-4-core": "ii ii",
				"readlink -f $(command -v systemctl)":                                                   "/usr/bin/systemctl",
			}
			if systemd {
				want["systemctl is-system-running"] = "running"
			}
			for cmd, w := range want {
				out, err := m.Run(ctx, cmd)
				if got := strings.Join(strings.Fields(out), " "); err != nil || got != w {
					t.Errorf("%s: %q (%v), want %q", cmd, got, err, w)
				}
			}
			// The machine's network is its own: its sshd listens on its loopback's port 22, which
			// ListeningTCP sees and the host's sockets do not.
			if ls, err := m.ListeningTCP(); err != nil || !slices.Contains(ls, netip.MustParseAddrPort("127.0.0.1:22")) {
				t.Errorf("listening in the machine: %v (%v), want 127.0.0.1:22 among them", ls, err)
			}
			if ls, err := listeningTCP(); err != nil || slices.Contains(ls, netip.MustParseAddrPort("127.0.0.1:22")) {
				t.Errorf("listening on the host: %v (%v), want no 127.0.0.1:22 (the machine's)", ls, err)
			}
			if out, err := m.Run(ctx, "echo written > /etc/hydra-realos-test"); err != nil {
				t.Fatalf("writing in the machine: %v: %s", err, out)
			}
			if _, err := os.Stat(img.Root + "/etc/hydra-realos-test"); !os.IsNotExist(err) {
				t.Errorf("a file written in the machine reached the cached image (%v)", err)
			}
			init := containerInit(m.pid())
			// The container is in a cgroup of its own machine's, never in one another container shares.
			if cg := cgroupOf(init); !strings.Contains(cg, "/"+m.Name+"/") {
				t.Errorf("the container's PID 1 is in the cgroup %q, want one below %s", cg, m.Name)
			}
			if err := m.Stop(); err != nil {
				t.Error(err)
			}
			if init == 0 || osproc.Alive(init) {
				t.Errorf("the container's PID 1 (%d) outlived Stop", init)
			}
			if left := processesIn(m.Root); len(left) > 0 {
				t.Errorf("processes %v outlived Stop", left)
			}
			if mounted(m.Root) {
				t.Errorf("%s is still mounted after Stop", m.Root)
			}
			if slices.Contains(machineCgroups(), m.Name) {
				t.Errorf("the cgroups of %s are still there after Stop", m.Name)
			}
			if _, err := os.Stat(m.Root); !os.IsNotExist(err) {
				t.Errorf("the run directory %s is still there: %v", m.Root, err)
			}
		})
	}
}

// TestRealOS_SweepAfterKill: a test process killed while its machine runs (SIGKILL: no cleanup runs)
// leaves nothing running, and the next Boot unmounts and removes what it left, never a machine that
// still runs.
func TestRealOS_SweepAfterKill(t *testing.T) {
	if os.Getenv("HYDRA_REALOS_HELPER") == "boot" {
		// The helper process: boot a machine, say where it is, and wait to be killed.
		img, err := EnsureImage(context.Background(), func(string, ...any) {})
		if err != nil {
			t.Fatal(err)
		}
		key, pub := testKey(t)
		m, err := Boot(context.Background(), img, key, Options{Systemd: true, AuthorizedKey: pub,
			GPU: oneL4})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("ROOT %s\n", m.Root)
		select {}
	}
	t.Parallel()
	img := requireRealOS(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestRealOS_SweepAfterKill$", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), "HYDRA_REALOS_HELPER=boot")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var root string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if r, ok := strings.CutPrefix(sc.Text(), "ROOT "); ok {
			root = r
			break
		}
	}
	if root == "" {
		t.Fatal("the helper process did not boot a machine")
	}
	// A machine of this process runs while the next Boot sweeps: its run directory's lock is held, so
	// the sweep leaves it alone.
	live := bootL4(t, img, false)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	bootL4(t, img, false)
	if left := processesIn(root); len(left) > 0 {
		t.Errorf("processes %v of the killed test's machine still run", left)
	}
	if mounted(root) {
		t.Errorf("the killed test's machine %s is still mounted", root)
	}
	if _, err := os.Stat(filepath.Dir(root)); !os.IsNotExist(err) {
		t.Errorf("the killed test's run directory %s is still there (%v)", filepath.Dir(root), err)
	}
	if name := machineName(filepath.Dir(root)); slices.Contains(machineCgroups(), name) {
		t.Errorf("the cgroups of the killed test's machine %s are still there", name)
	}
	if out, err := live.Run(context.Background(), "echo alive"); err != nil || strings.TrimSpace(out) != "alive" {
		t.Errorf("the machine running beside the sweep: %q (%v), want it alive", out, err)
	}
}

// TestRealOS_NspawnKilledFirst: when systemd-nspawn dies before its container (SIGKILL: the container's
// systemd is left with no parent but PID 1), Stop still ends every process of the container, found by
// the mount at its "/" since its root reads "/" from the host.
func TestRealOS_NspawnKilledFirst(t *testing.T) {
	t.Parallel()
	img := requireRealOS(t)
	key, pub := testKey(t)
	m, err := Boot(context.Background(), img, key, Options{Systemd: true, AuthorizedKey: pub, Logf: t.Logf,
		GPU: oneL4})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = m.Stop() }()
	init := containerInit(m.pid())
	if init == 0 || !inRoot(init, m.Root) {
		t.Fatalf("the container's init (pid %d) is not found in %s", init, m.Root)
	}
	if err := m.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-m.exited
	if !osproc.Alive(init) {
		t.Skip("the container's init ended with systemd-nspawn: nothing outlived it")
	}
	_ = m.Stop()
	if left := processesFrom(filepath.Dir(m.Root) + "/"); len(left) > 0 {
		t.Errorf("processes %v of the container outlived systemd-nspawn and Stop", left)
	}
}

// TestRealOS_Reboot: a machine whose systemd reboots comes back as a VM does: a new boot id, the same
// disk, sshd with the same host key, its apt proxy on its loopback again.
func TestRealOS_Reboot(t *testing.T) {
	t.Parallel()
	m := bootL4(t, requireRealOS(t), true)
	// As long as a reboot may take on a busy 2-core runner (boot under a load of 20).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	before, err := m.Run(ctx, "cat /proc/sys/kernel/random/boot_id && echo kept > /var/tmp/disk")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = m.Run(ctx, "systemctl reboot")
	var after, last string
	for ctx.Err() == nil {
		// Each try is bounded: a connection made while the old container goes down can hang.
		try, stop := context.WithTimeout(ctx, 15*time.Second)
		out, err := m.Run(try, "cat /proc/sys/kernel/random/boot_id /var/tmp/disk && systemctl is-system-running --wait >/dev/null; "+
			`python3 -c 'import socket; socket.create_connection(("127.0.0.1", 3142), 5); print("proxy")'`)
		stop()
		if err == nil && strings.Fields(out)[0] != strings.TrimSpace(before) {
			after = out
			break
		}
		if try := fmt.Sprintf("%q, %v", out, err); try != last {
			t.Logf("%s after the reboot: %s", time.Now().Format("15:04:05.000"), try)
			last = try
		}
		time.Sleep(200 * time.Millisecond)
	}
	if f := strings.Fields(after); len(f) != 3 || f[1] != "kept" || f[2] != "proxy" || m.Reboots() != 1 {
		t.Errorf("after the reboot: %q, %d reboot(s); want a new boot id, the disk kept, the apt proxy, one reboot (last try: %s)", after, m.Reboots(), last)
	}
}

// TestRealOS_ContainerNetns: a container's network namespace is named only once its init, the child
// of systemd-nspawn (here of unshare, which forks the same way), is in a network of its own: never
// while it is in a new PID namespace but still the host's network, as systemd-nspawn's init is until
// it unshares its own (an apt proxy listening "in the machine" then listened on the host: after a
// reboot, the machine's apt was refused).
func TestRealOS_ContainerNetns(t *testing.T) {
	t.Parallel()
	requireTools(t)
	for _, tc := range []struct {
		name   string
		args   []string
		ownNet bool
	}{
		{"new PID namespace, the host's network", []string{"--pid", "--fork", "--kill-child"}, false},
		// unshare --net enters the new network itself: the child unshares its own, as nspawn's init does.
		{"new PID and network namespaces", []string{"--pid", "--fork", "--kill-child", "unshare", "--net"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command("unshare", append(tc.args, "sleep", "600")...)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }() // --kill-child: its child goes with it
			init := 0
			for deadline := time.Now().Add(30 * time.Second); init == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				// Once it runs sleep, the child is in the namespaces it will have.
				if c := containerInit(cmd.Process.Pid); c > 0 && cmdlineHas(c, "\x00600") && !cmdlineHas(c, "unshare") {
					init = c
				}
			}
			if init == 0 {
				t.Fatal("unshare's child did not start")
			}
			want := ""
			if tc.ownNet {
				want = fmt.Sprintf("/proc/%d/ns/net", init)
			}
			if got := containerNetns(cmd.Process.Pid); got != want {
				t.Errorf("containerNetns = %q, want %q", got, want)
			}
		})
	}
}

// oneL4 is the GPU layer of the test machines: one simulated L4.
var oneL4 = simhost.Spec{GPUModel: simhost.NVIDIAName("l4"), GPUCount: 1}
