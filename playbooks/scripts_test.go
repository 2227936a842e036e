package playbooks

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// fakeSystemctl is a systemctl for converge.py's tests: it logs every call to $FAKE_SYSTEMCTL_LOG and
// answers show from $FAKE_SYSTEMCTL_UNITS (JSON: unit -> [LoadState, ActiveState, UnitFileState]),
// separating units by a blank line as systemctl does.
const fakeSystemctl = `#!/usr/bin/env python3
import json, os, sys
with open(os.environ["FAKE_SYSTEMCTL_LOG"], "a") as f:
    f.write(" ".join(sys.argv[1:]) + "\n")
if sys.argv[1] == "show":
    units = json.loads(os.environ["FAKE_SYSTEMCTL_UNITS"])
    names = sys.argv[sys.argv.index("--") + 1:]
    for i, n in enumerate(names):
        load, active, state = units.get(n, ["not-found", "inactive", ""])
        print("%sId=%s\nLoadState=%s\nActiveState=%s\nUnitFileState=%s" % ("\n" if i else "", n, load, active, state))
`

// converge runs files/converge.py with spec on stdin and the fake systemctl first on PATH; it returns
// what the script reported changed and the systemctl calls it made.
func converge(t *testing.T, spec map[string]any, units string) ([]string, []string, error) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is missing")
	}
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "systemctl"), []byte(fakeSystemctl), 0o755); err != nil {
		t.Fatal(err)
	}
	code, err := FS.ReadFile("files/converge.py")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(spec)
	log := filepath.Join(bin, "calls")
	cmd := exec.Command("python3", "-c", string(code), "-")
	cmd.Stdin = strings.NewReader(string(b))
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "FAKE_SYSTEMCTL_LOG="+log, "FAKE_SYSTEMCTL_UNITS="+units)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, nil, fmt.Errorf("%v: %s", err, stderr.String())
	}
	var out struct{ Changed []string }
	if err := json.Unmarshal([]byte(stdout.String()), &out); err != nil {
		t.Fatalf("converge.py printed %q: %v", stdout.String(), err)
	}
	calls, _ := os.ReadFile(log)
	return out.Changed, strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(calls)), " ", "_")), nil
}

// TestConvergeFiles: files, directories, links and managed blocks are written where they differ, with
// their mode, and a second run changes nothing; in check mode nothing is written but the changes are
// reported; a managed block is replaced in place and removed when empty, the lines around it kept.
func TestConvergeFiles(t *testing.T) {
	dir := t.TempDir()
	keys := filepath.Join(dir, "home/.ssh/authorized_keys")
	if err := os.MkdirAll(filepath.Dir(keys), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keys, []byte("ssh-ed25519 AAAA hydra"), 0o600); err != nil {
		t.Fatal(err)
	}
	files := func(block string) []any {
		return []any{
			map[string]any{"path": filepath.Join(dir, "etc/hydra"), "state": "directory", "mode": "0755"},
			map[string]any{"path": filepath.Join(dir, "etc/hydra/execlet.env"), "mode": "0600", "content": "SECRET=x\n"},
			map[string]any{"paths": []string{filepath.Join(dir, "etc/systemd/system/a.service")}, "state": "link", "src": "/dev/null"},
			map[string]any{"path": keys, "block": block, "marker": "# {mark} hydra: customer keys", "mode": "0600"},
		}
	}
	tests := []struct {
		name    string
		check   bool
		block   string
		changed int
		keys    string
	}{
		{"check mode writes nothing", true, "ssh-ed25519 BBBB one", 4, "ssh-ed25519 AAAA hydra"},
		{"first run", false, "ssh-ed25519 BBBB one", 4,
			"ssh-ed25519 AAAA hydra\n# BEGIN hydra: customer keys\nssh-ed25519 BBBB one\n# END hydra: customer keys\n"},
		{"second run changes nothing", false, "ssh-ed25519 BBBB one", 0,
			"ssh-ed25519 AAAA hydra\n# BEGIN hydra: customer keys\nssh-ed25519 BBBB one\n# END hydra: customer keys\n"},
		{"other keys replace the block in place", false, "ssh-ed25519 CCCC two\nssh-ed25519 DDDD three", 1,
			"ssh-ed25519 AAAA hydra\n# BEGIN hydra: customer keys\nssh-ed25519 CCCC two\nssh-ed25519 DDDD three\n# END hydra: customer keys\n"},
		{"no keys remove the block", false, "", 1, "ssh-ed25519 AAAA hydra\n"},
	}
	for _, tc := range tests {
		changed, calls, err := converge(t, map[string]any{"check": tc.check, "files": files(tc.block)}, "{}")
		if err != nil || len(changed) != tc.changed || len(calls) != 0 {
			t.Errorf("%s: changed %q, systemctl %q (%v), want %d change(s) and no systemctl", tc.name, changed, calls, err, tc.changed)
		}
		if b, _ := os.ReadFile(keys); string(b) != tc.keys {
			t.Errorf("%s: authorized_keys %q, want %q", tc.name, b, tc.keys)
		}
		st, err := os.Stat(filepath.Join(dir, "etc/hydra/execlet.env"))
		if tc.check != (err != nil) || (err == nil && st.Mode().Perm() != 0o600) {
			t.Errorf("%s: execlet.env %v (%v)", tc.name, st, err)
		}
		if l, err := os.Readlink(filepath.Join(dir, "etc/systemd/system/a.service")); tc.check != (err != nil) || (err == nil && l != "/dev/null") {
			t.Errorf("%s: mask link %q (%v)", tc.name, l, err)
		}
	}
}

// TestConvergeUnits: systemd is reloaded when a unit file changed, a unit reading a changed file is
// restarted, a stopped one enabled and started, a running one left alone, units in the order given; in
// check mode only show is asked; a unit that does not exist cannot be started.
func TestConvergeUnits(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "etc/systemd/system/a.service.d/hydra.conf")
	units := `{"a.service": ["loaded", "active", "enabled"], "b.service": ["loaded", "inactive", "disabled"],
		"c.service": ["loaded", "active", "static"], "d.service": ["loaded", "active", "enabled"]}`
	spec := func(check bool, extra ...any) map[string]any {
		u := []any{
			map[string]any{"name": "a.service", "enabled": true, "state": "started", "restart_if": []string{conf}},
			map[string]any{"name": "b", "enabled": true, "state": "started"},
			map[string]any{"names": []string{"c.service"}, "enabled": true, "state": "started"},
			map[string]any{"name": "d.service", "state": "stopped"},
		}
		return map[string]any{"check": check, "files": []any{map[string]any{"path": conf, "content": "[Service]\n", "mode": "0644"}},
			"units": append(u, extra...)}
	}
	tests := []struct {
		name  string
		check bool
		extra []any
		calls []string
		fails string
	}{
		{"check mode", true, nil, []string{"show_--property=Id,LoadState,ActiveState,UnitFileState_--_a.service_b.service_c.service_d.service"}, ""},
		{"a missing unit", false, []any{map[string]any{"name": "e.service", "state": "started"}}, nil, "e.service: the unit is not-found"},
		{"apply", false, nil, []string{"daemon-reload", "show_--property=Id,LoadState,ActiveState,UnitFileState_--_a.service_b.service_c.service_d.service",
			"restart_a.service", "enable_b.service", "start_b.service", "stop_d.service"}, ""},
	}
	for _, tc := range tests {
		_ = os.RemoveAll(filepath.Join(dir, "etc"))
		_, calls, err := converge(t, spec(tc.check, tc.extra...), units)
		if tc.fails != "" {
			if err == nil || !strings.Contains(err.Error(), tc.fails) {
				t.Errorf("%s: %v, want an error naming %q", tc.name, err, tc.fails)
			}
			continue
		}
		if err != nil || !slices.Equal(calls, tc.calls) {
			t.Errorf("%s: systemctl %q (%v), want %q", tc.name, calls, err, tc.calls)
		}
	}
}
