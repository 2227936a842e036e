package sshhost

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
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

func clientSigner(t *testing.T) (ssh.Signer, string) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.PublicKey())))
}

// run executes cmd on the machine over SSH with the host key pinned to ep.HostKey.
func run(t *testing.T, ep Endpoint, signer ssh.Signer, cmd string) (string, error) {
	t.Helper()
	pinned, _, _, _, err := ssh.ParseAuthorizedKey([]byte(ep.HostKey))
	if err != nil {
		t.Fatal(err)
	}
	c, err := ssh.Dial("tcp", net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port)), &ssh.ClientConfig{
		User: ep.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.FixedHostKey(pinned), Timeout: 10 * time.Second,
	})
	if err != nil {
		return "", err
	}
	defer c.Close()
	s, err := c.NewSession()
	if err != nil {
		return "", err
	}
	defer s.Close()
	var out, stderr bytes.Buffer
	s.Stdout, s.Stderr = &out, &stderr
	if err := s.Run(cmd); err != nil {
		return out.String(), fmt.Errorf("%v: %s", err, stderr.String())
	}
	return out.String(), nil
}

func TestMachine(t *testing.T) {
	requireTools(t)
	signer, pub := clientSigner(t)
	dir := t.TempDir()
	spec := Spec{GPUModel: NVIDIAName("h100"), GPUCount: 8, AuthorizedKeys: []string{pub}}
	ep, err := Ensure(dir, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Stop(dir) })
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
		{"systemctl", "systemctl is-active nvidia-dcgm hydra-execlet", []string{"active\nactive\n"}},
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
			if alive(pid) {
				t.Errorf("pid %d still alive", pid)
			}
		}
		if banner(st.Port) {
			t.Errorf("port %d still answers", st.Port)
		}
	})
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
