package realos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/hydragpu/terraform-provider-hydra/internal/filelock"
	"github.com/hydragpu/terraform-provider-hydra/internal/osproc"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox/simhost"
	"github.com/hydragpu/terraform-provider-hydra/internal/testsupport/sshtest"
)

// Options describe a machine.
type Options struct {
	// Systemd boots the image's systemd as PID 1 (a VM-like machine); without it the container runs
	// only sshd, as a pod does.
	Systemd bool
	// AuthorizedKey is the authorized_keys line root logs in with.
	AuthorizedKey string
	// GPU describes the simulated GPUs (simhost.Spec: model, count; AuthorizedKeys and User are not
	// used). Container is set from Systemd.
	GPU simhost.Spec
	// Prepare are shell commands run in the machine's copy of the image before it boots, without
	// booting it (systemd-nspawn running /bin/sh), apt reaching Debian's mirror through the machine's
	// apt proxy: installing Debian packages the machine's image should have, say.
	Prepare []string
	// ImagePrepare are shell commands run like Prepare, but once: into a copy of the image cached by the
	// image and the commands (PreparedImage), which the machine boots from. For what every machine of a
	// kind needs in its image, at no cost once cached; Prepare runs after them, on the machine's copy.
	ImagePrepare []string
	// Logf receives progress lines (default: none).
	Logf func(format string, args ...any)
}

// Machine is a running system container.
type Machine struct {
	// Name is the container's machine name (and host name).
	Name string
	// Root is the copy of the image the container runs on (its "/" seen from the host).
	Root string
	// Port is the host's loopback port that reaches its sshd (a forwarder: the machine's network is
	// its own); HostKey its ed25519 host key (authorized_keys form), to pin.
	Port    int
	HostKey string
	Systemd bool
	// BootLog is the file the container's console output goes to.
	BootLog string

	dir string
	// cgroups are the cgroup.procs files of the machine's own cgroups (see makeCgroups).
	cgroups []string
	cmd     *exec.Cmd
	exited  chan struct{}
	unlock  func()
	signer  ssh.Signer
	logf    func(string, ...any)

	fwd   net.Listener
	proxy *aptProxy
	// mu guards cmd (replaced at each reboot), proxyLs, stopping and reboots.
	mu       sync.Mutex
	proxyLs  []net.Listener
	stopping bool
	reboots  int
	stopOnce sync.Once
	stopErr  error
}

// pidsFile, in a run directory, records systemd-nspawn's pid so a later Boot can end a container
// whose test was killed.
const pidsFile = "nspawn.pid"

// Boot starts a machine on a fresh copy of img and waits until it is ready for Ansible. key is the
// private key (PEM) matching opts.AuthorizedKey, used only by Run. Every machine has a network
// namespace of its own, so machines run side by side, each with its exporters on their default ports.
func Boot(ctx context.Context, img Image, key []byte, opts Options) (*Machine, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	signer, err := ssh.ParsePrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("realos: client key: %w", err)
	}
	cache, err := CacheDir()
	if err != nil {
		return nil, err
	}
	if img.OS.Name == "" {
		img.OS = Debian12
	}
	if len(opts.ImagePrepare) > 0 {
		if img, err = PreparedImage(ctx, img, opts.ImagePrepare, logf); err != nil {
			return nil, err
		}
	}
	proxy, err := osAptProxy(cache, img.OS)
	if err != nil {
		return nil, err
	}
	m := &Machine{Systemd: opts.Systemd, exited: make(chan struct{}), signer: signer, logf: logf, proxy: proxy}
	m.dir, m.unlock, err = newRun(filepath.Join(cache, machinesDir), logf)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			_ = removeRun(m.dir)
			removeCgroups(m.Name)
			m.unlock()
		}
	}()
	m.Name = machineName(m.dir)
	if m.cgroups, err = makeCgroups(m.Name); err != nil {
		// Not fatal: the container then shares this process's cgroup tree, as before (and
		// TestRealOS_MachineLifecycle says so).
		logf("real-OS machine %s: no cgroup of its own (%v); it shares this process's", m.Name, err)
	}
	m.Root = filepath.Join(m.dir, "rootfs")
	m.BootLog = filepath.Join(m.dir, "console.log")
	started := time.Now()
	how, err := layer(ctx, img.Root, m.dir)
	if err != nil {
		return nil, err
	}
	logf("real-OS machine %s: image %s %s in %s", m.Name, img.Key[:12], how, time.Since(started).Round(time.Millisecond))
	if err := m.configure(opts); err != nil {
		return nil, err
	}
	if len(opts.Prepare) > 0 {
		// Before boot there is no namespace of the machine's yet: apt reaches the proxy on a loopback
		// port of the host.
		l, proxyEnv, err := proxy.serveLoopback()
		if err != nil {
			return nil, err
		}
		m.proxyLs = append(m.proxyLs, l)
		env := append(os.Environ(), proxyEnv...)
		for _, c := range opts.Prepare {
			cmd := nspawn(ctx, m.cgroups, "--quiet", "--register=no", "--keep-unit", "--private-users=no",
				"--resolv-conf=off", "--directory="+m.Root, "/bin/sh", "-c", c)
			cmd.Env = env
			if out, err := cmd.CombinedOutput(); err != nil {
				m.closeProxy()
				return nil, fmt.Errorf("realos: preparing the machine (%s): %v: %s", c, err, tail(out, 2000))
			}
			logf("real-OS machine %s prepared: %s", m.Name, c)
		}
		m.closeProxy()
	}
	// Booted, its network is its own: apt reaches the mirror through the proxy on its loopback (written
	// after Prepare, whose apt reaches it through http_proxy).
	if err := os.WriteFile(filepath.Join(m.Root, aptProxyFile), []byte(aptProxyConf), 0o644); err != nil {
		return nil, err
	}
	if err := m.start(); err != nil {
		return nil, err
	}
	ok = true
	if err := m.forward(); err != nil {
		_ = m.Stop()
		return nil, err
	}
	if a, isTCP := m.fwd.Addr().(*net.TCPAddr); isTCP {
		m.Port = a.Port
	}
	if err := m.waitReady(ctx); err != nil {
		console, _ := os.ReadFile(m.BootLog)
		_ = m.Stop()
		return nil, fmt.Errorf("%w\nconsole:\n%s", err, tail(console, 3000))
	}
	// sshd answering means the machine's loopback is up: its apt proxy can listen there.
	if err := m.listenProxy(0); err != nil {
		_ = m.Stop()
		return nil, fmt.Errorf("realos: the apt proxy of %s: %w", m.Name, err)
	}
	logf("real-OS machine %s ready (%s, sshd on 127.0.0.1:%d) %s after Boot", m.Name,
		map[bool]string{true: "systemd as PID 1", false: "no systemd: a pod"}[m.Systemd], m.Port, time.Since(started).Round(time.Millisecond))
	return m, nil
}

// configure writes what this run needs into the copy: sshd's port and root's key, the host name, and
// the simulated GPU layer.
func (m *Machine) configure(opts Options) error {
	r := m.Root
	files := map[string]string{
		"/etc/ssh/sshd_config.d/hydra-realos.conf": fmt.Sprintf("# hydra real-OS test: sshd on the loopback of the machine's own network (the test reaches it\n"+
			"# through a forwarder).\n"+
			"Port %d\nListenAddress 127.0.0.1\nPermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUseDNS no\n", innerSSHPort),
		"/root/.ssh/authorized_keys": strings.TrimSpace(opts.AuthorizedKey) + "\n",
		"/etc/hostname":              m.Name + "\n",
	}
	for p, c := range files {
		if err := os.MkdirAll(filepath.Join(r, filepath.Dir(p)), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(r, p), []byte(c), 0o600); err != nil {
			return err
		}
	}
	if err := os.Chmod(filepath.Join(r, "etc/ssh/sshd_config.d/hydra-realos.conf"), 0o644); err != nil {
		return err
	}
	if err := os.Chmod(filepath.Join(r, "etc/hostname"), 0o644); err != nil {
		return err
	}
	pub, err := os.ReadFile(filepath.Join(r, "etc/ssh/ssh_host_ed25519_key.pub"))
	if err != nil {
		return fmt.Errorf("realos: the image has no ed25519 host key: %w", err)
	}
	k, _, _, _, err := ssh.ParseAuthorizedKey(pub)
	if err != nil {
		return fmt.Errorf("realos: host key: %w", err)
	}
	m.HostKey = strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k)))
	gpu := opts.GPU
	gpu.Container = !opts.Systemd
	gpu.AuthorizedKeys, gpu.User = nil, ""
	if gpu.DriverVersion == "" {
		gpu.DriverVersion = DriverVersion
	}
	return simhost.WriteGPULayer(filepath.Join(r, GPULayerDir), gpu)
}

// start runs systemd-nspawn in its own process group, its console to BootLog, and runs it again
// whenever the container's systemd reboots (systemd-nspawn exits with 133 then, which
// systemd-nspawn@.service's RestartForceExitStatus=133 answers the same way): the machine reboots as a
// VM does, into a new boot (systemd-nspawn gives each a new boot id) on the same disk.
func (m *Machine) start() error {
	cmd, err := m.spawn()
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.cmd = cmd
	m.mu.Unlock()
	go m.supervise(cmd)
	return nil
}

// spawn starts systemd-nspawn once.
func (m *Machine) spawn() (*exec.Cmd, error) {
	args := []string{"--quiet", "--register=no", "--keep-unit", "--private-users=no", "--resolv-conf=copy-host",
		"--console=read-only", "--machine=" + m.Name, "--directory=" + m.Root, "--private-network",
		// SIGTERM to systemd-nspawn (Stop, or this process's death) kills the container's init, and with
		// it the container, instead of asking its systemd for an orderly poweroff: Stop discards the
		// disk, so a poweroff would protect nothing, and it cost about 0.09 CPU-s and half a second
		// each. A reboot the container asks for is still its own.
		"--kill-signal=SIGKILL"}
	if m.Systemd {
		args = append(args, "--boot")
	} else {
		// A pod: no init system, sshd run by nspawn's minimal PID 1 stub (which reaps orphans).
		args = append(args, "--as-pid2", "/bin/sh", "-c", "mkdir -p /run/sshd && exec /usr/sbin/sshd -D -e")
	}
	logFile, err := os.OpenFile(m.BootLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer func() { _ = logFile.Close() }() // the child has its own descriptor
	cmd := nspawn(context.Background(), m.cgroups, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// systemd-nspawn leads its own process group and (on Linux, the only system Available accepts) the
	// kernel sends it SIGTERM, which ends the container (--kill-signal), when the test process dies.
	cmd.SysProcAttr = osproc.NewGroupDyingWith(osproc.Terminate)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("realos: start systemd-nspawn: %w", err)
	}
	_ = os.WriteFile(filepath.Join(m.dir, pidsFile), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644)
	return cmd, nil
}

// rebootExit is systemd-nspawn's exit code when the container rebooted.
const rebootExit = 133

// supervise waits for systemd-nspawn, starts it again after a reboot (unless the machine is being
// stopped), and closes m.exited when the container is gone for good.
func (m *Machine) supervise(cmd *exec.Cmd) {
	for {
		err := cmd.Wait()
		var ee *exec.ExitError
		m.mu.Lock()
		if m.Systemd && !m.stopping && errors.As(err, &ee) && ee.ExitCode() == rebootExit {
			next, serr := m.spawn()
			if serr == nil {
				m.cmd, cmd = next, next
				m.reboots++
				m.mu.Unlock()
				m.logf("real-OS machine %s rebooted (systemd-nspawn started again)", m.Name)
				go func() {
					switch err := m.listenProxy(5 * time.Minute); {
					case err == nil:
						m.logf("real-OS machine %s: its apt proxy listens on its loopback again", m.Name)
					case !m.isStopping():
						m.logf("real-OS machine %s: no apt proxy after its reboot: %v", m.Name, err)
					}
				}()
				continue
			}
			m.logf("real-OS machine %s: systemd-nspawn could not start again after a reboot: %v", m.Name, serr)
		}
		m.mu.Unlock()
		close(m.exited)
		return
	}
}

// pid is systemd-nspawn's pid (the current one, after reboots).
func (m *Machine) pid() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil || m.cmd.Process == nil {
		return 0
	}
	return m.cmd.Process.Pid
}

// isStopping says whether Stop has begun.
func (m *Machine) isStopping() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stopping
}

// Reboots is how many times the machine rebooted.
func (m *Machine) Reboots() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reboots
}

// listenProxy makes the apt proxy listen on the machine's loopback (once it is up, within wait).
func (m *Machine) listenProxy(wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		ns, err := m.netns()
		if err != nil {
			return err
		}
		l, err := inNetns(ns, func() (net.Listener, error) {
			return net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(aptProxyPort)))
		})
		if err == nil {
			m.mu.Lock()
			defer m.mu.Unlock()
			if m.stopping { // Stop closed the others already
				_ = l.Close()
				return fmt.Errorf("realos: the machine %s is being stopped", m.Name)
			}
			m.proxyLs = append(m.proxyLs, l)
			m.proxy.serve(l)
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-m.exited:
			return fmt.Errorf("realos: the container %s exited", m.Name)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitReady waits for sshd's banner on the port (or the container's exit), then, with systemd, for
// the boot to finish (systemctl is-system-running --wait).
func (m *Machine) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !banner(m.Port) {
		select {
		case <-m.exited:
			return fmt.Errorf("realos: the container %s exited before its sshd answered", m.Name)
		case <-ctx.Done():
			return fmt.Errorf("realos: the container %s's sshd did not answer on port %d: %w", m.Name, m.Port, ctx.Err())
		case <-tick.C:
		}
	}
	if !m.Systemd {
		return nil
	}
	out, err := m.Run(ctx, "systemctl is-system-running --wait")
	if state := strings.TrimSpace(out); state != "running" {
		failed, _ := m.Run(ctx, "systemctl --failed --no-legend --no-pager")
		// What each failed unit said, so that a boot that failed once in CI can be understood from its log.
		why, _ := m.Run(ctx, "for u in $(systemctl --failed --no-legend --plain | cut -d' ' -f1); do "+
			"systemctl status --no-pager --full --lines=0 \"$u\"; journalctl --no-pager -b -o short-monotonic -u \"$u\"; done")
		return fmt.Errorf("realos: the container %s booted %q (%v), failed units: %s\n%s", m.Name, state, err, strings.TrimSpace(failed), tail([]byte(why), 3000))
	}
	return nil
}

// Run runs a shell command on the machine as root over SSH (the host key pinned) and returns its
// combined output.
func (m *Machine) Run(ctx context.Context, command string) (string, error) {
	c, err := sshtest.Login{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(m.Port)), User: "root", Signer: m.signer,
		HostKey: m.HostKey, Timeout: 10 * time.Second}.Dial()
	if err != nil {
		return "", err
	}
	defer func() { _ = c.Close() }()
	s, err := c.NewSession()
	if err != nil {
		return "", err
	}
	defer func() { _ = s.Close() }()
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := s.CombinedOutput(command)
		done <- result{out, err}
	}()
	select {
	case r := <-done:
		return string(r.out), r.err
	case <-ctx.Done():
		_ = c.Close()
		return "", ctx.Err()
	}
}

// Stop ends the machine at once (no orderly shutdown: its disk is discarded), kills whatever is left
// of it, removes its run directory and lets the next machine boot. It is safe to call more than once.
func (m *Machine) Stop() error {
	m.stopOnce.Do(func() {
		defer m.unlock()
		started := time.Now()
		if m.fwd != nil {
			_ = m.fwd.Close()
		}
		m.mu.Lock()
		m.stopping = true // before closeProxy: no listener of the apt proxy is added after it
		m.mu.Unlock()
		m.closeProxy()
		m.mu.Lock()
		pid := 0
		if m.cmd != nil && m.cmd.Process != nil {
			pid = m.cmd.Process.Pid
		}
		m.mu.Unlock()
		if pid > 0 {
			init := containerInit(pid)
			_ = osproc.SignalProcess(pid, osproc.Terminate)
			select {
			case <-m.exited:
			case <-time.After(30 * time.Second):
				m.logf("real-OS machine %s: systemd-nspawn did not end within 30 s; killing it", m.Name)
				_ = osproc.SignalGroup(pid, osproc.Kill)
				<-m.exited
			}
			// The container's PID 1 ends its whole PID namespace; it is gone once nspawn is, unless
			// nspawn was killed first.
			if init > 0 && osproc.Alive(init) && inRoot(init, m.Root) {
				_ = osproc.SignalProcess(init, osproc.Kill)
				waitExited([]int{init}, 10*time.Second)
			}
		}
		if left := processesIn(m.Root); len(left) > 0 {
			m.stopErr = fmt.Errorf("realos: processes %v of %s outlived it", left, m.Name)
			for _, pid := range left {
				_ = osproc.SignalProcess(pid, osproc.Kill)
			}
			waitExited(left, 10*time.Second)
		}
		_ = os.RemoveAll(filepath.Join("/run/systemd/nspawn/propagate", m.Name))
		if err := removeRun(m.dir); err != nil && m.stopErr == nil {
			m.stopErr = fmt.Errorf("realos: removing %s: %w", m.dir, err)
		}
		if !removeCgroups(m.Name) && m.stopErr == nil {
			m.stopErr = fmt.Errorf("realos: the cgroups of %s are still there", m.Name)
		}
		m.logf("real-OS machine %s stopped and removed in %s", m.Name, time.Since(started).Round(time.Millisecond))
	})
	return m.stopErr
}

// machinesDir, in the cache directory, holds the machines' run directories: m-XXXX (the machine's
// overlay, console log and systemd-nspawn's pid) beside m-XXXX.lock, held by the process the machine
// belongs to from Boot to Stop (a process that dies releases it).
const machinesDir = "machines"

// newRun makes a run directory in dir, locked by this process, after sweeping what killed tests left
// there. dir.lock is held only while a run directory is made or swept, so that a sweep never takes a
// run directory whose lock is not yet held for one being made.
func newRun(dir string, logf func(string, ...any)) (run string, unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	unlockDir, err := filelock.Lock(dir+".lock", 0o644)
	if err != nil {
		return "", nil, fmt.Errorf("realos: %w", err)
	}
	defer unlockDir()
	sweep(dir, logf)
	run, err = os.MkdirTemp(dir, "m-")
	if err != nil {
		return "", nil, err
	}
	unlockRun, err := tryLock(run + ".lock")
	if err != nil {
		_ = os.Remove(run)
		return "", nil, fmt.Errorf("realos: locking %s: %w", run, err)
	}
	return run, func() { _ = os.Remove(run + ".lock"); unlockRun() }, nil
}

// sweep ends the containers of run directories in dir whose lock no process holds (their test was
// killed) and removes the directories. The caller holds dir.lock.
func sweep(dir string, logf func(string, ...any)) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		run := filepath.Join(dir, e.Name())
		unlock, err := tryLock(run + ".lock")
		if err != nil {
			continue // its machine runs
		}
		root := filepath.Join(run, "rootfs")
		if b, err := os.ReadFile(filepath.Join(run, pidsFile)); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 && cmdlineHas(pid, root) {
				_ = osproc.SignalGroup(pid, osproc.Kill)
			}
		}
		left := processesIn(root)
		for _, pid := range left {
			_ = osproc.SignalProcess(pid, osproc.Kill)
		}
		waitExited(left, 10*time.Second)
		endCgroups(machineName(run))
		_ = removeRun(run)
		_ = os.Remove(run + ".lock")
		unlock()
		logf("real-OS: removed %s, left by an earlier test", run)
	}
	// A container whose systemd-nspawn was killed outlives it, and its run directory may be gone: any
	// process whose root mount comes from a run directory here that no process holds is such a leftover.
	for _, pid := range processesFrom(dir + "/") {
		run := rootMountRun(pid, dir+"/")
		if run == "" {
			continue
		}
		unlock, err := tryLock(run + ".lock")
		if err != nil {
			continue // its machine runs
		}
		_ = osproc.SignalProcess(pid, osproc.Kill)
		if _, err := os.Stat(run); os.IsNotExist(err) {
			_ = os.Remove(run + ".lock")
		}
		unlock()
		logf("real-OS: killed process %d of a container an earlier test left", pid)
	}
	// The cgroups of machines whose run directory is gone.
	for _, name := range machineCgroups() {
		run := filepath.Join(dir, "m-"+strings.TrimPrefix(name, cgroupPrefix))
		unlock, err := tryLock(run + ".lock")
		if err != nil {
			continue // its machine runs
		}
		if endCgroups(name) {
			logf("real-OS: removed the cgroups of %s, left by an earlier test", name)
		}
		if _, err := os.Stat(run); os.IsNotExist(err) {
			_ = os.Remove(run + ".lock")
		}
		unlock()
	}
}

// machineName is the name of the machine of a run directory (dir/m-XXXX): hydra-realos-XXXX, its
// container's and its cgroups' name.
func machineName(run string) string {
	return cgroupPrefix + strings.TrimPrefix(filepath.Base(run), "m-")
}

// rootMountRun is the run directory (dir/m-XXXX) the mount at pid's "/" comes from, "" when none.
func rootMountRun(pid int, dir string) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == "/" {
			if _, rest, ok := strings.Cut(line, dir); ok {
				name, _, _ := strings.Cut(rest, "/")
				if strings.HasPrefix(name, "m-") && !strings.ContainsAny(name, " ,:") {
					return filepath.Join(dir, name)
				}
			}
		}
	}
	return ""
}

// closeProxy closes the apt proxy's listeners.
func (m *Machine) closeProxy() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, l := range m.proxyLs {
		_ = l.Close()
	}
	m.proxyLs = nil
}

// processesFrom lists the processes whose root mount names dir.
func processesFrom(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid != os.Getpid() && rootMountFrom(pid, dir) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// containerInit is the pid of the container's PID 1 (systemd-nspawn's child), 0 when not found.
func containerInit(nspawn int) int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", nspawn, nspawn))
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	pid, _ := strconv.Atoi(f[0])
	return pid
}

// processesIn lists the processes whose root directory is root (the container's).
func processesIn(root string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if inRoot(pid, root) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// inRoot says whether pid runs in the container whose root directory is root: its root directory is
// root, or (a process that pivoted into it, the container's init and everything under it, whose root
// reads "/") the mount at its "/" comes from root's run directory.
func inRoot(pid int, root string) bool {
	l, err := os.Readlink(fmt.Sprintf("/proc/%d/root", pid))
	if err == nil && (l == root || strings.HasPrefix(l, root+"/")) {
		return true
	}
	return rootMountFrom(pid, filepath.Dir(root)+"/")
}

// rootMountFrom says whether the mount at pid's "/" names dir: the overlay's upper or lower directory,
// or the directory bound there. A process in this process's mount namespace has this process's "/",
// never a run directory's: its mountinfo is not read (reading every process's cost about 0.06 CPU-s
// per scan of a host running 470 processes).
func rootMountFrom(pid int, dir string) bool {
	if own := ownMountNS(); own != "" {
		if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid)); err == nil && ns == own {
			return false
		}
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == "/" && strings.Contains(line, dir) {
			return true
		}
	}
	return false
}

// ownMountNS is this process's mount namespace ("" when unknown); its threads never leave it.
var ownMountNS = sync.OnceValue(func() string {
	ns, _ := os.Readlink("/proc/self/ns/mnt")
	return ns
})

func cmdlineHas(pid int, s string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && bytes.Contains(b, []byte(s))
}

func banner(port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		return false
	}
	defer func() { _ = c.Close() }() // a probe
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 4)
	n, _ := c.Read(buf)
	return n == 4 && string(buf) == "SSH-"
}

// layer makes dir/rootfs the machine's root: an overlay (the image read-only below, dir/upper taking
// every write) where the kernel has overlayfs, else a copy of the image. It says which.
func layer(ctx context.Context, image, dir string) (string, error) {
	root := filepath.Join(dir, "rootfs")
	for _, d := range []string{"upper", "work", "rootfs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return "", err
		}
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", image, filepath.Join(dir, "upper"), filepath.Join(dir, "work"))
	if !strings.ContainsAny(image+dir, ",:") {
		if err := exec.CommandContext(ctx, "mount", "-t", "overlay", "overlay", "-o", opts, root).Run(); err == nil {
			return "mounted as an overlay (writes go to the run directory)", nil
		}
	}
	if err := os.Remove(root); err != nil {
		return "", err
	}
	if out, err := exec.CommandContext(ctx, "cp", "-a", "--reflink=auto", image, root).CombinedOutput(); err != nil {
		return "", fmt.Errorf("realos: copying the image: %v: %s", err, tail(out, 1000))
	}
	return "copied", nil
}

// removeRun unmounts a run directory's overlay (when mounted) and removes the directory.
func removeRun(dir string) error {
	root := filepath.Join(dir, "rootfs")
	if mounted(root) {
		if out, err := exec.Command("umount", root).CombinedOutput(); err != nil {
			if out2, err2 := exec.Command("umount", "--lazy", root).CombinedOutput(); err2 != nil {
				return fmt.Errorf("realos: unmounting %s: %v: %s %s", root, err, out, out2)
			}
		}
	}
	if mounted(root) {
		return fmt.Errorf("realos: %s is still mounted", root)
	}
	return os.RemoveAll(dir)
}

// mounted reports whether path is a mount point (from /proc/self/mountinfo).
func mounted(path string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == path {
			return true
		}
	}
	return false
}
