package controlplane

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

func TestPollScheduleDefaults(t *testing.T) {
	// What the provider gets: Options{} (PollInterval 1s, PollMax 15s).
	s := New(testInventory(t), nil, Options{}).pollSchedule()
	want := []time.Duration{time.Second, 1500 * time.Millisecond, 1500 * time.Millisecond, 1500 * time.Millisecond}
	for n, w := range want {
		if got := s.Next(n, 0); got != w {
			t.Errorf("Next(%d, 0) = %v, want %v", n, got, w)
		}
	}
	// However long the machine boots, the cloud is read again within 1.5 s (the old schedule grew to 15 s).
	for _, n := range []int{10, 100, 10_000, 1 << 30} {
		if got := s.Next(n, 0); got != BootPollMax {
			t.Errorf("Next(%d, 0) = %v, want BootPollMax %v", n, got, BootPollMax)
		}
	}
	// A failing cloud is read less and less often, up to PollMax; one answer brings the pace back.
	for failures, w := range []time.Duration{3 * time.Second, 6 * time.Second, 12 * time.Second, 15 * time.Second, 15 * time.Second} {
		if got := s.Next(7, failures+1); got != w {
			t.Errorf("Next(7, %d) = %v, want %v", failures+1, got, w)
		}
	}
	if got := s.Next(8, 0); got != BootPollMax {
		t.Errorf("after a failure, Next(8, 0) = %v, want %v", got, BootPollMax)
	}
}

// The interval runs from the start of one read to the start of the next; a slow read still leaves
// half an interval, and a failure the whole backoff.
func TestPollSchedulePause(t *testing.T) {
	s := NewPollSchedule(0, 0)
	for _, tt := range []struct {
		polls, failures int
		took, want      time.Duration
	}{
		{5, 0, 0, 1500 * time.Millisecond},
		{5, 0, 200 * time.Millisecond, 1300 * time.Millisecond},
		{5, 0, 700 * time.Millisecond, 800 * time.Millisecond},
		{5, 0, 750 * time.Millisecond, 750 * time.Millisecond},
		{5, 0, 10 * time.Second, 750 * time.Millisecond}, // a client waited out a 429
		{0, 0, 100 * time.Millisecond, 900 * time.Millisecond},
		{5, 1, 10 * time.Second, 3 * time.Second},
		{5, 3, 0, 12 * time.Second},
	} {
		if got := s.Pause(tt.polls, tt.failures, tt.took); got != tt.want {
			t.Errorf("Pause(%d, %d, %v) = %v, want %v", tt.polls, tt.failures, tt.took, got, tt.want)
		}
	}
}

func TestPollScheduleOptions(t *testing.T) {
	tests := []struct {
		name                      string
		first, max                time.Duration
		wantFirst, wantCap, wantF time.Duration
	}{
		{"zero values take the defaults", 0, 0, time.Second, BootPollMax, 3 * time.Second},
		{"a long first pause is capped while booting", 5 * time.Second, 0, BootPollMax, BootPollMax, 3 * time.Second},
		{"a smaller PollMax caps everything", time.Second, 500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond},
		{"tests' short intervals", 10 * time.Millisecond, 40 * time.Millisecond, 10 * time.Millisecond, 40 * time.Millisecond, 40 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewPollSchedule(tt.first, tt.max)
			if got := s.Next(0, 0); got != tt.wantFirst {
				t.Errorf("first pause %v, want %v", got, tt.wantFirst)
			}
			if got := s.Next(1000, 0); got != tt.wantCap {
				t.Errorf("pause while booting %v, want %v", got, tt.wantCap)
			}
			if got := s.Next(3, 1); got != tt.wantF {
				t.Errorf("pause after a failure %v, want %v", got, tt.wantF)
			}
		})
	}
}

// TestPollScheduleLagAndReads walks the schedule against boot times from 0 to an hour: hydra notices
// the machine at most BootPollMax after the cloud says it runs, and the reads are bounded by the boot
// time over BootPollMax (for one machine; a fleet of one cloud shares them).
func TestPollScheduleLagAndReads(t *testing.T) {
	s := NewPollSchedule(0, 0)
	for boot := time.Duration(0); boot <= time.Hour; boot += 977 * time.Millisecond {
		at, reads := time.Duration(0), 1 // the first read is at once
		for at < boot {
			at += s.Next(reads-1, 0)
			reads++
		}
		if lag := at - boot; lag > BootPollMax {
			t.Fatalf("boot %v: noticed %v late, want at most %v", boot, lag, BootPollMax)
		}
		if limit := 2 + int(boot/time.Second); reads > limit {
			t.Fatalf("boot %v: %d reads, want at most %d", boot, reads, limit)
		}
		if boot == 9770*time.Millisecond || boot == 59_597*time.Millisecond || boot == 599_878*time.Millisecond {
			t.Logf("boot %v: noticed %v after running, %d reads for one machine, %.1f per machine in a fleet of 20", boot, at-boot, reads, float64(reads)/20)
		}
	}
}

func TestCommonPrefix(t *testing.T) {
	for _, tt := range []struct {
		names []string
		want  string
	}{
		{nil, ""},
		{[]string{"sbx-vm-a--x"}, "sbx-vm-a--x"},
		{[]string{"sbx-vm-bench-1--aaaa", "sbx-vm-bench-12--bbbb", "sbx-vm-bench-2--cccc"}, "sbx-vm-bench-"},
		{[]string{"sbx-vm-a", "sbx-ex-a"}, "sbx-"},
		{[]string{"a", "b"}, ""},
	} {
		if got := commonPrefix(tt.names); got != tt.want {
			t.Errorf("commonPrefix(%q) = %q, want %q", tt.names, got, tt.want)
		}
	}
}

// bootCloud is a cloud whose machines boot for a while; it counts reads and how many are in flight.
type bootCloud struct {
	fakeBackend
	// delay is how long every read takes (a slow cloud, or one whose client waits out a 429).
	delay time.Duration

	gets, lists         atomic.Int32
	inFlight, maxFlight atomic.Int32
	failing             atomic.Bool

	mu       sync.Mutex
	machines map[string]*bootMachine // by id
	prefixes []string                // List prefixes asked
	// listWithoutEndpoints makes List show running machines without their SSH endpoint.
	listWithoutEndpoints bool
}

type bootMachine struct {
	name      string
	runningAt time.Time
	wonAt     time.Time // a bid: awaiting allocation until then
	hidden    bool      // List leaves it out
	gone      bool      // Get does not find it either
}

func newBootCloud(cloud string) *bootCloud {
	return &bootCloud{fakeBackend: fakeBackend{cloud: cloud}, machines: map[string]*bootMachine{}}
}

var errCloudDown = cloudprovider.Errorf(cloudprovider.ErrOther, "verda", "reading instance", "HTTP 503 after retries")

// add makes a machine of the pool with prefix that runs after boot and returns it as Create would.
func (c *bootCloud) add(prefix, name string, boot time.Duration) cloudprovider.Instance {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := fmt.Sprintf("%s-%d", c.cloud, len(c.machines)+1)
	m := &bootMachine{name: prefix + name + cloudprovider.TokenSeparator + "abcdefgh", runningAt: time.Now().Add(boot)}
	c.machines[id] = m
	return cloudprovider.Instance{ID: id, Name: m.name, Cloud: c.cloud, Status: cloudprovider.StatusPending, CloudStatus: "booting"}
}

func (c *bootCloud) set(id string, f func(*bootMachine)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(c.machines[id])
}

// instance is what the cloud says of one machine now; the caller holds c.mu.
func (c *bootCloud) instance(id string, m *bootMachine, forList bool) cloudprovider.Instance {
	now := time.Now()
	inst := cloudprovider.Instance{ID: id, Name: m.name, Cloud: c.cloud, Status: cloudprovider.StatusPending, CloudStatus: "booting", AwaitingAllocation: now.Before(m.wonAt)}
	if !now.Before(m.runningAt) {
		inst.Status, inst.CloudStatus = cloudprovider.StatusRunning, "running"
		if !forList || !c.listWithoutEndpoints {
			inst.SSH = &cloudprovider.SSHEndpoint{Host: "10.0.0.1", Port: 22, User: "root"}
		}
	}
	return inst
}

// read records a read in flight for its duration.
func (c *bootCloud) read() func() {
	n := c.inFlight.Add(1)
	for m := c.maxFlight.Load(); n > m && !c.maxFlight.CompareAndSwap(m, n); m = c.maxFlight.Load() {
	}
	time.Sleep(c.delay)
	return func() { c.inFlight.Add(-1) }
}

func (c *bootCloud) Get(_ context.Context, id string) (cloudprovider.Instance, error) {
	c.gets.Add(1)
	defer c.read()()
	if c.failing.Load() {
		return cloudprovider.Instance{}, errCloudDown
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.machines[id]
	if !ok || m.gone {
		return cloudprovider.Instance{}, cloudprovider.Errorf(cloudprovider.ErrNotFound, c.cloud, "reading instance", "no instance %s", id)
	}
	return c.instance(id, m, false), nil
}

func (c *bootCloud) List(_ context.Context, prefix string) ([]cloudprovider.Instance, error) {
	c.lists.Add(1)
	defer c.read()()
	if c.failing.Load() {
		return nil, errCloudDown
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.prefixes = append(c.prefixes, prefix)
	var out []cloudprovider.Instance
	for id, m := range c.machines {
		if !m.hidden && !m.gone && strings.HasPrefix(m.name, prefix) {
			out = append(out, c.instance(id, m, true))
		}
	}
	return out, nil
}

// fast is the schedule of these tests: 10 ms growing to 40 ms.
var fast = Options{PollInterval: 10 * time.Millisecond, PollMax: 40 * time.Millisecond}

// waitAll runs WaitRunning for every machine at once and returns what each returned.
// waitBooted adds n machines of c, named prefix0 to prefix<n-1>, that boot in boot, and waits for all of
// them through cp at once, failing the test on any error.
func waitBooted(t *testing.T, cp *ControlPlane, c *bootCloud, prefix string, n int, boot time.Duration) {
	t.Helper()
	insts := make([]cloudprovider.Instance, 0, n)
	for i := range n {
		insts = append(insts, c.add(prefix, fmt.Sprint(i), boot))
	}
	if _, errs := waitAll(context.Background(), cp, insts); errors.Join(errs...) != nil {
		t.Fatal(errors.Join(errs...))
	}
}

// waitAll waits for every one of insts concurrently, as a fleet's creates do.
func waitAll(ctx context.Context, cp *ControlPlane, insts []cloudprovider.Instance) ([]cloudprovider.Instance, []error) {
	return concurrently(insts, func(inst cloudprovider.Instance) (cloudprovider.Instance, error) {
		return cp.WaitRunning(ctx, inst, nil)
	})
}

// pollerCount is how many pollers of cp are running.
func pollerCount(cp *ControlPlane) int {
	pollers.Lock()
	defer pollers.Unlock()
	n := 0
	for k := range pollers.m {
		if k.cp == cp {
			n++
		}
	}
	return n
}

// eventually waits up to a second for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%s: not within a second", what)
		}
	}
}

func TestWaitRunningFleetSharesOneReadPerTick(t *testing.T) {
	c := newBootCloud("verda")
	cp := New(testInventory(t), []cloudprovider.InstanceManagerBackend{c}, fast)
	const n, boot = 20, 200 * time.Millisecond
	insts := make([]cloudprovider.Instance, n)
	for i := range insts {
		insts[i] = c.add("verda-vm-", fmt.Sprintf("bench-%d", i), boot)
	}
	start := time.Now()
	got, errs := waitAll(context.Background(), cp, insts)
	took := time.Since(start)
	for i := range got {
		if errs[i] != nil || got[i].Status != cloudprovider.StatusRunning || got[i].SSH == nil || got[i].Owner.Token != "abcdefgh" {
			t.Fatalf("machine %d: %+v, %v", i, got[i], errs[i])
		}
	}
	gets, lists := c.gets.Load(), c.lists.Load()
	t.Logf("%d machines, boot %v: ready after %v with %d Gets and %d Lists (%.2f reads per machine)", n, boot, took, gets, lists, float64(gets+lists)/n)
	// One read per tick for the whole fleet: about boot/40ms+4 ticks, where a Get per machine per tick
	// would be 20 times that.
	if reads := gets + lists; reads > 16 {
		t.Errorf("%d reads (%d Gets, %d Lists) for %d machines; want one per tick, at most 16", reads, gets, lists, n)
	}
	if lists == 0 {
		t.Error("no List: the fleet was not read together")
	}
	if m := c.maxFlight.Load(); m != 1 {
		t.Errorf("%d reads in flight at once, want 1", m)
	}
	c.mu.Lock()
	for _, p := range c.prefixes {
		if p != "verda-vm-bench-" {
			t.Errorf("List prefix %q, want the fleet's common prefix verda-vm-bench-", p)
		}
	}
	c.mu.Unlock()
	if took > boot+500*time.Millisecond {
		t.Errorf("ready %v after a %v boot", took, boot)
	}
	eventually(t, "the poller stops with its last wait", func() bool { return pollerCount(cp) == 0 })
}

func TestWaitRunningOneMachineUsesGet(t *testing.T) {
	c := newBootCloud("verda")
	cp := New(testInventory(t), []cloudprovider.InstanceManagerBackend{c}, fast)
	inst := c.add("verda-vm-", "solo", 80*time.Millisecond)
	var changes []cloudprovider.Status
	got, err := cp.WaitRunning(context.Background(), inst, func(i cloudprovider.Instance) { changes = append(changes, i.Status) })
	if err != nil || got.Status != cloudprovider.StatusRunning || got.SSH == nil {
		t.Fatalf("WaitRunning = %+v, %v", got, err)
	}
	if l := c.lists.Load(); l != 0 {
		t.Errorf("%d Lists for one machine, want Gets only", l)
	}
	if len(changes) != 1 || changes[0] != cloudprovider.StatusRunning {
		t.Errorf("onChange saw %v, want [running]", changes)
	}
	// A machine that runs already is not read at all.
	before := c.gets.Load()
	if got, err := cp.WaitRunning(context.Background(), got, nil); err != nil || got.Status != cloudprovider.StatusRunning || c.gets.Load() != before {
		t.Errorf("WaitRunning of a running machine = %+v, %v after %d reads", got, err, c.gets.Load()-before)
	}
}

// A machine the List does not settle is read with a Get: one the List leaves out (gone, or not listed
// yet), and one the List shows running without its SSH endpoint.
func TestWaitRunningListGapsAreReadWithGet(t *testing.T) {
	c := newBootCloud("verda")
	c.listWithoutEndpoints = true
	cp := New(testInventory(t), []cloudprovider.InstanceManagerBackend{c}, fast)
	listed := c.add("verda-vm-", "listed", 50*time.Millisecond)
	unlisted := c.add("verda-vm-", "unlisted", 50*time.Millisecond)
	vanished := c.add("verda-vm-", "vanished", time.Hour)
	c.set(unlisted.ID, func(m *bootMachine) { m.hidden = true })
	c.set(vanished.ID, func(m *bootMachine) { m.gone = true })
	got, errs := waitAll(context.Background(), cp, []cloudprovider.Instance{listed, unlisted, vanished})
	for i := range 2 {
		if errs[i] != nil || got[i].Status != cloudprovider.StatusRunning || got[i].SSH == nil {
			t.Errorf("%s: %+v, %v; want running with its endpoint", got[i].Name, got[i], errs[i])
		}
	}
	if errs[2] == nil || !strings.Contains(errs[2].Error(), "disappeared at the cloud while starting") || !cloudprovider.IsNotFound(errs[2]) {
		t.Errorf("vanished machine: %v, want it reported gone", errs[2])
	}
	if c.lists.Load() == 0 {
		t.Error("no List")
	}
}

// Ctrl-C or a create timeout ends that machine's wait at once, with the same message as before; the
// other machines' waits go on, and the reads stop with the last wait.
func TestWaitRunningContextEndsOneWait(t *testing.T) {
	// Reads take a second and come a second apart: a read is in flight when either context ends, and a
	// wait that returned only after it, or at the next poll, would return a second late. The margin
	// below is half that, so a loaded machine does not fail the test.
	c := newBootCloud("verda")
	c.delay = time.Second
	cp := New(testInventory(t), []cloudprovider.InstanceManagerBackend{c}, Options{PollInterval: time.Second, PollMax: time.Second})
	a := c.add("verda-vm-", "a", 300*time.Millisecond)
	b := c.add("verda-vm-", "b", 300*time.Millisecond)
	slow := c.add("verda-vm-", "slow", time.Hour)
	interrupted := c.add("verda-vm-", "interrupted", time.Hour)

	cctx, cancel := context.WithCancel(context.Background())
	tctx, stop := context.WithTimeout(context.Background(), 60*time.Millisecond)
	defer stop()
	type result struct {
		err  error
		took time.Duration
	}
	results := map[string]chan result{"slow": make(chan result, 1), "interrupted": make(chan result, 1)}
	start := time.Now()
	go func() { _, err := cp.WaitRunning(tctx, slow, nil); results["slow"] <- result{err, time.Since(start)} }()
	go func() {
		_, err := cp.WaitRunning(cctx, interrupted, nil)
		results["interrupted"] <- result{err, time.Since(start)}
	}()
	time.AfterFunc(80*time.Millisecond, cancel)
	got, errs := waitAll(context.Background(), cp, []cloudprovider.Instance{a, b})
	for i := range got {
		if errs[i] != nil || got[i].Status != cloudprovider.StatusRunning {
			t.Errorf("%s: %+v, %v", got[i].Name, got[i], errs[i])
		}
	}
	for _, w := range []struct {
		result string
		inst   cloudprovider.Instance
		want   error
		at     time.Duration // when its context ends: the deadline, the Ctrl-C
	}{
		{"slow", slow, context.DeadlineExceeded, 60 * time.Millisecond},
		{"interrupted", interrupted, context.Canceled, 80 * time.Millisecond},
	} {
		r := <-results[w.result]
		if want := "waiting for instance " + w.inst.Name + " to run (last status pending): " + w.want.Error(); r.err == nil || r.err.Error() != want ||
			!errors.Is(r.err, w.want) {
			t.Errorf("%s: %v, want %q", w.result, r.err, want)
		}
		if r.took > w.at+500*time.Millisecond {
			t.Errorf("the %s wait returned %v after start, want right at its context's end (%v)", w.result, r.took, w.at)
		}
	}
	eventually(t, "the poller stops with its last wait", func() bool { return pollerCount(cp) == 0 })
	reads := c.gets.Load() + c.lists.Load()
	time.Sleep(1200 * time.Millisecond) // longer than a poll interval
	if more := c.gets.Load() + c.lists.Load() - reads; more != 0 {
		t.Errorf("%d reads after every wait ended", more)
	}
	// An ended context fails at once, before any read.
	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	if _, err := cp.WaitRunning(done, c.add("verda-vm-", "late", 0), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitRunning with an ended context = %v", err)
	}
}

// A cloud that fails is read less and less often (up to PollMax) and every wait sees it fail and goes
// on; once it answers, the waits end.
func TestWaitRunningFailingCloudBacksOff(t *testing.T) {
	c := newBootCloud("verda")
	c.failing.Store(true)
	cp := New(testInventory(t), []cloudprovider.InstanceManagerBackend{c}, Options{PollInterval: 10 * time.Millisecond, PollMax: 200 * time.Millisecond})
	insts := []cloudprovider.Instance{c.add("verda-vm-", "a", 0), c.add("verda-vm-", "b", 0)}
	time.AfterFunc(500*time.Millisecond, func() { c.failing.Store(false) })
	start := time.Now()
	got, errs := waitAll(context.Background(), cp, insts)
	for i := range got {
		if errs[i] != nil || got[i].Status != cloudprovider.StatusRunning {
			t.Errorf("%s: %+v, %v", got[i].Name, got[i], errs[i])
		}
	}
	// Failing, the reads come at 0, 200 and 400 ms and the first one after 500 ms answers (the answering
	// schedule would have read 9 times by then).
	if reads := c.gets.Load() + c.lists.Load(); reads > 5 {
		t.Errorf("%d reads of a failing cloud in %v, want at most 5", reads, time.Since(start))
	}
}

// Reads never overlap, however slowly the cloud answers (a client waiting out a 429's Retry-After).
func TestWaitRunningSlowCloudOneReadInFlight(t *testing.T) {
	c := newBootCloud("verda")
	c.delay = 30 * time.Millisecond
	cp := New(testInventory(t), []cloudprovider.InstanceManagerBackend{c}, fast)
	waitBooted(t, cp, c, "verda-vm-", 10, 100*time.Millisecond)
	if m := c.maxFlight.Load(); m != 1 {
		t.Errorf("%d reads in flight at once, want 1", m)
	}
}

// perMachineCloud is a cloud whose List reads every machine (as UpCloud's does), declared through
// PerMachineLister.
type perMachineCloud struct{ *bootCloud }

func (perMachineCloud) ListReadsEachMachine() bool { return true }

// A cloud whose List reads every machine (PerMachineLister) has its machines read with a Get each, a
// few at a time; the same cloud without the declaration is read with one List.
func TestWaitRunningPerMachineListCloudUsesGets(t *testing.T) {
	c := newBootCloud("upcloud")
	c.delay = 5 * time.Millisecond
	cp := New(testInventory(t), []cloudprovider.InstanceManagerBackend{perMachineCloud{c}}, fast)
	waitBooted(t, cp, c, "upcloud-vm-", 10, 60*time.Millisecond)
	if l := c.lists.Load(); l != 0 {
		t.Errorf("%d Lists of UpCloud, want Gets only", l)
	}
	if m := c.maxFlight.Load(); m > pollGetConcurrency {
		t.Errorf("%d Gets in flight at once, want at most %d", m, pollGetConcurrency)
	}

	plain := newBootCloud("upcloud")
	cp = New(testInventory(t), []cloudprovider.InstanceManagerBackend{plain}, fast)
	waitBooted(t, cp, plain, "upcloud-vm-", 10, 60*time.Millisecond)
	if plain.lists.Load() == 0 {
		t.Errorf("no List of a cloud that does not declare PerMachineLister: the capability, not the name, decides")
	}
}

// Launch's wait for a bid reads through the same poller: won, not won within the bid timeout, cut short.
func TestAwaitAllocation(t *testing.T) {
	c := newBootCloud("verda")
	cp := New(testInventory(t), []cloudprovider.InstanceManagerBackend{c}, fast)
	pm, _ := cp.manager.Pool("verda-vm-pool")
	bid := func(name string, wins time.Duration) cloudprovider.Instance {
		inst := c.add("verda-vm-", name, time.Hour)
		c.set(inst.ID, func(m *bootMachine) { m.wonAt = time.Now().Add(wins) })
		inst.AwaitingAllocation = true
		return inst
	}
	got, won, err := cp.awaitAllocation(context.Background(), pm, bid("wins", 50*time.Millisecond), time.Second)
	if err != nil || !won || got.AwaitingAllocation {
		t.Errorf("a bid that wins: %+v, %v, %v", got, won, err)
	}
	start := time.Now()
	got, won, err = cp.awaitAllocation(context.Background(), pm, bid("loses", time.Hour), 100*time.Millisecond)
	if err != nil || won || !got.AwaitingAllocation || time.Since(start) > 300*time.Millisecond {
		t.Errorf("a bid that does not win in time: %+v, %v, %v after %v", got, won, err, time.Since(start))
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, won, err = cp.awaitAllocation(ctx, pm, bid("cut", time.Hour), time.Second); !errors.Is(err, context.Canceled) || won {
		t.Errorf("an interrupted bid wait: %v, %v", won, err)
	}
}
