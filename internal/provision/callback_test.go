package provision

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// callbackPlaybook evaluates templates (filters, tests, a lookup, per-host values) on two hosts in
// every way hydra's playbooks do, and asserts what they gave.
const callbackPlaybook = `- name: Templates through the callback's caches
  hosts: all
  gather_facts: false
  vars:
    shared: "{{ [3, 1, 2] | sort | join(',') }}"
  tasks:
    - name: A value of each host's own
      ansible.builtin.set_fact:
        mine: "{{ 'host-' ~ inventory_hostname | upper }}"
    - name: The same templates give each host its own answer
      ansible.builtin.assert:
        that:
          - mine == 'host-' ~ (inventory_hostname | upper)
          - shared == '1,2,3'
          - "'abc' is match('a')"
          - (lookup('ansible.builtin.env', 'HOME') | length) > 0
          - "{{ [0, 5] | max }} == 5"
`

// runCallbackPlaybook runs callbackPlaybook with hydra's callback (as a batch does: its template
// cache in cache) and returns the hosts that reached the end and the failed events' messages.
func runCallbackPlaybook(t *testing.T, ansible, dir, cache string) (ok map[string]bool, failed []string) {
	t.Helper()
	cmd := exec.Command(ansible, "-i", filepath.Join(dir, "inventory"), filepath.Join(dir, "play.yml"))
	cmd.Env = append(ansibleBaseEnv(), "ANSIBLE_CONFIG="+filepath.Join(dir, "ansible.cfg"),
		"ANSIBLE_HOME="+filepath.Join(dir, "home"), "ANSIBLE_LOCAL_TEMP="+filepath.Join(dir, "tmp"),
		"ANSIBLE_STDOUT_CALLBACK=hydra_jsonl", "ANSIBLE_CALLBACK_PLUGINS="+filepath.Join(dir, "cb"),
		"HYDRA_TEMPLATE_CACHE="+cache)
	out, err := cmd.Output()
	if err != nil {
		t.Errorf("ansible-playbook: %v\n%s", err, out)
	}
	ok = map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev struct {
			Event, Host, Task string
			Result            map[string]any
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		switch {
		case ev.Event == "failed":
			failed = append(failed, ev.Host+": "+ev.Task+": "+strings.TrimSpace(strings.Join([]string{toString(ev.Result["msg"]), toString(ev.Result["assertion"])}, " ")))
		case ev.Event == "ok" && ev.Task == "The same templates give each host its own answer":
			ok[ev.Host] = true
		}
	}
	return ok, failed
}

func toString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return ""
}

// The callback compiles templates once per run and keeps them in Jinja2's bytecode cache in the run's
// directory, keeps the plugin loader's answers and loads no vars plugin: templating must give every
// host the answers it would without any of it, a cache left by an earlier run must serve a second,
// and a cache whose files are damaged must only be compiled again, never trusted.
func TestCallbackCachesKeepTemplatesRight(t *testing.T) {
	ansible, err := exec.LookPath("ansible-playbook")
	if err != nil {
		t.Skip("SKIPPING: ansible-playbook is not installed (apt-get install ansible-core)")
	}
	dir := t.TempDir()
	for _, d := range []string{"cb", "home", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		"cb/hydra_jsonl.py": string(callbackPlugin),
		"inventory":         "h1 ansible_connection=local\nh2 ansible_connection=local\n",
		"play.yml":          callbackPlaybook,
		// As a batch's: no vars plugin enabled.
		"ansible.cfg": "[defaults]\nvars_plugins_enabled = \nstrategy = free\nforks = 2\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cache := filepath.Join(dir, "jinja")
	check := func(run string) {
		t.Helper()
		ok, failed := runCallbackPlaybook(t, ansible, dir, cache)
		if len(failed) > 0 || !ok["h1"] || !ok["h2"] {
			t.Fatalf("%s: hosts that passed %v, failures %q", run, ok, failed)
		}
	}

	check("a first run")
	entries, err := os.ReadDir(cache)
	if err != nil || len(entries) == 0 {
		t.Fatalf("the run left no compiled template in %s (%v)", cache, err)
	}
	check("a run with the cache of the first")
	for _, e := range entries {
		if err := os.WriteFile(filepath.Join(cache, e.Name()), []byte("not bytecode"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	check("a run with every cached template damaged")
}
