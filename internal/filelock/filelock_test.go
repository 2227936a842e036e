package filelock

import (
	"path/filepath"
	"testing"
	"time"
)

// TestLockExcludes checks that a second Lock of the same file waits until the first is released, even
// within one process (each Lock opens the file anew, and the lock belongs to that open file).
func TestLockExcludes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.lock")
	unlock, err := Lock(path, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	acquired := make(chan func())
	go func() {
		u, err := Lock(path, 0o600)
		if err != nil {
			t.Error(err)
			close(acquired)
			return
		}
		acquired <- u
	}()
	select {
	case <-acquired:
		t.Fatal("a second Lock succeeded while the first was held")
	case <-time.After(200 * time.Millisecond):
	}
	unlock()
	select {
	case u, ok := <-acquired:
		if !ok {
			return
		}
		u()
	case <-time.After(10 * time.Second):
		t.Fatal("the second Lock did not succeed after the first was released")
	}
}

func TestLockReportsPath(t *testing.T) {
	_, err := Lock(filepath.Join(t.TempDir(), "missing", "x.lock"), 0o600)
	if err == nil {
		t.Fatal("Lock in a missing directory succeeded")
	}
}
