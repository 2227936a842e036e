package provision

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// strategyPlaybook has, on two hosts, every kind of task whose condition decides it: skipped with a
// register that a later task reads, a skipped include of a file that does not exist (an include the
// strategy mishandled would load it and fail), a loop whose condition is per item, a delegated task, a
// condition that cannot be evaluated (the worker's error, as before), and a skip whose condition
// writes down which process evaluated it. Then the tasks that run nothing on the host: an include that
// runs (its task reads a variable of the play), a failing assert and a failing fail (their messages), a
// set_fact read by a later assert, and a set_fact whose value writes down which process templated it.
const strategyPlaybook = `- name: Conditions
  hosts: all
  gather_facts: false
  roles:
    - a_role
  tasks:
    - name: The role ran
      ansible.builtin.assert:
        that: role_ran == inventory_hostname
    - name: Skipped on h1, with a register
      ansible.builtin.set_fact:
        ran: true
      register: gated
      when: inventory_hostname == 'h2'
    - name: The register of a skip is a skip
      ansible.builtin.assert:
        that: (gated is skipped) == (inventory_hostname == 'h1')
    - name: A skipped include of a file that is not there
      ansible.builtin.include_tasks: not-there.yml
      when: inventory_hostname == 'nobody'
    - name: A loop decides per item
      ansible.builtin.set_fact:
        kept: "{{ (kept | default([])) + [item] }}"
      loop: [1, 2, 3]
      when: item > 1
    - name: The loop kept two items
      ansible.builtin.assert:
        that: kept == [2, 3]
    - name: A delegated skip
      ansible.builtin.set_fact:
        delegated: true
      delegate_to: localhost
      when: false
    - name: A condition that cannot be evaluated
      ansible.builtin.set_fact:
        never: true
      when: not_defined_anywhere.attribute
      ignore_errors: true
    - name: Where the condition was evaluated
      ansible.builtin.set_fact:
        never: true
      when: lookup('ansible.builtin.pipe', 'echo $PPID >> ' ~ pid_file) is none
    - name: An include that runs
      ansible.builtin.include_tasks: included.yml
    - name: The included task ran
      ansible.builtin.assert:
        that: included == 'h-' ~ inventory_hostname
    - name: A failing assert
      ansible.builtin.assert:
        that: inventory_hostname == 'nobody'
        fail_msg: "{{ inventory_hostname }} is not nobody"
      ignore_errors: true
    - name: A failing fail
      ansible.builtin.fail:
        msg: "{{ inventory_hostname }} failed on purpose"
      when: inventory_hostname == 'h2'
      ignore_errors: true
    - name: Where a set_fact was templated
      ansible.builtin.set_fact:
        templated_by: "{{ lookup('ansible.builtin.pipe', 'echo $PPID >> ' ~ pid_file) }}"
    - name: Notify a handler
      ansible.builtin.set_fact:
        notified: true
      changed_when: true
      notify: The handler
    - name: Run the handlers now
      ansible.builtin.meta: flush_handlers
    - name: The handler ran
      ansible.builtin.assert:
        that: handled == inventory_hostname
    - name: A conditional end that does not end
      ansible.builtin.meta: end_host
      when: inventory_hostname == 'nobody'
    - name: A command's JSON output
      ansible.builtin.command: "echo '{\"a\": {\"b\": [1, \"two\", true, null]}, \"t\": \"{{ '{{' }} 1 + 1 }}\"}'"
      register: out
      changed_when: false
    - name: A mapping made of it
      ansible.builtin.set_fact:
        made: "{{ out.stdout | from_json }}"
    - name: The mapping reads, combines and dumps as it always did, its strings never templated
      ansible.builtin.assert:
        that:
          - made is mapping
          - made.a.b[1] == 'two' and made.a.b[2] and made.a.b[3] is none
          - (made | combine({'c': 1})).c == 1
          - made | to_json == out.stdout | from_json | to_json
          - (made | to_nice_yaml) is search('- two')
          - (made | dict2items | map(attribute='key') | sort) == ['a', 't']
          - made.t == '{' ~ '{ 1 + 1 }}'
          - hostvars[inventory_hostname].made.t == made.t
    - name: The end
      ansible.builtin.set_fact:
        done: true
  handlers:
    - name: The handler
      ansible.builtin.set_fact:
        handled: "{{ inventory_hostname }}"
`

// strategyIncluded is the file strategyPlaybook includes.
const strategyIncluded = `- name: The included task
  ansible.builtin.set_fact:
    included: "h-{{ inventory_hostname }}"
`

// strategyEvent is what a run's callback said of one host and task.
type strategyEvent struct{ Event, Host, Task, Msg string }

// runStrategyPlaybook runs strategyPlaybook with the given strategy and hydra's callback and returns
// its events (the task starts and results, sorted: hosts run at their own pace), its stats, the pids
// that evaluated the last condition and the pid of ansible-playbook.
func runStrategyPlaybook(t *testing.T, ansible, strategy string) (events []strategyEvent, stats string, pids []int, controller int) {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"cb", "strategy", "home", "tmp", "roles/a_role/tasks"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	pidFile := filepath.Join(dir, "pids")
	files := map[string]string{
		"cb/hydra_jsonl.py":           string(callbackPlugin),
		"strategy/hydra_free.py":      string(strategyPlugin),
		"inventory":                   "h1 ansible_connection=local\nh2 ansible_connection=local\nlocalhost ansible_connection=local\n",
		"play.yml":                    strings.Replace(strategyPlaybook, "hosts: all", "hosts: h1:h2", 1),
		"included.yml":                strategyIncluded,
		"roles/a_role/tasks/main.yml": "- name: The role's task\n  ansible.builtin.set_fact:\n    role_ran: \"{{ inventory_hostname }}\"\n",
		"ansible.cfg":                 "[defaults]\nvars_plugins_enabled = \nforks = 2\nstrategy_plugins = " + filepath.Join(dir, "strategy") + "\nstrategy = " + strategy + "\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(ansible, "-i", filepath.Join(dir, "inventory"), "-e", "pid_file="+pidFile, filepath.Join(dir, "play.yml"))
	cmd.Env = append(ansibleBaseEnv(), "ANSIBLE_CONFIG="+filepath.Join(dir, "ansible.cfg"),
		"ANSIBLE_HOME="+filepath.Join(dir, "home"), "ANSIBLE_LOCAL_TEMP="+filepath.Join(dir, "tmp"),
		"ANSIBLE_STDOUT_CALLBACK=hydra_jsonl", "ANSIBLE_CALLBACK_PLUGINS="+filepath.Join(dir, "cb"))
	var out strings.Builder
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	controller = cmd.Process.Pid
	if err := cmd.Wait(); err != nil {
		t.Fatalf("ansible-playbook with strategy %s: %v\n%s", strategy, err, out.String())
	}
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev struct {
			Event, Host, Task string
			Result            map[string]any
			Stats             map[string]any
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		switch ev.Event {
		case "host_task_start", "ok", "skipped", "failed", "unreachable":
			// The message names the playbook's file, in this run's own directory.
			msg := strings.ReplaceAll(toString(ev.Result["msg"]), dir, "DIR")
			events = append(events, strategyEvent{ev.Event, ev.Host, ev.Task, msg})
		case "stats":
			b, _ := json.Marshal(ev.Stats)
			stats = string(b)
		}
	}
	sort.Slice(events, func(i, j int) bool {
		return fmt.Sprint(events[i]) < fmt.Sprint(events[j])
	})
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("strategy %s: the last condition was never evaluated: %v\n%s", strategy, err, out.String())
	}
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	return events, stats, pids, controller
}

// faultInjector is a sitecustomize.py that makes TaskExecutor's constructor raise in the controller
// (the process that imported it first; its forked workers are left alone), as 2.14's positional
// arguments do on a later ansible-core, and writes down each time it did.
const faultInjector = `import os
_controller = os.getpid()
try:
    from ansible.executor import task_executor
    _init = task_executor.TaskExecutor.__init__

    def _faulty(self, *args, **kwargs):
        if os.getpid() == _controller:
            with open(%q, 'a') as f:
                f.write('fault\n')
            raise TypeError("TaskExecutor.__init__() missing 1 required positional argument: 'variable_manager' (injected)")
        _init(self, *args, **kwargs)
    task_executor.TaskExecutor.__init__ = _faulty
except Exception as e:
    with open(%q, 'a') as f:
        f.write('not injected: %%r\n' %% e)
`

// TestHydraFree compares hydra_free's runs of strategyPlaybook with one run of Ansible's free strategy
// (hydra_free runs only on 2.14: Debian 12's, whatever this machine has installed).
func TestHydraFree(t *testing.T) {
	_, ansible := fetchAnsibleCore(t, "debian-12")
	freeEvents, freeStats, freePids, freeController := runStrategyPlaybook(t, ansible, "free")
	for _, pid := range freePids {
		if pid == freeController {
			t.Fatalf("free: the controller %d evaluated a condition itself (%v): the comparisons prove nothing", freeController, freePids)
		}
	}

	// hydra_free skips a task whose condition is false in the controller, without forking a worker for
	// it, and everything the run reports (each host's task starts, results, messages, registers, stats)
	// is what Ansible's free strategy reports for the same playbook.
	t.Run("skips without a worker", func(t *testing.T) {
		events, stats, pids, controller := runStrategyPlaybook(t, ansible, "hydra_free")
		if !reflect.DeepEqual(events, freeEvents) {
			t.Errorf("hydra_free reported\n%v\nthe free strategy\n%v", events, freeEvents)
		}
		if stats != freeStats {
			t.Errorf("hydra_free's stats %s, the free strategy's %s", stats, freeStats)
		}
		// The run went through every kind of task (a sanity check of the comparison above).
		var roleRan, skipped, failedUndefined, failedOnPurpose, handled, madeRead, ended int
		for _, ev := range events {
			switch {
			case ev.Event == "skipped":
				skipped++
			case ev.Event == "failed" && strings.Contains(ev.Msg, "not_defined_anywhere"):
				failedUndefined++
			case ev.Event == "failed" && (ev.Msg == "h1 is not nobody" || ev.Msg == "h2 is not nobody" || ev.Msg == "h2 failed on purpose"):
				failedOnPurpose++
			case ev.Event == "ok" && ev.Task == "The role ran":
				roleRan++
			case ev.Event == "ok" && ev.Task == "The handler ran":
				handled++ // the handler ran at the flush_handlers meta task, before this
			case ev.Event == "ok" && ev.Task == "The mapping reads, combines and dumps as it always did, its strings never templated":
				madeRead++
			case ev.Event == "ok" && ev.Task == "The end":
				ended++
			}
		}
		if roleRan != 2 || skipped != 10 || failedUndefined != 2 || failedOnPurpose != 3 || handled != 2 || madeRead != 2 || ended != 2 {
			t.Errorf("hydra_free: %d hosts ran the role (want 2), %d skips (want 10), %d failures naming the undefined variable (want 2), %d failures on purpose (want 3), %d hosts whose handler ran at the flush (want 2), %d hosts that read the mapping made of a command's output (want 2), %d hosts at the end (want 2): %v",
				roleRan, skipped, failedUndefined, failedOnPurpose, handled, madeRead, ended, events)
		}
		// Who evaluated the skip's condition and templated the set_fact: the controller itself with
		// hydra_free (both hosts, twice each), workers with free.
		if len(pids) != 4 {
			t.Errorf("hydra_free: %d evaluations written down, want 4: %v", len(pids), pids)
		}
		for _, pid := range pids {
			if pid != controller {
				t.Errorf("hydra_free: processes %v evaluated, want only the controller %d", pids, controller)
				break
			}
		}
	})

	// An error inside hydra_free's own machinery (here TaskExecutor refusing its arguments in the
	// controller) hands the task to a worker, as plain free would have: the run reports exactly what free
	// reports, and the tasks the controller would have run itself ran in workers.
	t.Run("a fault goes to a worker", func(t *testing.T) {
		dir := t.TempDir()
		faults := filepath.Join(dir, "faults")
		site := filepath.Join(dir, "site")
		wrapper := filepath.Join(dir, "ansible-playbook")
		if err := os.MkdirAll(site, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(site, "sitecustomize.py"), []byte(fmt.Sprintf(faultInjector, faults, faults)), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(wrapper, []byte("#!/bin/sh\nPYTHONPATH="+site+" exec "+ansible+" \"$@\"\n"), 0o700); err != nil {
			t.Fatal(err)
		}
		events, stats, pids, controller := runStrategyPlaybook(t, wrapper, "hydra_free")
		b, _ := os.ReadFile(faults)
		// (Python processes other than Ansible's, such as the modules' own, have no ansible to patch.)
		if n := strings.Count(string(b), "fault\n"); n < 2 {
			t.Fatalf("the fault was injected %d times (want at least once per host): %q", n, b)
		}
		if !reflect.DeepEqual(events, freeEvents) {
			t.Errorf("hydra_free with a fault reported\n%v\nthe free strategy\n%v", events, freeEvents)
		}
		if stats != freeStats {
			t.Errorf("hydra_free with a fault: stats %s, the free strategy's %s", stats, freeStats)
		}
		// The skip's condition is still evaluated by the controller (no TaskExecutor there); the set_fact
		// it could not run went to workers.
		inController := 0
		for _, pid := range pids {
			if pid == controller {
				inController++
			}
		}
		if len(pids) != 4 || inController != 2 {
			t.Errorf("with a fault, %d of the evaluations %v were the controller's (%d), want 2 of 4", inController, pids, controller)
		}
	})
}
