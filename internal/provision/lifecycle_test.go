package provision

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/osproc"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox/simhost"
	"github.com/hydragpu/terraform-provider-hydra/internal/testsupport"
)

// TestHelperProcess is no test: the tests below run the test binary through it as a child process,
// either sleeping (with paths in its command line, as an ssh master of a run would have) or as a
// provider running one provisioning run (to be killed hard).
func TestHelperProcess(t *testing.T) {
	switch os.Getenv("HYDRA_TEST_HELPER") {
	case "sleep":
		time.Sleep(5 * time.Minute)
		os.Exit(0)
	case "provider":
		helperProvider(t)
		os.Exit(0)
	}
}

// helperSpec is what the provider helper process runs.
type helperSpec struct {
	Key        []byte
	TempDir    string
	Endpoint   cloudprovider.SSHEndpoint
	HostKey    string
	NoGuardian bool
}

// helperProvider provisions with cancelPlaybook: the run is killed at its GPU probe.
func helperProvider(t *testing.T) {
	var spec helperSpec
	if err := json.Unmarshal([]byte(os.Getenv("HYDRA_TEST_PROVIDER")), &spec); err != nil {
		fmt.Println("ERROR", err)
		return
	}
	guardianEnabled = !spec.NoGuardian
	r, err := New(Config{PrivateKey: spec.Key, TempDir: spec.TempDir, SSHPollInterval: 200 * time.Millisecond, SSHWaitTimeout: 30 * time.Second,
		Playbooks: testsupport.PlaybooksWith(t, map[string]string{"cancel-test.yml": cancelPlaybook})})
	if err != nil {
		fmt.Println("ERROR", err)
		return
	}
	ep := spec.Endpoint
	_, err = r.Provision(context.Background(), cloudprovider.ProvisionRequest{
		Instance: cloudprovider.Instance{ID: "i-1", Name: "sandbox-vm-test", Cloud: "sandbox", Status: cloudprovider.StatusRunning, SSH: &ep},
		Pool:     inventory.Pool{Name: "sandbox-vm-pool", Cloud: "sandbox", Kind: inventory.KindVM, Playbook: "cancel-test.yml"},
		GPUType:  "h100", GPUCount: 1, HostKey: spec.HostKey, Attempt: 1,
		Log: func(msg string, fields map[string]any) {
			task, _ := fields["task"].(string)
			fmt.Printf("%s\t%s\n", msg, task)
		},
	})
	fmt.Println("DONE", err)
}

// startSleeper starts a helper process that sleeps with args in its command line; done closes when it
// has exited.
func startSleeper(t *testing.T, args ...string) (done <-chan struct{}) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestHelperProcess$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), "HYDRA_TEST_HELPER=sleep")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ch := make(chan struct{})
	go func() { _ = cmd.Wait(); close(ch) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-ch
	})
	return ch
}

func exited(done <-chan struct{}, within time.Duration) bool {
	select {
	case <-done:
		return true
	case <-time.After(within):
		return false
	}
}

// deadPID returns the pid of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func makeRunDir(t *testing.T, dir, owner string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "cp"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{ownerFile: owner, "id": "-----BEGIN OPENSSH PRIVATE KEY-----\nsecret\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func TestSweepStale(t *testing.T) {
	base := shortTemp(t)
	dead := deadPID(t)
	self := os.Getpid()

	stale := filepath.Join(base, fmt.Sprintf("hydra-%d-123", dead))
	makeRunDir(t, stale, fmt.Sprintf("%d 12345\n", dead))
	// Its ssh master and an ansible worker, as a hard kill leaves them.
	masterDone := startSleeper(t, "ssh: "+filepath.Join(stale, "cp", "0123abcd")+" [mux]")
	workerDone := startSleeper(t, "-i", filepath.Join(stale, "inventory.json"), "-e", "@"+filepath.Join(stale, "vars.json"))
	// A process naming a longer name that merely starts the same is not the run's.
	similarDone := startSleeper(t, stale+"x/file")

	// The pid of its owner is alive, but as another process (reused): stale.
	reused := filepath.Join(base, fmt.Sprintf("hydra-%d-789", self))
	makeRunDir(t, reused, fmt.Sprintf("%d 1\n", self))
	// A run of this very process: untouched, and so are its processes.
	live := filepath.Join(base, fmt.Sprintf("hydra-%d-456", self))
	makeRunDir(t, live, fmt.Sprintf("%d %s\n", self, processStart(self)))
	liveDone := startSleeper(t, "-o", "ControlPath="+filepath.Join(live, "cp", "x"))
	// A run directory that is gone, with a process of it still running.
	gone := filepath.Join(base, fmt.Sprintf("hydra-%d-999", dead))
	orphanDone := startSleeper(t, "-o", "ControlPath="+filepath.Join(gone, "cp", "x"))
	// Not a run directory.
	other := filepath.Join(base, "hydra-notes")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}

	var logs bytes.Buffer
	logger := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Debug})
	if n := SweepStale(logger, base); n != 2 {
		t.Errorf("SweepStale removed %d run directories, want 2\n%s", n, logs.String())
	}
	t.Logf("log:\n%s", logs.String())
	for name, done := range map[string]<-chan struct{}{"ssh master of the stale run": masterDone, "worker of the stale run": workerDone, "process of the gone run": orphanDone} {
		if !exited(done, 5*time.Second) {
			t.Errorf("the %s still runs", name)
		}
	}
	for name, done := range map[string]<-chan struct{}{"process of a live run": liveDone, "process of another path": similarDone} {
		if exited(done, 100*time.Millisecond) {
			t.Errorf("the %s was killed", name)
		}
	}
	for _, d := range []string{stale, reused} {
		if exists(d) {
			t.Errorf("stale run directory %s left", d)
		}
	}
	for _, d := range []string{live, other} {
		if !exists(d) {
			t.Errorf("%s was removed", d)
		}
	}
	if n := SweepStale(logger, base); n != 0 {
		t.Errorf("a second sweep removed %d", n)
	}
}

func TestRunDirNames(t *testing.T) {
	got := runDirsNamed([]string{"-i /tmp/hydra-12-34/id -o /tmp/hydra-5-6", "/tmp/hydra-7-8x", "/var/hydra-9-10/x"}, "/tmp")
	if strings.Join(got, " ") != "/tmp/hydra-12-34 /tmp/hydra-5-6" {
		t.Errorf("runDirsNamed: %q", got)
	}
}

// procPGID returns the process group of pid, or 0.
func procPGID(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 {
		return 0
	}
	pg, _ := strconv.Atoi(f[2])
	return pg
}

// ansibleLeaders returns the pids of ansible-playbook processes leading their group, among the live
// processes whose command line mentions s.
func ansibleLeaders(s string) []int {
	var out []int
	for _, p := range osproc.List() {
		if p.PID == procPGID(p.PID) && osproc.NamesDir(p.Args, s) && strings.Contains(strings.Join(p.Args, " "), "ansible-playbook") {
			out = append(out, p.PID)
		}
	}
	return out
}

// TestHardKillLeavesNothingBehind kills a provider process (SIGKILL) in the middle of a run. The
// run's guardian removes everything at once; without a guardian (the whole process tree killed),
// ansible-playbook still dies with the provider (Linux), and SweepStale finds the rest.
func TestHardKillLeavesNothingBehind(t *testing.T) {
	for _, tc := range []struct {
		name       string
		noGuardian bool
	}{{"guardian", false}, {"sweep", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, simhost.Spec{GPUModel: simhost.NVIDIAName("h100"), GPUCount: 1}, Config{})
			spec, _ := json.Marshal(helperSpec{
				Key: f.runner.cfg.PrivateKey, TempDir: f.tmpBase, HostKey: f.ep.HostKey, NoGuardian: tc.noGuardian,
				Endpoint: cloudprovider.SSHEndpoint{Host: f.ep.Host, Port: f.ep.Port, User: f.ep.User},
			})
			helper := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
			helper.Env = append(os.Environ(), "HYDRA_TEST_HELPER=provider", "HYDRA_TEST_PROVIDER="+string(spec))
			out, err := helper.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := helper.Start(); err != nil {
				t.Fatal(err)
			}
			var transcript []string
			var during []string
			var leaders []int
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				line := sc.Text()
				transcript = append(transcript, line)
				if strings.HasPrefix(line, "task started\t") && strings.HasSuffix(line, "gpu_check : Probe the GPUs") {
					during = processesMentioning(f.tmpBase)
					leaders = ansibleLeaders(f.tmpBase)
					_ = helper.Process.Kill()
					break
				}
			}
			_ = helper.Wait()
			if len(during) == 0 || len(leaders) != 1 {
				t.Fatalf("the provider was not killed mid-run (processes %q, ansible leaders %v):\n%s", during, leaders, strings.Join(transcript, "\n"))
			}
			t.Logf("processes of the run when the provider was killed:\n%s", strings.Join(during, "\n"))
			entries, _ := os.ReadDir(f.tmpBase)
			if len(entries) != 1 || !strings.HasPrefix(entries[0].Name(), fmt.Sprintf("hydra-%d-", helper.Process.Pid)) {
				if !tc.noGuardian && len(entries) == 0 {
					// The guardian was quick.
				} else {
					t.Fatalf("run directory not named after its provider: %v", entries)
				}
			}

			if tc.noGuardian {
				if runtime.GOOS == "linux" {
					deadline := time.Now().Add(5 * time.Second)
					for osproc.Alive(leaders[0]) && time.Now().Before(deadline) {
						time.Sleep(20 * time.Millisecond)
					}
					if osproc.Alive(leaders[0]) {
						t.Errorf("ansible-playbook (%d) outlived its provider", leaders[0])
					}
				}
				left := processesMentioning(f.tmpBase)
				t.Logf("left after the kill, before the sweep:\n%s", strings.Join(left, "\n"))
				if len(entries) != 1 {
					t.Fatalf("want the run directory left for the sweep, have %v", entries)
				}
				if n := SweepStale(hclog.NewNullLogger(), f.tmpBase); n != 1 {
					t.Errorf("SweepStale removed %d run directories, want 1", n)
				}
			}
			deadline := time.Now().Add(15 * time.Second)
			for {
				left := processesMentioning(f.tmpBase)
				entries, _ := os.ReadDir(f.tmpBase)
				if len(left) == 0 && len(entries) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("left behind after the hard kill: processes\n%s\nfiles %v", strings.Join(left, "\n"), entries)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}
