package playbooks

import (
	"os/exec"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// roleDefault reads one variable of a role's defaults.
func roleDefault(t *testing.T, role, name string) string {
	t.Helper()
	b, err := FS.ReadFile("roles/" + role + "/defaults/main.yml")
	if err != nil {
		t.Fatal(err)
	}
	var vars map[string]any
	if err := yaml.Unmarshal(b, &vars); err != nil {
		t.Fatal(err)
	}
	s, ok := vars[name].(string)
	if !ok {
		t.Fatalf("%s has no %s", role, name)
	}
	return strings.TrimSpace(s)
}

// TestHoldsSpareTheKernel: the packages held after a run (hydra_hold_patterns, matched as Jinja's match
// test does: Python's re.match) are the NVIDIA driver's, its precompiled kernel modules included, never
// the kernel's; the holds earlier versions put on the kernel (hydra_kernel_hold_pattern, grep -E) are
// released, never those of the NVIDIA modules. Package names as Ubuntu 24.04 and Debian 12 have them.
func TestHoldsSpareTheKernel(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is missing")
	}
	hold := roleDefault(t, "hydra_vars", "hydra_hold_patterns")
	release := roleDefault(t, "package_holds", "hydra_kernel_hold_pattern")
	held := []string{"nvidia-utils-570-server", "libnvidia-compute-570-server", "nvidia-dkms-570-open", "nvidia-fabricmanager-570",
		"libnvsdm-570", "datacenter-gpu-manager-4-cuda12", "cuda-drivers-570",
		"linux-modules-nvidia-570-server-open-6.8.0-45-generic", "linux-modules-nvidia-570-server-open-generic"}
	kernel := []string{"linux-image-6.8.0-45-generic", "linux-image-generic", "linux-headers-6.8.0-45-generic", "linux-headers-generic",
		"linux-modules-6.8.0-45-generic", "linux-modules-extra-6.8.0-45-generic", "linux-generic", "linux-generic-hwe-24.04",
		"linux-virtual", "linux-aws", "linux-image-6.1.0-28-amd64", "linux-image-amd64", "linux-headers-amd64"}
	match := func(pattern string, names []string) string {
		args := append([]string{"-c", `import re, sys
print(" ".join("1" if re.match(sys.argv[1], n) else "0" for n in sys.argv[2:]))`, pattern}, names...)
		out, err := exec.Command("python3", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	grep := func(pattern string, names []string) string {
		var r []string
		for _, n := range names {
			cmd := exec.Command("grep", "-qE", pattern)
			cmd.Stdin = strings.NewReader(n + "\n")
			if cmd.Run() == nil {
				r = append(r, "1")
			} else {
				r = append(r, "0")
			}
		}
		return strings.Join(r, " ")
	}
	all := func(v string, n int) string { return strings.TrimSpace(strings.Repeat(v+" ", n)) }
	if got := match(hold, held); got != all("1", len(held)) {
		t.Errorf("held of %v: %s, want all", held, got)
	}
	if got := match(hold, kernel); got != all("0", len(kernel)) {
		t.Errorf("held of the kernel's %v: %s, want none", kernel, got)
	}
	if got := grep(release, kernel); got != all("1", len(kernel)) {
		t.Errorf("released of the kernel's %v: %s, want all", kernel, got)
	}
	if got := grep(release, held); got != all("0", len(held)) {
		t.Errorf("released of the NVIDIA packages %v: %s, want none", held, got)
	}
}
