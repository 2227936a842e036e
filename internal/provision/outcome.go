package provision

import (
	"fmt"
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// outcomeKind is how a run ended.
type outcomeKind int

const (
	outcomeSuccess outcomeKind = iota
	// outcomeCancelled: the context ended the run (recorded by hydra, whatever ansible's exit code).
	outcomeCancelled
	// outcomeHostKeyMismatch: ssh refused the machine's host key (permanent).
	outcomeHostKeyMismatch
	// outcomeUnreachable: the host was lost (retryable).
	outcomeUnreachable
	// outcomeFailedTask: a task failed (retryable).
	outcomeFailedTask
	// outcomeSyntaxError: ansible-playbook refused the playbook before any play ran (permanent).
	outcomeSyntaxError
	// outcomeNoResult: ansible-playbook stopped without its recap (a controller-side crash).
	outcomeNoResult
	// outcomeExitCode: a recap without failures, yet a non-zero exit code.
	outcomeExitCode
)

func (k outcomeKind) String() string {
	switch k {
	case outcomeSuccess:
		return "success"
	case outcomeCancelled:
		return "cancelled"
	case outcomeHostKeyMismatch:
		return "host key mismatch"
	case outcomeUnreachable:
		return "unreachable"
	case outcomeFailedTask:
		return "failed task"
	case outcomeSyntaxError:
		return "syntax error"
	case outcomeNoResult:
		return "no result"
	case outcomeExitCode:
		return "exit code"
	}
	return fmt.Sprintf("outcomeKind(%d)", int(k))
}

// runResult is everything a run's outcome is decided from.
type runResult struct {
	Instance, Playbook string
	// ExitCode is ansible-playbook's (-1 when a signal killed it).
	ExitCode int
	// Events is what the callback's events said.
	Events runEvents
	// StderrTail is the end of ansible-playbook's stderr.
	StderrTail string
	// CtxErr is the context's error when the run was cancelled, nil otherwise.
	CtxErr error
}

// verdict is a classified run: its kind, the summary for ProvisionResult, and the error to return.
type verdict struct {
	Kind    outcomeKind
	Outcome runOutcome
	Err     error
}

// classify decides a run's outcome. It is pure: success needs exit code 0 and a recap without failed
// or unreachable hosts (the exit code alone is ambiguous: 2 is a failed task or a bad flag, 4 an
// unreachable host or a YAML error). Success wins over a cancellation that arrived as the run finished.
func classify(in runResult) verdict {
	ev := in.Events
	name := in.Instance
	clean := len(ev.Stats) > 0
	for _, s := range ev.Stats {
		if s.Failures > 0 || s.Unreachable > 0 {
			clean = false
		}
	}
	if in.ExitCode == 0 && clean {
		return verdict{Kind: outcomeSuccess}
	}
	if in.CtxErr != nil {
		// Recorded by us: ansible's own exit code (4 or 99, timing dependent) does not say it.
		at := ""
		if ev.LastTask != "" {
			at = fmt.Sprintf(" during task %q", ev.LastTask)
		}
		return verdict{
			Kind:    outcomeCancelled,
			Outcome: runOutcome{failedTask: ev.LastTask, message: "cancelled"},
			Err:     fmt.Errorf("provisioning %q cancelled%s (the machine may be half-provisioned; re-running is safe): %w", name, at, in.CtxErr),
		}
	}
	stderr := strings.TrimSpace(in.StderrTail)
	switch {
	case ev.Unreachable != nil:
		te := *ev.Unreachable
		te.Instance = name
		out := runOutcome{failedTask: te.Task, message: te.Message}
		if isHostKeyFailure(te.Message) {
			return verdict{Kind: outcomeHostKeyMismatch, Outcome: out, Err: &cloudprovider.PermanentError{Err: &te}}
		}
		return verdict{Kind: outcomeUnreachable, Outcome: out, Err: &te}
	case ev.Failure != nil:
		te := *ev.Failure
		te.Instance = name
		return verdict{Kind: outcomeFailedTask, Outcome: runOutcome{failedTask: te.Task, message: te.Message}, Err: &te}
	case !ev.SawPlay:
		msg := cut(ansibleErrorText(stderr), summaryLimit)
		return verdict{
			Kind:    outcomeSyntaxError,
			Outcome: runOutcome{message: msg},
			Err:     &cloudprovider.PermanentError{Err: &PlaybookError{Playbook: in.Playbook, ExitCode: in.ExitCode, Message: msg}},
		}
	case ev.Stats == nil:
		msg := cut(ansibleErrorText(stderr), summaryLimit)
		return verdict{
			Kind:    outcomeNoResult,
			Outcome: runOutcome{failedTask: ev.LastTask, message: msg},
			Err:     fmt.Errorf("provisioning %q: ansible-playbook stopped (exit code %d) without a result after task %q: %s", name, in.ExitCode, ev.LastTask, msg),
		}
	default:
		msg := cut(ansibleErrorText(stderr), summaryLimit)
		return verdict{
			Kind:    outcomeExitCode,
			Outcome: runOutcome{message: msg},
			Err:     fmt.Errorf("provisioning %q: ansible-playbook exited with code %d: %s", name, in.ExitCode, msg),
		}
	}
}
