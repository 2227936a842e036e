// Package simhost runs simulated GPU machines reachable over real SSH, for hydra's sandbox cloud and for
// tests of the provisioning playbooks.
//
// A machine lives in a directory of its own. Ensure starts a real OpenSSH sshd on a free loopback port,
// detached in its own session so it outlives the process that started it, and records its pid and port
// in the directory; a later Ensure (from the same or another process) finds it running and returns it.
//
// The GPU layer is simulated: every SSH session gets a PATH whose first entry (<dir>/bin) holds
// stand-ins for nvidia-smi, dcgmi, nv-hostengine, nvidia-ctk, nv-fabricmanager, docker, systemctl,
// systemd-detect-virt, dmesg, journalctl, modinfo, dpkg-query, shutdown and the two exporters, which
// report the machine described in <dir>/gpus.json, and for its volumes (Spec.Volumes, see volumes.go)
// blkid, mkfs.ext4, mount, umount and findmnt. The Python stand-ins (<dir>/bin/NAME.py) are called
// through a small client (<dir>/bin/NAME) that hands the call to the machine's stand-in server
// (standins/serve.py, started by Ensure): Python starts once per machine instead of once per call, and
// each call still runs in a process of its own, forked from the server, with the stand-in's own
// output and exit status. Without the server the client runs the stand-in itself. Files the
// playbooks write land under the machine's own root directory (<dir>/root), announced to the
// playbooks through the session environment
// (HYDRA_ROOT, HYDRA_SANDBOX, HYDRA_SANDBOX_BIN, HYDRA_NODE_EXPORTER_PORT, HYDRA_DCGM_EXPORTER_PORT).
// The same playbooks that provision real machines therefore run unchanged on a sandbox machine, find
// every component present, and pass their health checks.
//
// # Two kinds of machine
//
// A virtual machine (the default) boots with systemd: <dir>/root/run/systemd/system exists, the
// systemctl stand-in keeps the state of the machine's units (<dir>/run/systemd-units.marshal) and records
// the command line of every unit it starts, environment files expanded, in <dir>/run/units/UNIT.exec
// (prometheus-node-exporter.service.exec and hydra-dcgm-exporter.service.exec hold the exporters'
// listen addresses). Its two exporters run from the start, as the image's systemd would run them.
//
// A container (Spec.Container) has no systemd: <dir>/root/.dockerenv exists, systemctl refuses to work
// as it does without systemd as PID 1 (noting each refused call in <dir>/run/systemctl-refused.log, so
// a test can tell it was never asked), and nothing runs the exporters until the playbooks start them
// as processes (<dir>/bin/prometheus-node-exporter, <dir>/bin/dcgm-exporter), which record their
// arguments in <dir>/run/node-exporter.args and <dir>/run/dcgm-exporter.args and which Stop ends
// through the pid files the playbooks leave in <dir>/root/run/hydra. dcgmi needs a started
// nv-hostengine there (<dir>/run/nv-hostengine.pid), as in a real container.
//
// # Faults
//
// Hardware faults are files in <dir>/faults (see SetFault), read by the stand-ins on every call, so a
// test can break a running machine and mend it again (ClearFaults). Per-GPU files hold one line per
// broken GPU, "INDEX [VALUE]":
//
//	gpu_lost       INDEX                  the GPU fell off the bus: nvidia-smi cannot reach it ("GPU is
//	                                      lost"), dcgmi does not see it, the kernel log has an Xid 79
//	ecc_volatile   INDEX [COUNT]          uncorrectable ECC errors since the driver loaded (volatile)
//	ecc_aggregate  INDEX [COUNT]          uncorrectable ECC errors over the GPU's life (persistent)
//	xid            INDEX CODE [ID]        an Xid event in the kernel log since boot (dmesg, journalctl -k);
//	                                      ID picks a recorded line of the code by its source id
//	remapped_rows  INDEX pending|failure  a row remapping waiting for a GPU reset, or one that failed
//	nvlink_down    INDEX [LINK...|all]    NVLinks reported <inactive> (all of the GPU's without LINK);
//	                                      all: NVML's line for a GPU whose links are all down
//	fabric         not_started|in_progress|failure|unhealthy|insufficient_resources
//	                                      the fabric state nvidia-smi reports (machine-wide)
//	exporter_dead  node|dcgm ...          the named exporters answer 503
//	recovery_action INDEX ACTION          NVML's recovery action (gpu_recovery_action) is ACTION
//	                                      (Reset, Reboot, Drain P2P, Drain and Reset)
//	pcie_width     INDEX WIDTH            the GPU's PCIe link runs at xWIDTH (a downgraded link)
//	xid_foreign    BUS CODE               an Xid of a GPU that is not this machine's (a pod reading its
//	                                      host's kernel log)
//	kernel_log_unreadable (any content)   dmesg and journalctl cannot read the kernel log (no privileges)
//	smi_hang       (any content)          every nvidia-smi call hangs (a GPU that no longer answers)
//
// The stand-ins replay real recorded output (standins/recordings, each file's source in its
// PROVENANCE.md); the faults are minimal edits of those recordings.
//
// One fault is of the machine, not its GPUs: while <dir>/faults/sshd_down exists (any content), Ensure
// stops the machine's sshd and does not start it again, so the machine cannot be reached over SSH, as
// one whose network or sshd died; ClearFaults (or SetFault with no content) and the next Ensure mend it.
//
// # Cluster nodes
//
// A node of a simulated cluster has a private address (Spec.PrivateAddr, 127.100.<cluster>.<node>):
// its sshd listens there too, on its port, so a peer's TCP connection to it is real. While
// <dir>/faults/private_net_down exists, Ensure starts sshd without that address (the node's private
// network is down; 127.0.0.1 still answers). Spec.Fabric gives the node InfiniBand adapters on the
// cluster's fabric: ibstat and ibv_devinfo replay a real H100 node's eight ConnectX-7 adapters (without
// a fabric both commands are absent). mpirun runs its program once, on the node that calls it, and
// all_reduce_perf replays a real 2-node nccl-tests run. Their faults, in <dir>/faults:
//
//	ib_port_down   DEVICE [PORT]          the adapter's port (1 by default) is Down / Polling (ibstat),
//	                                      PORT_DOWN (ibv_devinfo)
//	nccl_busbw     VALUE                  all_reduce_perf's table scaled to an average bus bandwidth of
//	                                      VALUE GB/s (read on the node that runs it)
//
// The loaded NVIDIA kernel module is <dir>/root/sys/module/nvidia/version (the installed driver's
// version when Ensure first writes it): write another version there and nvidia-smi fails with
// "Driver/library version mismatch" until the simulated reboot (the shutdown stand-in, which Ansible's
// reboot module finds through its search_paths) loads the installed one again.
package simhost

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/hydragpu/terraform-provider-hydra/internal/atomicfile"
	"github.com/hydragpu/terraform-provider-hydra/internal/filelock"
	"github.com/hydragpu/terraform-provider-hydra/internal/osproc"
)

//go:embed standins
var standins embed.FS

// Spec describes the simulated machine.
type Spec struct {
	// GPUModel is the name nvidia-smi reports, e.g. "NVIDIA H100 80GB HBM3" (see NVIDIAName).
	GPUModel string
	// GPUCount is the number of GPUs nvidia-smi lists.
	GPUCount int
	// AuthorizedKeys are authorized_keys lines allowed to log in as User.
	AuthorizedKeys []string
	// User is the login user. Empty means the user this process runs as. A non-root process can only
	// serve its own user.
	User string
	// NVSwitch simulates an HGX board with NVSwitches (fabric manager required). Default: on for 8 GPUs
	// of an SXM-class model (H100, H200, B200, A100), see DefaultNVSwitch.
	NVSwitch *bool
	// DriverVersion is the NVIDIA driver version reported (default "570.133.20").
	DriverVersion string
	// UncorrectableECC, when positive, gives the last GPU that many uncorrectable ECC errors (a broken
	// machine, for tests of the health checks).
	UncorrectableECC int
	// Container makes the machine a container without systemd (see the package documentation).
	Container bool
	// PrivateAddr, when set, is the machine's address on its cluster's private network: a loopback
	// address other than 127.0.0.1 (Linux routes all of 127/8 to lo), e.g. "127.100.1.2". The
	// machine's sshd listens there too, on the same port as on 127.0.0.1.
	PrivateAddr string
	// Fabric gives the machine InfiniBand adapters on its cluster's high-speed fabric.
	Fabric bool
	// Volumes are the volumes the machine has (see volumes.go): blkid, mkfs.ext4, mount, umount and
	// findmnt act on their stores.
	Volumes []Volume
}

// Fault files in a machine's faults directory (see the package documentation for their formats).
const (
	FaultGPULost      = "gpu_lost"
	FaultECCVolatile  = "ecc_volatile"
	FaultECCAggregate = "ecc_aggregate"
	FaultXid          = "xid"
	FaultRemappedRows = "remapped_rows"
	FaultNVLinkDown   = "nvlink_down"
	FaultFabric       = "fabric"
	FaultExporterDead = "exporter_dead"
	// FaultRecoveryAction sets NVML's recovery action of a GPU ("INDEX ACTION").
	FaultRecoveryAction = "recovery_action"
	// FaultPCIeWidth downgrades a GPU's PCIe link ("INDEX WIDTH").
	FaultPCIeWidth = "pcie_width"
	// FaultXidForeign logs an Xid of another machine's GPU ("BUS CODE").
	FaultXidForeign = "xid_foreign"
	// FaultKernelLogUnreadable makes the kernel log unreadable.
	FaultKernelLogUnreadable = "kernel_log_unreadable"
	// FaultSMIHang makes every nvidia-smi call hang.
	FaultSMIHang = "smi_hang"
	// FaultSSHDown keeps the machine's sshd stopped: the machine is unreachable.
	FaultSSHDown = "sshd_down"
	// FaultIBPortDown takes an InfiniBand port down ("DEVICE [PORT]").
	FaultIBPortDown = "ib_port_down"
	// FaultNCCLBusBW makes all_reduce_perf measure an average bus bandwidth of VALUE GB/s.
	FaultNCCLBusBW = "nccl_busbw"
	// FaultPrivateNetDown makes the next Ensure start sshd without listening on Spec.PrivateAddr: the
	// machine's peers cannot reach it, while it still answers on 127.0.0.1.
	FaultPrivateNetDown = "private_net_down"
)

// SetFault writes the fault file name (one of the Fault constants) of the machine kept in dir; an empty
// content removes it. The stand-ins read it on their next call.
func SetFault(dir, name, content string) error {
	if strings.ContainsAny(name, "/\\") || name == "" || name[0] == '.' {
		return fmt.Errorf("simhost: bad fault name %q", name)
	}
	p := filepath.Join(dir, "faults", name)
	if content == "" {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(p, []byte(strings.TrimRight(content, "\n")+"\n"), 0o644)
}

// ClearFaults removes every fault file of the machine kept in dir and loads the installed driver's
// kernel module again, as a repaired machine.
func ClearFaults(dir string) error {
	if err := os.RemoveAll(filepath.Join(dir, "faults")); err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(dir, gpusFile))
	if err != nil {
		return err
	}
	var cfg struct {
		Driver string `json:"driver_version"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, "root", "sys", "module", "nvidia", "version"), []byte(cfg.Driver+"\n"), 0o644)
}

// SetLoadedDriver makes the machine's loaded NVIDIA kernel module report version (a module that no
// longer matches the installed driver, until the simulated reboot).
func SetLoadedDriver(dir, version string) error {
	p := filepath.Join(dir, "root", "sys", "module", "nvidia", "version")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(p, []byte(version+"\n"), 0o644)
}

// Endpoint is where a machine answers SSH.
type Endpoint struct {
	Host string
	Port int
	User string
	// HostKey is the machine's SSH host public key in authorized_keys form.
	HostKey string
	// Dir is the machine's directory; Root is the directory that stands for its "/".
	Dir  string
	Root string
	// NodeExporterPort and DCGMExporterPort are the exporters' loopback ports (announced to the
	// playbooks as HYDRA_NODE_EXPORTER_PORT and HYDRA_DCGM_EXPORTER_PORT).
	NodeExporterPort int
	DCGMExporterPort int
	// PrivateAddr is Spec.PrivateAddr: where the machine's peers reach its sshd (on Port); empty
	// without one.
	PrivateAddr string
}

// DefaultDriverVersion is the NVIDIA driver version simulated machines report.
const DefaultDriverVersion = "570.133.20"

// File names inside a machine's directory.
const (
	stateFile    = "machine.json"
	hostKeyFile  = "ssh_host_ed25519_key"
	sshdConfig   = "sshd_config"
	authKeysFile = "authorized_keys"
	gpusFile     = "gpus.json"
	sshdLog      = "sshd.log"
	sshdPidFile  = "sshd.pid"
)

type state struct {
	SSHDPid          int    `json:"sshd_pid"`
	Port             int    `json:"port"`
	User             string `json:"user"`
	NodeExporterPid  int    `json:"node_exporter_pid"`
	NodeExporterPort int    `json:"node_exporter_port"`
	DCGMExporterPid  int    `json:"dcgm_exporter_pid"`
	DCGMExporterPort int    `json:"dcgm_exporter_port"`
	StandinServerPid int    `json:"standin_server_pid,omitempty"`
	// StandinsDigest is the digest of the stand-ins the server runs (see standinsDigest).
	StandinsDigest string `json:"standins_digest,omitempty"`
	// PrivateAddr is the private address sshd listens on (empty: none, or the private_net_down fault).
	PrivateAddr string `json:"private_addr,omitempty"`
}

// NVIDIAName returns the name nvidia-smi reports for one of hydra's GPU types (inventory types such
// as "h100"), or "NVIDIA " + the upper-cased type for a type it does not know.
func NVIDIAName(gpuType string) string {
	names := map[string]string{
		"h100":       "NVIDIA H100 80GB HBM3",
		"h200":       "NVIDIA H200",
		"a100-80gb":  "NVIDIA A100-SXM4-80GB",
		"l40s":       "NVIDIA L40S",
		"l4":         "NVIDIA L4",
		"b200":       "NVIDIA B200",
		"rtx6000ada": "NVIDIA RTX 6000 Ada Generation",
		"rtxpro6000": "NVIDIA RTX PRO 6000 Blackwell Server Edition",
	}
	if n, ok := names[strings.ToLower(gpuType)]; ok {
		return n
	}
	return "NVIDIA " + strings.ToUpper(gpuType)
}

// DefaultNVSwitch says whether a machine with count GPUs of this model has NVSwitches (8-GPU SXM boards).
// nvlinkDomainModel matches GB200 and GB300 compute trays by nvidia-smi's name (never a B200 or B300).
var nvlinkDomainModel = regexp.MustCompile(`^NVIDIA GB(200|300)\b`)

func DefaultNVSwitch(model string, count int) bool {
	if count != 8 {
		return false
	}
	m := strings.ToUpper(model)
	if nvlinkDomainModel.MatchString(model) {
		return false // a GB200/GB300 compute tray: its NVSwitches are in the rack's switch trays
	}
	for _, s := range []string{"H100", "H200", "B200", "A100"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// FindSSHD returns the absolute path of the OpenSSH server, or an error saying how to install it.
func FindSSHD() (string, error) {
	if p, err := exec.LookPath("sshd"); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs, nil
		}
	}
	for _, p := range []string{"/usr/sbin/sshd", "/usr/local/sbin/sshd", "/usr/bin/sshd", "/sbin/sshd"} {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	return "", errors.New("sshd (the OpenSSH server) was not found: install it, e.g. `apt-get install openssh-server`")
}

// Ensure returns the machine kept in dir, starting it when it is not running. It is idempotent: a
// machine started earlier (by this or another process) is returned as it is, after its GPU description
// and authorized keys are refreshed from spec. A read of every running sandbox instance calls it, so a
// machine that runs costs it little: files already as spec wants them are read, not rewritten, and the
// processes are checked by pid, not by connecting to them.
func Ensure(dir string, spec Spec) (Endpoint, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return Endpoint{}, err
	}
	if spec.GPUCount < 0 {
		return Endpoint{}, fmt.Errorf("simhost: negative GPU count %d", spec.GPUCount)
	}
	if spec.GPUModel == "" && spec.GPUCount > 0 {
		return Endpoint{}, errors.New("simhost: GPU model missing")
	}
	if err := checkPrivateAddr(spec.PrivateAddr); err != nil {
		return Endpoint{}, err
	}
	login, err := loginUser(spec.User)
	if err != nil {
		return Endpoint{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Endpoint{}, err
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return Endpoint{}, err
	}
	defer unlock()
	if err := writeMachineFiles(dir, spec); err != nil {
		return Endpoint{}, err
	}
	hostKey, err := ensureHostKey(dir, false)
	if err != nil {
		return Endpoint{}, err
	}
	st, _ := readState(dir)
	changed := false
	if spec.Container {
		// Nothing runs the exporters of a container until the playbooks start them: only their ports
		// are chosen (and announced), once.
		for _, pid := range []int{st.NodeExporterPid, st.DCGMExporterPid} {
			if pid > 0 && ownedBy(pid, dir) {
				killAndWait(pid)
			}
		}
		if st.NodeExporterPid != 0 || st.DCGMExporterPid != 0 || st.NodeExporterPort == 0 || st.DCGMExporterPort == 0 {
			st.NodeExporterPid, st.DCGMExporterPid = 0, 0
			if st.NodeExporterPort == 0 {
				if st.NodeExporterPort, err = freePort(); err != nil {
					return Endpoint{}, err
				}
			}
			if st.DCGMExporterPort == 0 {
				if st.DCGMExporterPort, err = freePort(); err != nil {
					return Endpoint{}, err
				}
			}
			changed = true
		}
	} else if st.NodeExporterPort == 0 || !running(dir, st.NodeExporterPid) {
		st.NodeExporterPid, st.NodeExporterPort, err = startExporter(dir, "node")
		if err != nil {
			return Endpoint{}, err
		}
		changed = true
	}
	if !spec.Container && (st.DCGMExporterPort == 0 || !running(dir, st.DCGMExporterPid)) {
		st.DCGMExporterPid, st.DCGMExporterPort, err = startExporter(dir, "dcgm")
		if err != nil {
			return Endpoint{}, err
		}
		changed = true
	}
	if digest := standinsDigest(); st.StandinsDigest != digest || !running(dir, st.StandinServerPid) {
		// A server of other stand-ins (an earlier hydra's) runs their code: replaced.
		if st.StandinServerPid > 0 && ownedBy(st.StandinServerPid, dir) {
			killAndWait(st.StandinServerPid)
		}
		if st.StandinServerPid, err = startStandinServer(dir); err != nil {
			return Endpoint{}, err
		}
		st.StandinsDigest = digest
	}
	st.PrivateAddr = spec.PrivateAddr
	if _, err := os.Stat(filepath.Join(dir, "faults", FaultPrivateNetDown)); err == nil {
		st.PrivateAddr = ""
	}
	if _, err := os.Stat(filepath.Join(dir, "faults", FaultSSHDown)); err == nil {
		// Unreachable on purpose: the endpoint keeps its port, where nothing answers.
		if st.SSHDPid != 0 {
			killAndWait(st.SSHDPid)
			st.SSHDPid = 0
		}
	} else if changed || st.User != login || !configCurrent(dir, st) || !running(dir, st.SSHDPid) {
		if st.SSHDPid != 0 {
			killAndWait(st.SSHDPid)
		}
		st.User = login
		if err := startSSHD(dir, &st); err != nil {
			return Endpoint{}, err
		}
	}
	if err := writeState(dir, st); err != nil {
		return Endpoint{}, err
	}
	return Endpoint{
		Host: "127.0.0.1", Port: st.Port, User: login, HostKey: hostKey,
		Dir: dir, Root: filepath.Join(dir, "root"),
		NodeExporterPort: st.NodeExporterPort, DCGMExporterPort: st.DCGMExporterPort,
		PrivateAddr: spec.PrivateAddr,
	}, nil
}

// checkPrivateAddr accepts an empty address or an IPv4 loopback address other than 127.0.0.1.
func checkPrivateAddr(addr string) error {
	if addr == "" {
		return nil
	}
	ip := net.ParseIP(addr)
	if ip == nil || ip.To4() == nil || !ip.IsLoopback() || ip.Equal(net.IPv4(127, 0, 0, 1)) || ip.To4().String() != addr {
		return fmt.Errorf("simhost: private address %q is not an IPv4 loopback address other than 127.0.0.1", addr)
	}
	return nil
}

// Stop stops the machine kept in dir: its sshd, exporters and stand-in server, what its playbooks
// started, and any other process whose command line names the directory. Stopping a machine that is
// not running is not an error. The directory and its host key are kept.
func Stop(dir string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return err
	}
	defer unlock()
	st, err := readState(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, pid := range append([]int{st.SSHDPid, st.NodeExporterPid, st.DCGMExporterPid, st.StandinServerPid}, playbookProcesses(dir)...) {
		if pid > 0 && ownedBy(pid, dir) {
			killAndWait(pid)
		}
	}
	// A process killed while it brought the machine up can leave processes the state does not record.
	osproc.KillReferrers(dir)
	if err := os.Remove(filepath.Join(dir, standinsPortFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.Remove(filepath.Join(dir, stateFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// playbookProcesses returns the pids the playbooks left in pid files under the machine's root
// (<root>/run/hydra/*.pid: the exporters of a machine without systemd).
func playbookProcesses(dir string) []int {
	files, _ := filepath.Glob(filepath.Join(dir, "root", "run", "hydra", "*.pid"))
	var pids []int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
			pids = append(pids, pid)
		}
	}
	return pids
}

// RotateHostKey gives the machine a new SSH host key and restarts its sshd on the same port, as a
// rebuilt or impersonated machine would look to a client that pinned the old key.
func RotateHostKey(dir string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := ensureHostKey(dir, true); err != nil {
		return err
	}
	st, err := readState(dir)
	if err != nil {
		return nil // not running: the new key is used at the next Ensure
	}
	if st.SSHDPid > 0 && ownedBy(st.SSHDPid, dir) {
		killAndWait(st.SSHDPid)
	}
	if err := startSSHD(dir, &st); err != nil {
		return err
	}
	return writeState(dir, st)
}

// HostPublicKey returns the machine's SSH host public key in authorized_keys form.
func HostPublicKey(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, hostKeyFile+".pub"))
	if err != nil {
		return "", err
	}
	key, _, _, _, err := ssh.ParseAuthorizedKey(b)
	if err != nil {
		return "", fmt.Errorf("simhost: host key in %s: %w", dir, err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key))), nil
}

// lockDir serialises Ensure, Stop and RotateHostKey on one machine across processes.
func lockDir(dir string) (func(), error) {
	unlock, err := filelock.Lock(filepath.Join(dir, ".lock"), 0o644)
	if err != nil {
		return nil, fmt.Errorf("simhost: %w", err)
	}
	return unlock, nil
}

func loginUser(want string) (string, error) {
	u, err := user.Current()
	if err != nil {
		return "", fmt.Errorf("simhost: current user: %w", err)
	}
	if want == "" || want == u.Username {
		return u.Username, nil
	}
	if os.Geteuid() != 0 {
		return "", fmt.Errorf("simhost: a machine started by the non-root user %q can only log in %q, not %q", u.Username, u.Username, want)
	}
	if _, err := user.Lookup(want); err != nil {
		return "", fmt.Errorf("simhost: login user %q: %w", want, err)
	}
	return want, nil
}

// writeMachineFiles writes the stand-ins, the GPU description and the authorized keys. It is cheap
// and safe to repeat while the machine runs: the stand-ins read their files on every call.
func writeMachineFiles(dir string, spec Spec) error {
	root := filepath.Join(dir, "root")
	for _, d := range []string{
		filepath.Join(dir, "bin"), filepath.Join(dir, "run"),
		filepath.Join(root, "etc", "systemd", "system"), filepath.Join(root, "etc", "default"),
		filepath.Join(root, "usr", "local", "bin"),
		filepath.Join(root, "tmp"),
	} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	entries, err := standins.ReadDir("standins")
	if err != nil {
		return err
	}
	// The Python stand-ins name their interpreter through env (`#!/usr/bin/env -S python3 -S`), which
	// a machine of the sandbox pays on every call (an exec of env and a search of the PATH: about 3 ms
	// of CPU, and a provisioning makes some 25 calls a machine). Written here, they name the machine's
	// python3 itself.
	python, pyErr := machinePython()
	for _, e := range entries {
		if e.IsDir() {
			// recordings/: the real GPU output the stand-ins replay, next to them in bin/.
			if err := copyEmbeddedDir("standins/"+e.Name(), filepath.Join(dir, "bin", e.Name())); err != nil {
				return err
			}
			continue
		}
		if fabricOnly[e.Name()] && !spec.Fabric {
			// A machine without a fabric has no InfiniBand tools (nor adapters).
			for _, p := range []string{filepath.Join(dir, "bin", e.Name()), filepath.Join(dir, "bin", e.Name()+".py")} {
				if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
					return err
				}
			}
			continue
		}
		b, err := standins.ReadFile("standins/" + e.Name())
		if err != nil {
			return err
		}
		if rest, ok := bytes.CutPrefix(b, []byte(envPythonShebang)); ok && pyErr == nil {
			b = append([]byte("#!"+python+" -S\n"), rest...)
		}
		target := filepath.Join(dir, "bin", e.Name())
		switch {
		case e.Name() == "hydra-execlet":
			target = filepath.Join(root, "usr", "local", "bin", e.Name())
		case e.Name() == "exporter.py":
			target = filepath.Join(dir, e.Name())
		case served(e.Name(), b) && pyErr == nil:
			// The stand-in is bin/NAME.py; bin/NAME hands the call to the machine's stand-in server.
			if err := atomicfile.Update(target, []byte(fmt.Sprintf(servedClient, python)), 0o755); err != nil {
				return err
			}
			target += ".py"
		}
		if err := atomicfile.Update(target, b, 0o755); err != nil {
			return err
		}
	}
	driver := spec.DriverVersion
	if driver == "" {
		driver = DefaultDriverVersion
	}
	nvswitch := DefaultNVSwitch(spec.GPUModel, spec.GPUCount)
	if spec.NVSwitch != nil {
		nvswitch = *spec.NVSwitch
	}
	type gpu struct {
		Name           string `json:"name"`
		UUID           string `json:"uuid"`
		Serial         string `json:"serial"`
		BusID          string `json:"bus_id"`
		MemoryMiB      int    `json:"memory_mib"`
		ECCUncorrected int    `json:"ecc_uncorrected"`
		NVLinks        int    `json:"nvlinks"`
	}
	gpus := make([]gpu, spec.GPUCount)
	for i := range gpus {
		gpus[i] = gpu{
			Name:      spec.GPUModel,
			UUID:      fmt.Sprintf("GPU-%08x-hydra-sandbox-%04d", hash32(dir), i),
			Serial:    fmt.Sprintf("16520%08d", i),
			BusID:     fmt.Sprintf("00000000:%02X:00.0", 0x18+i*0x10),
			MemoryMiB: memoryMiB(spec.GPUModel),
		}
		if nvswitch || nvlinkDomainModel.MatchString(spec.GPUModel) {
			gpus[i].NVLinks = 18 // H100, H200, B200 SXM boards and GB200 trays: 18 NVLinks a GPU
		}
	}
	if spec.UncorrectableECC > 0 && len(gpus) > 0 {
		gpus[len(gpus)-1].ECCUncorrected = spec.UncorrectableECC
	}
	cfg, err := json.MarshalIndent(map[string]any{
		"gpus": gpus, "driver_version": driver, "cuda_version": cudaVersion(driver), "nvswitch": nvswitch,
		"persistence_mode": "Enabled", "container": spec.Container, "fabric": spec.Fabric,
		"units":    machineUnits(spec.Container, nvswitch, nvlinkDomainModel.MatchString(spec.GPUModel)),
		"packages": machinePackages(driver, spec.GPUModel, nvswitch),
	}, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Update(filepath.Join(dir, gpusFile), append(cfg, '\n'), 0o644); err != nil {
		return err
	}
	if err := writeRootLayout(root, spec.Container, driver); err != nil {
		return err
	}
	if err := writeVolumes(dir, root, spec.Volumes); err != nil {
		return err
	}
	nvsDir := filepath.Join(root, "proc", "driver", "nvidia-nvswitch", "devices")
	// NVLink 5 boards (B200, B300; never a GB200 or GB300 compute tray, whose switches are in other
	// trays): the NVSwitches are InfiniBand devices whose VPD names them SW_MNG (as NVIDIA's driver
	// container detects them), not /proc/driver/nvidia-nvswitch devices.
	nvlink5 := nvswitch && regexp.MustCompile(`^NVIDIA B(200|300)\b`).MatchString(spec.GPUModel)
	ibDir := filepath.Join(root, "sys", "class", "infiniband")
	if err := os.RemoveAll(ibDir); err != nil {
		return err
	}
	if nvlink5 {
		for i := 0; i < 2; i++ {
			d := filepath.Join(ibDir, fmt.Sprintf("mlx5_%d", i), "device")
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
			// Root-only, as the kernel creates a PCI device's vpd file (drivers/pci/vpd.c); the machine's
			// login user owns it here.
			if err := os.WriteFile(filepath.Join(d, "vpd"), []byte("PN SW_MNG hydra sandbox NVLink 5 switch tray\n"), 0o600); err != nil {
				return err
			}
		}
	}
	if nvswitch && !nvlink5 {
		if err := os.MkdirAll(nvsDir, 0o755); err != nil {
			return err
		}
		for i := 0; i < 4; i++ {
			p := filepath.Join(nvsDir, fmt.Sprintf("0000:%02x:00.0", 0x05+i))
			if err := os.WriteFile(p, []byte("Fabric Manager: nvswitch (hydra sandbox)\n"), 0o644); err != nil {
				return err
			}
		}
	} else if err := os.RemoveAll(filepath.Join(root, "proc", "driver", "nvidia-nvswitch")); err != nil {
		return err
	}
	var keys bytes.Buffer
	for _, k := range spec.AuthorizedKeys {
		k = strings.TrimSpace(k)
		if k == "" {
			continue
		}
		if strings.ContainsAny(k, "\r\n") {
			return errors.New("simhost: an authorized key holds a line break")
		}
		keys.WriteString(k + "\n")
	}
	return atomicfile.Update(filepath.Join(dir, authKeysFile), keys.Bytes(), 0o600)
}

// fabricOnly are the stand-ins only a machine with a fabric (Spec.Fabric) has.
var fabricOnly = map[string]bool{"ibstat": true, "ibv_devinfo": true}

// copyEmbeddedDir copies the embedded directory src (one level of files) to dst.
func copyEmbeddedDir(src, dst string) error {
	entries, err := standins.ReadDir(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := standins.ReadFile(src + "/" + e.Name())
		if err != nil {
			return err
		}
		if err := atomicfile.Update(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// cudaByDriver is the newest CUDA version each driver branch supports, newest branch first, as
// nvidia-smi reports it.
var cudaByDriver = []struct {
	branch int
	cuda   string
}{{590, "13.1"}, {580, "13.0"}, {575, "12.9"}, {570, "12.8"}, {560, "12.6"}, {550, "12.4"}, {535, "12.2"}}

// cudaVersion is the newest CUDA version a driver supports, as nvidia-smi reports it ("12.0" below
// the oldest branch cudaByDriver knows).
func cudaVersion(driver string) string {
	branch, _, _ := strings.Cut(driver, ".")
	n, _ := strconv.Atoi(branch)
	for _, b := range cudaByDriver {
		if n >= b.branch {
			return b.cuda
		}
	}
	return "12.0"
}

// machineUnits are the systemd units the machine's image has, all running and enabled (none in a
// container).
func machineUnits(container, nvswitch, imex bool) map[string]any {
	units := map[string]any{}
	if container {
		return units
	}
	on := map[string]bool{"active": true, "enabled": true}
	for _, u := range []string{"nvidia-persistenced.service", "nvidia-dcgm.service", "docker.service", "containerd.service",
		"prometheus-node-exporter.service", "unattended-upgrades.service", "apt-daily.timer", "apt-daily-upgrade.timer",
		"apt-daily-upgrade.service"} {
		units[u] = on
	}
	units["apt-daily.service"] = map[string]bool{"active": false, "enabled": false}
	if nvswitch {
		units["nvidia-fabricmanager.service"] = on
	}
	if imex {
		units["nvidia-imex.service"] = on
	}
	return units
}

// machinePackages are the Debian packages (name: version) the machine's image has, named as NVIDIA's
// repository names them for the driver's branch (see playbooks/README.md).
func machinePackages(driver, model string, nvswitch bool) map[string]string {
	deb := driver + "-1"
	branch, _, _ := strings.Cut(driver, ".")
	cuda, _, _ := strings.Cut(cudaVersion(driver), ".")
	pkgs := map[string]string{
		"datacenter-gpu-manager-4-core":            "1:4.2.3-1",
		"datacenter-gpu-manager-4-cuda" + cuda:     "1:4.2.3-1",
		"datacenter-gpu-manager-exporter":          "4.2.3-4.1.3-1",
		"prometheus-node-exporter":                 "1.8.2-1",
		"nvidia-container-toolkit":                 "1.17.8-1",
		"nvidia-persistenced":                      deb,
		"nvidia-dkms-" + branch + "-open":          deb,
		"nvidia-utils-" + branch:                   deb,
		"libnvidia-compute-" + branch:              deb,
		"linux-headers-6.8.0-hydra-sandbox":        "6.8.0-1",
		"nvidia-kernel-source-" + branch + "-open": deb,
	}
	if nvswitch {
		// NVIDIA's repository names Fabric Manager and its libraries without the branch from 580 on.
		suffix := "-" + branch
		if n, _ := strconv.Atoi(branch); n >= 580 {
			suffix = ""
		}
		pkgs["nvidia-fabricmanager"+suffix] = deb
		pkgs["libnvidia-nscq"+suffix] = deb
		if regexp.MustCompile(`^NVIDIA B(200|300)\b`).MatchString(model) {
			pkgs["libnvsdm"+suffix] = deb
			pkgs["nvlsm"] = "2025.06.0-1"
			pkgs["infiniband-diags"] = "44.0-2"
		}
	}
	if nvlinkDomainModel.MatchString(model) {
		// IMEX on GB200/GB300 trays, named as NVIDIA's repository names it (the branch up to 570).
		name := "nvidia-imex-" + branch
		if n, _ := strconv.Atoi(branch); n >= 580 {
			name = "nvidia-imex"
		}
		pkgs[name] = deb
	}
	return pkgs
}

// writeRootLayout writes what the machine's root shows of its kind (systemd's runtime directory, or
// Docker's marker file) and, when missing, its loaded kernel module and boot id.
func writeRootLayout(root string, container bool, driver string) error {
	systemdDir := filepath.Join(root, "run", "systemd", "system")
	dockerenv := filepath.Join(root, ".dockerenv")
	if container {
		if err := os.RemoveAll(systemdDir); err != nil {
			return err
		}
		if err := os.WriteFile(dockerenv, nil, 0o644); err != nil {
			return err
		}
	} else {
		if err := os.MkdirAll(systemdDir, 0o755); err != nil {
			return err
		}
		if err := os.Remove(dockerenv); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	for path, content := range map[string]string{
		filepath.Join(root, "sys", "module", "nvidia", "version"):         driver,
		filepath.Join(root, "proc", "sys", "kernel", "random", "boot_id"): fmt.Sprintf("%08x-hydr-a5bx-0000-%012x", hash32(root), time.Now().UnixNano()&0xffffffffffff),
	} {
		if _, err := os.Stat(path); err == nil {
			continue // the loaded module and the boot only change with a (simulated) reboot
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(content+"\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func memoryMiB(model string) int {
	m := strings.ToUpper(model)
	switch {
	case strings.Contains(m, "H200"):
		return 143771
	case strings.Contains(m, "B200"):
		return 183359
	case strings.Contains(m, "80GB"), strings.Contains(m, "H100"):
		return 81559
	case strings.Contains(m, "L40S"), strings.Contains(m, "RTX 6000"):
		return 46068
	case strings.Contains(m, "RTX PRO 6000"):
		return 97887
	case strings.Contains(m, "L4"):
		return 23034
	}
	return 24576
}

func hash32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// NewKeyPair makes a new ed25519 SSH key pair: the private key in OpenSSH PEM form with comment, and the
// public key as an authorized_keys line (without a comment).
func NewKeyPair(comment string) (privatePEM []byte, authorized string, err error) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, "", err
	}
	block, err := ssh.MarshalPrivateKey(key, comment)
	if err != nil {
		return nil, "", err
	}
	signer, err := ssh.NewSignerFromKey(key)
	if err != nil {
		return nil, "", err
	}
	return pem.EncodeToMemory(block), strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey()))), nil
}

// ensureHostKey returns the machine's host public key, generating the key pair when it is missing (or
// always, when rotate is set).
func ensureHostKey(dir string, rotate bool) (string, error) {
	priv := filepath.Join(dir, hostKeyFile)
	if !rotate {
		if pub, err := HostPublicKey(dir); err == nil {
			if _, err := os.Stat(priv); err == nil {
				return pub, nil
			}
		}
	}
	key, pub, err := NewKeyPair("hydra-sandbox-host")
	if err != nil {
		return "", err
	}
	if err := atomicfile.Write(priv, key, 0o600); err != nil {
		return "", err
	}
	if err := atomicfile.Write(priv+".pub", []byte(pub+" hydra-sandbox-host\n"), 0o644); err != nil {
		return "", err
	}
	return pub, nil
}

func readState(dir string) (state, error) {
	var st state
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return st, err
	}
	err = json.Unmarshal(b, &st)
	return st, err
}

func writeState(dir string, st state) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Update(filepath.Join(dir, stateFile), append(b, '\n'), 0o644)
}

// sshdQuote quotes one sshd_config argument.
func sshdQuote(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, ``) + `"`
}

func writeSSHDConfig(dir string, st state) (string, error) {
	path := filepath.Join(dir, sshdConfig)
	return path, atomicfile.Write(path, []byte(renderSSHDConfig(dir, st)), 0o644)
}

// configCurrent reports whether the running sshd's configuration is what this version would write.
func configCurrent(dir string, st state) bool {
	b, err := os.ReadFile(filepath.Join(dir, sshdConfig))
	return err == nil && string(b) == renderSSHDConfig(dir, st)
}

func renderSSHDConfig(dir string, st state) string {
	root := filepath.Join(dir, "root")
	pathEnv := filepath.Join(dir, "bin") + ":" + systemPath
	tokenSafe := func(p string) string { return strings.ReplaceAll(p, "%", "%%") }
	lines := []string{
		"# hydra sandbox machine: written by internal/sandbox/simhost, do not edit",
		"Port " + strconv.Itoa(st.Port),
		"ListenAddress 127.0.0.1",
	}
	if st.PrivateAddr != "" {
		lines = append(lines, "ListenAddress "+st.PrivateAddr)
	}
	lines = append(lines,
		"HostKey "+sshdQuote(filepath.Join(dir, hostKeyFile)),
		"PidFile "+sshdQuote(filepath.Join(dir, sshdPidFile)),
		"AuthorizedKeysFile "+sshdQuote(tokenSafe(filepath.Join(dir, authKeysFile)))+" "+
			sshdQuote(tokenSafe(root)+"%h/.ssh/authorized_keys"),
		"AllowUsers "+st.User,
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"PubkeyAuthentication yes",
		"PermitRootLogin prohibit-password",
		"UsePAM no",
		"StrictModes no",
		"PrintMotd no",
		"UseDNS no",
		"MaxStartups 50:30:100",
		"MaxSessions 50",
		"Subsystem sftp internal-sftp",
		// SHLVL=1 keeps bash from sourcing the host user's ~/.bashrc for SSH commands: a developer's
		// rc file must not put real tools ahead of the stand-ins, nor slow every Ansible task down.
		"SetEnv "+strings.Join([]string{
			sshdQuote("SHLVL=1"),
			sshdQuote("PATH=" + pathEnv),
			sshdQuote("HYDRA_SANDBOX=1"),
			sshdQuote("HYDRA_ROOT=" + root),
			sshdQuote("HYDRA_SANDBOX_BIN=" + filepath.Join(dir, "bin")),
			sshdQuote("HYDRA_NODE_EXPORTER_PORT=" + strconv.Itoa(st.NodeExporterPort)),
			sshdQuote("HYDRA_DCGM_EXPORTER_PORT=" + strconv.Itoa(st.DCGMExporterPort)),
		}, " "),
		"LogLevel VERBOSE",
	)
	if os.Geteuid() != 0 {
		// A non-root sshd cannot hand a terminal to the session (chown of the pty and login records
		// need root) and drops the connection; refusing the pty lets `ssh -tt` (Ansible's raw) go on.
		lines = append(lines, "PermitTTY no")
	}
	lines = append(lines, "")
	return strings.Join(lines, "\n")
}

// startSSHD starts sshd on st.Port when that port is set and free, on a fresh free port otherwise.
func startSSHD(dir string, st *state) error {
	sshd, err := FindSSHD()
	if err != nil {
		return err
	}
	if os.Geteuid() == 0 && runtime.GOOS == "linux" {
		// The privilege-separation directory OpenSSH needs when it runs as root (Debian's path).
		if _, err := os.Stat("/run/sshd"); errors.Is(err, os.ErrNotExist) {
			_ = os.MkdirAll("/run/sshd", 0o755)
		}
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		if st.Port == 0 || attempt > 0 || !portFree(st.Port, st.PrivateAddr) {
			if st.Port, err = freePort(); err != nil {
				return err
			}
		}
		cfg, err := writeSSHDConfig(dir, *st)
		if err != nil {
			return err
		}
		if out, err := exec.Command(sshd, "-t", "-f", cfg).CombinedOutput(); err != nil {
			return fmt.Errorf("simhost: sshd rejects its configuration: %v: %s", err, strings.TrimSpace(string(out)))
		}
		pid, err := startDetached(filepath.Join(dir, sshdLog), sshd, "-D", "-e", "-f", cfg)
		if err != nil {
			return fmt.Errorf("simhost: start sshd: %w", err)
		}
		if err := waitBanner(pid, st.Port, st.PrivateAddr, 10*time.Second); err != nil {
			killAndWait(pid)
			lastErr = fmt.Errorf("simhost: sshd on port %d: %w (see %s)", st.Port, err, filepath.Join(dir, sshdLog))
			continue
		}
		st.SSHDPid = pid
		return nil
	}
	return lastErr
}

// served reports whether the embedded stand-in name (its content b, shebang already rewritten) is a
// Python program that the machine's stand-in server runs (standins/serve.py): every Python stand-in
// but the server itself and the exporters, which are processes of their own.
func served(name string, b []byte) bool {
	return !strings.HasSuffix(name, ".py") && bytes.HasPrefix(b, []byte("#!")) &&
		bytes.Contains(bytes.SplitN(b, []byte("\n"), 2)[0], []byte("python3"))
}

// servedClient is what a machine's PATH finds under a served stand-in's name: it sends the call to
// the machine's stand-in server (standins/serve.py, whose port is in run/standins.port) and writes out
// the answer, or runs the stand-in (bin/NAME.py) with the machine's python3 (the template's only
// argument) when no server answers. A call the server took is never run again: a lost answer is an error.
const servedClient = `#!/bin/bash
# hydra sandbox: the stand-in NAME.py (NAME: this file's name), run by the machine's stand-in server
# (serve.py: Python started once, not for every call) or, without one, on its own. Written by
# internal/sandbox/simhost.
LC_ALL=C
self=$0
# A link to the stand-in (a real-OS machine's /usr/bin/nvidia-smi) answers for the machine it links to.
[ -L "$self" ] && self=$(readlink -f -- "$self")
case $self in */*) here=${self%%/*} ;; *) here=. ;; esac
case $here in /*) ;; *) here=$PWD/$here ;; esac
name=${self##*/}
if IFS= read -r port 2>/dev/null <"$here/../run/standins.port" && { exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null; then
	printf '%%s\0' "$here" "$name" "$#" "$@" >&3
	if ! IFS=' ' read -r status nout nerr <&3; then
		echo "hydra sandbox: the stand-in server gave no answer for $name" >&2
		exit 1
	fi
	if [ "$status" != fallback ]; then
		out= err=
		[ "$nout" = 0 ] || IFS= read -r -d '' -N "$nout" out <&3
		[ "$nerr" = 0 ] || IFS= read -r -d '' -N "$nerr" err <&3
		printf '%%s' "$out"
		[ -z "$err" ] || printf '%%s' "$err" >&2
		exit "$status"
	fi
	exec 3<&-
fi
exec %[1]s -S "$here/$name.py" "$@"
`

// envPythonShebang is the first line of the Python stand-ins as they are embedded.
const envPythonShebang = "#!/usr/bin/env -S python3 -S\n"

// systemPath is the machine's own PATH after its stand-ins (<dir>/bin): a Debian system's.
const systemPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// machinePython is the python3 the machine's sessions run (the first on systemPath), not the one on
// the PATH of the process that starts the machine: a version manager's shim there would cost every
// start of a stand-in a shell script's worth of CPU.
func machinePython() (string, error) {
	for _, d := range filepath.SplitList(systemPath) {
		p := filepath.Join(d, "python3")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New("simhost: python3 is needed for the simulated exporters (and by Ansible on the machine), in one of " + systemPath)
}

func startExporter(dir, kind string) (pid, port int, err error) {
	python, err := machinePython()
	if err != nil {
		return 0, 0, err
	}
	portFile := filepath.Join(dir, "run", kind+"-exporter.port")
	_ = os.Remove(portFile)
	pid, err = startDetached(filepath.Join(dir, "run", kind+"-exporter.log"), python, "-S",
		filepath.Join(dir, "exporter.py"), kind, portFile, filepath.Join(dir, gpusFile))
	if err != nil {
		return 0, 0, fmt.Errorf("simhost: start %s exporter: %w", kind, err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(portFile); err == nil {
			if port, err = strconv.Atoi(strings.TrimSpace(string(b))); err == nil && port > 0 {
				return pid, port, nil
			}
		}
		if !osproc.Alive(pid) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	killAndWait(pid)
	return 0, 0, fmt.Errorf("simhost: the %s exporter stand-in did not start (see %s)", kind, filepath.Join(dir, "run", kind+"-exporter.log"))
}

// standinsPortFile is where the machine's stand-in server writes its port (run/standins.port).
var standinsPortFile = filepath.Join("run", "standins.port")

// startStandinServer starts the machine's stand-in server (standins/serve.py) without waiting for it:
// until it has written its port, the stand-ins run on their own.
func startStandinServer(dir string) (int, error) {
	python, err := machinePython()
	if err != nil {
		return 0, err
	}
	portFile := filepath.Join(dir, standinsPortFile)
	if err := os.Remove(portFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, err
	}
	pid, err := startDetached(filepath.Join(dir, "run", "standins.log"), python, "-S", filepath.Join(dir, "bin", "serve.py"), portFile)
	if err != nil {
		return 0, fmt.Errorf("simhost: start the stand-in server: %w", err)
	}
	return pid, nil
}

// standinsDigest is a digest of the embedded stand-ins: a machine whose stand-in server was started
// with other ones (by another version of hydra) gets a new server.
var standinsDigest = sync.OnceValue(func() string {
	h := sha256.New()
	_ = fs.WalkDir(standins, "standins", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := standins.ReadFile(path)
		if err != nil {
			return err
		}
		_, _ = fmt.Fprintf(h, "%s\x00%d\x00", path, len(b))
		h.Write(b)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil)[:8])
})

// startDetached starts a process in its own session (so it outlives this process and is not hit by
// signals to this process's group), with stdout and stderr appended to logPath. The child is reaped in
// the background while this process lives.
func startDetached(logPath, name string, args ...string) (int, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer func() { _ = logf.Close() }() // the child holds its own descriptors for the log
	cmd := exec.Command(name, args...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.Dir = "/"
	cmd.SysProcAttr = osproc.NewSession()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	go func() { _ = cmd.Wait() }()
	return cmd.Process.Pid, nil
}

// freePort returns a loopback port that is free now and outside the kernel's range of ephemeral ports,
// so that no outgoing connection (ssh, HTTP: thousands on a busy runner) takes it as its source port
// before the machine's listener binds it: a container's exporters bind theirs only when the playbooks
// start them, a minute later.
func freePort() (int, error) {
	lo, hi := 10000, ephemeralLow()
	if hi-lo < 1000 {
		return anyFreePort()
	}
	for range 200 {
		if p := lo + mrand.IntN(hi-lo); portFree(p, "") {
			return p, nil
		}
	}
	return anyFreePort()
}

// ephemeralLow is the first port of Linux's ephemeral range (net.ipv4.ip_local_port_range), or 32768
// (Linux's default, below macOS's and Windows' 49152) where it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if f := strings.Fields(string(b)); err == nil && len(f) == 2 {
		if low, err := strconv.Atoi(f[0]); err == nil && low > 0 {
			return min(low, 32768)
		}
	}
	return 32768
}

// anyFreePort returns a loopback port free now, chosen by the kernel.
func anyFreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }() // only the port number was wanted
	a, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, fmt.Errorf("simhost: listener address %v is not TCP", l.Addr())
	}
	return a.Port, nil
}

// portFree reports whether port is free on 127.0.0.1 and on the private address (when set).
func portFree(port int, privateAddr string) bool {
	for _, host := range []string{"127.0.0.1", privateAddr} {
		if host == "" {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return false
		}
		_ = l.Close() // a probe: the port was free
	}
	return true
}

// waitBanner waits until the process answers with an SSH banner on the port, on 127.0.0.1 and on the
// private address (when set: sshd goes on when it can bind only some of its addresses).
func waitBanner(pid, port int, privateAddr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if !osproc.Alive(pid) {
			return errors.New("sshd exited")
		}
		if banner(port) && (privateAddr == "" || bannerAt(privateAddr, port)) {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("no SSH banner")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func banner(port int) bool { return bannerAt("127.0.0.1", port) }

// bannerAt reports whether an SSH server answers at host:port.
func bannerAt(host string, port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort(host, strconv.Itoa(port)), time.Second)
	if err != nil {
		return false
	}
	defer func() { _ = c.Close() }() // a probe connection
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 4)
	n, _ := c.Read(buf)
	return n == 4 && string(buf) == "SSH-"
}

// running reports whether the machine's process pid (its sshd, an exporter, its stand-in server) runs:
// the pid is set, alive and names the machine's directory. A process that runs serves: sshd and the
// exporters exit when they cannot listen, and were seen answering when they started. Every read of a
// running sandbox instance asks (Ensure), and a probe connection would cost sshd what serving one
// does: a fork and a re-execution, about 10 ms of CPU, some 200 times in a 20-machine apply.
func running(dir string, pid int) bool {
	return pid > 0 && osproc.Alive(pid) && ownedBy(pid, dir)
}

// ownedBy reports whether pid's command line mentions dir, so a recycled pid is never killed. Where
// /proc is missing it trusts the pid.
func ownedBy(pid int, dir string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		_, statErr := os.Stat("/proc/self")
		return statErr != nil
	}
	return osproc.NamesDir(strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), dir)
}

// killAndWait terminates pid (and the process group it leads), then waits until it is gone,
// escalating to SIGKILL.
func killAndWait(pid int) {
	if !osproc.Alive(pid) {
		return
	}
	_ = osproc.SignalGroup(pid, osproc.Terminate)
	_ = osproc.SignalProcess(pid, osproc.Terminate)
	deadline := time.Now().Add(5 * time.Second)
	for osproc.Alive(pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if osproc.Alive(pid) {
		_ = osproc.SignalGroup(pid, osproc.Kill)
		_ = osproc.SignalProcess(pid, osproc.Kill)
		deadline = time.Now().Add(5 * time.Second)
		for osproc.Alive(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
}
