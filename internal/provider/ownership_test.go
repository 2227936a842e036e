package provider

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/osproc"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox"
)

func TestAccGPUInstance_sameNameOneConfig(t *testing.T) {
	s := newTestSandbox(t)
	cfg := s.providerConfig("") + instanceResource("a", "twin", "l4", "") + instanceResource("b", "twin", "h100", "")
	accTest(t, nil, []resource.TestStep{{
		Config:      cfg,
		ExpectError: errorPattern("Two GPU instances share one name", `named "twin"`),
		Check:       resource.ComposeTestCheckFunc(s.checkCreated(0)),
	}})
	s.noneCreated(t, "a configuration whose resources share a name")
}

// applyOneInFirstDir applies one L4 machine named name in a first working directory on a fresh sandbox
// and returns the sandbox, the directory and the machine, the only one the cloud then holds.
func applyOneInFirstDir(t *testing.T, name string) (*testSandbox, *cliDir, sandbox.Record) {
	t.Helper()
	s := newTestSandbox(t)
	one := newCLIDirReattach(t, "")
	one.writeInstance(s, name, "l4", "")
	one.mustRun("apply", "-auto-approve")
	live := s.live()
	if len(live) != 1 {
		t.Fatalf("%d machines after the first directory's apply", len(live))
	}
	return s, one, live[0]
}

func TestAccGPUInstance_sameNameTwoWorkingDirs(t *testing.T) {
	t.Parallel()
	s, one, first := applyOneInFirstDir(t, "shared")

	// A second working directory with the same name: refused at plan, naming the machine (the real
	// binary: the provider reads the terraform command that started it, so it knows the plan is no
	// destroy's; see TestAccGPUInstance_unknownCommand for where it cannot).
	two := newCLIDirBinary(t, "")
	two.writeInstance(s, "shared", "l4", "")
	out, err := two.run("plan")
	if err == nil || !errorPattern("GPU instance name already in use", first.Name, first.ID, "terraform import").MatchString(out) {
		t.Fatalf("the second directory's plan must fail naming %s (err %v):\n%s", first.Name, err, out)
	}
	if out, err := two.run("apply", "-auto-approve"); err == nil {
		t.Fatalf("the second directory's apply succeeded:\n%s", out)
	}
	if n := s.created(); n != 1 {
		t.Fatalf("the refused directory created machines: %d in all", n)
	}

	// With another name it gets its own machine; destroying it leaves the first directory's alone.
	two.writeInstance(s, "shared-2", "l4", "")
	two.mustRun("apply", "-auto-approve")
	two.mustRun("destroy", "-auto-approve")
	live := s.live()
	if len(live) != 1 || live[0].ID != first.ID {
		t.Fatalf("after the second directory's destroy the cloud has %+v, want only %s", live, first.ID)
	}
	if plan := one.mustRun("plan", "-detailed-exitcode"); !strings.Contains(plan, "No changes") {
		t.Fatalf("the first directory's machine was disturbed:\n%s", plan)
	}
	one.destroyAll(s)
}

// TestAccGPUInstance_sameNameDestroyWorks: a state whose configuration also uses a name another state
// holds is refused at plan for that create only; its destroy (and refresh) of the machines it holds
// is never blocked by the name check, and leaves the other state's machine alone.
func TestAccGPUInstance_sameNameDestroyWorks(t *testing.T) {
	t.Parallel()
	s, one, first := applyOneInFirstDir(t, "taken")

	// The real binary, as in production: the provider reads the terraform command that started it.
	two := newCLIDirBinary(t, "")
	mineAndClash(s, two)
	if out, err := two.run("plan"); err == nil || !errorPattern("GPU instance name already in use", first.Name).MatchString(out) {
		t.Fatalf("the clashing create must be refused at plan, naming %s (err %v):\n%s", first.Name, err, out)
	}
	two.mustRun("apply", "-refresh-only", "-auto-approve")

	// TF_CLI_ARGS_apply=-destroy makes `terraform apply` a destroy: the guard refuses it while an
	// interrupted create's machine bills outside the state.
	lost := leaveInterruptedCreate(t, s, "lost")
	n := len(two.env)
	two.env = append(two.env, "TF_CLI_ARGS_apply=-destroy")
	out, err := two.run("apply", "-auto-approve")
	two.env = two.env[:n]
	if err == nil || !errorPattern("billed outside this state; destroy would leave them running", lost.Name).MatchString(out) {
		t.Fatalf("apply with TF_CLI_ARGS_apply=-destroy must be refused as a destroy, naming %s (err %v):\n%s", lost.Name, err, out)
	}
	destroyPastClash(t, s, one, two, first, lost)
}

func TestAccGPUInstance_createBeforeDestroyReplace(t *testing.T) {
	s, d := cliTest(t, newCLIDirReattach)
	d.writeInstance(s, "cbd", "l4", `
  lifecycle {
    create_before_destroy = true
  }`)
	d.mustRun("apply", "-auto-approve")
	old := s.live()
	if len(old) != 1 {
		t.Fatalf("%d machines after create", len(old))
	}

	out := d.mustRun("apply", "-auto-approve", "-replace=hydra_gpu_instance.test")
	if !strings.Contains(out, "Creation complete") || !strings.Contains(out, "Destruction complete") {
		t.Fatalf("the replacement did not create then destroy:\n%s", out)
	}
	live := s.live()
	if len(live) != 1 || live[0].ID == old[0].ID || s.created() != 2 {
		t.Fatalf("after the replace the cloud has %+v (%d created); want one new machine", live, s.created())
	}
	show := d.mustRun("state", "show", "hydra_gpu_instance.test")
	if !strings.Contains(show, live[0].ID) || !statusReady.MatchString(show) {
		t.Fatalf("state does not hold the live machine %s:\n%s", live[0].ID, show)
	}

	// A replacement forced by a change works the same way.
	d.writeInstance(s, "cbd", "h100", `
  lifecycle {
    create_before_destroy = true
  }`)
	d.mustRun("apply", "-auto-approve")
	if live := s.live(); len(live) != 1 || s.created() != 3 || live[0].GPUType != "h100" {
		t.Fatalf("after the gpu_type change the cloud has %+v (%d created)", live, s.created())
	}
	d.destroyAll(s)
}

// killedCreate starts an apply of one slowly booting machine through the real provider binary and
// returns once the machine exists at the cloud, with terraform's command, the provider's pid and
// terraform's output (whole once tf.Wait returned).
func killedCreate(t *testing.T, s *testSandbox, d *cliDir, name string) (tf *exec.Cmd, prov int, out *strings.Builder) {
	t.Helper()
	tf, out = d.applyUntilCreated(s, "20s")
	return tf, providerChild(t, tf.Process.Pid), out
}

// killedCreateOf is killedCreate of one L4 machine named name, in a fresh working directory that runs
// the real provider binary.
func killedCreateOf(t *testing.T, name string) (s *testSandbox, d *cliDir, tf *exec.Cmd, prov int, out *strings.Builder) {
	t.Helper()
	s, d = cliTest(t, newCLIDirBinary)
	d.writeInstance(s, name, "l4", "")
	tf, prov, out = killedCreate(t, s, d, name)
	return s, d, tf, prov, out
}

func TestAccGPUInstance_killedApplyThenDestroy(t *testing.T) {
	s, d, tf, prov, _ := killedCreateOf(t, "killed")
	machine := s.live()[0]
	if err := osproc.SignalProcess(tf.Process.Pid, osproc.Kill); err != nil {
		t.Fatal(err)
	}

	// Terraform is gone: the provider notices, cancels what it was doing and exits.
	start := time.Now()
	for osproc.Alive(prov) {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("the provider (pid %d) still runs %s after terraform was killed", prov, time.Since(start))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the provider exited %s after terraform was killed", time.Since(start).Round(time.Millisecond))

	// Nothing holds the machine in state: destroy cannot reach it, so it fails, naming it and what
	// removes it (never "Destroy complete" while it bills).
	out, err := d.run("destroy", "-auto-approve")
	if err == nil || strings.Contains(out, "Destroy complete") ||
		!errorPattern("create(s) in this working directory were cut short", machine.Name, "next `terraform apply`", "adopts the machine").MatchString(out) ||
		!errorPattern("billed outside this state; destroy would leave them running", machine.Name, "terraform import").MatchString(out) {
		t.Fatalf("destroy must fail naming %s (err %v):\n%s", machine.Name, err, out)
	}
	if live := s.live(); len(live) != 1 {
		t.Fatalf("%d machines after destroy, want the orphan still there (destroy acts on state only)", len(live))
	}

	// The next apply adopts it instead of buying another.
	out = d.mustRun("apply", "-auto-approve")
	if live, created := s.live(), s.created(); len(live) != 1 || live[0].ID != machine.ID || created != 1 {
		t.Fatalf("after the next apply: %+v live, %d created; want the orphan adopted\n%s", live, created, out)
	}
	if plan := d.mustRun("plan"); !strings.Contains(plan, "No changes") || strings.Contains(plan, "cut short") {
		t.Fatalf("after adoption the plan must be empty and quiet:\n%s", plan)
	}
	d.destroyAll(s)
}

func TestAccGPUInstance_killedProviderThenApply(t *testing.T) {
	s, d, tf, prov, out := killedCreateOf(t, "provkill")
	machine := s.live()[0]
	if err := osproc.SignalProcess(prov, osproc.Kill); err != nil {
		t.Fatal(err)
	}
	_ = tf.Wait() // it fails; its output is then whole
	if !strings.Contains(out.String(), "Error") {
		t.Fatalf("terraform did not report the dead provider:\n%s", out.String())
	}
	applied := d.mustRun("apply", "-auto-approve")
	if live, created := s.live(), s.created(); len(live) != 1 || live[0].ID != machine.ID || created != 1 {
		t.Fatalf("after the next apply: %+v live, %d created; want the machine adopted\n%s", live, created, applied)
	}
	d.mustRun("destroy", "-auto-approve")
}

func TestAccGPUInstance_providerExitsWithTerraform(t *testing.T) {
	s, d, tf, prov, _ := killedCreateOf(t, "parent")
	if err := osproc.SignalProcess(tf.Process.Pid, osproc.Kill); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for osproc.Alive(prov) && time.Since(start) < 10*time.Second {
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(start)
	t.Logf("provider exit after terraform's death: %s", took.Round(time.Millisecond))
	if osproc.Alive(prov) || took > 2*time.Second {
		t.Fatalf("the provider must exit within 2 s of terraform's death; it took %s (alive: %v)", took, osproc.Alive(prov))
	}
	d.mustRun("apply", "-auto-approve") // adopts
	d.mustRun("destroy", "-auto-approve")
	if n := len(s.live()); n != 0 || s.created() != 1 {
		t.Fatalf("%d machines left, %d created", n, s.created())
	}
}

func TestAccGPUInstance_otherCloudDown(t *testing.T) {
	s := newTestSandbox(t)
	// Verda is configured but unreachable (nothing listens there); the resource only allows the sandbox.
	down := `
  offer_timeout = "1s"
  verda {
    client_id     = "id"
    client_secret = "secret"
    endpoint      = "http://127.0.0.1:9/v1"
  }`
	cfg := s.providerConfig(down) + testAccGPUInstanceConfig_basic("island", "l4", `  clouds = ["sandbox"]`)
	accTest(t, s.checkDestroyed, []resource.TestStep{{
		Config: cfg,
		Check: resource.ComposeTestCheckFunc(s.checkLive(1),
			resource.TestCheckResourceAttr("hydra_gpu_instance.test", "status", "ready"),
			resource.TestCheckResourceAttr("hydra_gpu_instance.test", "cloud", "sandbox")),
	}})
}

func TestAccGPUInstancesDataSource_orphans(t *testing.T) {
	s := newTestSandbox(t)
	// Another run's create that never completed: hydra's record, never confirmed, older than the grace.
	stray := createAtCloud(t, s, "stray", cloudprovider.NewOwnerToken())
	time.Sleep(1100 * time.Millisecond) // older than orphan_grace = "1s"
	cfg := s.providerConfigIn(t.TempDir(), "") + testAccGPUInstanceConfig_basic("kept", "l4", "") + `
data "hydra_gpu_instances" "all" {
  depends_on = [hydra_gpu_instance.test]
}
`
	accTest(t, nil, []resource.TestStep{{
		Config: cfg,
		Check: resource.ComposeTestCheckFunc(
			resource.TestCheckResourceAttr("data.hydra_gpu_instances.all", "instances.#", "2"),
			resource.TestCheckResourceAttr("data.hydra_gpu_instances.all", "orphans.#", "1"),
			resource.TestCheckResourceAttr("data.hydra_gpu_instances.all", "orphans.0", stray.Name),
			resource.TestCheckTypeSetElemNestedAttrs("data.hydra_gpu_instances.all", "instances.*", map[string]string{
				"id": stray.Name, "name": "stray", "ownership": "unconfirmed", "cloud": "sandbox",
			}),
			resource.TestCheckTypeSetElemNestedAttrs("data.hydra_gpu_instances.all", "instances.*", map[string]string{
				"name": "kept", "ownership": "confirmed",
			}),
		),
	}})
	// Every plan names it, with the way out.
	d := newCLIDirReattach(t, "")
	d.writeInstance(s, "planned", "l4", "")
	plan := d.mustRun("plan")
	if !errorPattern("may be billed with no Terraform state holding them", stray.Name, stray.ID, "terraform import").MatchString(plan) {
		t.Fatalf("the plan must warn about %s:\n%s", stray.Name, plan)
	}
	// The orphan is untouched: hydra never deletes a machine no state of its own holds.
	if _, err := s.sb.Get(context.Background(), stray.ID); err != nil {
		t.Fatalf("the orphan was touched: %v", err)
	}
	_ = s.sb.Delete(context.Background(), stray.ID)
}

// leaveInterruptedCreate makes at the sandbox the machine a create of the resource named name leaves
// when Terraform is killed during it: the create's request as Launch sends it (the name's derived
// ownership token), never confirmed by a state.
func leaveInterruptedCreate(t *testing.T, s *testSandbox, name string) cloudprovider.Instance {
	t.Helper()
	return createAtCloud(t, s, name, cloudprovider.OwnerToken(name, 0))
}

// createAtCloud makes at the sandbox, in its vm pool, a machine of the resource named name with the
// ownership token token, never confirmed by a state.
func createAtCloud(t *testing.T, s *testSandbox, name, token string) cloudprovider.Instance {
	t.Helper()
	inv, err := inventory.Default()
	if err != nil {
		t.Fatal(err)
	}
	var pool inventory.Pool
	for _, p := range inv.Pools {
		if p.Cloud == "sandbox" && p.Kind == "vm" {
			pool = p
		}
	}
	offers, err := s.sb.Offers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	offer := offers[0]
	offer.Pool = pool.Name
	owner := cloudprovider.Ownership{Resource: name, Token: token}
	inst, err := s.sb.Create(context.Background(), cloudprovider.CreateRequest{Name: cloudprovider.CloudName(pool, name, owner.Token),
		Pool: pool, Offer: offer, Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// TestAccGPUInstance_unknownCommand: where the provider cannot know the terraform command (served for
// TF_REATTACH_PROVIDERS, as on Windows or a Linux without /proc, where nothing reads it), a name in use
// only warns at plan and the apply refuses the create; a destroy is never blocked by the name check,
// and its destroy plan still refuses while an interrupted create's machine bills outside the state.
func TestAccGPUInstance_unknownCommand(t *testing.T) {
	t.Parallel()
	s, one, first := applyOneInFirstDir(t, "taken")

	two := newCLIDirReattach(t, "")
	mineAndClash(s, two)
	mine := s.live()
	if len(mine) != 2 {
		t.Fatalf("%d machines after the targeted apply, want 2", len(mine))
	}
	plan := two.mustRun("plan")
	if !errorPattern("GPU instance name already in use; apply refuses this create", first.Name, "terraform destroy").MatchString(plan) {
		t.Fatalf("the plan must warn that apply refuses the clashing create, naming %s:\n%s", first.Name, plan)
	}
	out, err := two.run("apply", "-auto-approve")
	if err == nil || !errorPattern("GPU instance name already in use", first.Name).MatchString(out) {
		t.Fatalf("the apply must refuse the clashing create, naming %s (err %v):\n%s", first.Name, err, out)
	}
	if n := s.created(); n != 2 {
		t.Fatalf("the refused create made a machine: %d created in all, want 2", n)
	}

	// A create cut short left a machine: the destroy refuses (nothing destroyed) and names it.
	lost := leaveInterruptedCreate(t, s, "lost")
	out, err = two.run("destroy", "-auto-approve")
	if err == nil || strings.Contains(out, "Destroy complete") ||
		!errorPattern("billed outside this state; destroy would leave them running", lost.Name, "terraform import").MatchString(out) {
		t.Fatalf("destroy must fail naming %s (err %v):\n%s", lost.Name, err, out)
	}
	if n := len(s.live()); n != 3 {
		t.Fatalf("%d machines after the refused destroy, want 3 (nothing destroyed)", n)
	}

	// Once it is gone, the destroy goes ahead despite the name clash, and leaves the other state's machine.
	destroyPastClash(t, s, one, two, first, lost)
}

// destroyPastClash deletes lost (an interrupted create's machine) at the cloud; then two's destroy must
// remove its one machine despite its name clash with first, and leave first, which one then destroys.
func destroyPastClash(t *testing.T, s *testSandbox, one, two *cliDir, first sandbox.Record, lost cloudprovider.Instance) {
	t.Helper()
	deleteAtCloud(t, s, lost.ID)
	out := two.mustRun("destroy", "-auto-approve")
	if !strings.Contains(out, "Resources: 1 destroyed") {
		t.Fatalf("the destroy must remove this state's machine despite the name clash:\n%s", out)
	}
	if live := s.live(); len(live) != 1 || live[0].ID != first.ID {
		t.Fatalf("after the destroy the cloud has %+v, want only the other state's %s", live, first.ID)
	}
	one.destroyAll(s)
}

// deleteAtCloud deletes the sandbox machine id as a person would at the cloud, and waits until the
// cloud reports it terminated.
func deleteAtCloud(t *testing.T, s *testSandbox, id string) {
	t.Helper()
	if err := s.sb.Delete(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if inst, err := s.sb.Get(context.Background(), id); cloudprovider.IsNotFound(err) || err == nil && inst.Status == cloudprovider.StatusTerminated {
			return
		}
	}
	t.Fatalf("the sandbox still lists %s a minute after its deletion", id)
}

// TestAccGPUInstance_terraformTestCleanup: `terraform test` applies and, at its end, destroys in one
// command, so its command line says neither; its cleanup's destroy plan still runs the leftovers guard
// (the real binary, started by Terraform as in production).
func TestAccGPUInstance_terraformTestCleanup(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t)
	d := newCLIDirBinary(t, "")
	d.writeInstance(s, "tested", "l4", "")
	d.writeFile("hydra.tftest.hcl", "run \"up\" {\n  command = apply\n}\n")
	lost := leaveInterruptedCreate(t, s, "lost")
	out, err := d.run("test")
	if err == nil || !errorPattern(`run "up"... pass`, "billed outside this state; destroy would leave them running", lost.Name).MatchString(out) {
		t.Fatalf("terraform test's cleanup must be refused while %s bills outside the state (err %v):\n%s", lost.Name, err, out)
	}
	// The refused cleanup left the test's machine: nothing holds it now but the sandbox.
	for _, r := range s.live() {
		deleteAtCloud(t, s, r.ID)
	}
}

// mineAndClash configures two with a machine of its own, applied, and one named as the other
// directory's ("taken"), not applied.
func mineAndClash(s *testSandbox, two *cliDir) {
	two.write(s.providerConfigIn(two.dir, "") + instanceResource("mine", "mine", "l4", "") + instanceResource("clash", "taken", "l4", ""))
	two.mustRun("apply", "-auto-approve", "-target=hydra_gpu_instance.mine")
}
