package playbooks

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The interruption watcher (roles/interruption_watch/files/interruption-watch.sh, run by /bin/sh): a
// notice runs the hook once with the seconds left and the end time, and writes the drain flag; the
// same notice seen again does nothing more; a file without a preempting status is no notice; a notice
// taken back lifts the drain, and the next notice acts again.
func TestInterruptionWatcher(t *testing.T) {
	script, err := FS.ReadFile("roles/interruption_watch/files/interruption-watch.sh")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "interruption-watch.sh")
	signal := filepath.Join(dir, "opt", "signal.yml")
	hook := filepath.Join(dir, "hook")
	calls := filepath.Join(dir, "calls")
	drain := filepath.Join(dir, "execlet", "draining")
	conf := filepath.Join(dir, "watch.conf")
	write := func(path, body string, mode os.FileMode) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path+".tmp", []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
	}
	write(bin, string(script), 0o755)
	write(hook, "#!/bin/sh\necho \"$1 $2 $HYDRA_INTERRUPTION_SECONDS_LEFT $HYDRA_INTERRUPTION_END_TIME\" >> "+calls+"\n", 0o755)
	write(conf, fmt.Sprintf("SIGNAL=%s\nHOOK=%s\nDRAIN_FLAG=%s\nSTATE=%s\nINTERVAL=0.1\n", signal, hook, drain, filepath.Join(dir, "state")), 0o644)

	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "/bin/sh", bin, conf)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	read := func(path string) string {
		b, _ := os.ReadFile(path)
		return string(b)
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if ok() {
				return
			}
		}
		t.Fatalf("%s: calls %q, drain %q, log:\n%s", what, read(calls), read(drain), read(filepath.Join(dir, "state", "log")))
	}

	// No notice: a status that names no preemption.
	write(signal, "instance_status: STATUS_RUNNING\nbid_status: Allocated\nend_time: null\n", 0o644)
	waitFor("watching", func() bool { return strings.Contains(read(filepath.Join(dir, "state", "log")), "watching") })
	end := time.Now().UTC().Add(5 * time.Minute).Truncate(time.Second)
	notice := fmt.Sprintf("instance_status: STATUS_PREEMPTING\nbid_status: Preempting\nend_time: %q\n", end.Format(time.RFC3339))
	write(signal, notice, 0o644)
	waitFor("the hook ran", func() bool { return strings.Count(read(calls), "\n") == 1 })
	var left int
	var got, envEnd string
	if _, err := fmt.Sscanf(read(calls), "%d %s %d %s", &left, &got, new(int), &envEnd); err != nil || got != end.Format(time.RFC3339) || envEnd != got || left <= 0 || left > 300 {
		t.Errorf("hook called with %q (left %d, end %q)", read(calls), left, got)
	}
	if !strings.Contains(read(drain), "interruption notice") {
		t.Errorf("drain flag: %q", read(drain))
	}
	// The same notice again (rewritten): acted on once only.
	write(signal, notice, 0o644)
	time.Sleep(500 * time.Millisecond)
	if n := strings.Count(read(calls), "\n"); n != 1 {
		t.Errorf("the hook ran %d times for one notice", n)
	}
	// Taken back: the drain is lifted; a later notice acts again.
	if err := os.Remove(signal); err != nil {
		t.Fatal(err)
	}
	waitFor("the drain lifted", func() bool { _, err := os.Stat(drain); return os.IsNotExist(err) })
	write(signal, notice, 0o644)
	waitFor("the hook ran again", func() bool { return strings.Count(read(calls), "\n") == 2 })
}
