package provision

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

func TestClassify(t *testing.T) {
	okStats := map[string]hostStats{"node": {OK: 12, Changed: 2}}
	failedStats := map[string]hostStats{"node": {OK: 3, Failures: 1}}
	unreachStats := map[string]hostStats{"node": {OK: 3, Unreachable: 1}}
	failed := &TaskError{Host: "node", Task: "gpu_check : Check the promised GPUs", Role: "gpu_check", Message: "expected 8 GPU(s)"}
	lost := &TaskError{Host: "node", Task: "Run DCGM's quick diagnostic", Message: "Failed to connect to the host via ssh: Connection refused", Unreachable: true}
	hostKey := &TaskError{Host: "node", Task: "Look at what the machine has", Unreachable: true,
		Message: "Failed to connect to the host via ssh: @@@ WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! @@@ ... Host key verification failed."}
	yamlErr := "[WARNING]: something harmless\nERROR! We were unable to read either as JSON nor YAML, these are the errors we got from each:\nSyntax Error while loading YAML."

	type want struct {
		kind       outcomeKind
		failedTask string
		message    string   // exact summary
		errHas     []string // substrings of the error
		permanent  bool
		taskErr    bool
		ctxErr     error
	}
	tests := []struct {
		name string
		in   runResult
		want want
	}{
		{
			name: "success",
			in:   runResult{ExitCode: 0, Events: runEvents{SawPlay: true, LastTask: "health : Check the exporters answer", Stats: okStats}},
			want: want{kind: outcomeSuccess},
		},
		{
			name: "success wins over a cancellation arriving as the run finished",
			in:   runResult{ExitCode: 0, Events: runEvents{SawPlay: true, Stats: okStats}, CtxErr: context.Canceled},
			want: want{kind: outcomeSuccess},
		},
		{
			name: "exit code 0 without a recap is not success",
			in:   runResult{ExitCode: 0, Events: runEvents{SawPlay: true, LastTask: "t"}, StderrTail: "Traceback ... boom"},
			want: want{kind: outcomeNoResult, failedTask: "t", message: "Traceback ... boom", errHas: []string{"without a result after task \"t\""}},
		},
		{
			name: "failed task",
			in:   runResult{ExitCode: 2, Events: runEvents{SawPlay: true, LastTask: failed.Task, Failure: failed, Stats: failedStats}},
			want: want{kind: outcomeFailedTask, failedTask: failed.Task, message: "expected 8 GPU(s)", taskErr: true,
				errHas: []string{`provisioning "i-1": host node failed at task "gpu_check : Check the promised GPUs": expected 8 GPU(s)`}},
		},
		{
			name: "unreachable",
			in:   runResult{ExitCode: 4, Events: runEvents{SawPlay: true, LastTask: lost.Task, Unreachable: lost, Stats: unreachStats}},
			want: want{kind: outcomeUnreachable, failedTask: lost.Task, message: lost.Message, taskErr: true, errHas: []string{"lost the host at task", "Connection refused"}},
		},
		{
			name: "unreachable wins over a failed task (rc 4 for both)",
			in:   runResult{ExitCode: 4, Events: runEvents{SawPlay: true, Failure: failed, Unreachable: lost, Stats: unreachStats}},
			want: want{kind: outcomeUnreachable, failedTask: lost.Task, message: lost.Message, taskErr: true},
		},
		{
			name: "host key mismatch seen by ssh",
			in:   runResult{ExitCode: 4, Events: runEvents{SawPlay: true, LastTask: hostKey.Task, Unreachable: hostKey, Stats: unreachStats}},
			want: want{kind: outcomeHostKeyMismatch, failedTask: hostKey.Task, message: hostKey.Message, taskErr: true, permanent: true,
				errHas: []string{"REMOTE HOST IDENTIFICATION HAS CHANGED"}},
		},
		{
			name: "YAML error: rc 4, no play",
			in:   runResult{Playbook: "bare-vm.yml", ExitCode: 4, StderrTail: yamlErr},
			want: want{kind: outcomeSyntaxError, message: yamlErr[strings.Index(yamlErr, "ERROR!"):], permanent: true,
				errHas: []string{"ansible-playbook rejected bare-vm.yml (exit code 4): ERROR! We were unable"}},
		},
		{
			name: "bad variables file: rc 1, no play",
			in:   runResult{Playbook: "bare-vm.yml", ExitCode: 1, StderrTail: "ERROR! file could not read: vars.json\n"},
			want: want{kind: outcomeSyntaxError, message: "ERROR! file could not read: vars.json", permanent: true, errHas: []string{"exit code 1"}},
		},
		{
			name: "no play and no stderr",
			in:   runResult{Playbook: "bare-vm.yml", ExitCode: 250},
			want: want{kind: outcomeSyntaxError, message: "no error output", permanent: true},
		},
		{
			name: "cancelled mid-task (ansible says 99)",
			in:   runResult{ExitCode: 99, Events: runEvents{SawPlay: true, LastTask: "nvidia_driver : Read the GPUs the driver sees"}, CtxErr: context.Canceled},
			want: want{kind: outcomeCancelled, failedTask: "nvidia_driver : Read the GPUs the driver sees", message: "cancelled", ctxErr: context.Canceled,
				errHas: []string{`provisioning "i-1" cancelled during task "nvidia_driver : Read the GPUs the driver sees"`, "re-running is safe"}},
		},
		{
			name: "cancelled wins over the unreachable host it caused (rc 4)",
			in:   runResult{ExitCode: 4, Events: runEvents{SawPlay: true, LastTask: lost.Task, Unreachable: lost, Stats: unreachStats}, CtxErr: context.DeadlineExceeded},
			want: want{kind: outcomeCancelled, failedTask: lost.Task, message: "cancelled", ctxErr: context.DeadlineExceeded},
		},
		{
			name: "cancelled before any task (killed: -1)",
			in:   runResult{ExitCode: -1, CtxErr: context.Canceled},
			want: want{kind: outcomeCancelled, message: "cancelled", ctxErr: context.Canceled, errHas: []string{`provisioning "i-1" cancelled (the machine`}},
		},
		{
			name: "killed without a recap",
			in:   runResult{ExitCode: -1, Events: runEvents{SawPlay: true, LastTask: "t"}},
			want: want{kind: outcomeNoResult, failedTask: "t", message: "no error output", errHas: []string{"exit code -1"}},
		},
		{
			name: "a clean recap with a non-zero exit code",
			in:   runResult{ExitCode: 2, Events: runEvents{SawPlay: true, Stats: okStats}, StderrTail: "line1\nline2\n"},
			want: want{kind: outcomeExitCode, message: "line1\nline2", errHas: []string{"exited with code 2: line1"}},
		},
		{
			name: "an ignored failure leaves a clean recap",
			in:   runResult{ExitCode: 0, Events: runEvents{SawPlay: true, Stats: map[string]hostStats{"node": {OK: 5, Ignored: 1}}}},
			want: want{kind: outcomeSuccess},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.Instance = "i-1"
			before := *failed
			v := classify(in)
			if v.Kind != tc.want.kind {
				t.Fatalf("kind %v, want %v (err %v)", v.Kind, tc.want.kind, v.Err)
			}
			if v.Outcome.failedTask != tc.want.failedTask || v.Outcome.message != tc.want.message {
				t.Errorf("outcome %+v, want failedTask %q message %q", v.Outcome, tc.want.failedTask, tc.want.message)
			}
			if tc.want.kind == outcomeSuccess {
				if v.Err != nil {
					t.Errorf("success with error %v", v.Err)
				}
				return
			}
			if v.Err == nil {
				t.Fatal("no error")
			}
			for _, s := range tc.want.errHas {
				if !strings.Contains(v.Err.Error(), s) {
					t.Errorf("error %q lacks %q", v.Err, s)
				}
			}
			var perm *cloudprovider.PermanentError
			if errors.As(v.Err, &perm) != tc.want.permanent {
				t.Errorf("permanent = %v, want %v: %v", !tc.want.permanent, tc.want.permanent, v.Err)
			}
			var te *TaskError
			if errors.As(v.Err, &te) != tc.want.taskErr {
				t.Errorf("TaskError = %v, want %v", te != nil, tc.want.taskErr)
			} else if te != nil && (te.Instance != "i-1" || te.Task != tc.want.failedTask) {
				t.Errorf("TaskError %+v", te)
			}
			if tc.want.kind == outcomeSyntaxError {
				var pe *PlaybookError
				if !errors.As(v.Err, &pe) || pe.Playbook != "bare-vm.yml" || pe.ExitCode != in.ExitCode {
					t.Errorf("want a PlaybookError, got %#v", v.Err)
				}
			}
			if tc.want.ctxErr != nil && !errors.Is(v.Err, tc.want.ctxErr) {
				t.Errorf("error %v does not wrap %v", v.Err, tc.want.ctxErr)
			}
			if *failed != before {
				t.Errorf("classify changed its input: %+v", failed)
			}
		})
	}
}
