package provider

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/clouds"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox"
)

// testAccProtoV6ProviderFactories serves the provider inside the test binary; the real Terraform CLI
// (TF_ACC_TERRAFORM_PATH) reattaches to it, so nothing is downloaded. Its cloud clients are not paced
// (a cloud's documented rate limit, Lambda's 1 request a second, would only slow the local emulators
// down); the provider binaries the tests build keep every cloud's pacing.
var testAccProtoV6ProviderFactories = map[string]func() (tfprotov6.ProviderServer, error){
	"hydra": providerserver.NewProtocol6WithError(&hydraProvider{version: "test", emulators: clouds.NewEmulators(),
		tuning: restclient.Tuning{RequestsPerSecond: 1000, Burst: 1000}}),
}

func TestMain(m *testing.M) {
	flag.Parse()
	defaultParallel(acceptanceParallel)
	cliGarbageCollection()
	if err := useTestCLI(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// resource.TestMain would only add the sweepers' -sweep (hydra registers none) and exit at once;
	// the provider binary the tests built (providerBinary) must go with the process instead.
	code := m.Run()
	if providerBinDir != "" {
		_ = os.RemoveAll(providerBinDir)
	}
	os.Exit(code)
}

// cliGOGC is the GOGC the Terraform CLI (and every other Go program the tests start) and this test
// binary (the provider the CLI reattaches to) run with. A test run starts Terraform about 1,900 times,
// each a Go process of a fraction of a second that at the default GOGC (100) spends about a quarter of
// its CPU collecting garbage it would free by exiting; the heaps are tens to hundreds of MB, so 400
// costs memory the machine has. Measured with cg.sh: 30 `terraform version` 1.2 -> 0.9 CPU-s; ten
// acceptance tests 20.6/20.2 -> 16.9/18.7 CPU-s (the CLI), then 21.0/22.0 -> 20.0/20.8 (this binary).
const cliGOGC = 400

// cliGarbageCollection sets GOGC for this process and the processes the tests start, unless the
// caller set GOGC.
func cliGarbageCollection() {
	if _, set := os.LookupEnv("GOGC"); !set {
		_ = os.Setenv("GOGC", strconv.Itoa(cliGOGC))
		debug.SetGCPercent(cliGOGC)
	}
}

// acceptanceParallel is how many tests run at once when -parallel is not given. An acceptance test
// spends most of its time waiting (Terraform starting, machines booting, SSH, a drain running out its
// timeout), not computing, so on a machine of few cores more tests than cores finish sooner; make test
// asks for the same.
const acceptanceParallel = 4

// defaultParallel raises -parallel to n when the command line does not set it.
func defaultParallel(n int) {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if p := flag.Lookup("test.parallel"); !set && p != nil {
		if cur, err := strconv.Atoi(p.Value.String()); err == nil && cur < n {
			_ = flag.Set("test.parallel", strconv.Itoa(n))
		}
	}
}

// accTest runs steps as one acceptance test, in parallel with the others, through the real Terraform
// CLI against the provider served in this binary. checkDestroy (when not nil) checks, after the final
// destroy, that nothing is left at the cloud.
func accTest(t *testing.T, checkDestroy resource.TestCheckFunc, steps []resource.TestStep) {
	t.Helper()
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkDestroy,
		Steps:                    steps,
	})
}

// preApply runs checks on the plan before it is applied.
func preApply(checks ...plancheck.PlanCheck) resource.ConfigPlanChecks {
	return resource.ConfigPlanChecks{PreApply: checks}
}

// known is the check for an exact value: a string, a float64, an int64 or a bool, or any check.
func known(want any) knownvalue.Check {
	switch w := want.(type) {
	case string:
		return knownvalue.StringExact(w)
	case float64:
		return knownvalue.Float64Exact(w)
	case int64:
		return knownvalue.Int64Exact(w)
	case bool:
		return knownvalue.Bool(w)
	case knownvalue.Check:
		return w
	}
	panic(fmt.Sprintf("known: unexpected %T", want))
}

// planKnown checks that the plan shows the test resource's attr as a known value.
func planKnown(attr string, want any) plancheck.PlanCheck {
	return plancheck.ExpectKnownValue(resourceName, tfjsonpath.New(attr), known(want))
}

// planUnknown checks that the plan leaves the test resource's attr to apply.
func planUnknown(attr string) plancheck.PlanCheck {
	return plancheck.ExpectUnknownValue(resourceName, tfjsonpath.New(attr))
}

// like checks a string against a regular expression.
func like(pattern string) knownvalue.Check {
	return knownvalue.StringRegexp(regexp.MustCompile(pattern))
}

// stateKnown checks the test resource's attr in the state.
func stateKnown(attr string, want any) statecheck.StateCheck {
	return statecheck.ExpectKnownValue(resourceName, tfjsonpath.New(attr), known(want))
}

// testAccPreCheck fails fast when the Terraform CLI is not where TF_ACC_TERRAFORM_PATH says.
func testAccPreCheck(t *testing.T) {
	t.Helper()
	p := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if p == "" {
		t.Fatal("TF_ACC_TERRAFORM_PATH must name the Terraform CLI (the Makefile sets it), so that no Terraform is downloaded")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("TF_ACC_TERRAFORM_PATH: %v", err)
	}
}

// testSandbox is one test's private sandbox cloud and quote file.
type testSandbox struct {
	t   *testing.T
	dir string
	sb  *sandbox.Backend
}

func newTestSandbox(t *testing.T) *testSandbox {
	t.Helper()
	dir := t.TempDir()
	inv, err := inventory.Default()
	if err != nil {
		t.Fatal(err)
	}
	sb, err := sandbox.New(sandbox.Config{Dir: filepath.Join(dir, "sandbox")}, inv, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A failed test may leave simulated machines (real sshd processes) behind: stop them all.
	t.Cleanup(func() {
		machines, _ := filepath.Glob(filepath.Join(sb.Dir(), "machines", "*"))
		for _, m := range machines {
			if err := (sandbox.SSHMachines{}).Stop(m); err != nil {
				t.Logf("stopping %s: %v", m, err)
			}
		}
	})
	return &testSandbox{t: t, dir: dir, sb: sb}
}

// providerBlock is the provider block for this sandbox: plan quotes and the journal in quoteDir, the
// provisioning block's body, and extra arguments.
func (s *testSandbox) providerBlock(quoteDir, provisioning, extra string) string {
	return fmt.Sprintf(`
provider "hydra" {
  plan_quote_dir = %[1]q
  sandbox {
    dir       = %[2]q
    boot_time = "1s"
  }
  provisioning {
%[3]s
  }
%[4]s
}
`, quoteDir, s.sb.Dir(), provisioning, extra)
}

// provisioningOff is the provisioning block's body that switches it off.
const provisioningOff = "    enabled = false"

// providerConfig is the provider block for this sandbox, provisioning off; extra goes inside it.
func (s *testSandbox) providerConfig(extra string) string {
	return s.providerBlock(filepath.Join(s.dir, "quotes"), provisioningOff, extra)
}

// providerConfigIn is the sandbox's provider block with its own local working directory (quotes and
// the journal of creates in flight), as a second Terraform working directory on the same cloud has.
func (s *testSandbox) providerConfigIn(work, extra string) string {
	return s.providerBlock(filepath.Join(work, "hydra"), provisioningOff, "  orphan_grace = \"1s\"\n"+extra)
}

// provisioningOn is the provisioning block's body with provisioning on, from playbookDir ("" = embedded).
func provisioningOn(playbookDir string) string {
	body := "    retry_delay = \"1s\""
	if playbookDir != "" {
		body += fmt.Sprintf("\n    playbook_dir = %q", playbookDir)
	}
	return body
}

// provisionedConfig is the provider block with provisioning on, from playbookDir ("" = embedded).
func (s *testSandbox) provisionedConfig(playbookDir string) string {
	return s.providerBlock(filepath.Join(s.dir, "quotes"), provisioningOn(playbookDir), "")
}

// provisionedConfigIn is provisionedConfig with the working directory's own plan quotes and journal.
func (s *testSandbox) provisionedConfigIn(work, playbookDir string) string {
	return s.providerBlock(filepath.Join(work, "hydra"), provisioningOn(playbookDir), "")
}

// instanceConfig is this sandbox's provider block and one hydra_gpu_instance "test".
func (s *testSandbox) instanceConfig(name, gpuType, extra string) string {
	return s.providerConfig("") + testAccGPUInstanceConfig_basic(name, gpuType, extra)
}

// setPrice changes the price of one catalog entry (region/instance type, on-demand).
func (s *testSandbox) setPrice(region, instanceType string, price float64) {
	s.t.Helper()
	c, err := s.sb.Catalog()
	if err != nil {
		s.t.Fatal(err)
	}
	found := false
	for i := range c {
		if c[i].Region == region && c[i].InstanceType == instanceType && !c[i].Spot {
			c[i].PricePerHour = price
			found = true
		}
	}
	if !found {
		s.t.Fatalf("no catalog entry %s/%s", region, instanceType)
	}
	if err := s.sb.SetCatalog(c); err != nil {
		s.t.Fatal(err)
	}
}

func (s *testSandbox) setFaults(f sandbox.Faults) {
	s.t.Helper()
	if err := s.sb.SetAllFaults(f); err != nil {
		s.t.Fatal(err)
	}
}

func (s *testSandbox) live() []sandbox.Record {
	s.t.Helper()
	l, err := s.sb.Live()
	if err != nil {
		s.t.Fatal(err)
	}
	return l
}

func (s *testSandbox) created() int {
	s.t.Helper()
	n, err := s.sb.CreatedCount()
	if err != nil {
		s.t.Fatal(err)
	}
	return n
}

// noneCreated checks that nothing was ever created at the sandbox cloud (by: what would have).
func (s *testSandbox) noneCreated(t *testing.T, by string) {
	t.Helper()
	if n := s.created(); n != 0 {
		t.Errorf("%s created %d machines at the cloud", by, n)
	}
}

// checkLive asserts how many machines are alive at the sandbox cloud.
func (s *testSandbox) checkLive(want int) resource.TestCheckFunc {
	return func(*terraform.State) error {
		if got := len(s.live()); got != want {
			return fmt.Errorf("sandbox has %d live instances, want %d: %+v", got, want, s.live())
		}
		return nil
	}
}

// checkCreated asserts how many machines were ever created at the sandbox cloud.
func (s *testSandbox) checkCreated(want int) resource.TestCheckFunc {
	return func(*terraform.State) error {
		if got := s.created(); got != want {
			return fmt.Errorf("sandbox created %d instances in all, want %d", got, want)
		}
		return nil
	}
}

// replacedReady is the step after a failed create: with the sandbox's faults cleared, the tainted
// machine is replaced (not repaired, not left beside another) by one that is ready; two were created
// in all.
func (s *testSandbox) replacedReady(config string) resource.TestStep {
	return resource.TestStep{
		PreConfig:         func() { s.setFaults(sandbox.Faults{}) },
		Config:            config,
		ConfigPlanChecks:  preApply(plancheck.ExpectResourceAction(resourceName, plancheck.ResourceActionDestroyBeforeCreate)),
		ConfigStateChecks: []statecheck.StateCheck{stateKnown("status", "ready")},
		Check:             resource.ComposeTestCheckFunc(s.checkLive(1), s.checkCreated(2)),
	}
}

// checkDestroyed asserts that nothing is left running at the cloud after the test.
func (s *testSandbox) checkDestroyed(*terraform.State) error {
	if l := s.live(); len(l) != 0 {
		return fmt.Errorf("%d instances still alive at the sandbox after destroy: %+v", len(l), l)
	}
	return nil
}

// beforeApply runs fn between the saved plan and its apply: a PreApply plan check is the one hook the
// testing framework offers there, which is exactly "the plan was saved, then the world changed".
type beforeApply func()

func (f beforeApply) CheckPlan(_ context.Context, _ plancheck.CheckPlanRequest, _ *plancheck.CheckPlanResponse) {
	f()
}

// worldCheck runs a check of the clouds (how many machines were created, are alive) as a plan check,
// for a step that applies nothing; the check gets no state.
type worldCheck resource.TestCheckFunc

func (f worldCheck) CheckPlan(_ context.Context, _ plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	if err := f(nil); err != nil {
		resp.Error = err
	}
}

// refreshedOnly is a step that only plans config after pre (a fault, a notice, a price change), as
// every step after an apply does: the plans without and with a refresh must be empty, and checks run
// on the refreshing plan, whose values of a resource it leaves alone are the ones the refresh read. It
// proves what an apply of that empty plan and checks on its state would, without the apply.
func refreshedOnly(pre func(), config string, checks ...plancheck.PlanCheck) resource.TestStep {
	return resource.TestStep{
		PreConfig: pre, Config: config, PlanOnly: true,
		ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: checks},
	}
}

// errorPattern matches Terraform's error output, which wraps lines anywhere: each part is matched
// literally with any run of white space between words, and the parts in order with anything between.
func errorPattern(parts ...string) *regexp.Regexp {
	quoted := make([]string, len(parts))
	for i, p := range parts {
		words := strings.Fields(p)
		for j, w := range words {
			words[j] = regexp.QuoteMeta(w)
		}
		quoted[i] = strings.Join(words, `\s+`)
	}
	return regexp.MustCompile(`(?s)` + strings.Join(quoted, ".*"))
}

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
		// Built by `go run`, which keeps the linked executable in the build cache and hands it to cp:
		// linked once per source for this package's runs under Terraform and OpenTofu and for make
		// docs-check (tools/docs-check.sh), not by each; without DWARF (panics still print their stacks).
		cmd := exec.Command("go", "run", "-trimpath", "-exec", "cp", ".", filepath.Join(providerBinDir, "terraform-provider-hydra"))
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
