//go:build windows

package osproc

import (
	"errors"

	"golang.org/x/sys/windows"
)

// openParent opens a handle to the parent process that lets this process wait for its end. The handle
// keeps the parent's process object, so a pid reused after the parent's death cannot be mistaken for
// it; a process with the parent's pid that started after this one is not the parent (it died first).
func openParent(pid int) *Parent {
	p := &Parent{pid: pid}
	h, err := windows.OpenProcess(windows.SYNCHRONIZE|windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		// No such process: the parent is gone already. Access denied: it cannot be watched.
		p.lost = errors.Is(err, windows.ERROR_INVALID_PARAMETER)
		return p
	}
	if startedAfterMe(h) {
		_ = windows.CloseHandle(h)
		p.lost = true
		return p
	}
	p.handle = uintptr(h)
	return p
}

// startedAfterMe reports whether the process h started after this one.
func startedAfterMe(h windows.Handle) bool {
	var theirs, mine, exit, kernel, user windows.Filetime
	if windows.GetProcessTimes(h, &theirs, &exit, &kernel, &user) != nil ||
		windows.GetProcessTimes(windows.CurrentProcess(), &mine, &exit, &kernel, &user) != nil {
		return false
	}
	return theirs.Nanoseconds() > mine.Nanoseconds()
}

// Gone reports whether the parent process has exited (its handle is signalled).
func (p *Parent) Gone() bool {
	if p.lost {
		return true
	}
	if p.handle == 0 {
		return false
	}
	ev, err := windows.WaitForSingleObject(windows.Handle(p.handle), 0)
	return err == nil && ev == windows.WAIT_OBJECT_0
}

// wait blocks until the parent exits; false when it cannot be watched (no handle).
func (p *Parent) wait() bool {
	if p.lost {
		return true
	}
	if p.handle == 0 {
		return false
	}
	ev, err := windows.WaitForSingleObject(windows.Handle(p.handle), windows.INFINITE)
	return err == nil && ev == windows.WAIT_OBJECT_0
}
