//go:build unix

package osproc

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

func TestAlive(t *testing.T) {
	if !Alive(os.Getpid()) {
		t.Fatal("Alive(own pid) = false")
	}
	for _, pid := range []int{0, -1} {
		if Alive(pid) {
			t.Errorf("Alive(%d) = true", pid)
		}
	}
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = NewGroup()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if !Alive(pid) {
		t.Fatal("Alive(started child) = false")
	}
	if err := SignalGroup(pid, Kill); err != nil {
		t.Fatal(err)
	}
	// Until it is reaped the child is a zombie, which must already count as dead.
	deadline := time.Now().Add(5 * time.Second)
	for Alive(pid) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if Alive(pid) {
		t.Fatal("Alive(killed, unreaped child) = true")
	}
	_ = cmd.Wait() // the kill is its expected end
}

// TestSignalGroupReachesChildren checks that a group signal reaches what the leader forked.
func TestSignalGroupReachesChildren(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	cmd := exec.Command("sh", "-c", `sleep 30 & echo $! >"$1"; wait`, "sh", pidFile)
	cmd.SysProcAttr = NewGroup()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var child int
	deadline := time.Now().Add(5 * time.Second)
	for child == 0 && time.Now().Before(deadline) {
		if b, err := os.ReadFile(pidFile); err == nil && len(b) > 1 {
			for _, c := range b[:len(b)-1] {
				child = child*10 + int(c-'0')
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if child == 0 {
		t.Fatal("the leader never reported its child")
	}
	if err := SignalGroup(cmd.Process.Pid, Terminate); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait() // terminated on purpose
	deadline = time.Now().Add(5 * time.Second)
	for Alive(child) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if Alive(child) {
		_ = SignalProcess(child, Kill)
		t.Fatal("the group's Terminate did not reach the leader's child")
	}
}

func TestOwnedByMe(t *testing.T) {
	fi, err := os.Stat(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !OwnedByMe(fi) {
		t.Fatal("OwnedByMe(own temp dir) = false")
	}
}
