package provision

import (
	"context"
	"testing"
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

// TestDispatch: a batch's events reach the machines they concern: a host's to its machine only, the
// recap split per host, task starts to every machine still in the play, nothing to a machine whose
// context ended; each machine's outcome is then its own.
func TestDispatch(t *testing.T) {
	type line struct{ machine, msg string }
	var got []line
	mk := func(name string, ctx context.Context) *member {
		return &member{spec: runSpec{instance: name}, ctx: ctx, host: name,
			events: &eventLog{log: func(msg string, _ map[string]any) { got = append(got, line{name, msg}) }}}
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	a, b, c := mk("a", context.Background()), mk("b", context.Background()), mk("c", gone)
	hosts := []*member{a, b, c}
	byHost := map[string]*member{"a": a, "b": b, "c": c}
	for _, ev := range []event{
		{Event: "play_start", Play: "p"},
		{Event: "task_start", Task: "t1"},
		{Event: "ok", Task: "t1", Host: "a"},
		{Event: "failed", Task: "t1", Host: "b", Result: map[string]any{"msg": "boom"}},
		{Event: "ok", Task: "t1", Host: "c"},
		{Event: "task_start", Task: "t2"},
		{Event: "ok", Task: "t2", Host: "a"},
		{Event: "stats", Stats: map[string]hostStats{"a": {OK: 2}, "b": {OK: 0, Failures: 1}, "c": {OK: 1}}},
	} {
		dispatch(ev, hosts, byHost)
	}
	want := []line{
		{"a", "play started"}, {"b", "play started"},
		{"a", "task started"}, {"b", "task started"},
		{"a", "task ok"}, {"b", "task failed"},
		{"a", "task started"}, // b left the play when its task failed
		{"a", "task ok"},
	}
	if len(got) != len(want) {
		t.Fatalf("logged %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %v, want %v", i, got[i], want[i])
		}
	}
	fa, fb := a.events.facts(), b.events.facts()
	if len(fa.Stats) != 1 || fa.Stats["a"].OK != 2 || fa.Failure != nil || fa.LastTask != "t2" {
		t.Errorf("machine a: %+v", fa)
	}
	if len(fb.Stats) != 1 || fb.Stats["b"].Failures != 1 || fb.Failure == nil || fb.Failure.Task != "t1" || fb.Failure.Message != "boom" {
		t.Errorf("machine b: %+v", fb)
	}
	if va := classify(runResult{Instance: "a", ExitCode: hostExitCode(2, fa.Stats, "a"), Events: fa}); va.Kind != outcomeSuccess {
		t.Errorf("machine a's outcome: %v %v", va.Kind, va.Err)
	}
	if vb := classify(runResult{Instance: "b", ExitCode: hostExitCode(2, fb.Stats, "b"), Events: fb}); vb.Kind != outcomeFailedTask || vb.Outcome.failedTask != "t1" {
		t.Errorf("machine b's outcome: %v %+v", vb.Kind, vb.Outcome)
	}
	if fc := c.events.facts(); fc.SawPlay || fc.Stats != nil {
		t.Errorf("the cancelled machine was told of the run: %+v", fc)
	}
}
