package provision

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Batches. Machines that become reachable within a short window of one another are provisioned by one
// ansible-playbook run, a host each, with as many forks as hosts: the controller's start-up, playbook
// parsing and per-run files are paid once per batch instead of once per machine, and one process
// group holds the whole batch.
//
// A batch opens when a machine whose SSH answered finds no batch of its playbook forming; it starts
// BatchWindow later (default DefaultBatchWindow), or at once when it holds BatchMax machines. A
// machine that arrives while a batch runs never waits for it: it opens (or joins) the next one. So a
// machine waits at most BatchWindow for the machines of its fleet.
//
// Every property of a run of its own is kept per machine:
//   - its outcome: the callback's events are routed by host (see router), so each machine gets its own
//     task starts, failed task, message, recap line and exit code (another host's failure is not its
//     failure), and a machine whose host did not reach the batch playbook's last play (a playbook that
//     stops every host on one host's failure) is failed, never ready;
//   - its variables: a variables file per host, loaded by the batch playbook's first play
//     (include_vars, which ranks above the playbook's vars_files, play and role variables, as the
//     extra variables of a run of its own did), every string still marked unsafe;
//   - its pinned host key: a known_hosts file per host holding only that host's key, and a control
//     socket per host (closed with the batch, so no later run reuses a connection unchecked);
//   - cancellation: a cancelled machine is cut off alone (its known_hosts emptied, so no new connection
//     to it can be made, and its control master closed, so the task in flight fails as unreachable and
//     Ansible drops the host); only when every machine of a batch is cancelled (Ctrl-C) does the batch's
//     process group get SIGINT, then SIGKILL, as a run of its own did.

// Defaults for the batching fields of Config.
const (
	// DefaultBatchWindow is how long the first machine of a batch waits for others.
	DefaultBatchWindow = 2 * time.Second
	// DefaultBatchMax is the most machines one ansible-playbook run provisions.
	DefaultBatchMax = 20
)

// batchKey is what machines must share to be provisioned by one run.
type batchKey struct {
	playbook  string
	checkMode bool
}

// member is one machine's place in a batch.
type member struct {
	spec   runSpec
	ctx    context.Context
	events *eventLog
	// result receives the machine's outcome once the batch has ended (buffered: the machine may have
	// left already).
	result chan runDone

	// Set when the batch starts: the inventory host name, unique in the batch, and the host's own
	// known_hosts file and ssh control socket.
	host, knownHosts, controlPath string

	// cancelled is set (under batch.mu) when the machine's context ended; gone once it stopped listening.
	cancelled bool
	gone      atomic.Bool

	// playSeq is the router's number of the last play the machine was told of; reachedEnd is set when
	// its host ran hydra's end-of-batch task (it was not stopped by another host's failure).
	playSeq    int
	reachedEnd atomic.Bool
}

// left says the machine no longer follows the run (its context ended): its events are not logged.
func (m *member) left() bool { return m.gone.Load() || m.ctx.Err() != nil }

type runDone struct {
	out runOutcome
	err error
}

// batch is the machines of one ansible-playbook run.
type batch struct {
	r       *Runner
	key     batchKey
	ansible string
	timer   *time.Timer

	// launched is guarded by Runner.batchMu.
	launched bool

	mu      sync.Mutex
	members []*member
	running bool // the run's files exist: a member can be cut off

	// ctx ends the whole run: cancelled only when every member is.
	ctx    context.Context
	cancel context.CancelFunc
	// ended closes once the run is over and its directory removed.
	ended chan struct{}
}

// join adds a machine to the forming batch of its playbook (opening one when there is none) and
// returns the batch and the machine's place in it.
func (r *Runner) join(ctx context.Context, key batchKey, ansible string, spec runSpec) (*batch, *member) {
	m := &member{spec: spec, ctx: ctx, events: &eventLog{log: spec.log}, result: make(chan runDone, 1)}
	r.batchMu.Lock()
	defer r.batchMu.Unlock()
	b := r.forming[key]
	if b == nil {
		bctx, cancel := context.WithCancel(context.Background())
		b = &batch{r: r, key: key, ansible: ansible, ctx: bctx, cancel: cancel, ended: make(chan struct{})}
		if r.forming == nil {
			r.forming = map[batchKey]*batch{}
		}
		r.forming[key] = b
		if r.cfg.BatchWindow > 0 {
			b.timer = time.AfterFunc(r.cfg.BatchWindow, func() {
				r.batchMu.Lock()
				defer r.batchMu.Unlock()
				r.launchLocked(b)
			})
		}
	}
	b.mu.Lock()
	b.members = append(b.members, m)
	n := len(b.members)
	b.mu.Unlock()
	if n >= r.cfg.BatchMax || r.cfg.BatchWindow <= 0 {
		r.launchLocked(b)
	}
	return b, m
}

// launchLocked starts b (once); r.batchMu is held.
func (r *Runner) launchLocked(b *batch) {
	if b.launched {
		return
	}
	b.launched = true
	if r.forming[b.key] == b {
		delete(r.forming, b.key)
	}
	if b.timer != nil {
		b.timer.Stop()
	}
	go b.run()
}

// wait returns the machine's outcome: when the batch has run, or at once when its context ends first
// (after cutting its host off, or, when it was the last machine of the batch still wanted, after the
// whole run was stopped and removed).
func (b *batch) wait(m *member) (runOutcome, error) {
	select {
	case d := <-m.result:
		return d.out, d.err
	case <-m.ctx.Done():
	}
	if b.leave(m) {
		<-b.ended
	}
	select {
	case d := <-m.result:
		return d.out, d.err
	default:
	}
	m.gone.Store(true)
	v := classify(runResult{Instance: m.spec.instance, Playbook: b.key.playbook, ExitCode: -1, Events: m.events.facts(), CtxErr: m.ctx.Err()})
	return v.Outcome, v.Err
}

// leave takes a cancelled machine out of its batch: out of the list while the batch forms, cut off
// while it runs. It says whether the whole run is being stopped (every member cancelled).
func (b *batch) leave(m *member) (stopping bool) {
	r := b.r
	r.batchMu.Lock()
	if !b.launched {
		b.mu.Lock()
		for i, o := range b.members {
			if o == m {
				b.members = append(b.members[:i:i], b.members[i+1:]...)
				break
			}
		}
		empty := len(b.members) == 0
		b.mu.Unlock()
		if empty {
			// Nobody is left: the batch never runs.
			b.launched = true
			if r.forming[b.key] == b {
				delete(r.forming, b.key)
			}
			if b.timer != nil {
				b.timer.Stop()
			}
			b.cancel()
			close(b.ended)
		}
		r.batchMu.Unlock()
		return false
	}
	r.batchMu.Unlock()
	b.mu.Lock()
	m.cancelled = true
	all := true
	for _, o := range b.members {
		if !o.cancelled {
			all = false
		}
	}
	running := b.running
	b.mu.Unlock()
	if all {
		b.r.logger.Info("every machine of the batch was cancelled; stopping the run", "machines", len(b.members))
		b.cancel()
		return true
	}
	if running {
		b.cutOff(m)
	}
	return false
}

// cutOff ends one host's part of a running batch: its known_hosts is emptied (no new connection to it
// passes the host key check) and its control master closed (the task in flight loses its connection,
// so Ansible reports the host unreachable and drops it). The other hosts go on.
func (b *batch) cutOff(m *member) {
	b.r.logger.Info("cancelling one machine of a batch", "instance", m.spec.instance, "host", m.host)
	_ = os.WriteFile(m.knownHosts, nil, 0o600)
	sshBin, err := exec.LookPath("ssh")
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, sshBin, "-F", "/dev/null", "-o", "ControlPath="+m.controlPath, "-O", "exit", "hydra-mux")
	cmd.Env = ansibleBaseEnv()
	_ = cmd.Run()
}

// run provisions the batch's machines with one ansible-playbook run and hands each its outcome.
func (b *batch) run() {
	defer close(b.ended)
	r := b.r
	b.mu.Lock()
	var hosts []*member
	for _, m := range b.members {
		if !m.cancelled {
			hosts = append(hosts, m)
		}
	}
	b.mu.Unlock()
	if len(hosts) == 0 {
		return
	}
	deliver := func(err error) {
		for _, m := range hosts {
			m.result <- runDone{err: err}
		}
	}
	names := map[string]bool{}
	for _, m := range hosts {
		name := m.spec.hostName
		for i := 2; names[name]; i++ {
			name = m.spec.hostName + "-" + strconv.Itoa(i)
		}
		names[name] = true
		m.host = name
		if dl, ok := m.ctx.Deadline(); ok {
			// The playbooks share what is left of the create timeout among their waits (cloud-init, the
			// dpkg lock, reboots, DCGM's diagnostic) and say which one ran out.
			m.spec.vars["hydra_time_budget_seconds"] = max(int(time.Until(dl).Seconds()), 60)
		}
	}
	dir, err := r.prepareRunDir(b.key.playbook, hosts)
	if err != nil {
		deliver(err)
		return
	}
	b.mu.Lock()
	b.running = true
	var late []*member
	for _, m := range hosts {
		if m.cancelled {
			late = append(late, m)
		}
	}
	b.mu.Unlock()
	for _, m := range late {
		b.cutOff(m)
	}

	cmd := buildCommand(b.ansible, b.key.checkMode, dir)
	stderr := &tailBuffer{n: 8 << 10, fn: func(s string) { r.logger.Debug("ansible-playbook stderr", "line", cut(s, 2000)) }}
	rt := newRouter(hosts)
	cmd.Stdout = &eventWriter{
		handle: rt.dispatch,
		raw:    func(s string) { r.logger.Debug("ansible-playbook output", "line", cut(s, 2000)) },
	}
	cmd.Stderr = stderr
	r.logger.Info("provisioning batch started", "machines", len(hosts), "playbook", b.key.playbook)
	for _, m := range hosts {
		m.spec.log("running playbook", map[string]any{"playbook": b.key.playbook, "batch": len(hosts)})
	}
	rc, cancelled, err := r.execute(b.ctx, cmd, dir.guard.processGroup)
	// The outcomes are handed over once nothing of the run is left.
	if err != nil {
		dir.remove(r.logger)
		deliver(err)
		return
	}
	done := make([]runDone, len(hosts))
	for i, m := range hosts {
		facts := m.events.facts()
		res := runResult{
			Instance:   m.spec.instance,
			Playbook:   b.key.playbook,
			ExitCode:   hostExitCode(rc, facts.Stats, m.host),
			Events:     facts,
			StderrTail: stderr.String(),
		}
		if err := m.ctx.Err(); err != nil {
			res.CtxErr = err
		} else if cancelled {
			res.CtxErr = b.ctx.Err()
		}
		v := classify(res)
		if v.Kind == outcomeSuccess && !m.reachedEnd.Load() {
			v = stoppedByAnother(res)
		}
		if v.Kind == outcomeSuccess && !m.left() {
			m.spec.log("playbook succeeded", map[string]any{"playbook": b.key.playbook})
		}
		done[i] = runDone{out: v.Outcome, err: v.Err}
	}
	dir.remove(r.logger)
	for i, m := range hosts {
		m.result <- done[i]
	}
}

// router hands the events of a batch's run to the machines they concern. Only what the callback
// says of a host reaches that host's machine: its results, and its own task starts (host_task_start,
// sent when the task is queued for that host). The play's task_start is no machine's: it comes once
// per task whichever hosts run it, so a task of a file that one host included (include_tasks,
// include_role under a condition that holds for it alone), a handler only one host notified, or the
// rescue of one host's block would read, in every other machine's log, as a task of its own (and be
// named as the task a cancellation interrupted). A play's start is told to a machine with its first
// task in that play. The recap is split per host. Events of hydra's own end-of-batch task only note
// that the host got there (see batchPlaybook).
//
// Its methods are called one event at a time (eventWriter holds its lock).
type router struct {
	byHost map[string]*member
	hosts  []*member
	// play is the play last started, playSeq its number; member.playSeq says which the machine was
	// told of.
	play    string
	playSeq int
}

func newRouter(hosts []*member) *router {
	rt := &router{byHost: map[string]*member{}, hosts: hosts}
	for _, m := range hosts {
		rt.byHost[m.host] = m
	}
	return rt
}

func (rt *router) dispatch(ev event) {
	switch ev.Event {
	case "play_start":
		rt.play, rt.playSeq = ev.Play, rt.playSeq+1
		return
	case "stats":
		for _, m := range rt.hosts {
			if m.left() {
				continue
			}
			e := ev
			e.Stats = map[string]hostStats{}
			if s, ok := ev.Stats[m.host]; ok {
				e.Stats[m.host] = s
			}
			m.events.handle(e)
		}
		return
	}
	if ev.Host == "" {
		return // the play's own (task_start, playbook_start, no_hosts): see host_task_start
	}
	m := rt.byHost[ev.Host]
	if m == nil {
		return
	}
	if ev.Task == batchDoneTask {
		if ev.Event == "ok" {
			m.reachedEnd.Store(true)
		}
		return
	}
	if m.left() {
		return
	}
	if ev.Event == "host_task_start" {
		if m.playSeq != rt.playSeq {
			m.playSeq = rt.playSeq
			m.events.handle(event{Event: "play_start", Play: rt.play})
		}
		ev.Event = "task_start"
	}
	m.events.handle(ev)
}

// hostExitCode is the exit code a run of the host's own would have had: ansible-playbook exits 2 (a
// host failed) or 4 (a host was unreachable) for the whole batch, which says nothing of a host whose
// recap is clean.
func hostExitCode(rc int, stats map[string]hostStats, host string) int {
	if s, ok := stats[host]; ok && (rc == 2 || rc == 4) && s.Failures == 0 && s.Unreachable == 0 {
		return 0
	}
	return rc
}

// stoppedByAnother is the outcome of a machine whose own tasks all passed but whose host never reached
// the batch's end: the playbook stopped every host of its run on another host's failure
// (any_errors_fatal, a failed run_once task, max_fail_percentage). Alone, the machine would have run
// to the end, so it is a failure to retry, not a success.
func stoppedByAnother(res runResult) verdict {
	msg := "another machine of the same ansible-playbook run failed and the playbook stops every host on one host's failure (any_errors_fatal, run_once or max_fail_percentage)"
	return verdict{
		Kind:    outcomeFailedTask,
		Outcome: runOutcome{failedTask: res.Events.LastTask, message: msg},
		Err: fmt.Errorf("provisioning %q stopped after task %q before the end of %s: %s; provisioning it again is safe",
			res.Instance, res.Events.LastTask, res.Playbook, msg),
	}
}
