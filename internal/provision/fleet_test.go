package provision

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox/simhost"
	"github.com/hydragpu/terraform-provider-hydra/internal/testsupport"
)

// fleetMachine is one machine of a fleet test: its own sshd, served by the fleet's shared Runner.
type fleetMachine struct {
	f   fixture
	rec *logRecorder
	res cloudprovider.ProvisionResult
	err error
	// gpu and count are what its offer promised (default: one L4).
	gpu   string
	count int
	// playbook is its pool's playbook (default: the kind's, bare-vm.yml).
	playbook string
}

// cancelPlaybook is the cancellation tests' pool playbook: the start of bare-vm.yml up to the GPU probe
// they cancel at, then the marker of a machine that reached the end; bare-vm.yml's other roles
// (TestFleetOneMachineFails runs them all) prove nothing about cancelling.
var cancelPlaybook = markedPlaybook("Provision a machine as far as the cancellation tests need", "cancel-test.yml", "gpu_check")

// cancelFleet is newFleet of n L4 VMs provisioned in one run by cancelPlaybook.
func cancelFleet(t *testing.T, n int, cfg Config) (*Runner, []*fleetMachine) {
	t.Helper()
	cfg.BatchMax, cfg.BatchWindow = n, 10*time.Minute
	cfg.Playbooks = testsupport.PlaybooksWith(t, map[string]string{"cancel-test.yml": cancelPlaybook})
	r, ms := newFleet(t, l4VMs(n), cfg)
	for _, m := range ms {
		m.playbook = "cancel-test.yml"
	}
	return r, ms
}

// newFleet starts a machine per spec, all trusting the same provisioning key, and one Runner (cfg) for
// them all.
func newFleet(t *testing.T, specs []simhost.Spec, cfg Config) (*Runner, []*fleetMachine) {
	t.Helper()
	first := newFixture(t, specs[0], cfg)
	ms := []*fleetMachine{{f: first, rec: &logRecorder{}}}
	pub := first.runner.PublicKey()
	for _, spec := range specs[1:] {
		spec.AuthorizedKeys = append(spec.AuthorizedKeys, pub)
		ep := startMachine(t, spec)
		ms = append(ms, &fleetMachine{f: fixture{runner: first.runner, ep: ep, tmpBase: first.tmpBase}, rec: &logRecorder{}})
	}
	return first.runner, ms
}

// l4VMs is the spec of n sandbox VMs with one L4 each.
func l4VMs(n int) []simhost.Spec {
	specs := make([]simhost.Spec, n)
	for i := range specs {
		specs[i] = simhost.Spec{GPUModel: simhost.NVIDIAName("l4"), GPUCount: 1}
	}
	return specs
}

// orphanTaskStarts lists the tasks the log says started but that never ended (no result, no skip):
// tasks of other machines told to this one. Retries end with the task's final result.
func orphanTaskStarts(log string) []string {
	var open string
	var orphans []string
	for _, line := range strings.Split(log, "\n") {
		i := strings.Index(line, "task:")
		if i < 0 {
			continue
		}
		task := strings.TrimSuffix(line[i+len("task:"):], "]")
		switch {
		case strings.Contains(line, " task started "):
			if open != "" {
				orphans = append(orphans, open)
			}
			open = task
		case strings.Contains(line, " task ok "), strings.Contains(line, " task skipped "),
			strings.Contains(line, " task failed "), strings.Contains(line, " task failed (ignored) "),
			strings.Contains(line, " host unreachable "):
			if task == open {
				open = ""
			}
		}
	}
	if open != "" {
		orphans = append(orphans, open)
	}
	return orphans
}

// request is the machine's provisioning request, named after its index so every machine differs.
func (m *fleetMachine) request(i int, ctx context.Context) cloudprovider.ProvisionRequest {
	gpu, count := "l4", 1
	if m.gpu != "" {
		gpu, count = m.gpu, m.count
	}
	req := m.f.request(inventory.KindVM, gpu, count, m.f.ep.HostKey, nil, m.rec)
	if m.playbook != "" {
		req.Pool.Playbook = m.playbook
	}
	req.Instance.Name = fmt.Sprintf("fleet-%d", i)
	req.Instance.ID = fmt.Sprintf("i-%d", i)
	return req
}

// provisionAll provisions every machine at once (as Terraform does with -parallelism) with its context.
func provisionAll(ms []*fleetMachine, ctxs []context.Context) {
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.res, m.err = m.f.runner.Provision(ctxs[i], m.request(i, ctxs[i]))
		}()
	}
	wg.Wait()
}

// badGPUs is a machine broken in every way the early GPU check judges, all seen in one run: too few
// GPUs, the wrong model, one fallen off the bus, a hardware Xid, rows to remap (pending, failed). The
// L40S remaps rows: its ECC counters are not judged (NVIDIA's memory-error guide; GPUs without row
// remapping: the simhost package's TestHealthVerdictsOnRecordings). want is what the failure must say.
var badGPUs = struct {
	spec   simhost.Spec
	gpu    string
	count  int
	faults map[string]string
	want   []string
}{
	spec: simhost.Spec{GPUModel: "NVIDIA L40S", GPUCount: 4, UncorrectableECC: 3}, gpu: "l4", count: 4,
	faults: map[string]string{
		simhost.FaultGPULost: "0", simhost.FaultECCAggregate: "1 5", simhost.FaultXid: "2 48",
		simhost.FaultRemappedRows: "1 pending\n2 failure",
	},
	want: []string{
		"unhealthy (gpu_lost, gpu_count, gpu_model, remapped_rows, xid)",
		"gpu_lost: GPU 00000000:18:00.0 fell off the bus (nvidia-smi: GPU is lost)",
		"gpu_count: expected 4 GPU(s) of type l4 as the offer promised, but nvidia-smi lists 3: 3x NVIDIA L40S",
		"gpu_model: expected every GPU to be a l4 (name matching /\\bL4\\b/), but nvidia-smi reports 3x NVIDIA L40S",
		"remapped_rows: GPU 1 (00000000:28:00.0): a row remapping is pending, the GPU needs a reset",
		"remapped_rows: GPU 2 (00000000:38:00.0): a row remapping failed, the GPU needs repair",
		"xid: Xid 48 on 0000:38:00 since boot (An uncorrectable double bit error",
		"xid: Xid 79 on 0000:18:00 since boot (GPU has fallen off the bus)",
	},
}

// TestFleetOneMachineFails: three machines provisioned by one ansible-playbook run (the batch is full
// at three, so it starts without waiting on a clock): two VMs, and a container with eight H100s (whose
// playbook includes other task files: exporters as processes, no units). One VM is broken in every way
// the early GPU check judges (badGPUs), and was provisioned before with another digest. The broken
// machine alone fails, at its own task and with its own retryable error naming each fault, before
// anything past the check, and its stale marker is gone; the other two reach ready with their own
// provisioning markers; each machine's log holds only its own tasks (every task it was told started
// has its own result); nothing of the run is left behind. The container is then checked as a container
// (checkContainerMachine).
func TestFleetOneMachineFails(t *testing.T) {
	t.Parallel()
	specs := l4VMs(3)
	const bad = 1
	specs[bad] = badGPUs.spec
	specs[2] = simhost.Spec{GPUModel: simhost.NVIDIAName("h100"), GPUCount: 8, Container: true}
	r, ms := newFleet(t, specs, Config{BatchMax: 3, BatchWindow: 10 * time.Minute})
	ms[bad].gpu, ms[bad].count = badGPUs.gpu, badGPUs.count
	ms[2].gpu, ms[2].count = "h100", 8
	started := time.Now()
	for name, content := range badGPUs.faults {
		if err := simhost.SetFault(ms[bad].f.ep.Dir, name, content); err != nil {
			t.Fatal(err)
		}
	}
	// The machine was provisioned before, with other playbooks or variables.
	writeMarker(t, ms[bad].f.ep, `{"digest": "sha256:0000000000000000", "playbook": "bare-vm.yml", "provisioned_at": "2026-01-02T03:04:05Z"}`)
	ctxs := []context.Context{context.Background(), context.Background(), context.Background()}
	provisionAll(ms, ctxs)
	for i, m := range ms {
		if orphans := orphanTaskStarts(m.rec.String()); len(orphans) > 0 {
			t.Errorf("machine %d was told of tasks it did not run: %q\nlog:\n%s", i, orphans, m.rec)
		}
	}
	// The VMs run the exporters' systemd task, the container skips it: it runs them as processes.
	const unitTask = "monitoring : Write hydra's dcgm-exporter unit]"
	if log := ms[2].rec.String(); !regexp.MustCompile(`task ok map\[changed:\w+ role:monitoring task:monitoring : Run the exporters as processes\]`).MatchString(log) ||
		regexp.MustCompile(`task ok map\[changed:\w+ role:monitoring task:`+regexp.QuoteMeta(unitTask)).MatchString(log) {
		t.Errorf("the container's log is not a container's (it must run the exporters as processes, and not the units' task):\n%s", log)
	}
	if log := ms[0].rec.String(); !strings.Contains(log, "task ok map[changed:true role:monitoring task:"+unitTask) {
		t.Errorf("the VM's log does not show its exporter unit installed:\n%s", log)
	}
	for i, m := range ms {
		if !strings.Contains(m.rec.String(), "running playbook map[batch:3 playbook:bare-vm.yml]") {
			t.Errorf("machine %d was not provisioned by the one run of three:\n%s", i, m.rec)
		}
		if i == bad {
			continue
		}
		if m.err != nil || m.res.FailedTask != "" || m.res.Message != "" {
			t.Errorf("machine %d failed with the other: %v %+v\nlog:\n%s", i, m.err, m.res, m.rec)
			continue
		}
		// The machine's own health summary names every check ("gpu_lost ok"); what must not reach it is
		// the other machine's failure: a failed task, or the lost GPU's words.
		if log := m.rec.String(); strings.Contains(log, "task failed") || strings.Contains(log, "fell off the bus") {
			t.Errorf("machine %d was told of the other's failure:\n%s", i, m.rec)
		} else if !strings.Contains(log, "gpu_lost ok") {
			t.Errorf("machine %d did not log its own health verdict:\n%s", i, m.rec)
		}
		req := m.request(i, context.Background())
		marker, _, err := r.ReadMarker(context.Background(), *req.Instance.SSH, m.f.ep.HostKey)
		if err != nil {
			t.Errorf("machine %d has no marker: %v", i, err)
		} else if want, _ := r.Digest(req.Pool, nil); marker.Digest != want {
			t.Errorf("machine %d marker %+v, want digest %s", i, marker, want)
		}
	}
	m := ms[bad]
	var te *TaskError
	if !errors.As(m.err, &te) {
		t.Fatalf("the broken machine: want a *TaskError, got %v\nlog:\n%s", m.err, m.rec)
	}
	t.Logf("error of the broken machine: %v", m.err)
	var perm *cloudprovider.PermanentError
	if errors.As(m.err, &perm) {
		t.Errorf("a failed task must stay retryable: %v", m.err)
	}
	if te.Instance != "fleet-1" || te.Host != "fleet-1" || te.Task != "gpu_check : Check the promised GPUs" || m.res.FailedTask != te.Task {
		t.Errorf("failure: instance %q host %q task %q, result task %q", te.Instance, te.Host, te.Task, m.res.FailedTask)
	}
	for _, want := range badGPUs.want {
		if !strings.Contains(m.res.Message, want) || !strings.Contains(m.err.Error(), want) {
			t.Errorf("message %q / error %q lacks %q", m.res.Message, m.err, want)
		}
	}
	if len(m.res.Message) > summaryLimit {
		t.Errorf("summary is %d bytes", len(m.res.Message))
	}
	if strings.Contains(m.rec.String(), "Install the customer") {
		t.Errorf("the run went on after the failed health check:\n%s", m.rec)
	}
	req := m.request(bad, context.Background())
	if _, _, err := r.ReadMarker(context.Background(), *req.Instance.SSH, m.f.ep.HostKey); !errors.Is(err, ErrNoMarker) {
		t.Errorf("the broken machine has a marker (a failed run with another digest must remove it): %v", err)
	}
	checkContainerMachine(t, ms[2], started)
	if left := processesMentioning(ms[0].f.tmpBase); len(left) > 0 {
		t.Errorf("processes left behind:\n%s", strings.Join(left, "\n"))
	}
	assertEmptyDir(t, ms[0].f.tmpBase)
}

// TestFleetCancelOneMachine: two machines in one run; cancelling one (its create timed out, say) while
// its GPUs are probed ends that machine alone, at once, as cancelled; the other goes on to ready.
func TestFleetCancelOneMachine(t *testing.T) {
	t.Parallel()
	r, ms := cancelFleet(t, 2, Config{})
	ctx0, cancel0 := context.WithCancel(context.Background())
	defer cancel0()
	var once sync.Once
	var after []string // tasks the cancelled machine was told of after its cancellation
	ms[0].rec.hook = func(msg string, fields map[string]any) {
		task, _ := fields["task"].(string)
		if ctx0.Err() != nil && msg == "task started" {
			after = append(after, task)
		}
		if msg == "task started" && strings.HasSuffix(task, "gpu_check : Probe the GPUs") {
			once.Do(cancel0)
		}
	}
	provisionAll(ms, []context.Context{ctx0, context.Background()})
	if !errors.Is(ms[0].err, context.Canceled) || !strings.Contains(ms[0].err.Error(), "cancelled") {
		t.Fatalf("the cancelled machine: want a cancellation, got %v\nlog:\n%s", ms[0].err, ms[0].rec)
	}
	t.Logf("error of the cancelled machine: %v", ms[0].err)
	if ms[1].err != nil {
		t.Fatalf("the other machine failed: %v\nlog:\n%s", ms[1].err, ms[1].rec)
	}
	if !strings.Contains(ms[1].rec.String(), "running playbook map[batch:2 playbook:cancel-test.yml]") {
		t.Errorf("the machines did not share a run:\n%s", ms[1].rec)
	}
	for i, m := range ms {
		req := m.request(i, context.Background())
		_, _, err := r.ReadMarker(context.Background(), *req.Instance.SSH, m.f.ep.HostKey)
		if i == 0 && !errors.Is(err, ErrNoMarker) {
			t.Errorf("the cancelled machine was provisioned to the end: %v", err)
		}
		if i == 1 && err != nil {
			t.Errorf("the other machine has no marker: %v", err)
		}
	}
	if len(after) > 0 {
		t.Errorf("the cancelled machine went on with %q:\n%s", after, ms[0].rec)
	}
	if left := processesMentioning(ms[0].f.tmpBase); len(left) > 0 {
		t.Errorf("processes left behind:\n%s", strings.Join(left, "\n"))
	}
	assertEmptyDir(t, ms[0].f.tmpBase)
}

// TestFleetCancelAll: Ctrl-C cancels every machine of a run: the whole run stops (its process group
// interrupted, then killed) and every machine says it was cancelled; nothing of the run is left: not
// ansible-playbook nor the ssh masters seen in the run's directory (named after this process) while
// it was going, nor the directory.
func TestFleetCancelAll(t *testing.T) {
	t.Parallel()
	_, ms := cancelFleet(t, 2, Config{CancelGrace: 5 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	var during []string
	ms[1].rec.hook = func(msg string, fields map[string]any) {
		if task, _ := fields["task"].(string); msg == "task started" && strings.HasSuffix(task, "gpu_check : Probe the GPUs") {
			once.Do(func() {
				during = processesMentioning(ms[0].f.tmpBase)
				cancel()
			})
		}
	}
	provisionAll(ms, []context.Context{ctx, ctx})
	for i, m := range ms {
		if !errors.Is(m.err, context.Canceled) || !strings.Contains(m.err.Error(), "cancelled") {
			t.Errorf("machine %d: want a cancellation, got %v\nlog:\n%s", i, m.err, m.rec)
		}
	}
	t.Logf("processes of the run while it was going:\n%s", strings.Join(during, "\n"))
	runDir := fmt.Sprintf("%s/hydra-%d-", ms[0].f.tmpBase, os.Getpid())
	var sawAnsible, sawMaster bool
	for _, p := range during {
		sawAnsible = sawAnsible || strings.Contains(p, "ansible-playbook") && strings.Contains(p, runDir)
		sawMaster = sawMaster || strings.HasPrefix(p, "ssh: "+runDir) && strings.Contains(p, "[mux]")
	}
	if !sawAnsible || !sawMaster {
		t.Errorf("did not see both ansible-playbook and an ssh master of %s* while the run was going (the check below would prove less)", runDir)
	}
	if left := processesMentioning(ms[0].f.tmpBase); len(left) > 0 {
		t.Errorf("processes left behind:\n%s", strings.Join(left, "\n"))
	}
	assertEmptyDir(t, ms[0].f.tmpBase)
}
