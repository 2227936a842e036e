package provision

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

func TestHostExitCode(t *testing.T) {
	clean := hostStats{OK: 3}
	failed := hostStats{OK: 1, Failures: 1}
	lost := hostStats{Unreachable: 1}
	tests := []struct {
		name  string
		rc    int
		stats map[string]hostStats
		want  int
	}{
		{"all well", 0, map[string]hostStats{"a": clean, "b": clean}, 0},
		{"another host failed", 2, map[string]hostStats{"a": clean, "b": failed}, 0},
		{"another host unreachable", 4, map[string]hostStats{"a": clean, "b": lost}, 0},
		{"this host failed", 2, map[string]hostStats{"a": failed, "b": clean}, 2},
		{"this host unreachable", 4, map[string]hostStats{"a": lost}, 4},
		{"no recap for the host", 2, map[string]hostStats{"b": failed}, 2},
		{"an error of the run itself", 1, map[string]hostStats{"a": clean}, 1},
		{"interrupted", 99, map[string]hostStats{"a": clean}, 99},
		{"killed", -1, nil, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := hostExitCode(tc.rc, tc.stats, "a"); got != tc.want {
				t.Errorf("hostExitCode(%d) = %d, want %d", tc.rc, got, tc.want)
			}
		})
	}
}

// TestRouter: a batch's events reach the machines they concern: a host's to its machine only, its
// task starts from the callback's host_task_start (the play's task_start is no machine's: a task one
// host included is not the others'), a play's start with the machine's first task in it, the recap
// split per host, nothing to a machine whose context ended; hydra's end-of-batch task only marks the
// host; each machine's outcome is then its own.
func TestRouter(t *testing.T) {
	type line struct{ machine, msg, task string }
	var got []line
	mk := func(name string, ctx context.Context) *member {
		return &member{spec: runSpec{instance: name}, ctx: ctx, host: name,
			events: &eventLog{log: func(msg string, f map[string]any) {
				task, _ := f["task"].(string)
				if p, ok := f["play"].(string); ok {
					task = p
				}
				got = append(got, line{name, msg, task})
			}}}
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	a, b, c, d := mk("a", context.Background()), mk("b", context.Background()), mk("c", gone), mk("d", context.Background())
	rt := newRouter([]*member{a, b, c, d})
	for _, ev := range []event{
		{Event: "playbook_start"},
		{Event: "play_start", Play: "p"},
		{Event: "task_start", Task: "t1"},
		{Event: "host_task_start", Task: "t1", Host: "a"},
		{Event: "host_task_start", Task: "t1", Host: "b"},
		{Event: "host_task_start", Task: "t1", Host: "c"},
		{Event: "host_task_start", Task: "t1", Host: "d"},
		{Event: "ok", Task: "t1", Host: "a"},
		{Event: "failed", Task: "t1", Host: "b", Result: map[string]any{"msg": "boom"}},
		{Event: "ok", Task: "t1", Host: "c"},
		{Event: "ok", Task: "t1", Host: "d"},
		// A task of a file only a included (include_tasks under a condition that held for a alone).
		{Event: "task_start", Task: "included"},
		{Event: "host_task_start", Task: "included", Host: "a"},
		{Event: "retry", Task: "included", Host: "a", Attempt: 1, Retries: 3},
		{Event: "ok", Task: "included", Host: "a"},
		{Event: "task_start", Task: "h", Handler: true},
		{Event: "host_task_start", Task: "h", Handler: true, Host: "d"},
		{Event: "ok", Task: "h", Host: "d"},
		{Event: "play_start", Play: "hydra: note the machines that reached the end"},
		{Event: "task_start", Task: batchDoneTask},
		{Event: "host_task_start", Task: batchDoneTask, Host: "a"},
		{Event: "ok", Task: batchDoneTask, Host: "a"},
		{Event: "host_task_start", Task: batchDoneTask, Host: "nobody"},
		{Event: "ok", Task: "t1", Host: "nobody"},
		{Event: "stats", Stats: map[string]hostStats{"a": {OK: 3}, "b": {OK: 0, Failures: 1}, "c": {OK: 1}, "d": {OK: 2}}},
	} {
		rt.dispatch(ev)
	}
	want := []line{
		{"a", "play started", "p"}, {"a", "task started", "t1"},
		{"b", "play started", "p"}, {"b", "task started", "t1"},
		{"d", "play started", "p"}, {"d", "task started", "t1"},
		{"a", "task ok", "t1"}, {"b", "task failed", "t1"}, {"d", "task ok", "t1"},
		{"a", "task started", "included"}, {"a", "task retrying", "included"}, {"a", "task ok", "included"},
		{"d", "task started", "h"}, {"d", "task ok", "h"},
	}
	if len(got) != len(want) {
		t.Fatalf("logged\n%v\nwant\n%v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %v, want %v", i, got[i], want[i])
		}
	}
	fa, fb, fd := a.events.facts(), b.events.facts(), d.events.facts()
	if len(fa.Stats) != 1 || fa.Stats["a"].OK != 3 || fa.Failure != nil || fa.LastTask != "included" || !a.reachedEnd.Load() {
		t.Errorf("machine a: %+v, reached the end %v", fa, a.reachedEnd.Load())
	}
	if len(fb.Stats) != 1 || fb.Stats["b"].Failures != 1 || fb.Failure == nil || fb.Failure.Task != "t1" || fb.Failure.Message != "boom" || b.reachedEnd.Load() {
		t.Errorf("machine b: %+v", fb)
	}
	if fd.LastTask != "h" || d.reachedEnd.Load() {
		t.Errorf("machine d: %+v, reached the end %v", fd, d.reachedEnd.Load())
	}
	if va := classify(runResult{Instance: "a", ExitCode: hostExitCode(2, fa.Stats, "a"), Events: fa}); va.Kind != outcomeSuccess {
		t.Errorf("machine a's outcome: %v %v", va.Kind, va.Err)
	}
	if vb := classify(runResult{Instance: "b", ExitCode: hostExitCode(2, fb.Stats, "b"), Events: fb}); vb.Kind != outcomeFailedTask || vb.Outcome.failedTask != "t1" {
		t.Errorf("machine b's outcome: %v %+v", vb.Kind, vb.Outcome)
	}
	if fc := c.events.facts(); fc.SawPlay || fc.Stats != nil || fc.LastTask != "" {
		t.Errorf("the cancelled machine was told of the run: %+v", fc)
	}
}

// TestStoppedByAnother: a machine whose recap is clean but that never reached the batch's end (the
// playbook stopped every host on another's failure) is a failure to retry, named after its last task.
func TestStoppedByAnother(t *testing.T) {
	v := stoppedByAnother(runResult{Instance: "m", Playbook: "bare-vm.yml", Events: runEvents{LastTask: "t2"}})
	if v.Kind != outcomeFailedTask || v.Outcome.failedTask != "t2" || v.Err == nil {
		t.Fatalf("verdict %+v", v)
	}
	for _, want := range []string{`"m"`, `"t2"`, "bare-vm.yml", "another machine", "any_errors_fatal"} {
		if !strings.Contains(v.Err.Error(), want) {
			t.Errorf("error %q does not say %q", v.Err, want)
		}
	}
	var pe *cloudprovider.PermanentError
	if errors.As(v.Err, &pe) {
		t.Errorf("a machine stopped by another's failure must be retried: %v", v.Err)
	}
}

// TestRouterReplay routes a real batch's output (testdata/README.md): three machines, one failing at
// its GPU check, one a container whose playbook includes other task files than the VMs'. Each machine
// is told exactly the tasks its host ran (the callback's host_task_start for it), never another's:
// broadcasting the play's task_start would tell the container twelve of the VMs' unit tasks. The
// outcomes are each machine's own.
func TestRouterReplay(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "batch-three-one-fails.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"fleet-0", "fleet-1", "fleet-2"}
	started := map[string][]string{}
	var hosts []*member
	for _, name := range names {
		m := &member{spec: runSpec{instance: name}, ctx: context.Background(), host: name,
			events: &eventLog{log: func(msg string, f map[string]any) {
				if msg == "task started" {
					started[name] = append(started[name], f["task"].(string))
				}
			}}}
		hosts = append(hosts, m)
	}
	// What the callback says each host ran.
	ran := map[string][]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var ev event
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if ev.Event == "host_task_start" && ev.Task != batchDoneTask {
			ran[ev.Host] = append(ran[ev.Host], ev.Task)
		}
	}
	w := &eventWriter{handle: newRouter(hosts).dispatch, raw: func(s string) { t.Errorf("not an event: %q", s) }}
	if _, err := w.Write(raw); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if !reflect.DeepEqual(started[name], ran[name]) {
			t.Errorf("%s was told of tasks\n%q\nits host ran\n%q", name, started[name], ran[name])
		}
	}
	if n := len(started["fleet-2"]); n == 0 || slices.Contains(started["fleet-2"], "monitoring : Install hydra's dcgm-exporter unit") {
		t.Errorf("the container was told of a VM's unit task (or of nothing): %q", started["fleet-2"])
	}
	const rc = 2 // ansible-playbook's exit code for the run: a host failed
	for i, m := range hosts {
		f := m.events.facts()
		v := classify(runResult{Instance: m.host, ExitCode: hostExitCode(rc, f.Stats, m.host), Events: f})
		if i == 1 {
			if v.Kind != outcomeFailedTask || v.Outcome.failedTask != "gpu_check : Check the promised GPUs" ||
				!strings.Contains(v.Outcome.message, "GPU 00000000:18:00.0 fell off the bus") || m.reachedEnd.Load() {
				t.Errorf("%s: %v %+v, reached the end %v", m.host, v.Kind, v.Outcome, m.reachedEnd.Load())
			}
			continue
		}
		if v.Kind != outcomeSuccess || !m.reachedEnd.Load() || f.Failure != nil {
			t.Errorf("%s: %v %v, reached the end %v, failure %+v", m.host, v.Kind, v.Err, m.reachedEnd.Load(), f.Failure)
		}
	}
}
