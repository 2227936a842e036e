package playbooks

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// detect runs the preflight's detect.py with root as its HYDRA_ROOT and bin first on PATH (an
// nvidia-smi of the test's), and returns what it reports.
func detect(t *testing.T, root, bin string) map[string]any {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is missing")
	}
	code, err := FS.ReadFile("roles/preflight/files/detect.py")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("python3", "-S", "-c", string(code), "/nonexistent/hydra-execlet", filepath.Join(root, "marker.json"))
	cmd.Env = append(os.Environ(), "HYDRA_ROOT="+root, "PATH="+bin+":/usr/sbin:/usr/bin:/sbin:/bin")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("detect.py: %v: %s", err, out)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("detect.py printed %q: %v", out, err)
	}
	return m
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// The messages a failing nvidia-smi prints, as the real binary does: the first two are strings of
// nvidia-smi 550.54.15 (nvidia-utils-550-server 550.54.15-0ubuntu2, Ubuntu noble's multiverse), found
// there with `strings`, the first also printed by it with no kernel module (TestRealOS_DriverInstall);
// the mismatch line as recorded in internal/sandbox/simhost (PROVENANCE.md). The exit codes are not
// asserted.
const (
	smiNoModule   = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running."
	smiNoDevices  = "No devices were found"
	smiMismatch   = "Failed to initialize NVML: Driver/library version mismatch"
	smiNoDevExit  = 6
	smiModuleExit = 9
	smiMismatchEx = 18
)

// TestDetectDriver: detect.py tells "no driver installed" (no nvidia-smi, no package) from "a driver
// present but failing" (nvidia-smi there and failing: no kernel module, no device, a version mismatch),
// names each failure, lists NVIDIA GPUs on the PCI bus with those older than Turing (V100 10de:1db4,
// P100 10de:15f8), and takes the kernel the machine boots into from /boot (the newest), not the running one.
func TestDetectDriver(t *testing.T) {
	t.Run("no driver", func(t *testing.T) {
		m := detect(t, t.TempDir(), t.TempDir())
		d := m["driver"].(map[string]any)
		if d["ok"] != false || d["present"] != false || d["reason"] != "no nvidia-smi on the machine" {
			t.Errorf("a machine without a driver: %v", d)
		}
	})
	for _, tc := range []struct {
		name, out string
		code      int
		want      string
	}{
		{"no kernel module", smiNoModule, smiModuleExit, "no NVIDIA kernel module is loaded (nvidia-smi: " + smiNoModule + ")"},
		{"no devices", smiNoDevices, smiNoDevExit, "the driver finds no GPU (nvidia-smi: No devices were found)"},
		{"version mismatch", smiMismatch, smiMismatchEx, "the NVIDIA kernel module and the driver's libraries are of different versions (" + smiMismatch + ")"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := t.TempDir()
			writeFiles(t, bin, map[string]string{"out": tc.out + "\n", "nvidia-smi": "#!/bin/sh\ncat " + bin + "/out\nexit " + strconv.Itoa(tc.code) + "\n"})
			m := detect(t, t.TempDir(), bin)
			d := m["driver"].(map[string]any)
			if d["ok"] != false || d["present"] != true || d["reason"] != tc.want {
				t.Errorf("nvidia-smi printing %q: %v, want present, failing, reason %q", tc.out, d, tc.want)
			}
		})
	}
	t.Run("GPUs and the boot kernel", func(t *testing.T) {
		root := t.TempDir()
		files := map[string]string{
			"boot/vmlinuz-6.8.0-90-generic":             "",
			"boot/vmlinuz-6.8.0-151-generic":            "",
			"boot/vmlinuz-6.8.0-160-generic":            "", // no modules: a removed kernel's leftover
			"lib/modules/6.8.0-90-generic/modules.dep":  "",
			"lib/modules/6.8.0-151-generic/modules.dep": "",
		}
		for addr, dev := range map[string]string{"0000:18:00.0": "0x1db4", "0000:3b:00.0": "0x15f8", "0000:5d:00.0": "0x2330"} {
			files["sys/bus/pci/devices/"+addr+"/vendor"] = "0x10de\n"
			files["sys/bus/pci/devices/"+addr+"/class"] = "0x030200\n"
			files["sys/bus/pci/devices/"+addr+"/device"] = dev + "\n"
		}
		// An NVSwitch (a bridge, not a GPU) is no GPU.
		files["sys/bus/pci/devices/0000:07:00.0/vendor"] = "0x10de\n"
		files["sys/bus/pci/devices/0000:07:00.0/class"] = "0x068000\n"
		files["sys/bus/pci/devices/0000:07:00.0/device"] = "0x22a3\n"
		writeFiles(t, root, files)
		m := detect(t, root, t.TempDir())
		if m["boot_kernel"] != "6.8.0-151-generic" || !strings.Contains(m["boot_kernel_from"].(string), "newest installed") {
			t.Errorf("boot kernel %v (%v), want 6.8.0-151-generic from /boot", m["boot_kernel"], m["boot_kernel_from"])
		}
		b, _ := json.Marshal(m["gpu_pci"])
		want := `[{"address":"0000:18:00.0","device":"0x1db4","pre_turing":true},{"address":"0000:3b:00.0","device":"0x15f8","pre_turing":true},{"address":"0000:5d:00.0","device":"0x2330","pre_turing":false}]`
		if string(b) != want {
			t.Errorf("gpu_pci %s, want %s", b, want)
		}
	})
}

// driverVars evaluates the nvidia_driver role's defaults and vars (the real files, in a role of the
// test's that has them and only writes what they give, with ansible-playbook on this host) once per
// case: a machine (hydra_machine) and the variables set; it returns the named variables per case.
func driverVars(t *testing.T, cases []map[string]any, names ...string) []map[string]any {
	t.Helper()
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		t.Skip("ansible-playbook is missing")
	}
	dir := t.TempDir()
	abs, err := filepath.Abs("roles/nvidia_driver")
	if err != nil {
		t.Fatal(err)
	}
	role := filepath.Join(dir, "roles", "probe")
	for _, d := range []string{"defaults", "vars"} {
		if err := os.MkdirAll(filepath.Join(role, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(abs, d, "main.yml"), filepath.Join(role, d, "main.yml")); err != nil {
			t.Fatal(err)
		}
	}
	var show []string
	for _, n := range names {
		show = append(show, `'`+n+`': `+n)
	}
	writeFiles(t, role, map[string]string{"tasks/main.yml": "- ansible.builtin.copy:\n    dest: \"{{ probe_out }}\"\n" +
		"    content: \"{{ {" + strings.Join(show, ", ") + "} | to_json }}\"\n    mode: '0644'\n"})
	var play strings.Builder
	for i, c := range cases {
		c["probe_out"] = filepath.Join(dir, strconv.Itoa(i)+".json")
		vars, _ := json.Marshal(c)
		play.WriteString("- hosts: localhost\n  connection: local\n  gather_facts: false\n  vars: " + string(vars) + "\n  roles: [probe]\n")
	}
	writeFiles(t, dir, map[string]string{"play.yml": play.String()})
	cmd := exec.Command("ansible-playbook", "-i", "localhost,", filepath.Join(dir, "play.yml"))
	cmd.Env = append(os.Environ(), "ANSIBLE_HOME="+filepath.Join(dir, "ansible"), "ANSIBLE_LOCAL_TEMP="+filepath.Join(dir, "tmp"),
		"ANSIBLE_NOCOLOR=1", "ANSIBLE_RETRY_FILES_ENABLED=0", "ANSIBLE_ROLES_PATH="+filepath.Join(dir, "roles"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ansible-playbook: %v\n%s", err, out)
	}
	var res []map[string]any
	for i := range cases {
		b, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(i)+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		res = append(res, m)
	}
	return res
}

// TestDriverPackages: the driver's packages as the role asks apt for them: the proprietary kernel
// modules on a GPU older than Turing (V100, P100), the open ones otherwise; Ubuntu's precompiled
// modules and DKMS headers for the kernel the machine boots into, not the running one (a container's
// is its host's); Ubuntu's version left to the archive, not a stale pin.
func TestDriverPackages(t *testing.T) {
	machine := func(dev string, preTuring bool) map[string]any {
		return map[string]any{"distribution": "ubuntu", "kernel": "6.1.0-host", "boot_kernel": "6.8.0-151-generic",
			"gpu_pci": []map[string]any{{"address": "0000:18:00.0", "device": dev, "pre_turing": preTuring}}}
	}
	names := []string{"hydra_nvidia_driver_packages", "hydra_driver_headers", "hydra_driver_version"}
	tests := []struct {
		name     string
		machine  map[string]any
		vars     map[string]any
		packages string
		headers  string
		version  string
	}{
		{"V100, NVIDIA's repository", machine("0x1db4", true), nil,
			`["nvidia-dkms-570","libnvidia-compute-570","nvidia-utils-570","nvidia-compute-utils-570"]`, `["linux-headers-6.8.0-151-generic","dkms"]`, "570.133.20"},
		{"H100, NVIDIA's repository", machine("0x2330", false), nil,
			`["nvidia-dkms-570-open","libnvidia-compute-570","nvidia-utils-570","nvidia-compute-utils-570"]`, `["linux-headers-6.8.0-151-generic","dkms"]`, "570.133.20"},
		{"P100, Ubuntu's precompiled", machine("0x15f8", true), map[string]any{"hydra_nvidia_driver_source": "ubuntu", "hydra_nvidia_driver_branch": "580"},
			`["nvidia-headless-no-dkms-580-server","nvidia-utils-580-server","linux-modules-nvidia-580-server-6.8.0-151-generic"]`, `[]`, ""},
		{"H100, Ubuntu's precompiled", machine("0x2330", false), map[string]any{"hydra_nvidia_driver_source": "ubuntu", "hydra_nvidia_driver_branch": "580"},
			`["nvidia-headless-no-dkms-580-server-open","nvidia-utils-580-server","linux-modules-nvidia-580-server-open-6.8.0-151-generic"]`, `[]`, ""},
		{"H100, Ubuntu's DKMS", machine("0x2330", false), map[string]any{"hydra_nvidia_driver_source": "ubuntu", "hydra_nvidia_driver_branch": "580", "hydra_nvidia_driver_kernel_modules": "dkms"},
			`["nvidia-headless-580-server-open","nvidia-utils-580-server"]`, `["linux-headers-6.8.0-151-generic","dkms"]`, ""},
		{"H100 with the open modules off", machine("0x2330", false), map[string]any{"hydra_nvidia_driver_open": false},
			`["nvidia-dkms-570","libnvidia-compute-570","nvidia-utils-570","nvidia-compute-utils-570"]`, `["linux-headers-6.8.0-151-generic","dkms"]`, "570.133.20"},
	}
	var cases []map[string]any
	for _, tc := range tests {
		c := map[string]any{"hydra_machine": tc.machine}
		for k, v := range tc.vars {
			c[k] = v
		}
		cases = append(cases, c)
	}
	res := driverVars(t, cases, names...)
	for i, tc := range tests {
		got := res[i]
		p, _ := json.Marshal(got["hydra_nvidia_driver_packages"])
		h, _ := json.Marshal(got["hydra_driver_headers"])
		if string(p) != tc.packages || string(h) != tc.headers || got["hydra_driver_version"] != tc.version {
			t.Errorf("%s: packages %s, headers %s, version %q; want %s, %s, %q", tc.name, p, h, got["hydra_driver_version"], tc.packages, tc.headers, tc.version)
		}
	}
}

// TestDetectFileStates: detect.py reports the files hydra writes whole as a role compares them (mode and
// content's SHA-256, a directory as "dir", a link as its target), so that one already as it would be
// written is left alone; a link where a file belongs never matches a file's state, and a missing file
// and the execlet agent's arguments (secret) are never reported, so that they are written.
func TestDetectFileStates(t *testing.T) {
	root := t.TempDir()
	unit := "[Unit]\nDescription=DCGM exporter (hydra)\n"
	writeFiles(t, root, map[string]string{
		"etc/systemd/system/hydra-dcgm-exporter.service": unit,
		"etc/hydra/execlet.env":                          "HYDRA_EXECLET_ARGS=[\"--token\", \"s3cret\"]\n",
		"elsewhere/execlet.json":                         "{}\n",
		// An IMEX domain file (the role reads its trays from the probe): comments and blank lines are not trays.
		"etc/nvidia-imex/nodes_config.cfg": "# the domain's trays\n\n 10.0.7.21 \n10.0.7.22\n",
	})
	if err := os.Chmod(filepath.Join(root, "etc/systemd/system/hydra-dcgm-exporter.service"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(root, "etc/hydra"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "elsewhere/execlet.json"), filepath.Join(root, "etc/hydra/execlet.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/null", filepath.Join(root, "etc/systemd/system/dcgm-exporter.service")); err != nil {
		t.Fatal(err)
	}
	m := detect(t, root, t.TempDir())
	if got := fmt.Sprint(m["imex_nodes_config"]); got != "[10.0.7.21 10.0.7.22]" {
		t.Errorf("imex_nodes_config %s, want the two trays", got)
	}
	files, _ := m["files"].(map[string]any)
	sum := sha256.Sum256([]byte(unit))
	for _, tc := range []struct{ path, want string }{
		{"/etc/systemd/system/hydra-dcgm-exporter.service", "0644 " + hex.EncodeToString(sum[:])},
		{"/etc/hydra", "0750 dir"},
		{"/etc/hydra/execlet.json", "link " + filepath.Join(root, "elsewhere/execlet.json")},
		{"/etc/systemd/system/dcgm-exporter.service", "link /dev/null"},
		{"/etc/hydra/execlet.env", ""},
		{"/etc/systemd/system/hydra-execlet.service", ""},
	} {
		if got, _ := files[root+tc.path].(string); got != tc.want {
			t.Errorf("%s: %q, want %q (all: %v)", tc.path, got, tc.want, files)
		}
	}
}

// TestDetectCustomerKeys: detect.py reports the login user's ~/.ssh as vm_access compares it (the
// directory's and authorized_keys' mode and owner, the SHA-256 of the lines of the keys' managed block),
// so that keys already in place are left alone; a file blockinfile would rewrite whatever the keys has
// no block entry, so that the role runs.
func TestDetectCustomerKeys(t *testing.T) {
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "# BEGIN hydra: customer keys\n", "# END hydra: customer keys\n"
	keys := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl a\nssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHy1 b\n"
	sum := sha256.Sum256([]byte(keys))
	hydraKey := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHy2 hydra\n"
	for _, tc := range []struct {
		name, content string
		want          map[string]any
	}{
		{"no .ssh", "", map[string]any{"dir": "", "file": ""}},
		{"the block", hydraKey + begin + keys + end, map[string]any{"dir": "0700 dir " + me.Username, "file": "0600 " + me.Username, "block": hex.EncodeToString(sum[:])}},
		{"no block", hydraKey, map[string]any{"dir": "0700 dir " + me.Username, "file": "0600 " + me.Username, "block": ""}},
		{"last line unended", strings.TrimSuffix(hydraKey, "\n"), map[string]any{"dir": "0700 dir " + me.Username, "file": "0600 " + me.Username}},
		{"a marker line twice", begin + keys + end + begin + end, map[string]any{"dir": "0700 dir " + me.Username, "file": "0600 " + me.Username}},
		{"the end marker alone", hydraKey + end, map[string]any{"dir": "0700 dir " + me.Username, "file": "0600 " + me.Username}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if tc.content != "" {
				ssh := filepath.Join(root, me.HomeDir, ".ssh")
				if err := os.MkdirAll(ssh, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(ssh, "authorized_keys"), []byte(tc.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if got := detect(t, root, t.TempDir())["customer_keys"]; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("customer_keys %v, want %v", got, tc.want)
			}
		})
	}
}

// TestDetectHeldPackages: detect.py names the installed packages held (dpkg's selection "hold": the first
// letter of ${db:Status-Abbrev}), so that package_holds holds only the others; a package not installed
// is neither. The machine has no IMEX domain file: it lists no trays.
func TestDetectHeldPackages(t *testing.T) {
	bin := t.TempDir()
	// dpkg-query -W -f '${binary:Package}\t${Version}\t${db:Status-Abbrev}\n' as dpkg prints it: held and
	// installed "hi ", installed "ii ", removed with its configuration kept "rc " (the version is noble's
	// nvidia-utils-550-server, as the other tests here cite it).
	writeFiles(t, bin, map[string]string{"dpkg-query": "#!/bin/sh\nprintf '" +
		`nvidia-utils-550-server:amd64\t550.54.15-0ubuntu2\thi \n` +
		`libnvidia-compute-550-server:amd64\t550.54.15-0ubuntu2\tii \n` +
		`nvidia-dkms-550-server\t550.54.15-0ubuntu2\trc \n` + "'\n"})
	m := detect(t, t.TempDir(), bin)
	if got, ok := m["imex_nodes_config"].([]any); !ok || len(got) != 0 {
		t.Errorf("imex_nodes_config %v without the file, want []", m["imex_nodes_config"])
	}
	held, _ := m["packages_held"].([]any)
	if len(held) != 1 || held[0] != "nvidia-utils-550-server" {
		t.Errorf("packages_held %v, want [nvidia-utils-550-server]", m["packages_held"])
	}
	if pk, _ := m["packages"].(map[string]any); len(pk) != 2 || pk["libnvidia-compute-550-server"] == nil {
		t.Errorf("packages %v, want the two installed", m["packages"])
	}
}
