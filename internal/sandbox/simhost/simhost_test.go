package simhost

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/hydragpu/terraform-provider-hydra/internal/osproc"
	"github.com/hydragpu/terraform-provider-hydra/internal/testsupport/sshtest"
)

func requireTools(t *testing.T) {
	t.Helper()
	if _, err := FindSSHD(); err != nil {
		fmt.Fprintln(os.Stderr, "SKIPPING:", err)
		t.Skip(err.Error())
	}
	if _, err := exec.LookPath("python3"); err != nil {
		fmt.Fprintln(os.Stderr, "SKIPPING: python3 is missing")
		t.Skip("python3 is missing")
	}
}

// startMachine starts a machine of spec, reachable with a fresh client key, in a directory of its own
// that is stopped when the test ends. It returns the directory, spec with the key authorized, the
// machine's endpoint and the key.
func startMachine(t *testing.T, spec Spec) (string, Spec, Endpoint, ssh.Signer) {
	t.Helper()
	requireTools(t)
	signer, pub := sshtest.NewKey(t)
	dir := t.TempDir()
	spec.AuthorizedKeys = []string{pub}
	ep, err := Ensure(dir, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Stop(dir) })
	return dir, spec, ep, signer
}

// run executes cmd on the machine over SSH with the host key pinned to ep.HostKey.
func run(t *testing.T, ep Endpoint, signer ssh.Signer, cmd string) (string, error) {
	t.Helper()
	return sshtest.Login{Addr: net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port)), User: ep.User, Signer: signer,
		HostKey: ep.HostKey, Timeout: 10 * time.Second}.Run(cmd)
}

func TestMachine(t *testing.T) {
	dir, spec, ep, signer := startMachine(t, Spec{GPUModel: NVIDIAName("h100"), GPUCount: 8})
	st, err := readState(ep.Dir)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("ensure is idempotent", func(t *testing.T) {
		again, err := Ensure(dir, spec)
		if err != nil {
			t.Fatal(err)
		}
		st2, _ := readState(ep.Dir)
		if again != ep || st2.SSHDPid != st.SSHDPid {
			t.Errorf("second Ensure restarted the machine: %+v / %+v, pids %d / %d", ep, again, st.SSHDPid, st2.SSHDPid)
		}
		ports := make(chan int, 4)
		for i := 0; i < 4; i++ {
			go func() {
				e, err := Ensure(dir, spec)
				if err != nil {
					t.Error(err)
				}
				ports <- e.Port
			}()
		}
		for i := 0; i < 4; i++ {
			if p := <-ports; p != ep.Port {
				t.Errorf("concurrent Ensure moved the machine to port %d", p)
			}
		}
		if hk, _ := HostPublicKey(dir); hk != ep.HostKey {
			t.Errorf("HostPublicKey %q, endpoint %q", hk, ep.HostKey)
		}
	})

	tests := []struct {
		name string
		cmd  string
		want []string
	}{
		{"session environment", "echo $HYDRA_SANDBOX $HYDRA_ROOT; command -v nvidia-smi; echo PATH=$PATH", []string{"1 " + ep.Root, filepath.Join(ep.Dir, "bin", "nvidia-smi"), "PATH=" + filepath.Join(ep.Dir, "bin") + ":"}},
		{"nvidia-smi list", "nvidia-smi -L", []string{"GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-", "GPU 7: NVIDIA H100"}},
		{"nvidia-smi query", "nvidia-smi --query-gpu=index,name,ecc.errors.uncorrected.volatile.total --format=csv,noheader", []string{"0, NVIDIA H100 80GB HBM3, 0\n", "7, NVIDIA H100 80GB HBM3, 0\n"}},
		{"nvidia-smi header", "nvidia-smi --query-gpu=name,memory.total --format=csv", []string{"name, memory.total [MiB]\n", "NVIDIA H100 80GB HBM3, 81559 MiB"}},
		{"dcgmi", "dcgmi diag -r 1", []string{"Pass"}},
		{"systemctl", "systemctl is-active nvidia-dcgm docker; systemctl list-unit-files --no-legend 'nvidia-*'", []string{"active\nactive\n", "nvidia-dcgm.service enabled", "nvidia-fabricmanager.service enabled"}},
		{"systemd-detect-virt", "systemd-detect-virt; test -d $HYDRA_ROOT/run/systemd/system && echo systemd", []string{"kvm\nsystemd\n"}},
		{"nvidia-smi CUDA version", "nvidia-smi", []string{"CUDA Version: 12.8"}},
		{"fabric", "nvidia-smi --query-gpu=fabric.state,fabric.status --format=csv,noheader | sort -u", []string{"Completed, Success\n"}},
		{"nvlink", "nvidia-smi nvlink -s | grep -c 'GB/s'", []string{"144"}},
		{"installed module", "modinfo -F version nvidia; cat $HYDRA_ROOT/sys/module/nvidia/version", []string{"570.133.20\n570.133.20\n"}},
		{"packages", "dpkg-query -W 'nvidia-fabricmanager*' 'datacenter-gpu-manager-4-cuda*'", []string{"nvidia-fabricmanager-570\t570.133.20-1", "datacenter-gpu-manager-4-cuda12\t"}},
		{"docker runs the container command", "docker run --rm --gpus all nvidia/cuda:12.8.1-base nvidia-smi -L | wc -l", []string{"8"}},
		{"nvswitch", "ls $HYDRA_ROOT/proc/driver/nvidia-nvswitch/devices | wc -l", []string{"4"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(t, ep, signer, tc.cmd)
			if err != nil {
				t.Fatalf("%s: %v", tc.cmd, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("%s: output %q lacks %q", tc.cmd, out, w)
				}
			}
		})
	}

	t.Run("unknown nvidia-smi field fails", func(t *testing.T) {
		if _, err := run(t, ep, signer, "nvidia-smi --query-gpu=bogus --format=csv"); err == nil {
			t.Error("want an error")
		}
	})

	t.Run("exporters answer", func(t *testing.T) {
		for port, want := range map[int]string{st.NodeExporterPort: "node_exporter_build_info", st.DCGMExporterPort: `DCGM_FI_DEV_GPU_TEMP{gpu="7"`} {
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(b), want) {
				t.Errorf("port %d: %q lacks %q", port, b, want)
			}
		}
	})

	t.Run("spec changes apply to the running machine", func(t *testing.T) {
		spec2 := spec
		spec2.GPUCount, spec2.UncorrectableECC = 2, 3
		if _, err := Ensure(dir, spec2); err != nil {
			t.Fatal(err)
		}
		out, err := run(t, ep, signer, "nvidia-smi --query-gpu=ecc.errors.uncorrected.volatile.total --format=csv,noheader")
		if err != nil || out != "0\n3\n" {
			t.Errorf("got %q, %v", out, err)
		}
		if _, err := run(t, ep, signer, "ls $HYDRA_ROOT/proc/driver/nvidia-nvswitch"); err == nil {
			t.Errorf("a 2-GPU machine still has NVSwitches")
		}
	})

	t.Run("faults", func(t *testing.T) {
		if _, err := Ensure(dir, spec); err != nil { // back to 8 GPUs with NVSwitches
			t.Fatal(err)
		}
		defer func() {
			if err := ClearFaults(dir); err != nil {
				t.Fatal(err)
			}
		}()
		for name, content := range map[string]string{
			FaultGPULost: "1", FaultECCAggregate: "0 4", FaultXid: "0 48", FaultRemappedRows: "0 pending",
			FaultNVLinkDown: "0 3", FaultFabric: "in_progress", FaultExporterDead: "node",
		} {
			if err := SetFault(dir, name, content); err != nil {
				t.Fatal(err)
			}
		}
		checks := []struct{ cmd, want string }{
			{"nvidia-smi -L; echo rc=$?", "GPU 0: NVIDIA H100 80GB HBM3"},
			{"nvidia-smi -L", "Unable to determine the device handle for GPU00000000:28:00.0: GPU is lost"},
			{"nvidia-smi --query-gpu=index,ecc.errors.uncorrected.aggregate.total,fabric.state --format=csv,noheader", "0, 4, In Progress"},
			{"nvidia-smi --query-remapped-rows=gpu_bus_id,remapped_rows.pending,remapped_rows.failure --format=csv,noheader", "00000000:18:00.0, Yes, No"}, // as the recorded drivers print it
			{"nvidia-smi nvlink -s | sed -n 5p", "Link 3: <inactive>"},
			{"dmesg", "NVRM: Xid (PCI:0000:18:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error"},
			{"journalctl -k -b", "NVRM: Xid (PCI:0000:28:00): 79,"},
			{"dcgmi diag -r 2; echo rc=$?", "GPU 1: GPU is lost"},
		}
		for _, c := range checks {
			out, _ := run(t, ep, signer, c.cmd)
			if !strings.Contains(out, c.want) {
				t.Errorf("%s: %q lacks %q", c.cmd, out, c.want)
			}
		}
		if resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", ep.NodeExporterPort)); err != nil || resp.StatusCode != 503 {
			t.Errorf("a dead exporter answers %v, %v", resp, err)
		} else {
			resp.Body.Close()
		}
	})

	t.Run("a loaded module of another version, until the simulated reboot", func(t *testing.T) {
		if err := SetLoadedDriver(dir, "565.57.01"); err != nil {
			t.Fatal(err)
		}
		if out, err := run(t, ep, signer, "nvidia-smi"); err == nil || !strings.Contains(out, "Driver/library version mismatch") {
			t.Errorf("want a mismatch, got %q, %v", out, err)
		}
		bootID := func() string {
			b, _ := os.ReadFile(filepath.Join(ep.Root, "proc", "sys", "kernel", "random", "boot_id"))
			return string(b)
		}
		before := bootID()
		if _, err := run(t, ep, signer, "$HYDRA_SANDBOX_BIN/shutdown -r now"); err != nil {
			t.Fatal(err)
		}
		if out, err := run(t, ep, signer, "nvidia-smi -L | wc -l"); err != nil || strings.TrimSpace(out) != "8" || bootID() == before {
			t.Errorf("after the reboot: %q, %v, boot id %q (was %q)", out, err, bootID(), before)
		}
	})

	t.Run("systemctl records what units run", func(t *testing.T) {
		unit := filepath.Join(ep.Root, "etc", "systemd", "system", "hydra-dcgm-exporter.service")
		if err := os.WriteFile(unit, []byte("[Service]\nExecStart=/usr/bin/dcgm-exporter --address=127.0.0.1:9400\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		defaults := filepath.Join(ep.Root, "etc", "default", "prometheus-node-exporter")
		if err := os.WriteFile(defaults, []byte("ARGS=\"--web.listen-address=127.0.0.1:9100\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := run(t, ep, signer, "systemctl is-active hydra-dcgm-exporter; systemctl enable --now hydra-dcgm-exporter && systemctl restart prometheus-node-exporter && systemctl is-active hydra-dcgm-exporter")
		if err != nil || out != "inactive\nactive\n" {
			t.Errorf("got %q, %v", out, err)
		}
		for file, want := range map[string]string{
			"hydra-dcgm-exporter.service.exec":      "/usr/bin/dcgm-exporter --address=127.0.0.1:9400\n",
			"prometheus-node-exporter.service.exec": "/usr/bin/prometheus-node-exporter --web.listen-address=127.0.0.1:9100\n",
		} {
			if b, err := os.ReadFile(filepath.Join(ep.Dir, "run", "units", file)); string(b) != want {
				t.Errorf("%s: %q (%v), want %q", file, b, err, want)
			}
		}
	})

	t.Run("rotated host key is refused, new one accepted", func(t *testing.T) {
		if err := RotateHostKey(dir); err != nil {
			t.Fatal(err)
		}
		if _, err := run(t, ep, signer, "true"); err == nil || !strings.Contains(err.Error(), "host key mismatch") {
			t.Fatalf("old pinned key: want a mismatch, got %v", err)
		}
		newKey, err := HostPublicKey(dir)
		if err != nil || newKey == ep.HostKey {
			t.Fatalf("key not rotated: %v", err)
		}
		ep2 := ep
		ep2.HostKey = newKey
		if _, err := run(t, ep2, signer, "true"); err != nil {
			t.Fatalf("new key: %v", err)
		}
	})

	t.Run("stop is idempotent", func(t *testing.T) {
		st, _ := readState(dir)
		if err := Stop(dir); err != nil {
			t.Fatal(err)
		}
		if err := Stop(dir); err != nil {
			t.Fatal(err)
		}
		for _, pid := range []int{st.SSHDPid, st.NodeExporterPid, st.DCGMExporterPid} {
			if osproc.Alive(pid) {
				t.Errorf("pid %d still alive", pid)
			}
		}
		if banner(st.Port) {
			t.Errorf("port %d still answers", st.Port)
		}
	})
}

// TestContainer: a machine without systemd refuses systemctl, runs no exporter until asked, and
// stops the processes the playbooks started.
// TestSSHDown: with the sshd_down fault a machine keeps its endpoint but nothing answers there, and
// later Ensures do not start sshd again; once the fault is cleared, the next Ensure brings the machine
// back with the same host key.
func TestSSHDown(t *testing.T) {
	dir, spec, ep, signer := startMachine(t, Spec{GPUModel: NVIDIAName("l4"), GPUCount: 1})
	if err := SetFault(dir, FaultSSHDown, "1"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		down, err := Ensure(dir, spec)
		if err != nil {
			t.Fatalf("Ensure of a machine whose sshd is down: %v", err)
		}
		if down.Port != ep.Port || down.HostKey != ep.HostKey {
			t.Errorf("the unreachable machine's endpoint moved: %+v, was %+v", down, ep)
		}
		if banner(down.Port) {
			t.Fatalf("Ensure %d: an SSH server answers on the machine's port while its sshd is down", i+1)
		}
	}
	if err := ClearFaults(dir); err != nil {
		t.Fatal(err)
	}
	back, err := Ensure(dir, spec)
	if err != nil {
		t.Fatal(err)
	}
	if back.HostKey != ep.HostKey {
		t.Errorf("the mended machine has another host key")
	}
	if out, err := run(t, back, signer, "echo up"); err != nil || out != "up\n" {
		t.Errorf("the mended machine: %q, %v", out, err)
	}
}

func TestContainer(t *testing.T) {
	dir, _, ep, signer := startMachine(t, Spec{GPUModel: NVIDIAName("l4"), GPUCount: 1, Container: true})
	if out, err := run(t, ep, signer, "systemctl is-active docker"); err == nil || !strings.Contains(err.Error(), "has not been booted with systemd") {
		t.Errorf("systemctl in a container: %q, %v", out, err)
	}
	if out, _ := run(t, ep, signer, "systemd-detect-virt -c; test -e $HYDRA_ROOT/.dockerenv && echo dockerenv; dcgmi discovery -l; echo rc=$?"); !strings.Contains(out, "docker\ndockerenv\n") || !strings.Contains(out, "rc=255") {
		t.Errorf("container marks, DCGM without host engine: %q", out)
	}
	if _, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", ep.NodeExporterPort)); err == nil {
		t.Errorf("an exporter answers before anything started it")
	}
	pidDir := filepath.Join(ep.Root, "run", "hydra")
	cmd := fmt.Sprintf("mkdir -p %s && nv-hostengine && (setsid prometheus-node-exporter --web.listen-address=127.0.0.1:%d >/dev/null 2>&1 < /dev/null & echo $! > %s/node-exporter.pid)",
		pidDir, ep.NodeExporterPort, pidDir)
	if out, err := run(t, ep, signer, cmd); err != nil {
		t.Fatalf("%s: %q, %v", cmd, out, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", ep.NodeExporterPort))
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the exporter process does not answer: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "run", "node-exporter.args")); !strings.Contains(string(b), fmt.Sprintf("--web.listen-address=127.0.0.1:%d", ep.NodeExporterPort)) {
		t.Errorf("recorded arguments: %q", b)
	}
	if out, err := run(t, ep, signer, "dcgmi discovery -l"); err != nil || !strings.Contains(out, "1 GPUs found") {
		t.Errorf("DCGM with its host engine: %q, %v", out, err)
	}
	pids := playbookProcesses(dir)
	if err := Stop(dir); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if osproc.Alive(pid) {
			t.Errorf("process %d outlived the machine", pid)
		}
	}
}

func TestLoginUserOfNonRoot(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("only meaningful as a non-root user")
	}
	if _, err := loginUser("root"); err == nil {
		t.Error("a non-root machine must refuse to log in root")
	}
}

func TestNVIDIAName(t *testing.T) {
	for typ, want := range map[string]string{"h100": "NVIDIA H100 80GB HBM3", "L40S": "NVIDIA L40S", "x9": "NVIDIA X9"} {
		if got := NVIDIAName(typ); got != want {
			t.Errorf("NVIDIAName(%q) = %q, want %q", typ, got, want)
		}
	}
	if !DefaultNVSwitch("NVIDIA H100 80GB HBM3", 8) || DefaultNVSwitch("NVIDIA H100 80GB HBM3", 4) || DefaultNVSwitch("NVIDIA L40S", 8) {
		t.Error("DefaultNVSwitch")
	}
}

// A machine's Python stand-ins name the machine's python3 itself (no env and PATH search on every
// call), and still run: each answers as the embedded one does.
func TestStandinsNameTheMachinesPython(t *testing.T) {
	python, err := machinePython()
	if err != nil {
		t.Skip("SKIPPING: " + err.Error())
	}
	dir := t.TempDir()
	if err := writeMachineFiles(dir, Spec{GPUModel: "NVIDIA L4", GPUCount: 1, Fabric: true}); err != nil { // every stand-in
		t.Fatal(err)
	}
	entries, err := standins.ReadDir("standins")
	if err != nil {
		t.Fatal(err)
	}
	rewritten := 0
	for _, e := range entries {
		embedded, err := standins.ReadFile("standins/" + e.Name())
		if e.IsDir() || err != nil || !bytes.HasPrefix(embedded, []byte(envPythonShebang)) || e.Name() == "exporter.py" {
			continue
		}
		name := e.Name()
		if served(name, embedded) {
			name += ".py" // bin/NAME is the stand-in server's client (TestStandinServer)
		}
		written, err := os.ReadFile(filepath.Join(dir, "bin", name))
		if err != nil {
			t.Fatal(err)
		}
		if want := "#!" + python + " -S\n"; !bytes.HasPrefix(written, []byte(want)) || !bytes.HasSuffix(written, embedded[len(envPythonShebang):]) {
			t.Errorf("bin/%s starts %q, want %q and the embedded stand-in after it", name, bytes.SplitN(written, []byte("\n"), 2)[0], want)
		}
		rewritten++
	}
	if rewritten < 5 {
		t.Errorf("%d Python stand-ins rewritten, want the 5 or more embedded (systemctl, nvidia-smi, ...)", rewritten)
	}
	out, err := exec.Command(filepath.Join(dir, "bin", "systemd-detect-virt")).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) == 0 {
		t.Errorf("bin/systemd-detect-virt: %v: %q", err, out)
	}
}

// A served stand-in (bin/NAME, the client of the machine's stand-in server) answers every call as the
// stand-in run on its own does (bin/NAME.py): the same stdout, stderr and exit status, state kept
// across calls; it is the server that answers (the stand-ins' files are gone by then); and without
// a server the stand-in runs on its own.
func TestStandinServer(t *testing.T) {
	python, err := machinePython()
	if err != nil {
		t.Skip("SKIPPING: " + err.Error())
	}
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("SKIPPING: the stand-ins' clients need /bin/bash")
	}
	calls := [][]string{
		{"nvidia-smi"},
		{"nvidia-smi", "--query-gpu=index,name,pci.bus_id,driver_version", "--format=csv,noheader"},
		{"nvidia-smi", "--bogus"},
		{"systemctl", "is-active", "nvidia-persistenced.service", "no-such.service"},
		{"systemctl", "stop", "nvidia-persistenced.service"},
		{"systemctl", "is-active", "nvidia-persistenced.service"},
		{"systemctl", "start", "no-such.service"},
		{"systemctl", "list-unit-files", "--no-legend", "nvidia-*"},
		{"journalctl", "-k", "-b", "-q", "--no-pager"},
		{"dpkg-query", "-W", "-f", "${binary:Package}\t${Version}\n", "nvidia-*"},
		{"modinfo", "-F", "version", "nvidia"},
		{"modinfo", "no-such-module"},
		{"systemd-detect-virt"},
		{"dcgmi", "diag", "-r", "1"},
		{"dmesg"},
		{"systemctl", "show", "--property=Id,ActiveState", "--", "nvidia-persistenced.service", "it's \"quoted\" \\ and spaced"},
	}
	type result struct {
		stdout, stderr string
		status         int
	}
	run := func(dir string, served bool, argv []string) result {
		t.Helper()
		path := filepath.Join(dir, "bin", argv[0])
		cmd := exec.Command(path, argv[1:]...)
		if !served {
			cmd = exec.Command(python, append([]string{"-S", path + ".py"}, argv[1:]...)...)
		}
		cmd.Env = append(os.Environ(), "HYDRA_SANDBOX=1", "HYDRA_ROOT="+filepath.Join(dir, "root"))
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("%v: %v", argv, err)
		}
		return result{stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()}
	}
	alone, withServer := t.TempDir(), t.TempDir()
	for _, dir := range []string{alone, withServer} {
		if err := writeMachineFiles(dir, Spec{GPUModel: "NVIDIA H100 80GB HBM3", GPUCount: 2}); err != nil {
			t.Fatal(err)
		}
	}
	pid, err := startStandinServer(withServer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killAndWait(pid) })
	for deadline := time.Now().Add(20 * time.Second); ; {
		if _, err := os.Stat(filepath.Join(withServer, standinsPortFile)); err == nil {
			break
		}
		if time.Now().After(deadline) || !osproc.Alive(pid) {
			log, _ := os.ReadFile(filepath.Join(withServer, "run", "standins.log"))
			t.Fatalf("the stand-in server did not start: %s", log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The server compiled the stand-ins when it started: only it can answer from now on.
	for _, c := range calls {
		_ = os.Remove(filepath.Join(withServer, "bin", c[0]+".py"))
	}
	for _, c := range calls {
		want := run(alone, false, c)
		if got := run(withServer, true, c); got != want {
			t.Errorf("%q: served %+v, run on its own %+v", c, got, want)
		}
	}
	// A call whose caller is killed (a timeout around an nvidia-smi that hangs) ends with it.
	if err := SetFault(withServer, "smi_hang", "1"); err != nil {
		t.Fatal(err)
	}
	hung := exec.Command(filepath.Join(withServer, "bin", "nvidia-smi"))
	if err := hung.Start(); err != nil {
		t.Fatal(err)
	}
	// The server, the client and the call's process.
	for deadline := time.Now().Add(20 * time.Second); len(machineProcesses(withServer)) < 3; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the hanging nvidia-smi call never reached the server")
		}
	}
	_ = hung.Process.Kill()
	_ = hung.Wait()
	for deadline := time.Now().Add(20 * time.Second); len(machineProcesses(withServer)) > 1; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the call of a killed caller still runs: %v", machineProcesses(withServer))
		}
	}
	if err := ClearFaults(withServer); err != nil {
		t.Fatal(err)
	}
	// Without a server, a client runs its stand-in itself.
	if got, want := run(alone, true, calls[1]), run(alone, false, calls[1]); got != want || got.stdout == "" {
		t.Errorf("without a server: %+v, want %+v", got, want)
	}
	// A link to a client (a real-OS machine's /usr/bin/nvidia-smi) answers for the machine it links to,
	// with a server or without.
	links := t.TempDir()
	for _, dir := range []string{alone, withServer} {
		link := filepath.Join(links, "bin", filepath.Base(dir))
		if err := os.MkdirAll(link, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(dir, "bin", "nvidia-smi"), filepath.Join(link, "nvidia-smi")); err != nil {
			t.Fatal(err)
		}
		if got, want := run(links, true, []string{filepath.Base(dir) + "/nvidia-smi"}), run(alone, false, calls[0]); got != want {
			t.Errorf("through a link to %s: %+v, want %+v", dir, got, want)
		}
	}
}

// machineProcesses returns the pids of the processes whose command lines name dir.
func machineProcesses(dir string) []int {
	var pids []int
	for _, p := range osproc.List() {
		if osproc.NamesDir(p.Args, dir) {
			pids = append(pids, p.PID)
		}
	}
	return pids
}

// freePort's ports are free and below the kernel's ephemeral range, where no outgoing connection takes
// them before a machine's listener binds them.
func TestFreePortOutsideEphemeralRange(t *testing.T) {
	t.Parallel()
	low := ephemeralLow()
	for range 20 {
		p, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		if p < 10000 || p >= low {
			t.Fatalf("freePort() = %d, want a port in [10000, %d)", p, low)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d from freePort: %v", p, err)
		}
		_ = l.Close()
	}
}
