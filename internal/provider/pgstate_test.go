//go:build unix

package provider

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/osproc"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox"
)

// This file is the harness for pipelines that keep nothing on the runner but the remote state: a real
// PostgreSQL server per test for Terraform's `pg` backend, and working directories that share only that
// state (each one is a fresh CI runner: its own .terraform/, the same .tf files).
//
// API for other tests:
//
//	pg := startPostgres(t)              // a private server, stopped in t.Cleanup; skips without PostgreSQL
//	pg.ConnStr()                        // the lib/pq connection string (unix socket, no TCP port)
//	pg.Backend("schema")                // a terraform { backend "pg" {...} } block using that schema
//	pg.SQL("select ...")                // runs SQL with psql, returns its unaligned output
//	d := newRunner(t, s, pg, "schema", config) // a real-binary cliDir with main.tf, backend.tf, `terraform init` done
//	d.writeFile(name, text)             // any other file of the working directory

// pgState is a PostgreSQL server private to one test. It listens only on a unix socket in its own
// directory (no TCP port, so parallel tests never collide) and trusts local connections.
type pgState struct {
	t    *testing.T
	bin  string // directory of initdb, pg_ctl and psql
	root string // socket directory; data/ and log inside
	cred *syscall.Credential
}

// postgresBinDir finds PostgreSQL's server binaries: Debian's /usr/lib/postgresql/<major>/bin (the
// newest major), else initdb on PATH.
func postgresBinDir() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(dirs[i]))))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(dirs[j]))))
		return vi > vj
	})
	if len(dirs) > 0 {
		return filepath.Dir(dirs[0])
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p)
	}
	return ""
}

// startPostgres initialises and starts a PostgreSQL server for this test and stops it (and removes its
// files) in t.Cleanup. It skips the test only when PostgreSQL is not installed. PostgreSQL refuses to
// run as root, so under root the server runs as the `postgres` user Debian's package creates (or
// `nobody`).
func startPostgres(t *testing.T) *pgState {
	t.Helper()
	bin := postgresBinDir()
	if bin == "" {
		t.Skip("PostgreSQL is not installed (Debian: apt-get install postgresql; tools/install-deps.sh does it)")
	}
	// Not t.TempDir: the server's user must reach it, and a unix socket path must stay short.
	root, err := os.MkdirTemp("", "hydra-pg-") //nolint:usetesting // see above
	if err != nil {
		t.Fatal(err)
	}
	p := &pgState{t: t, bin: bin, root: root}
	if os.Geteuid() == 0 {
		name := "postgres"
		u, err := user.Lookup(name)
		if err != nil {
			name = "nobody"
			if u, err = user.Lookup(name); err != nil {
				t.Fatalf("running as root and neither a postgres nor a nobody user exists to run PostgreSQL: %v", err)
			}
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(root, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })

	start := time.Now()
	p.pg("initdb", "-D", p.data(), "-U", "hydra", "--auth=trust", "-N", "-E", "UTF8", "--locale=C")
	// No TCP listener; the socket in root; no fsync, small buffers: a test server, many at once.
	p.pg("pg_ctl", "-D", p.data(), "-l", filepath.Join(root, "log"), "-w", "-t", "60", "start",
		"-o", fmt.Sprintf("-c listen_addresses= -k %s -F -c shared_buffers=16MB -c max_connections=30", root))
	t.Cleanup(func() {
		if out, err := p.cmd("pg_ctl", "-D", p.data(), "-m", "immediate", "-w", "stop").CombinedOutput(); err != nil {
			t.Logf("stopping PostgreSQL: %v\n%s", err, out)
		}
	})
	t.Logf("PostgreSQL (%s) ready in %s", bin, time.Since(start).Round(time.Millisecond))
	return p
}

func (p *pgState) data() string { return filepath.Join(p.root, "data") }

// cmd is one of PostgreSQL's programs, run as the server's user in its directory.
func (p *pgState) cmd(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(p.bin, name), args...)
	cmd.Dir = p.root
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if p.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	}
	return cmd
}

// pg runs one of PostgreSQL's programs, which must succeed.
func (p *pgState) pg(name string, args ...string) string {
	p.t.Helper()
	out, err := p.cmd(name, args...).CombinedOutput()
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(p.root, "log"))
		p.t.Fatalf("%s %s: %v\n%s\nserver log:\n%s", name, strings.Join(args, " "), err, out, log)
	}
	return string(out)
}

// ConnStr is the connection string Terraform's pg backend (lib/pq) takes: the superuser hydra, the
// database postgres, over the unix socket.
func (p *pgState) ConnStr() string {
	return fmt.Sprintf("postgres://hydra@/postgres?host=%s&sslmode=disable", p.root)
}

// Backend is a terraform block that keeps state in this server, in its own schema (Terraform creates
// the schema and its table on init).
func (p *pgState) Backend(schema string) string {
	return fmt.Sprintf(`terraform {
  backend "pg" {
    conn_str    = %q
    schema_name = %q
  }
}
`, p.ConnStr(), schema)
}

// SQL runs statements with psql and returns the rows, unaligned and without headers.
func (p *pgState) SQL(query string) string {
	p.t.Helper()
	return strings.TrimSpace(p.pg("psql", "-h", p.root, "-U", "hydra", "-d", "postgres", "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", query))
}

// newRunner is a fresh CI runner: a new working directory with only the .tf files (config in main.tf,
// the pg backend in backend.tf) and `terraform init` done, running the real provider binary as
// Terraform's child process. Runners built with the same schema share state and nothing else.
func newRunner(t *testing.T, pg *pgState, schema, config string) *cliDir {
	t.Helper()
	d := newCLIDirMirror(t, config)
	d.writeFile("backend.tf", pg.Backend(schema))
	d.mustRun("init", "-input=false")
	return d
}

// startPipeline is what every pipeline test starts from: a private PostgreSQL server for the state, a
// sandbox, and a configuration of n machines in it.
func startPipeline(t *testing.T, n int) (*pgState, *testSandbox, string) {
	t.Helper()
	pg := startPostgres(t)
	s := newTestSandbox(t)
	return pg, s, pipelineConfig(s, n)
}

// pipelineConfig is the configuration every runner of a pipeline test has: count L4 machines on the
// test's sandbox cloud, booting in a second, not provisioned, everything else at its default (plan
// quotes and the journal under .terraform/, as on a real runner).
func pipelineConfig(s *testSandbox, count int) string {
	return fmt.Sprintf(`
provider "hydra" {
  sandbox {
    dir       = %q
    boot_time = "1s"
  }
  provisioning {
    enabled = false
  }
}

resource "hydra_gpu_instance" "worker" {
  count    = %d
  name     = "pipe-${count.index}"
  gpu_type = "l4"
}
`, s.sb.Dir(), count)
}

// checkMachines fails the test unless the sandbox cloud has exactly live machines running and created
// machines created in all.
func (s *testSandbox) checkMachines(step string, live, created int) {
	s.t.Helper()
	if l, c := len(s.live()), s.created(); l != live || c != created {
		s.t.Fatalf("%s: the sandbox has %d live machines, %d created in all; want %d and %d: %+v", step, l, c, live, created, s.live())
	}
}

// TestAccPipeline_savedPlanOtherRunner plans on one runner, throws it away, and applies the saved plan
// file alone on another runner that shares only the pg state; a third runner sees no changes and
// destroys.
func TestAccPipeline_savedPlanOtherRunner(t *testing.T) {
	t.Parallel()
	pg, s, cfg := startPipeline(t, 2)

	planner := newRunner(t, pg, "saved_plan", cfg)
	start := time.Now()
	out := planner.mustRun("plan", "-input=false", "-out=job.tfplan")
	if !strings.Contains(out, "2 to add, 0 to change, 0 to destroy") {
		t.Fatalf("the plan must add two machines:\n%s", out)
	}
	t.Logf("plan on runner 1: %s", time.Since(start).Round(time.Millisecond))
	s.checkMachines("after plan", 0, 0)
	plan, err := os.ReadFile(filepath.Join(planner.dir, "job.tfplan"))
	if err != nil {
		t.Fatal(err)
	}
	// Runner 1 is thrown away with its .terraform/ (plan quotes, journal); only the plan file travels.
	if err := os.RemoveAll(planner.dir); err != nil {
		t.Fatal(err)
	}

	applier := newRunner(t, pg, "saved_plan", cfg)
	applier.writeFile("job.tfplan", string(plan))
	start = time.Now()
	out = applier.mustRun("apply", "-input=false", "job.tfplan")
	t.Logf("apply of the saved plan on runner 2: %s", time.Since(start).Round(time.Millisecond))
	if !strings.Contains(out, "Apply complete! Resources: 2 added, 0 changed, 0 destroyed.") {
		t.Fatalf("the saved plan must apply on the other runner:\n%s", out)
	}
	s.checkMachines("after the saved plan's apply", 2, 2)
	if _, err := os.Stat(filepath.Join(applier.dir, "terraform.tfstate")); err == nil {
		t.Fatal("the apply wrote a local terraform.tfstate: the pg backend was not used")
	}
	if n := pg.SQL(`select count(*) from saved_plan.states where name = 'default'`); n != "1" {
		t.Fatalf("the pg backend holds %s default states, want 1", n)
	}

	// Runner 3: nothing to do; then it destroys everything.
	checker := newRunner(t, pg, "saved_plan", cfg)
	if out := checker.mustRun("plan", "-input=false", "-detailed-exitcode"); !strings.Contains(out, "No changes") {
		t.Fatalf("a third runner must see no changes:\n%s", out)
	}
	out = checker.mustRun("destroy", "-input=false", "-auto-approve")
	if !strings.Contains(out, "Resources: 2 destroyed") {
		t.Fatalf("destroy on runner 3:\n%s", out)
	}
	s.checkMachines("after destroy", 0, 2)
}

// TestAccPipeline_concurrentAppliesLocked runs applies of one configuration on two runners at once: the
// pg backend's state lock serialises them. While the first holds the lock (its machines boot), an
// apply that will not wait fails with Terraform's lock error and one that waits (-lock-timeout) runs
// after it and finds nothing to do: machines created are exactly what the configuration asks for.
func TestAccPipeline_concurrentAppliesLocked(t *testing.T) {
	t.Parallel()
	pg, s, cfg := startPipeline(t, 2)
	first := newRunner(t, pg, "locked", cfg)
	second := newRunner(t, pg, "locked", cfg)

	// The first apply's machines boot for 12 s: it holds the lock at least that long once they exist.
	s.setFaults(sandbox.Faults{BootTime: "12s"})
	var firstOut strings.Builder
	firstApply := first.start(&firstOut, "apply", "-input=false", "-auto-approve")
	firstDone := make(chan error, 1)
	go func() { firstDone <- firstApply.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for len(s.live()) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the first apply created no machines:\n%s", firstOut.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.setFaults(sandbox.Faults{})

	// An apply that does not wait for the lock fails at once, naming the lock, and creates nothing.
	out, err := second.run("apply", "-input=false", "-auto-approve", "-lock-timeout=0s")
	select {
	case err := <-firstDone:
		t.Fatalf("the first apply ended (%v) before the second tried the lock; the test proves nothing:\n%s", err, firstOut.String())
	default:
	}
	if err == nil || !errorPattern("Error acquiring the state lock").MatchString(out) {
		t.Fatalf("an apply while another holds the lock must fail with the lock error (err %v):\n%s", err, out)
	}
	t.Logf("the apply that would not wait for the lock printed:\n%s", out)
	s.checkMachines("after the refused apply", 2, 2)

	// One that waits runs after the first and has nothing to do.
	var waitOut strings.Builder
	waiting := second.start(&waitOut, "apply", "-input=false", "-auto-approve", "-lock-timeout=5m")
	if err := <-firstDone; err != nil {
		t.Fatalf("the first apply failed: %v\n%s", err, firstOut.String())
	}
	if err := waiting.Wait(); err != nil {
		t.Fatalf("the waiting apply failed: %v\n%s", err, waitOut.String())
	}
	if !strings.Contains(firstOut.String(), "Resources: 2 added") {
		t.Fatalf("the first apply must create both machines:\n%s", firstOut.String())
	}
	if !strings.Contains(waitOut.String(), "No changes") && !strings.Contains(waitOut.String(), "Resources: 0 added, 0 changed, 0 destroyed") {
		t.Fatalf("the apply that waited for the lock must find nothing to do:\n%s", waitOut.String())
	}
	s.checkMachines("after both applies", 2, 2)

	second.mustRun("destroy", "-input=false", "-auto-approve")
	s.checkMachines("after destroy", 0, 2)
}

// TestAccPipeline_savedPlanPriceDropOtherRunner applies a saved plan on a fresh runner after the planned
// offer got cheaper: the plan showed $0.49/h, the cloud now asks $0.45/h. Only what travels in the plan
// file can keep the apply-time plan on the planned offer: hydra's quote, in the plan's private data.
func TestAccPipeline_savedPlanPriceDropOtherRunner(t *testing.T) {
	t.Parallel()
	pg, s, cfg := startPipeline(t, 1)
	planner := newRunner(t, pg, "price_drop", cfg)
	if out := planner.mustRun("plan", "-input=false", "-out=job.tfplan"); !strings.Contains(out, "ondemand@0.49") {
		t.Fatalf("the plan must choose sbx-eu-1 at $0.49/h:\n%s", out)
	}
	plan, err := os.ReadFile(filepath.Join(planner.dir, "job.tfplan"))
	if err != nil {
		t.Fatal(err)
	}
	s.setPrice("sbx-eu-1", "sbx.l4.1x", 0.45)

	applier := newRunner(t, pg, "price_drop", cfg)
	applier.writeFile("job.tfplan", string(plan))
	out, err := applier.run("apply", "-input=false", "job.tfplan")
	t.Logf("apply of the saved plan on the fresh runner (err %v):\n%s", err, out)
	if err != nil {
		t.Errorf("the saved plan must apply on the fresh runner as planned: %v", err)
	}
	live := s.live()
	if len(live) != 1 || live[0].Region != "sbx-eu-1" || live[0].InstanceType != "sbx.l4.1x" {
		t.Errorf("the cloud has %+v; want the planned sbx-eu-1 sbx.l4.1x", live)
	}
	applier.mustRun("destroy", "-input=false", "-auto-approve")
	s.checkMachines("after destroy", 0, len(live))
}

// TestAccPipeline_guideExample initialises the CI guide's example (examples/guides/ci-saved-plans) as a
// runner does, with the pg backend's connection string in PG_CONN_STR, and validates it: the backend
// block the guide shows works as written.
func TestAccPipeline_guideExample(t *testing.T) {
	t.Parallel()
	pg := startPostgres(t)
	example, err := os.ReadFile("../../examples/guides/ci-saved-plans/main.tf")
	if err != nil {
		t.Fatal(err)
	}
	d := newCLIDirMirror(t, "")
	d.writeFile("main.tf", string(example))
	d.env = append(d.env, "PG_CONN_STR="+pg.ConnStr())
	d.mustRun("init", "-input=false")
	d.mustRun("validate")
	if n := pg.SQL(`select count(*) from information_schema.tables where table_schema = 'hydra_training' and table_name = 'states'`); n != "1" {
		t.Fatalf("terraform init did not create the guide's schema (tables: %s)", n)
	}
}

// killApplyDuringCreate runs `terraform apply` of a one-machine configuration on runner and kills it
// (SIGKILL, as a CI timeout does) once the machine exists at the cloud, while it boots; it returns the
// machine, billed and in no state.
func killApplyDuringCreate(t *testing.T, s *testSandbox, runner *cliDir) sandbox.Record {
	t.Helper()
	tf, prov, out := killedCreate(t, s, runner, "pipe-0")
	machine := s.live()[0]
	if err := osproc.SignalProcess(tf.Process.Pid, osproc.Kill); err != nil {
		t.Fatal(err)
	}
	_ = tf.Wait() // killed; its output is then whole
	for start := time.Now(); osproc.Alive(prov); time.Sleep(20 * time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("the provider (%d) still runs 10 s after terraform was killed", prov)
		}
	}
	t.Logf("the killed apply printed:\n%s", out.String())
	s.checkMachines("after the kill", 1, 1)
	return machine
}

// TestAccPipeline_killedApplyThenDestroyElsewhere kills an apply during a create and runs `terraform
// destroy` on a fresh runner (only the .tf files and the pg state): the destroy must remove the machine
// (it is provably this configuration's own) or exit non-zero naming it; never "Destroy complete" with it
// running.
func TestAccPipeline_killedApplyThenDestroyElsewhere(t *testing.T) {
	t.Parallel()
	pg, s, cfg := startPipeline(t, 1)
	machine := killApplyDuringCreate(t, s, newRunner(t, pg, "killed_destroy", cfg))

	fresh := newRunner(t, pg, "killed_destroy", cfg)
	out, err := fresh.run("destroy", "-input=false", "-auto-approve")
	t.Logf("destroy on the fresh runner (err %v):\n%s", err, out)
	live := len(s.live())
	switch {
	case live == 0 && err == nil:
		// Removed: it was this configuration's own.
	case live == 1 && err != nil && strings.Contains(out, machine.Name) && !strings.Contains(out, "Destroy complete"):
		// Refused, naming the machine.
		_ = s.sb.Vanish(machine.ID)
	default:
		t.Errorf("destroy exited %v with %d machines left; want the machine removed, or a non-zero exit naming %s", err, live, machine.Name)
		_ = s.sb.Vanish(machine.ID)
	}
}

// TestAccPipeline_killedApplyRecoveredElsewhere kills `terraform apply` (SIGKILL, as a CI timeout does)
// while a machine is being created on one runner, then runs plan, apply and destroy on a fresh runner
// that has only the .tf files and the pg state. The pg backend's lock goes with the killed process's
// connection, so the fresh runner is not blocked by it; what must follow is issue 21's core: the fresh
// runner recognises the interrupted create as this configuration's own, its apply adopts the machine
// (no second machine bought) and its destroy removes it. The proof comes from the cloud: the machine
// carries the ownership token derived from its resource's name, and no state ever confirmed it.
func TestAccPipeline_killedApplyRecoveredElsewhere(t *testing.T) {
	t.Parallel()
	pg, s, cfg := startPipeline(t, 1)
	machine := killApplyDuringCreate(t, s, newRunner(t, pg, "killed", cfg))

	// The fresh runner: only the .tf files and the state.
	fresh := newRunner(t, pg, "killed", cfg)
	out, err := fresh.run("plan", "-input=false")
	t.Logf("plan on the fresh runner (err %v):\n%s", err, out)
	if err != nil || strings.Contains(out, "already in use") || !strings.Contains(out, machine.Name) {
		t.Errorf("the fresh runner's plan must succeed and name %s as this configuration's interrupted create (err %v)", machine.Name, err)
	}
	out, err = fresh.run("apply", "-input=false", "-auto-approve")
	t.Logf("apply on the fresh runner (err %v):\n%s", err, out)
	if err != nil {
		t.Errorf("the fresh runner's apply must adopt %s: %v", machine.Name, err)
	} else {
		live := s.live()
		if len(live) != 1 || live[0].ID != machine.ID || s.created() != 1 {
			t.Errorf("after the fresh runner's apply: %+v live, %d created; want %s adopted", live, s.created(), machine.ID)
		}
	}
	out, err = fresh.run("destroy", "-input=false", "-auto-approve")
	t.Logf("destroy on the fresh runner (err %v):\n%s", err, out)
	if err != nil {
		t.Errorf("the fresh runner's destroy failed: %v", err)
	}
	if n := len(s.live()); n != 0 {
		t.Errorf("%d machines left after the fresh runner's destroy", n)
	}
	if t.Failed() {
		// Leave the cloud clean for the next test run.
		for _, r := range s.live() {
			_ = s.sb.Vanish(r.ID)
		}
	}
}
