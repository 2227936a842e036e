package playbooks

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDetectNVLink5VPD runs the preflight's probe (roles/preflight/files/detect.py) against NVLink 5
// switch VPD fixtures, as root and as an unprivileged login (nobody, through setpriv). The kernel
// creates a PCI device's vpd file root-only (drivers/pci/vpd.c: 0600), so the login user of a cloud
// image cannot read it: the probe must then read it with sudo -n, and when that fails too report an
// error, never "no NVLink 5 switches" (which once left a B200 without Fabric Manager and NVLSM).
func TestDetectNVLink5VPD(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the fixtures are root-only files read by another user")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) is missing")
	}
	// The system's interpreter, as on a machine (a python3 on PATH may be a wrapper of a user's own,
	// out of nobody's reach).
	python3 := "/usr/bin/python3"
	if _, err := os.Stat(python3); err != nil {
		t.Skip("/usr/bin/python3 is missing")
	}
	code, err := FS.ReadFile("roles/preflight/files/detect.py")
	if err != nil {
		t.Fatal(err)
	}
	// The switch's VPD holds SW_MNG (NVIDIA's driver container, _assert_nvlink5_system); a ConnectX NIC's
	// VPD does not.
	const switchVPD, nicVPD = "\x82\x10PN SW_MNG\x90\x00", "\x82\x10ConnectX-7 VPI\x90\x00"
	tests := []struct {
		name     string
		vpd      string
		mode     os.FileMode
		asNobody bool
		// sudo: the login may run grep as root without a password (sudo's own rules, in a mount
		// namespace of the test's: "" no sudo at all, "none" sudo without a rule for the login).
		sudo      string
		want      bool
		wantError string
	}{
		{name: "root reads a root-only switch VPD", vpd: switchVPD, mode: 0o600, want: true},
		{name: "a login without sudo cannot read it: an error, not absent", vpd: switchVPD, mode: 0o600, asNobody: true,
			wantError: "vpd: permission denied"},
		{name: "a login with sudo reads it with sudo -n", vpd: switchVPD, mode: 0o600, asNobody: true, sudo: "grep", want: true},
		{name: "a login with sudo reads a root-only NIC VPD", vpd: nicVPD, mode: 0o600, asNobody: true, sudo: "grep"},
		{name: "a login whose sudo asks a password: an error", vpd: switchVPD, mode: 0o600, asNobody: true, sudo: "none",
			wantError: "sudo -n grep SW_MNG"},
		{name: "a readable switch VPD", vpd: switchVPD, mode: 0o644, asNobody: true, want: true},
		{name: "a NIC's VPD", vpd: nicVPD, mode: 0o644, asNobody: true},
		{name: "a root-only NIC VPD read by root", vpd: nicVPD, mode: 0o600},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			dev := filepath.Join(root, "sys", "class", "infiniband", "mlx5_0", "device")
			if err := os.MkdirAll(dev, 0o755); err != nil {
				t.Fatal(err)
			}
			vpd := filepath.Join(dev, "vpd")
			if err := os.WriteFile(vpd, []byte(tc.vpd), tc.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(vpd, tc.mode); err != nil {
				t.Fatal(err)
			}
			// Every directory on the way must be traversable by nobody (t.TempDir makes them 0700, its
			// parent too).
			for d := dev; d != filepath.Dir(filepath.Dir(root)); d = filepath.Dir(d) {
				if err := os.Chmod(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			bin := filepath.Join(root, "bin")
			if err := os.Mkdir(bin, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(python3, filepath.Join(bin, "python3")); err != nil {
				t.Fatal(err)
			}
			argv := []string{filepath.Join(bin, "python3"), "-S", "-c", string(code), "/nonexistent/hydra-execlet", "/nonexistent/provisioned.json"}
			if tc.asNobody {
				argv = append([]string{setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--"}, argv...)
			}
			if tc.sudo != "" {
				// The machine's real sudo, with rules of the test's own bind-mounted over /etc/sudoers in
				// a private mount namespace (the host's sudoers stays as it is).
				sudo, unshare := "/usr/bin/sudo", "/usr/bin/unshare"
				for _, p := range []string{sudo, unshare} {
					if _, err := os.Stat(p); err != nil {
						t.Skipf("%s is missing (tools/install-deps.sh installs sudo)", p)
					}
				}
				if err := os.Symlink(sudo, filepath.Join(bin, "sudo")); err != nil {
					t.Fatal(err)
				}
				rules := "Defaults secure_path=\"/usr/sbin:/usr/bin:/sbin:/bin\"\nroot ALL=(ALL:ALL) ALL\n"
				if tc.sudo == "grep" {
					rules += "nobody ALL=(root) NOPASSWD: /usr/bin/grep, /bin/grep\n"
				}
				sudoers := filepath.Join(root, "sudoers")
				if err := os.WriteFile(sudoers, []byte(rules), 0o440); err != nil {
					t.Fatal(err)
				}
				argv = append([]string{unshare, "--mount", "--propagation", "private", "--", "sh", "-c",
					`mount --bind "$0" /etc/sudoers && exec "$@"`, sudoers}, argv...)
			}
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Dir = "/"
			cmd.Env = []string{"HYDRA_ROOT=" + root, "PATH=" + bin + ":/usr/bin:/bin"}
			if tc.sudo == "" {
				// PATH holds python3 alone: the login has no sudo, no way to root.
				cmd.Env = []string{"HYDRA_ROOT=" + root, "PATH=" + bin}
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("detect.py: %v\n%s%s", err, out, stderr.String())
			}
			var got struct {
				User         string `json:"user"`
				NVLink5      bool   `json:"nvlink5"`
				NVLink5Error string `json:"nvlink5_error"`
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if tc.asNobody && got.User == "root" {
				t.Fatalf("the probe ran as root, want an unprivileged login")
			}
			if got.NVLink5 != tc.want || !strings.Contains(got.NVLink5Error, tc.wantError) || (tc.wantError == "") != (got.NVLink5Error == "") {
				t.Errorf("nvlink5 %v, error %q; want %v, error containing %q", got.NVLink5, got.NVLink5Error, tc.want, tc.wantError)
			}
		})
	}
}
