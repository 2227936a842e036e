package provider

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// importInto adopts the machine another working directory made (and then forgot) into a fresh one.
func importInto(t *testing.T, s *testSandbox, playbookDir, name, cloudName string) *cliDir {
	t.Helper()
	d := newCLIDirReattach(t, "")
	d.write(s.provisionedConfigIn(d.dir, playbookDir) + testAccGPUInstanceConfig_basic(name, "l4", ""))
	out := d.mustRun("import", "hydra_gpu_instance.test", cloudName)
	if !strings.Contains(out, "Import successful") {
		t.Fatalf("import:\n%s", out)
	}
	return d
}

// markerRoles are the roles of bare-vm.yml the import tests' machines run (slimPlaybooks): its variables,
// the preflight, and the marker that records the provisioning's digest on the machine, which is what
// an import reads. The whole playbook's run is TestAccGPUInstance_provisioned's.
var markerRoles = []string{"hydra_vars", "preflight", "marker"}

func TestAccGPUInstance_importProvisioned(t *testing.T) {
	requireProvisioningTools(t)
	t.Parallel()
	s := newTestSandbox(t)
	pb := slimPlaybooks(t, markerRoles...)
	// One working directory provisions a machine with hydra's playbooks (their marker), then forgets it.
	show := forgottenMachine(t, func(dir string) string { return s.provisionedConfigIn(dir, pb) }, "adopted")
	cloudName := stateAttr(show, "id")
	digest := stateAttr(show, "provisioning_digest")

	// Another imports it: the marker on the machine says it was provisioned with these playbooks.
	two := importInto(t, s, pb, "adopted", cloudName)
	show = two.mustRun("state", "show", "hydra_gpu_instance.test")
	if stateAttr(show, "status") != "ready" || stateAttr(show, "provisioning_digest") != digest {
		t.Fatalf("the imported machine must be ready with digest %s:\n%s", digest, show)
	}
	out, err := two.run("plan", "-detailed-exitcode")
	if err != nil || !strings.Contains(out, "No changes") {
		t.Fatalf("the plan after importing a provisioned machine must be empty, so Ansible never runs (err %v):\n%s", err, out)
	}
	two.mustRun("destroy", "-auto-approve")
	if n := len(s.live()); n != 0 || s.created() != 1 {
		t.Fatalf("%d machines left, %d created", n, s.created())
	}
}

func TestAccGPUInstance_importUnprovisioned(t *testing.T) {
	requireProvisioningTools(t)
	t.Parallel()
	s := newTestSandbox(t)
	stand, err := filepath.Abs("testdata/playbooks") // playbooks that leave no marker: "other means"
	if err != nil {
		t.Fatal(err)
	}
	cloudName := stateAttr(forgottenMachine(t, func(dir string) string { return s.provisionedConfigIn(dir, stand) }, "bare"), "id")

	pb := slimPlaybooks(t, markerRoles...)
	two := importInto(t, s, pb, "bare", cloudName)
	if st := stateAttr(two.mustRun("state", "show", "hydra_gpu_instance.test"), "status"); st != "running" {
		t.Fatalf("a machine without hydra's marker imports as running, got %q", st)
	}
	plan := two.mustRun("plan")
	if !strings.Contains(plan, "1 to change") || !errorPattern("GPU instance will be provisioned", "carries no record of a provisioning").MatchString(plan) {
		t.Fatalf("the plan must provision the imported machine in place and say why:\n%s", plan)
	}
	two.mustRun("apply", "-auto-approve")
	if st := stateAttr(two.mustRun("state", "show", "hydra_gpu_instance.test"), "status"); st != "ready" {
		t.Fatalf("after apply the imported machine is %q", st)
	}
	if out, err := two.run("plan", "-detailed-exitcode"); err != nil {
		t.Fatalf("after provisioning the plan must be empty (err %v):\n%s", err, out)
	}
	two.mustRun("destroy", "-auto-approve")
	if n := len(s.live()); n != 0 || s.created() != 1 {
		t.Fatalf("%d machines left, %d created", n, s.created())
	}
}

// TestAccGPUInstance_importWithoutKey: a machine made with provisioning off carries no key of hydra's.
// Its import into a configuration that provisions warns that the machine refuses hydra's key and
// names the authorized_keys line to add; once the line is added, the next apply provisions it.
func TestAccGPUInstance_importWithoutKey(t *testing.T) {
	requireProvisioningTools(t)
	t.Parallel()
	s := newTestSandbox(t)
	cloudName := stateAttr(forgottenMachine(t, func(dir string) string { return s.providerConfigIn(dir, "") }, "keyless"), "id")

	two := newCLIDirReattach(t, "")
	two.write(s.provisionedConfigIn(two.dir, slimPlaybooks(t, markerRoles...)) + testAccGPUInstanceConfig_basic("keyless", "l4", ""))
	out := two.mustRun("import", "hydra_gpu_instance.test", cloudName)
	line := regexp.MustCompile(`refuses\s+hydra's\s+provisioning\s+key;[^:]*authorized_keys\s+of\s+(\S+)\s+there:\s+(ssh-ed25519\s+\S+\s+hydra-provisioning)`).FindStringSubmatch(out)
	if !strings.Contains(out, "Import successful") || line == nil {
		t.Fatalf("the import must succeed and warn with the line to add:\n%s", out)
	}
	if st := stateAttr(two.mustRun("state", "show", "hydra_gpu_instance.test"), "status"); st != "running" {
		t.Fatalf("a machine whose marker could not be read imports as running, got %q", st)
	}
	// What the user does on the machine (through the cloud's console): the line goes into the user's
	// ~/.ssh/authorized_keys (under the simulated machine's root directory).
	home := "/home/" + line[1]
	if line[1] == "root" {
		home = "/root"
	}
	sshDir := filepath.Join(s.machineDir(), "root", home, ".ssh")
	if err := os.MkdirAll(sshDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sshDir, "authorized_keys"), []byte(strings.Join(strings.Fields(line[2]), " ")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	two.mustRun("apply", "-auto-approve")
	if st := stateAttr(two.mustRun("state", "show", "hydra_gpu_instance.test"), "status"); st != "ready" {
		t.Fatalf("with hydra's key added the apply must provision the imported machine, got %q", st)
	}
	two.mustRun("destroy", "-auto-approve")
	if n := len(s.live()); n != 0 || s.created() != 1 {
		t.Fatalf("%d machines left, %d created", n, s.created())
	}
}

// forgottenMachine applies, in a working directory of its own, the provider block providerIn gives for
// that directory and one l4 hydra_gpu_instance "test" named name; the directory then forgets the
// machine (state rm), leaving it for another to import. It returns the machine's `state show`.
func forgottenMachine(t *testing.T, providerIn func(dir string) string, name string) string {
	t.Helper()
	one := newCLIDirReattach(t, "")
	one.write(providerIn(one.dir) + testAccGPUInstanceConfig_basic(name, "l4", ""))
	one.mustRun("apply", "-auto-approve")
	show := one.mustRun("state", "show", "hydra_gpu_instance.test")
	one.mustRun("state", "rm", "hydra_gpu_instance.test")
	return show
}

// stateAttr reads one string attribute from `terraform state show` output.
func stateAttr(show, name string) string {
	for _, line := range strings.Split(show, "\n") {
		f := strings.SplitN(strings.TrimSpace(line), "=", 2)
		if len(f) == 2 && strings.TrimSpace(f[0]) == name {
			return strings.Trim(strings.TrimSpace(f[1]), `"`)
		}
	}
	return ""
}

// With the real CLI: importing a machine by its name, or by the pool's prefix and its name, fails naming
// the whole cloud-side name to import; that name imports.
func TestAccGPUInstance_importWithoutToken(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t)
	cloudName := stateAttr(forgottenMachine(t, func(dir string) string { return s.providerConfigIn(dir, "") }, "notoken"), "id")

	two := newCLIDirReattach(t, "")
	two.write(s.providerConfigIn(two.dir, "") + testAccGPUInstanceConfig_basic("notoken", "l4", ""))
	for _, id := range []string{"sbx-vm-notoken", "notoken"} {
		out, err := two.run("import", "hydra_gpu_instance.test", id)
		if err == nil || !errorPattern(id+`" has no "--<token>" suffix`, "Machines whose names start with it", cloudName, "terraform import <resource address> "+cloudName).MatchString(out) {
			t.Fatalf("importing %q must fail naming %s (err %v):\n%s", id, cloudName, err, out)
		}
		if strings.Contains(out, "Cannot import non-existent remote object") {
			t.Fatalf("importing %q still says only that the object does not exist:\n%s", id, out)
		}
	}
	if out := two.mustRun("import", "hydra_gpu_instance.test", cloudName); !strings.Contains(out, "Import successful") {
		t.Fatalf("import of %s:\n%s", cloudName, out)
	}
	two.destroyAll(s)
}
