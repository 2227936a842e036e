package lambda

import (
	"strings"
	"testing"
	"time"
)

// Launches are paced as Lambda documents them, one every 12 s: a launch sooner than that is refused
// with the plain-text 429 page of Lambda's edge, before anything else is checked, and launches nothing.
func TestLaunchPacing(t *testing.T) {
	s, c := newServer(t, Options{LaunchInterval: DefaultLaunchInterval})
	addKey(t, s, "k")
	launchedID(t, launch(t, s, nil))
	for _, wait := range []time.Duration{0, 11 * time.Second} {
		c.Advance(wait)
		a := launch(t, s, map[string]any{"name": "lambda-vm-y"})
		if a.status != 429 || string(a.raw) != "error code: 1015" || !strings.HasPrefix(a.header.Get("Content-Type"), "text/plain") {
			t.Errorf("launch %v after the first: %d %v %q, want the edge's 429 page", wait, a.status, a.header, a.raw)
		}
	}
	if n := len(s.Instances()); n != 1 {
		t.Errorf("refused launches launched: %d instances", n)
	}
	c.Advance(time.Second) // 12 s after the first
	launchedID(t, launch(t, s, map[string]any{"name": "lambda-vm-y"}))
	// A launch refused for another reason still counts.
	c.Advance(12 * time.Second)
	if a := launch(t, s, map[string]any{"region_name": "nowhere"}); a.status != 400 {
		t.Errorf("bad region: %d %s", a.status, a.raw)
	}
	if a := launch(t, s, map[string]any{"name": "lambda-vm-z"}); a.status != 429 {
		t.Errorf("a launch right after a refused one: %d %s", a.status, a.raw)
	}
	// Reads are not paced.
	if a := call(t, s, "GET", BasePath+"/instances", nil); a.status != 200 {
		t.Errorf("list: %d", a.status)
	}
}

// Preempt: the instance answers status preempted, its capacity is free again, terminating it is refused
// as for a terminated one, and it is forgotten after TerminatedRetention.
func TestPreempt(t *testing.T) {
	s, c := newServer(t, Options{})
	addKey(t, s, "k")
	a := launch(t, s, map[string]any{"region_name": "us-south-1"}) // the only H100 SXM5 there
	id := launchedID(t, a)
	c.Advance(2 * time.Minute)
	if err := s.Preempt(id); err != nil {
		t.Fatal(err)
	}
	if err := s.Preempt(id); err == nil {
		t.Error("preempted twice")
	}
	got := call(t, s, "GET", BasePath+"/instances/"+id, nil)
	if got.status != 200 || got.dataMap()["status"] != StatusPreempted {
		t.Errorf("preempted instance: %d %s", got.status, got.raw)
	}
	if a := launch(t, s, map[string]any{"region_name": "us-south-1", "name": "lambda-vm-again"}); a.status != 200 {
		t.Errorf("the capacity of a preempted instance is not free: %d %s", a.status, a.raw)
	}
	if a := call(t, s, "POST", BasePath+"/instance-operations/terminate", map[string]any{"instance_ids": []string{id}}); a.status != 400 ||
		!strings.Contains(string(a.raw), "already preempted") {
		t.Errorf("terminating a preempted instance: %d %s", a.status, a.raw)
	}
	c.Advance(2 * time.Minute)
	if a := call(t, s, "GET", BasePath+"/instances/"+id, nil); a.status != 404 {
		t.Errorf("a preempted instance past retention: %d", a.status)
	}
}

// Account faults refuse launches in Lambda's error shapes: quota exceeded (counted) and an inactive
// account (until cleared).
func TestAccountFaults(t *testing.T) {
	s, _ := newServer(t, Options{})
	addKey(t, s, "k")
	if err := s.SetAccountFaults(AccountFaults{QuotaExceeded: 1}); err != nil {
		t.Fatal(err)
	}
	if a := launch(t, s, nil); a.status != 400 || a.errCode() != "global/quota-exceeded" {
		t.Errorf("quota: %d %s", a.status, a.raw)
	}
	launchedID(t, launch(t, s, nil)) // used up
	if err := s.SetAccountFaults(AccountFaults{AccountInactive: true}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if a := launch(t, s, nil); a.status != 403 || a.errCode() != "global/account-inactive" {
			t.Errorf("inactive: %d %s", a.status, a.raw)
		}
	}
	if err := s.SetAccountFaults(AccountFaults{}); err != nil {
		t.Fatal(err)
	}
	launchedID(t, launch(t, s, map[string]any{"name": "lambda-vm-after"}))
}
