package playbooks

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// debianKey is the fingerprint of testdata/debian-archive-bookworm-stable.gpg (testdata/README.md).
const debianKey = "4D64FEC119C2029067D6E791F8D2585B8783D481"

func python(t *testing.T, script string, args ...string) (string, error) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is missing")
	}
	code, err := FS.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("python3", append([]string{"-c", string(code)}, args...)...)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// TestPGPFingerprints: the trust roots of NVIDIA's repositories are accepted only with the expected
// fingerprint, read from a binary keyring, an ASCII-armored one, or the keyring inside a .deb.
func TestPGPFingerprints(t *testing.T) {
	dir := t.TempDir()
	bin, err := os.ReadFile("testdata/debian-archive-bookworm-stable.gpg")
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString(bin)
	var lines []string
	for len(b64) > 64 {
		lines, b64 = append(lines, b64[:64]), b64[64:]
	}
	armored := "-----BEGIN PGP PUBLIC KEY BLOCK-----\nComment: test\n\n" + strings.Join(append(lines, b64), "\n") +
		"\n=AAAA\n-----END PGP PUBLIC KEY BLOCK-----\n"
	asc := filepath.Join(dir, "key.asc")
	if err := os.WriteFile(asc, []byte(armored), 0o644); err != nil {
		t.Fatal(err)
	}
	notKey := filepath.Join(dir, "not-a-key")
	if err := os.WriteFile(notKey, []byte("<html>captive portal</html>"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		ok   bool
		want string
	}{
		{"binary keyring, right fingerprint", []string{"key", "testdata/debian-archive-bookworm-stable.gpg", debianKey}, true, debianKey},
		{"fingerprint written with spaces", []string{"key", "testdata/debian-archive-bookworm-stable.gpg", "4D64 FEC1 19C2 0290 67D6  E791 F8D2 585B 8783 D481"}, true, debianKey},
		{"armored keyring", []string{"key", asc, debianKey}, true, debianKey},
		{"another key", []string{"key", "testdata/debian-archive-bookworm-stable.gpg", "EB693B3035CD5710E231E123A4B469963BF863CC"}, false, "refusing to trust it"},
		{"not a keyring", []string{"key", notKey, debianKey}, false, "not an OpenPGP keyring"},
	}
	if _, err := exec.LookPath("dpkg-deb"); err == nil {
		pkg := filepath.Join(dir, "pkg")
		for _, d := range []string{"DEBIAN", "usr/share/keyrings"} {
			if err := os.MkdirAll(filepath.Join(pkg, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		control := "Package: test-keyring\nVersion: 1.0-1\nArchitecture: all\nMaintainer: hydra <hydra@example.invalid>\nDescription: test\n"
		if err := os.WriteFile(filepath.Join(pkg, "DEBIAN", "control"), []byte(control), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pkg, "usr/share/keyrings/cuda-archive-keyring.gpg"), bin, 0o644); err != nil {
			t.Fatal(err)
		}
		deb := filepath.Join(dir, "test.deb")
		if out, err := exec.Command("dpkg-deb", "--root-owner-group", "-b", pkg, deb).CombinedOutput(); err != nil {
			t.Fatalf("dpkg-deb: %v %s", err, out)
		}
		tests = append(tests,
			struct {
				name string
				args []string
				ok   bool
				want string
			}{"keyring in a .deb", []string{"deb", deb, "/usr/share/keyrings/cuda-archive-keyring.gpg", debianKey}, true, debianKey},
			struct {
				name string
				args []string
				ok   bool
				want string
			}{"a .deb without the keyring", []string{"deb", deb, "/usr/share/keyrings/other.gpg", debianKey}, false, "holds no usr/share/keyrings/other.gpg"},
		)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := python(t, "files/pgp_fingerprints.py", tc.args...)
			if (err == nil) != tc.ok || !strings.Contains(out, tc.want) {
				t.Errorf("pgp_fingerprints.py %v: %q (%v), want ok=%v and %q", tc.args, out, err, tc.ok, tc.want)
			}
		})
	}
}

// TestCUDASources: listings of NVIDIA's CUDA repository with another keyring (or none) are switched
// off, so that apt update does not fail with "Conflicting values set for option Signed-By"; other
// listings and the one cuda-keyring writes stay.
func TestCUDASources(t *testing.T) {
	const repo = "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64/ /"
	const keyring = "/usr/share/keyrings/cuda-archive-keyring.gpg"
	tests := []struct {
		name    string
		files   map[string]string // under etc/apt
		changed bool
		want    map[string]string // file -> substring it must hold afterwards
		gone    []string
	}{
		{"cuda-keyring's own listing", map[string]string{"sources.list.d/cuda-ubuntu2404-x86_64.list": "deb [signed-by=" + keyring + "] " + repo + "\n"},
			false, map[string]string{"sources.list.d/cuda-ubuntu2404-x86_64.list": "deb [signed-by="}, nil},
		{"an image's listing with another keyring", map[string]string{
			"sources.list.d/cuda.list":                   "deb [signed-by=/usr/share/keyrings/nvidia.gpg] " + repo + "\ndeb http://archive.ubuntu.com/ubuntu noble main\n",
			"sources.list.d/cuda-ubuntu2404-x86_64.list": "deb [signed-by=" + keyring + "] " + repo + "\n"},
			true, map[string]string{
				"sources.list.d/cuda.list":                   "# disabled by hydra (NVIDIA's CUDA repository with another keyring): deb [signed-by=/usr/share/keyrings/nvidia.gpg]",
				"sources.list.d/cuda-ubuntu2404-x86_64.list": "\ndeb [signed-by=" + keyring}, nil},
		{"a listing without a keyring in sources.list", map[string]string{"sources.list": "deb " + repo + "\n"}, true,
			map[string]string{"sources.list": "# disabled by hydra"}, nil},
		{"a deb822 file", map[string]string{"sources.list.d/nvidia.sources": "Types: deb\nURIs: https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64/\nSuites: /\nSigned-By: /etc/apt/keyrings/nvidia.asc\n"},
			true, map[string]string{"sources.list.d/nvidia.sources.hydra-disabled": "Signed-By: /etc/apt/keyrings/nvidia.asc"}, []string{"sources.list.d/nvidia.sources"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for name, content := range tc.files {
				p := filepath.Join(root, "etc/apt", name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			out, err := python(t, "roles/nvidia_repo/files/cuda_sources.py", root+"/", keyring)
			if err != nil || out != map[bool]string{true: "changed", false: "unchanged"}[tc.changed] {
				t.Fatalf("cuda_sources.py: %q (%v), want changed=%v", out, err, tc.changed)
			}
			for name, want := range tc.want {
				b, err := os.ReadFile(filepath.Join(root, "etc/apt", name))
				if err != nil || !strings.Contains("\n"+string(b), want) {
					t.Errorf("%s: %q (%v), want it to hold %q", name, b, err, want)
				}
			}
			for _, name := range tc.gone {
				if _, err := os.Stat(filepath.Join(root, "etc/apt", name)); err == nil {
					t.Errorf("%s is still listed", name)
				}
			}
		})
	}
}

// TestSpawnEnvFile: spawn.py --env-file gives the program the file's variables in its environment (a
// quoted value read as a JSON string), never on its command line, which every user can read.
func TestSpawnEnvFile(t *testing.T) {
	dir := t.TempDir()
	secret := `--token s3cr3t-"quoted" value`
	q, _ := json.Marshal(secret)
	env := filepath.Join(dir, "execlet.env")
	if err := os.WriteFile(env, []byte("# a comment\nHYDRA_EXECLET_ARGS="+string(q)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "agent")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\nprintf '%s' \"$HYDRA_EXECLET_ARGS\" > \"$1\"\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	pidfile, got := filepath.Join(dir, "run/agent.pid"), filepath.Join(dir, "got")
	out, err := python(t, "files/spawn.py", "--env-file", env, pidfile, filepath.Join(dir, "log/agent.log"), prog, got)
	if err != nil || out != "started" {
		t.Fatalf("spawn.py: %q (%v), want started", out, err)
	}
	b, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	pid := strings.TrimSpace(string(b))
	t.Cleanup(func() {
		if p, err := os.FindProcess(atoi(t, pid)); err == nil {
			_ = p.Kill()
		}
	})
	if b, err := os.ReadFile(got); err != nil || string(b) != secret {
		t.Errorf("the program's HYDRA_EXECLET_ARGS: %q (%v), want %q", b, err, secret)
	}
	cmdline, err := os.ReadFile("/proc/" + pid + "/cmdline")
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	if strings.Contains(string(cmdline), "s3cr3t") {
		t.Errorf("the secret is on the program's command line: %q", cmdline)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}
