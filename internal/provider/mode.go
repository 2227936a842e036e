package provider

import (
	"context"
	"os"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/hydragpu/terraform-provider-hydra/internal/osproc"
)

// Which Terraform command the provider serves, and so what its plans may refuse. A destroy plans in two
// walks, each with a provider of its own: first a normal plan that refreshes the state (its result is
// thrown away; an error in it still fails the destroy), then the destroy plan, in which Terraform plans
// every resource instance of the state with a null planned state and validates none. Nothing in the
// protocol tells the first walk from a plan of `terraform apply`, so the command line of the terraform
// process that started the provider is read where the system gives it (Linux /proc, macOS sysctl),
// with TF_CLI_ARGS and TF_CLI_ARGS_<command> inserted as Terraform inserts them. Where it cannot be
// read (Windows, a Linux without /proc, a provider served for TF_REATTACH_PROVIDERS) or names a command
// that both applies and destroys (`terraform test`), the command is unknown: name checks only warn at
// plan and the create refuses, and the leftovers guard runs where the protocol shows a destroy plan.

// command is what the provider knows of the terraform command that runs it.
type command int

const (
	// commandUnknown: the command line could not be read, or the command may plan both ways.
	commandUnknown command = iota
	// commandDestroys: `terraform destroy`, `apply -destroy` or `plan -destroy`.
	commandDestroys
	// commandNoDestroy: a command that never makes a destroy plan (`plan`, `apply`, `import`, ...).
	commandNoDestroy
)

// pluginCookie is go-plugin's handshake variable: Terraform and OpenTofu set it for the provider
// processes they start, so it is absent when the parent is not Terraform (TF_REATTACH_PROVIDERS, a
// debugger, a test binary).
const pluginCookie = "TF_PLUGIN_MAGIC_COOKIE"

// terraformArgs is the command line of the terraform command that started the provider, as Terraform
// itself parses it (with TF_CLI_ARGS and TF_CLI_ARGS_<command>): parentArgs (the parent's command line,
// nil where it cannot be read) and the environment getenv. nil when the provider's parent is not
// Terraform or its command line cannot be read.
func terraformArgs(getenv func(string) string, parentArgs func() []string) []string {
	if getenv(pluginCookie) == "" {
		return nil
	}
	args := parentArgs()
	if len(args) == 0 {
		return nil
	}
	return withEnvArgs(args, getenv)
}

// currentArgs is terraformArgs of this process's environment.
func currentArgs() []string { return terraformArgs(os.Getenv, osproc.ParentArgs) }

// currentCommand is the command the provider serves (see command).
func currentCommand() command { return commandOf(currentArgs()) }

// withEnvArgs inserts the words of TF_CLI_ARGS, then those of TF_CLI_ARGS_<command>, right after the
// command, as Terraform's main does (so the command's own variable comes first).
func withEnvArgs(args []string, getenv func(string) string) []string {
	at := subcommandIndex(args)
	if at < 0 {
		return args
	}
	sub := args[at]
	for _, name := range []string{"TF_CLI_ARGS", "TF_CLI_ARGS_" + strings.ReplaceAll(sub, "-", "_")} {
		extra := shellWords(getenv(name))
		if len(extra) == 0 {
			continue
		}
		merged := append(append(append([]string{}, args[:at+1]...), extra...), args[at+1:]...)
		args = merged
	}
	return args
}

// subcommandIndex is the index of the command (the first argument after the program that is not a
// flag), or -1.
func subcommandIndex(args []string) int {
	for i := 1; i < len(args); i++ {
		if !strings.HasPrefix(args[i], "-") {
			return i
		}
	}
	return -1
}

// shellWords splits s into words as a POSIX shell would, without expansions: blanks separate words,
// single quotes keep everything, double quotes keep all but a backslash before `"`, `\`, `$` or "`",
// and a backslash outside quotes keeps the next character.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	inWord, single, double := false, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case single:
			if c == '\'' {
				single = false
			} else {
				cur.WriteByte(c)
			}
		case double:
			switch {
			case c == '"':
				double = false
			case c == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0:
				i++
				cur.WriteByte(s[i])
			default:
				cur.WriteByte(c)
			}
		case c == '\'':
			single, inWord = true, true
		case c == '"':
			double, inWord = true, true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// commandOf tells what the terraform command line args (nil: unknown) does.
func commandOf(args []string) command {
	at := subcommandIndex(args)
	if at < 0 {
		return commandUnknown
	}
	switch sub := args[at]; sub {
	case "destroy":
		return commandDestroys
	case "test":
		// Runs applies and, at its end, destroys, all in this one command.
		return commandUnknown
	case "apply", "plan":
		destroy := false
		for _, a := range args[at+1:] {
			switch a {
			case "-destroy", "--destroy", "-destroy=true", "--destroy=true":
				destroy = true
			case "-destroy=false", "--destroy=false":
				destroy = false
			}
		}
		if destroy {
			return commandDestroys
		}
	}
	return commandNoDestroy
}

// refusesNamesAtPlan reports whether a plan may refuse a create for its name: only where the command
// is known not to destroy (a destroy's first walk plans creates too, and must not fail).
func (c command) refusesNamesAtPlan() bool { return c == commandNoDestroy }

// guardsOnDestroyPlan reports whether a resource's destroy plan (a null planned state) runs the
// leftovers guard: where the command is unknown, the walk has validated no resource instance and has
// not read this one. A destroy plan validates and reads nothing; a normal plan reads (refreshes) each
// instance it deletes before planning it, and validates each one it keeps. A known destroy already ran
// the guard at Configure.
func (c command) guardsOnDestroyPlan(validated int, read bool) bool {
	return c == commandUnknown && validated == 0 && !read
}

// leftoversGuard runs the leftovers guard on a resource's destroy plan where the command is unknown
// and the walk shows a destroy plan (command.guardsOnDestroyPlan): a destroy never reports success
// while creates cut short bill outside the state. Once per walk.
func (r *gpuInstanceResource) leftoversGuard(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	var id types.String
	resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root("id"), &id)...)
	if !r.data.walk.destroyPlanned(r.data.command, id.ValueString()) {
		return
	}
	if summary, detail, ok := leftoversError(r.data.machines); ok {
		resp.Diagnostics.AddError(summary, detail)
	}
}
