package provision

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/playbooks"
)

func testRunner(t *testing.T, fsys fs.FS) *Runner {
	t.Helper()
	key, _ := clientKey(t)
	r, err := New(Config{PrivateKey: key, Playbooks: fsys})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestDigest(t *testing.T) {
	base := fstest.MapFS{
		"bare-vm.yml":                     {Data: []byte("- hosts: all\n  roles: [a]\n")},
		"execlet.yml":                     {Data: []byte("- hosts: all\n")},
		"roles/a/tasks/main.yml":          {Data: []byte("- ping:\n")},
		"roles/a/files/detect.py":         {Data: []byte("print(1)\n")},
		"roles/a/defaults/main.yml":       {Data: []byte("x: 1\n")},
		".git/objects/irrelevant-to-runs": {Data: []byte("x")},
	}
	pool := inventory.Pool{Name: "p", Kind: inventory.KindVM}
	vars := map[string]any{"customer_ssh_keys": []any{"ssh-ed25519 AAAA x"}, "n": 1, "m": map[string]any{"b": true, "a": "z"}}
	ref, err := testRunner(t, base).Digest(pool, vars)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ref, "sha256:") || len(ref) != len("sha256:")+16 {
		t.Fatalf("digest %q has the wrong shape", ref)
	}
	clone := func(edit func(fstest.MapFS)) fstest.MapFS {
		m := fstest.MapFS{}
		for k, v := range base {
			c := *v
			m[k] = &c
		}
		edit(m)
		return m
	}
	tests := []struct {
		name    string
		fsys    fstest.MapFS
		pool    inventory.Pool
		vars    map[string]any
		changed bool
	}{
		{"same input", base, pool, vars, false},
		{"map order does not matter", base, pool, map[string]any{"m": map[string]any{"a": "z", "b": true}, "n": 1, "customer_ssh_keys": []string{"ssh-ed25519 AAAA x"}}, false},
		{"hidden directories are not provisioning input", clone(func(m fstest.MapFS) { m[".git/objects/irrelevant-to-runs"] = &fstest.MapFile{Data: []byte("y")} }), pool, vars, false},
		{"one playbook byte", clone(func(m fstest.MapFS) { m["bare-vm.yml"] = &fstest.MapFile{Data: []byte("- hosts: all\n  roles: [b]\n")} }), pool, vars, true},
		{"a role file", clone(func(m fstest.MapFS) { m["roles/a/files/detect.py"] = &fstest.MapFile{Data: []byte("print(2)\n")} }), pool, vars, true},
		{"a new role file", clone(func(m fstest.MapFS) { m["roles/a/vars/main.yml"] = &fstest.MapFile{Data: []byte("y: 2\n")} }), pool, vars, true},
		{"a variable value", base, pool, map[string]any{"customer_ssh_keys": []any{"ssh-ed25519 AAAB x"}, "n": 1, "m": map[string]any{"b": true, "a": "z"}}, true},
		{"a number", base, pool, map[string]any{"customer_ssh_keys": []any{"ssh-ed25519 AAAA x"}, "n": 2, "m": map[string]any{"b": true, "a": "z"}}, true},
		{"another playbook", base, inventory.Pool{Name: "p", Kind: inventory.KindExeclet}, vars, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := testRunner(t, tc.fsys).Digest(tc.pool, tc.vars)
			if err != nil {
				t.Fatal(err)
			}
			if (got != ref) != tc.changed {
				t.Errorf("digest %s vs %s: changed=%v, want %v", got, ref, got != ref, tc.changed)
			}
		})
	}
	if _, err := testRunner(t, base).Digest(inventory.Pool{Name: "p", Kind: "vm", Playbook: "missing.yml"}, nil); err == nil {
		t.Error("a missing playbook must be an error")
	}
}

func TestDigestOfEmbeddedPlaybooks(t *testing.T) {
	r := testRunner(t, nil)
	for _, kind := range inventory.Kinds {
		if _, err := r.Digest(inventory.Pool{Name: "p", Kind: kind}, nil); err != nil {
			t.Errorf("%s: %v", kind, err)
		}
	}
}

func TestMarkUnsafe(t *testing.T) {
	in, err := normalize(map[string]any{
		"s": "{{ 7*7 }}", "n": 3, "b": true, "z": nil,
		"l": []string{"a", "b"},
		"m": map[string]any{"deep": []any{map[string]any{"x": "$(id)"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(markUnsafe(in))
	want := `{"b":true,"l":[{"__ansible_unsafe":"a"},{"__ansible_unsafe":"b"}],"m":{"deep":[{"x":{"__ansible_unsafe":"$(id)"}}]},"n":3,"s":{"__ansible_unsafe":"{{ 7*7 }}"},"z":null}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

func TestPlaybookVars(t *testing.T) {
	r := testRunner(t, nil)
	req := cloudprovider.ProvisionRequest{
		Instance: cloudprovider.Instance{Name: "pi-vm-a", Cloud: "primeintellect"},
		Pool:     inventory.Pool{Name: "prime-intellect-vm-pool", Kind: "vm"},
		GPUType:  "h100", GPUCount: 8,
		Vars: map[string]any{"customer_ssh_keys": []string{"k"}, "hydra_gpu_count": 1},
	}
	vars, err := r.playbookVars(req)
	if err != nil {
		t.Fatal(err)
	}
	if vars["hydra_gpu_count"] != 8 {
		t.Errorf("hydra's own variables must win over the user's: %v", vars["hydra_gpu_count"])
	}
	if !reflect.DeepEqual(vars["hydra_expected_gpu_model"], map[string]any{"__ansible_unsafe": `\bH100\b`}) {
		t.Errorf("expected model: %v", vars["hydra_expected_gpu_model"])
	}
	if !reflect.DeepEqual(vars["customer_ssh_keys"], []any{map[string]any{"__ansible_unsafe": "k"}}) {
		t.Errorf("user variable: %v", vars["customer_ssh_keys"])
	}
	digest, err := r.Digest(req.Pool, req.Vars)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"hydra_provisioning_digest": digest, "hydra_playbook": "bare-vm.yml", "hydra_marker_path": DefaultMarkerPath} {
		if !reflect.DeepEqual(vars[k], map[string]any{"__ansible_unsafe": want}) {
			t.Errorf("%s = %v, want %q", k, vars[k], want)
		}
	}
	for _, bad := range []map[string]any{
		{"ansible_ssh_common_args": "-o StrictHostKeyChecking=no"},
		{"Ansible_Become": true},
		{"not valid": 1},
		{"m": map[string]any{"{{ lookup('pipe','id') }}": 1}},
	} {
		req.Vars = bad
		if _, err := r.playbookVars(req); err == nil {
			t.Errorf("variables %v must be refused", bad)
		}
	}
}

func TestFailureMessage(t *testing.T) {
	tests := []struct {
		res  map[string]any
		want string
	}{
		{map[string]any{"msg": "expected 4 GPU(s)"}, "expected 4 GPU(s)"},
		{map[string]any{"msg": "non-zero return code", "rc": float64(2), "stderr": "nvidia-smi: not found"}, "non-zero return code 2: nvidia-smi: not found"},
		{map[string]any{"msg": "One or more items failed", "item_msg": "bad item"}, "One or more items failed: bad item"},
		// A loop's failed item: its label, exit code and stderr reach the message, not only "One or more items failed".
		{map[string]any{"msg": "One or more items failed", "item_msg": "non-zero return code", "item_rc": float64(1),
			"item_stderr": "/usr/bin/prometheus-node-exporter exited at once; see /var/log/hydra/node-exporter.log", "item": "node-exporter"},
			"One or more items failed: item node-exporter: non-zero return code 1: /usr/bin/prometheus-node-exporter exited at once; see /var/log/hydra/node-exporter.log"},
		{map[string]any{"msg": "One or more items failed", "item_msg": "MODULE FAILURE", "item_module_stderr": "Traceback: boom", "item": "x"},
			"One or more items failed: item x: MODULE FAILURE: Traceback: boom"},
		{map[string]any{"stdout": "only stdout"}, "only stdout"},
		{map[string]any{}, "the task failed without a message"},
		// A task that failed inside Ansible's machinery (a worker's exception): its type and message.
		{map[string]any{"failed": true, "stdout": "", "exception": "Traceback (most recent call last):\n  File \"/usr/lib/python3/dist-packages/ansible/executor/process/worker.py\", line 158, in _run\n    executor_result = TaskExecutor(\nTypeError: TaskExecutor.__init__() missing 1 required positional argument: 'variable_manager'\n"},
			"TypeError: TaskExecutor.__init__() missing 1 required positional argument: 'variable_manager'"},
		// A message that already says the exception's message gets its type only; one that does not gets both.
		{map[string]any{"msg": "Unexpected failure during module execution: boom", "exception": "Traceback:\nValueError: boom"}, "Unexpected failure during module execution: boom (ValueError)"},
		{map[string]any{"msg": "MODULE FAILURE", "exception": "Traceback:\nKeyError: 'x'\n"}, "MODULE FAILURE: KeyError: 'x'"},
		// ansible-core 2.19: the message has the exception's message, the traceback its type.
		{map[string]any{"msg": "Task failed: missing 1 argument", "exception": "Traceback:\n  File \"x\"\nTypeError: missing 1 argument\n"}, "Task failed: missing 1 argument (TypeError)"},
		{map[string]any{"msg": "Task failed: boom", "exception": "(traceback unavailable)"}, "Task failed: boom"},
		// ansible-core 2.19.0: a chain, whose cause comes first.
		{map[string]any{"msg": "Task failed: boom", "exception": "Traceback (most recent call last):\n  File \"x\", line 1, in f\n    raise TypeError('boom')\nTypeError: boom\n\n" +
			"The above exception was the direct cause of the following exception:\n\nTraceback (most recent call last):\n  File \"y\"\nansible.errors.AnsibleTaskError: Task failed: boom\n"},
			"Task failed: boom (TypeError)"},
		{map[string]any{"exception": "(traceback unavailable)"}, "(traceback unavailable)"},
	}
	for _, tc := range tests {
		if got := failureMessage(tc.res); got != tc.want {
			t.Errorf("failureMessage(%v) = %q, want %q", tc.res, got, tc.want)
		}
	}
	long := strings.Repeat("é", 2000)
	if c := cut(long, summaryLimit); len(c) > summaryLimit || !strings.HasSuffix(c, "…") {
		t.Errorf("cut: %d bytes", len(c))
	}
}

func TestEventWriter(t *testing.T) {
	var events []event
	var raw []string
	w := &eventWriter{handle: func(e event) { events = append(events, e) }, raw: func(s string) { raw = append(raw, s) }}
	input := `{"event": "task_start", "task": "a"}` + "\n\n" + `not json` + "\n" + `{"event": "stats", "stats": {"h": {"ok": 3, "failures": 1}}}` + "\n" + `{"event": "ok"`
	for _, chunk := range []string{input[:10], input[10:50], input[50:]} {
		if _, err := w.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if len(events) != 2 || events[0].Task != "a" || events[1].Stats["h"].Failures != 1 || events[1].Stats["h"].OK != 3 {
		t.Errorf("events: %+v", events)
	}
	if len(raw) != 1 || raw[0] != "not json" {
		t.Errorf("raw: %q", raw)
	}
}

func TestNew(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Error("a missing key must be refused")
	}
	_, err := New(Config{PrivateKey: []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nbm9wZQ==\n-----END OPENSSH PRIVATE KEY-----\n")})
	if err == nil || strings.Contains(err.Error(), "bm9wZQ") {
		t.Errorf("a bad key must be refused without echoing it: %v", err)
	}
	key, pub := clientKey(t)
	r, err := New(Config{PrivateKey: key})
	if err != nil || r.PublicKey() != pub {
		t.Errorf("PublicKey %q, want %q (%v)", r.PublicKey(), pub, err)
	}
	if _, err := New(Config{PrivateKey: key, GPUModels: map[string]string{"x": "("}}); err == nil {
		t.Error("a bad GPU model pattern must be refused")
	}
	for _, bad := range []string{"relative/marker.json", "/var/lib/../hydra.json", "/", "/var/lib/hydra/x\n.json"} {
		if _, err := New(Config{PrivateKey: key, MarkerPath: bad}); err == nil {
			t.Errorf("marker path %q must be refused", bad)
		}
	}
}

func TestCheckAnsibleMissing(t *testing.T) {
	err := CheckAnsible(filepath.Join(t.TempDir(), "no-such-ansible-playbook"))
	if err == nil || !strings.Contains(err.Error(), "apt-get install ansible-core") || !strings.Contains(err.Error(), "pipx install ansible-core") {
		t.Errorf("want install instructions, got %v", err)
	}
	t.Setenv("PATH", t.TempDir())
	if err := CheckAnsible(""); err == nil || !strings.Contains(err.Error(), "not found on PATH") {
		t.Errorf("want a PATH error, got %v", err)
	}
}

// TestSyntaxCheck runs ansible-playbook --syntax-check on every embedded playbook, with only
// ansible-core's own collections (the playbooks must not need more).
func TestSyntaxCheck(t *testing.T) {
	ansible, err := exec.LookPath("ansible-playbook")
	if err != nil {
		t.Skip("SKIPPING: ansible-playbook is not installed (apt-get install ansible-core)")
	}
	if err := CheckAnsible(""); err != nil {
		t.Fatal(err)
	}
	r := testRunner(t, nil)
	dir := t.TempDir()
	pb, err := r.stagePlaybooks(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "ansible.cfg")
	if err := os.WriteFile(cfg, []byte("[defaults]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	names, _ := fs.Glob(playbooks.FS, "*.yml")
	if len(names) < 2 {
		t.Fatalf("embedded playbooks: %v", names)
	}
	args := []string{"--syntax-check", "-i", "localhost,"}
	for _, name := range names {
		args = append(args, filepath.Join(pb, name))
	}
	cmd := exec.Command(ansible, args...)
	cmd.Env = append(ansibleBaseEnv(), "ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=False", "ANSIBLE_CONFIG="+cfg,
		"ANSIBLE_HOME="+filepath.Join(dir, "home"), "ANSIBLE_LOCAL_TEMP="+filepath.Join(dir, "tmp"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("%v: %v\n%s", names, err, out)
	}
	if strings.Contains(string(out), "WARNING") {
		t.Errorf("warnings:\n%s", out)
	}
	for _, name := range names {
		if !strings.Contains(string(out), "playbook: "+filepath.Join(pb, name)) {
			t.Errorf("%s was not checked:\n%s", name, out)
		}
	}
}

func TestExpectedGPUModel(t *testing.T) {
	key, _ := clientKey(t)
	r, err := New(Config{PrivateKey: key, GPUModels: map[string]string{"h100": "H100 NVL"}})
	if err != nil {
		t.Fatal(err)
	}
	for typ, want := range map[string]string{"h100": "H100 NVL", "l4": `\bL4\b`, "a100-40gb": `\bA100-40GB\b`, "": ""} {
		if got := r.ExpectedGPUModel(typ); got != want {
			t.Errorf("ExpectedGPUModel(%q) = %q, want %q", typ, got, want)
		}
	}
	var perm *cloudprovider.PermanentError
	if err := checkPlaybookName("../etc/passwd.yml"); !errors.As(err, &perm) {
		t.Errorf("a playbook outside the directory must be refused: %v", err)
	}
}
