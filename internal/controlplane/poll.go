package controlplane

// Status polls while machines boot or bids wait (issue 12: ready as fast as the cloud allows).
//
// The time from the cloud's "running" to hydra noticing it is hydra's own waiting, so the interval
// between the starts of two status polls of a waiting machine never exceeds BootPollMax (1.5 s) while
// the cloud answers: hydra notices a machine at most 1.5 s (plus one API round trip) after its cloud
// reports it running, whatever the boot time. The pause used to grow to 15 s (Options.PollMax), which
// cost up to 15 s per machine (12.5 s on average for a fleet booting in 50 s, measured).
//
// Polls are shared, so that polling that often stays cheap: every wait on machines of one cloud
// (WaitRunning, and Launch's wait for a bid to win) subscribes to that cloud's poller, which makes one
// read per tick for all of them: a Get when one machine waits, one List when several do (its prefix the
// longest common prefix of their names, so it reads the waiting machines and few others). A cloud is
// therefore read at most once per tick, about 0.7 reads a second, whatever the number of machines
// waiting on it, and the reads per machine fall as the fleet grows. The poller never has two reads in
// flight: a cloud that rate-limits (429) is waited out by its client (Retry-After) inside the read,
// which simply makes the next tick later. A poll that fails backs off, from twice BootPollMax doubling
// up to Options.PollMax, until one succeeds; every waiting machine sees the failure (it logs it and
// waits on). A machine the List does not show (terminated clouds leave out, or a cloud slow to list a
// new machine), or shows in a state that ends the wait without the full picture (running without an SSH
// endpoint, error, terminated), is read again with a Get, so every wait ends on exactly what a Get says.
//
// The poller's reads belong to no single wait: one wait's context ending (Ctrl-C, its create timeout)
// ends that wait at once, exactly as before, and the reads stop once no wait is left.

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/wait"
)

// BootPollMax caps the pause between status polls of a waiting machine while its cloud answers (a
// smaller Options.PollMax caps it further).
const BootPollMax = 1500 * time.Millisecond

// pollCallTimeout bounds one poll's reads, so a cloud that never answers cannot stall every wait on it
// (each wait still ends with its own context).
const pollCallTimeout = time.Minute

// pollGetConcurrency bounds the Gets one tick sends at once (clouds without a shared List).
const pollGetConcurrency = 4

// PollSchedule says when a cloud's poller reads the machines waiting on it.
type PollSchedule struct {
	// Answering is the interval after the n-th successful poll (n from 0 since the poller started),
	// start to start: from Options.PollInterval (1 s), growing by 1.5 to at most BootPollMax.
	Answering wait.Backoff
	// Failing is the pause after the n-th failed poll in a row (n from 0): from twice Answering's cap,
	// doubling to Options.PollMax (15 s). Terminate's wait keeps its own schedule (up to PollMax).
	Failing wait.Backoff
}

// Next is the interval after a poll: polls is how many polls have succeeded before it since the
// poller started, failures how many polls in a row have failed, itself included (0: it succeeded).
func (s PollSchedule) Next(polls, failures int) time.Duration {
	if failures > 0 {
		return s.Failing.Interval(failures - 1)
	}
	return s.Answering.Interval(polls)
}

// Pause is how long the poller sleeps after a poll that took took. While the cloud answers, the
// interval runs from the start of one poll to the start of the next, so the reads' own time does not
// add to the detection lag; a slow poll (a client waiting out a 429's Retry-After) still leaves half an
// interval before the next, so the cloud is never read back to back. After a failure the whole
// backoff interval is slept.
func (s PollSchedule) Pause(polls, failures int, took time.Duration) time.Duration {
	iv := s.Next(polls, failures)
	if failures > 0 {
		return iv
	}
	return max(iv-took, iv/2)
}

// NewPollSchedule is the schedule for a control plane's options: first pause first (Options.PollInterval),
// at most BootPollMax (or maxPause, Options.PollMax, when smaller) while the cloud answers, backing
// off to maxPause while it fails. Zero values take the defaults (1 s and 15 s).
func NewPollSchedule(first, maxPause time.Duration) PollSchedule {
	if first <= 0 {
		first = time.Second
	}
	if maxPause <= 0 {
		maxPause = 15 * time.Second
	}
	answering := min(BootPollMax, maxPause)
	return PollSchedule{
		Answering: wait.Backoff{First: min(first, answering), Max: answering, Factor: 1.5},
		Failing:   wait.Backoff{First: min(2*answering, maxPause), Max: maxPause, Factor: 2},
	}
}

func (cp *ControlPlane) pollSchedule() PollSchedule {
	return NewPollSchedule(cp.opts.PollInterval, cp.opts.PollMax)
}

// watch reads ref's machine through its cloud's shared poller, handing every answer (the machine, or
// the read's error) to cond, until cond is done (nil), cond fails (its error) or ctx ends (ctx's
// error). The first read of a poller that was idle is made at once; a wait that joins a busy poller
// is read at its next tick.
func (cp *ControlPlane) watch(ctx context.Context, pm *SinglePoolInstManager, ref InstanceRef, cond func(cloudprovider.Instance, error) (bool, error)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s := cp.subscribe(ctx, pm, ref)
	defer s.unsubscribe()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case a := <-s.answers:
			done, err := cond(a.inst, a.err)
			if err != nil {
				return err
			}
			if done {
				return nil
			}
		}
	}
}

// pollerKey names one cloud's poller of one control plane.
type pollerKey struct {
	cp    *ControlPlane
	cloud string
}

// pollers holds the pollers with waits subscribed; a poller leaves it with its last wait.
var pollers = struct {
	sync.Mutex
	m map[pollerKey]*cloudPoller
}{m: map[pollerKey]*cloudPoller{}}

// cloudPoller reads one cloud's waiting machines, one tick at a time.
type cloudPoller struct {
	key     pollerKey
	backend cloudprovider.InstanceManagerBackend
	stop    context.CancelFunc
	// subs are the waits subscribed (guarded by pollers' lock).
	subs map[*pollSub]struct{}
}

// pollSub is one wait subscribed to a poller.
type pollSub struct {
	poller *cloudPoller
	pm     *SinglePoolInstManager
	ref    InstanceRef
	// answers holds the newest answer not yet taken (an older one is dropped for it).
	answers chan pollAnswer
}

type pollAnswer struct {
	inst cloudprovider.Instance
	err  error
}

func (cp *ControlPlane) subscribe(ctx context.Context, pm *SinglePoolInstManager, ref InstanceRef) *pollSub {
	s := &pollSub{pm: pm, ref: ref, answers: make(chan pollAnswer, 1)}
	key := pollerKey{cp: cp, cloud: pm.Pool.Cloud}
	pollers.Lock()
	defer pollers.Unlock()
	p := pollers.m[key]
	if p == nil {
		// The reads belong to every wait: no single wait's cancellation stops them (the values, such as
		// the logger, are the first wait's).
		pctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		p = &cloudPoller{key: key, backend: pm.Backend, stop: stop, subs: map[*pollSub]struct{}{}}
		pollers.m[key] = p
		go p.run(pctx, cp.pollSchedule())
	}
	s.poller = p
	p.subs[s] = struct{}{}
	return s
}

func (s *pollSub) unsubscribe() {
	pollers.Lock()
	defer pollers.Unlock()
	p := s.poller
	delete(p.subs, s)
	if len(p.subs) == 0 {
		p.stop()
		if pollers.m[p.key] == p {
			delete(pollers.m, p.key)
		}
	}
}

// deliver hands an answer to the wait, replacing one it has not taken yet. Only the poller's goroutine
// (and, within one tick, one read per wait) delivers, so the send never blocks.
func (s *pollSub) deliver(inst cloudprovider.Instance, err error) {
	select {
	case <-s.answers:
	default:
	}
	s.answers <- pollAnswer{inst: inst, err: err}
}

func (p *cloudPoller) snapshot() []*pollSub {
	pollers.Lock()
	defer pollers.Unlock()
	out := make([]*pollSub, 0, len(p.subs))
	for s := range p.subs {
		out = append(out, s)
	}
	return out
}

// run polls at once, then on sched (see PollSchedule.Pause), until ctx ends (the last wait left).
func (p *cloudPoller) run(ctx context.Context, sched PollSchedule) {
	var pause time.Duration
	polls, failures := 0, 0
	for {
		if wait.Sleep(ctx, pause) != nil {
			return
		}
		subs := p.snapshot()
		if len(subs) == 0 {
			return
		}
		began := time.Now()
		if p.poll(ctx, subs) {
			failures = 0
			pause = sched.Pause(polls, 0, time.Since(began))
			polls++
		} else {
			failures++
			pause = sched.Pause(polls, failures, time.Since(began))
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// poll reads every subscribed machine once and reports whether the cloud answered.
func (p *cloudPoller) poll(ctx context.Context, subs []*pollSub) bool {
	ctx, cancel := context.WithTimeout(ctx, pollCallTimeout)
	defer cancel()
	// A cloud whose List reads each machine anyway (PerMachineLister) gets a Get per waiting machine per
	// tick (still at most one tick at a time).
	if len(subs) > 1 && !listReadsEachMachine(p.backend) {
		return p.pollList(ctx, subs)
	}
	return p.pollEach(ctx, subs)
}

// pollEach reads every machine with a Get; the cloud answered when one Get did (a machine that is gone
// is an answer too).
func (p *cloudPoller) pollEach(ctx context.Context, subs []*pollSub) bool {
	var answered atomic.Bool
	get := func(s *pollSub) {
		inst, err := s.pm.Get(ctx, s.ref)
		if err == nil || cloudprovider.IsNotFound(err) {
			answered.Store(true)
		}
		s.deliver(inst, err)
	}
	if len(subs) == 1 {
		get(subs[0])
		return answered.Load()
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, pollGetConcurrency)
	for _, s := range subs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			get(s)
		}()
	}
	wg.Wait()
	return answered.Load()
}

// pollList reads every machine with one List; the ones it does not settle are read with a Get.
func (p *cloudPoller) pollList(ctx context.Context, subs []*pollSub) bool {
	names := make([]string, len(subs))
	for i, s := range subs {
		names[i] = s.ref.Name
	}
	list, err := p.backend.List(ctx, commonPrefix(names))
	if err != nil {
		for _, s := range subs {
			s.deliver(cloudprovider.Instance{}, err)
		}
		return false
	}
	byID := make(map[string]cloudprovider.Instance, len(list))
	byName := make(map[string][]cloudprovider.Instance, len(list))
	for _, inst := range list {
		if inst.ID != "" {
			byID[inst.ID] = inst
		}
		if inst.Status != cloudprovider.StatusTerminated {
			byName[inst.Name] = append(byName[inst.Name], inst)
		}
	}
	var unsettled []*pollSub
	for _, s := range subs {
		var inst cloudprovider.Instance
		found := false
		if s.ref.ID != "" {
			inst, found = byID[s.ref.ID]
		} else if same := byName[s.ref.Name]; len(same) == 1 {
			inst, found = same[0], true
		}
		if !found || !settledByList(inst) {
			unsettled = append(unsettled, s)
			continue
		}
		s.deliver(cloudprovider.WithOwner(s.pm.Pool, inst), nil)
	}
	if len(unsettled) > 0 {
		p.pollEach(ctx, unsettled)
	}
	return true
}

// settledByList says whether a machine as a List shows it may end or continue a wait as it is: a
// machine that still waits does, and a running one with its SSH endpoint. Any other state ends the wait
// on what a Get says (the error message, whether it is really gone, the endpoint).
func settledByList(inst cloudprovider.Instance) bool {
	switch inst.Status {
	case cloudprovider.StatusPending:
		return true
	case cloudprovider.StatusRunning:
		return inst.SSH != nil && inst.SSH.Host != ""
	default:
		return false
	}
}

// commonPrefix returns the longest common prefix of names.
func commonPrefix(names []string) string {
	if len(names) == 0 {
		return ""
	}
	prefix := names[0]
	for _, n := range names[1:] {
		i := 0
		for i < len(prefix) && i < len(n) && prefix[i] == n[i] {
			i++
		}
		prefix = prefix[:i]
	}
	return strings.Clone(prefix)
}

// listReadsEachMachine says whether b declares that its List reads each machine (PerMachineLister).
func listReadsEachMachine(b cloudprovider.InstanceManagerBackend) bool {
	l, ok := b.(cloudprovider.PerMachineLister)
	return ok && l.ListReadsEachMachine()
}
