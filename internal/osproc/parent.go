package osproc

import (
	"os"
	"sync"
	"time"
)

// Parent is the process that started this one, as it was when it was first asked for: Gone tells
// whether that process has exited since. On Unix-like systems a process whose parent dies is
// re-parented, so Gone compares the current parent pid with the first one; on Windows, where the parent
// pid never changes, it waits on a handle to the parent process opened at the first call.
type Parent struct {
	pid int
	// handle is the parent's process handle (Windows); 0 elsewhere, or when it could not be opened.
	handle uintptr
	// lost is set when the parent was already gone at the first call.
	lost bool
}

var (
	parentOnce sync.Once
	parent     *Parent
)

// StartingParent returns this process's parent as at the first call; call it early (from an init) so
// that a parent that dies later is noticed.
func StartingParent() *Parent {
	parentOnce.Do(func() { parent = openParent(os.Getppid()) })
	return parent
}

// PID is the parent's pid.
func (p *Parent) PID() int { return p.pid }

// Wait returns once the parent is gone, looking every poll where the system cannot wait for it.
func (p *Parent) Wait(poll time.Duration) {
	if p.wait() {
		return
	}
	for !p.Gone() {
		time.Sleep(poll)
	}
}
