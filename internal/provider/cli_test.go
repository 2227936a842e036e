package provider

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// cliDir is a Terraform working directory driven with the real CLI, for tests that need what the
// testing framework cannot do: signals, kills, several working directories, -replace.
type cliDir struct {
	t   *testing.T
	dir string
	env []string
	tf  string
}

// terraformBlock names hydra's source address.
const terraformBlock = `
terraform {
  required_providers {
    hydra = { source = "hydragpu/hydra" }
  }
}
`

// cliTest starts a parallel test driven through the real Terraform CLI: a fresh sandbox, and a
// working directory made by newDir (newCLIDirReattach or newCLIDirBinary).
func cliTest(t *testing.T, newDir func(*testing.T, string) *cliDir) (*testSandbox, *cliDir) {
	t.Helper()
	t.Parallel()
	return newTestSandbox(t), newDir(t, "")
}

// newCLIDirReattach makes a working directory whose Terraform talks to a provider served inside the
// test binary (TF_REATTACH_PROVIDERS), so the provider outlives Terraform's commands.
func newCLIDirReattach(t *testing.T, config string) *cliDir {
	t.Helper()
	return newCLIDir(t, config, "TF_REATTACH_PROVIDERS="+serveForReattach(t), "TF_CLI_CONFIG_FILE=/dev/null")
}

var (
	providerBinOnce sync.Once
	providerBinDir  string
	providerBinErr  error
)

// newCLIDirBinary makes a working directory whose Terraform starts the real provider binary as its
// child process (a dev_overrides CLI configuration), as in production: killing Terraform orphans it.
func newCLIDirBinary(t *testing.T, config string) *cliDir {
	t.Helper()
	providerBinary(t)
	rc := filepath.Join(t.TempDir(), "dev.tfrc")
	tfrc := fmt.Sprintf("provider_installation {\n  dev_overrides {\n    \"hydragpu/hydra\" = %q\n  }\n  direct {}\n}\n", providerBinDir)
	if err := os.WriteFile(rc, []byte(tfrc), 0o644); err != nil {
		t.Fatal(err)
	}
	return newCLIDir(t, config, "TF_CLI_CONFIG_FILE="+rc)
}

// providerBinary builds the provider binary once per test process and returns its directory.
func providerBinary(t *testing.T) string {
	t.Helper()
	providerBinOnce.Do(func() {
		// Built once and shared by every test of the process: a t.TempDir would go with the first test.
		providerBinDir, providerBinErr = os.MkdirTemp("", "hydra-provider-bin-") //nolint:usetesting // see above
		if providerBinErr != nil {
			return
		}
		root, _ := filepath.Abs("../..")
		// -trimpath as make test's own builds: the checkout's path stays out of the build cache's keys,
		// so a fresh clone reuses what an earlier run compiled instead of compiling the module again.
		cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(providerBinDir, "terraform-provider-hydra"), ".")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			providerBinErr = fmt.Errorf("building the provider: %v\n%s", err, out)
		}
	})
	if providerBinErr != nil {
		t.Fatal(providerBinErr)
	}
	return providerBinDir
}

// mirrorVersion is the version the test mirror offers the provider binary as.
const mirrorVersion = "0.0.1"

// newCLIDirMirror makes a working directory whose `terraform init` installs the real provider binary
// from a local filesystem mirror, as a CI runner installs it from the registry: init works offline
// (dev_overrides cannot init, hashicorp/terraform#27459), so backends, lock files and saved plans work
// as in production, and Terraform runs the provider as its child process. The mirror lays it out under
// the registry host of the CLI in use (registryHost), as make install does under both.
func newCLIDirMirror(t *testing.T, config string) *cliDir {
	t.Helper()
	bin := filepath.Join(providerBinary(t), "terraform-provider-hydra")
	mirror := filepath.Join(providerBinDir, "mirror")
	pkg := filepath.Join(mirror, registryHost(), "hydragpu", "hydra", mirrorVersion, runtime.GOOS+"_"+runtime.GOARCH)
	exe := filepath.Join(pkg, "terraform-provider-hydra_v"+mirrorVersion)
	mirrorOnce.Do(func() {
		if mirrorErr = os.MkdirAll(pkg, 0o755); mirrorErr == nil {
			mirrorErr = os.Link(bin, exe)
		}
	})
	if mirrorErr != nil {
		t.Fatal(mirrorErr)
	}
	rc := filepath.Join(t.TempDir(), "mirror.tfrc")
	tfrc := fmt.Sprintf("provider_installation {\n  filesystem_mirror {\n    path    = %q\n    include = [\"hydragpu/hydra\"]\n  }\n  direct {\n    exclude = [\"hydragpu/hydra\"]\n  }\n}\n", mirror)
	if err := os.WriteFile(rc, []byte(tfrc), 0o644); err != nil {
		t.Fatal(err)
	}
	return newCLIDir(t, config, "TF_CLI_CONFIG_FILE="+rc)
}

var (
	mirrorOnce sync.Once
	mirrorErr  error
)

func newCLIDir(t *testing.T, config string, env ...string) *cliDir {
	t.Helper()
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: set TF_ACC=1 (make test does)")
	}
	testAccPreCheck(t)
	d := &cliDir{t: t, dir: t.TempDir(), tf: os.Getenv("TF_ACC_TERRAFORM_PATH")}
	d.env = append(os.Environ(), "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1")
	d.env = append(d.env, env...)
	d.write(config)
	return d
}

// write replaces the configuration.
func (d *cliDir) write(config string) {
	d.t.Helper()
	if err := os.WriteFile(filepath.Join(d.dir, "main.tf"), []byte(terraformBlock+config), 0o644); err != nil {
		d.t.Fatal(err)
	}
}

// writeInstance writes the configuration: the sandbox's provider block with this directory's own
// quotes and journal, and one hydra_gpu_instance "test".
func (d *cliDir) writeInstance(s *testSandbox, name, gpuType, extra string) {
	d.t.Helper()
	d.write(s.providerConfigIn(d.dir, "") + testAccGPUInstanceConfig_basic(name, gpuType, extra))
}

// writeFile writes another file of the working directory (a backend block, a saved plan).
func (d *cliDir) writeFile(name, content string) {
	d.t.Helper()
	if err := os.WriteFile(filepath.Join(d.dir, name), []byte(content), 0o644); err != nil {
		d.t.Fatal(err)
	}
}

// run runs a Terraform command to its end.
func (d *cliDir) run(args ...string) (string, error) {
	cmd := exec.Command(d.tf, append(args, "-no-color")...)
	cmd.Dir, cmd.Env = d.dir, d.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// mustRun runs a Terraform command that must succeed.
func (d *cliDir) mustRun(args ...string) string {
	d.t.Helper()
	out, err := d.run(args...)
	if err != nil {
		d.t.Fatalf("terraform %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// start starts a Terraform command in the background; its output collects in out.
func (d *cliDir) start(out *strings.Builder, args ...string) *exec.Cmd {
	d.t.Helper()
	cmd := exec.Command(d.tf, append(args, "-no-color")...)
	cmd.Dir, cmd.Env = d.dir, d.env
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	return cmd
}

// providerChild returns the pid of the provider process Terraform (pid) started, waiting for it.
func providerChild(t *testing.T, pid int) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		procs, _ := filepath.Glob("/proc/[0-9]*/stat")
		for _, p := range procs {
			data, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			s := string(data)
			lp, rp := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
			if lp < 0 || rp < 0 || !strings.HasPrefix(s[lp+1:rp], "terraform-provi") {
				continue
			}
			fields := strings.Fields(s[rp+2:])
			if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
				child, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Dir(p), "/proc/"), "/"))
				return child
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("terraform (pid %d) started no provider process", pid)
	return 0
}

// destroyAll destroys everything the directory's state holds and checks that the sandbox is empty.
func (d *cliDir) destroyAll(s *testSandbox) {
	d.t.Helper()
	d.mustRun("destroy", "-auto-approve")
	if err := s.checkDestroyed(nil); err != nil {
		d.t.Fatal(err)
	}
}
