package provider

import (
	"slices"
	"testing"
)

func TestCommandOf(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want command
	}{
		{[]string{"terraform", "destroy", "-auto-approve"}, commandDestroys},
		{[]string{"/usr/local/bin/terraform", "-chdir=env/prod", "destroy"}, commandDestroys},
		{[]string{"tofu", "destroy"}, commandDestroys},
		{[]string{"terraform", "apply", "-destroy", "-auto-approve"}, commandDestroys},
		{[]string{"terraform", "plan", "-destroy", "-out=x"}, commandDestroys},
		{[]string{"terraform", "plan", "-destroy", "-destroy=false"}, commandNoDestroy},
		{[]string{"terraform", "apply", "-auto-approve"}, commandNoDestroy},
		{[]string{"terraform", "plan"}, commandNoDestroy},
		{[]string{"terraform", "import", "hydra_gpu_instance.a", "destroy"}, commandNoDestroy},
		{[]string{"terraform", "validate", "-destroy"}, commandNoDestroy},
		// `terraform test` applies, then destroys what it applied, in one command.
		{[]string{"terraform", "test"}, commandUnknown},
		{[]string{"terraform"}, commandUnknown},
		{nil, commandUnknown},
	} {
		if got := commandOf(tc.args); got != tc.want {
			t.Errorf("commandOf(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

// env is a fake environment for terraformArgs.
func env(vars ...string) func(string) string {
	return func(name string) string {
		for i := 0; i+1 < len(vars); i += 2 {
			if vars[i] == name {
				return vars[i+1]
			}
		}
		return ""
	}
}

const testCookie = "d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2"

// TestTerraformArgs: the command line comes from the injected parent's, only when Terraform started the
// provider (the plugin cookie is set), with TF_CLI_ARGS and TF_CLI_ARGS_<command> where Terraform puts
// them (right after the command, the command's own first).
func TestTerraformArgs(t *testing.T) {
	parent := func(args ...string) func() []string { return func() []string { return args } }
	for _, tc := range []struct {
		name   string
		getenv func(string) string
		parent func() []string
		want   []string
		cmd    command
	}{
		{"read", env(pluginCookie, testCookie), parent("terraform", "apply", "-auto-approve"),
			[]string{"terraform", "apply", "-auto-approve"}, commandNoDestroy},
		{"no /proc, no sysctl", env(pluginCookie, testCookie), parent(), nil, commandUnknown},
		{"reattached: the parent is not terraform", env(), parent("go", "test", "./..."), nil, commandUnknown},
		{"TF_CLI_ARGS", env(pluginCookie, testCookie, "TF_CLI_ARGS", "-destroy"), parent("terraform", "apply", "-auto-approve"),
			[]string{"terraform", "apply", "-destroy", "-auto-approve"}, commandDestroys},
		{"TF_CLI_ARGS_apply", env(pluginCookie, testCookie, "TF_CLI_ARGS_apply", "-destroy -lock-timeout=5m"), parent("terraform", "-chdir=x", "apply"),
			[]string{"terraform", "-chdir=x", "apply", "-destroy", "-lock-timeout=5m"}, commandDestroys},
		{"TF_CLI_ARGS_plan for an apply", env(pluginCookie, testCookie, "TF_CLI_ARGS_plan", "-destroy"), parent("terraform", "apply"),
			[]string{"terraform", "apply"}, commandNoDestroy},
		{"both, the command's first", env(pluginCookie, testCookie, "TF_CLI_ARGS", "-destroy=false", "TF_CLI_ARGS_plan", "-destroy"),
			parent("terraform", "plan", "-out=p"), []string{"terraform", "plan", "-destroy", "-destroy=false", "-out=p"}, commandNoDestroy},
		{"quoted plan file", env(pluginCookie, testCookie, "TF_CLI_ARGS_apply", `"my plan.tfplan"`), parent("terraform", "apply"),
			[]string{"terraform", "apply", "my plan.tfplan"}, commandNoDestroy},
	} {
		got := terraformArgs(tc.getenv, tc.parent)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: terraformArgs = %q, want %q", tc.name, got, tc.want)
		}
		if c := commandOf(got); c != tc.cmd {
			t.Errorf("%s: command %v, want %v", tc.name, c, tc.cmd)
		}
	}
}

func TestShellWords(t *testing.T) {
	for in, want := range map[string][]string{
		"":                            nil,
		"  -destroy  ":                {"-destroy"},
		`-var 'a=b c' -var "d=\"e\""`: {"-var", "a=b c", "-var", `d="e"`},
		`a\ b ''`:                     {"a b", ""},
	} {
		if got := shellWords(in); !slices.Equal(got, want) {
			t.Errorf("shellWords(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestWalkGuardsDestroyPlan: where the command is unknown, the destroy plan of a resource runs the
// leftovers guard only in a walk that validated no resource and did not read that one (a destroy
// plan); once per walk; never under a known command.
func TestWalkGuardsDestroyPlan(t *testing.T) {
	w := newWalk()
	if !w.destroyPlanned(commandUnknown, "a") {
		t.Fatal("a destroy plan's walk (nothing validated, nothing read) does not guard")
	}
	if w.destroyPlanned(commandUnknown, "b") {
		t.Fatal("the guard ran twice in one walk")
	}

	w = newWalk()
	w.refreshed("a")
	if w.destroyPlanned(commandUnknown, "a") {
		t.Fatal("a normal plan's deletion (the instance was refreshed first) guards")
	}
	w.validated("kept")
	if w.destroyPlanned(commandUnknown, "b") {
		t.Fatal("a walk that validated a resource (a normal plan) guards")
	}

	for _, c := range []command{commandDestroys, commandNoDestroy} {
		if newWalk().destroyPlanned(c, "a") {
			t.Fatalf("command %v guards at the destroy plan", c)
		}
	}
}
