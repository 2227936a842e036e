//go:build windows

package osproc

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/windows"
)

// stillActive is the exit code GetExitCodeProcess reports for a process that has not exited.
const stillActive = 259

// NewGroup starts a process as the root of a new process group (CTRL_BREAK can reach it).
func NewGroup() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP}
}

// NewSession starts a process without this process's console, in a new process group, so that it can
// outlive this process.
func NewSession() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP | windows.DETACHED_PROCESS}
}

// SignalGroup sends s to the group pgid leads: Interrupt as CTRL_BREAK to the group; Terminate and Kill
// end its leader (Windows has no signal for a whole group).
func SignalGroup(pgid int, s Signal) error {
	if pgid <= 0 {
		return errors.New("osproc: no process group")
	}
	if s == Interrupt {
		return windows.GenerateConsoleCtrlEvent(windows.CTRL_BREAK_EVENT, uint32(pgid))
	}
	return SignalProcess(pgid, s)
}

// SignalProcess ends the process pid: Windows can only kill a process, whatever s asks.
func SignalProcess(pid int, _ Signal) error {
	if pid <= 0 {
		return errors.New("osproc: no process")
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	defer func() { _ = p.Release() }() // only the handle
	return p.Kill()
}

// Alive reports whether pid names a process that has not exited.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		// It exists, but belongs to someone this process may not look at.
		return errors.Is(err, windows.ERROR_ACCESS_DENIED)
	}
	defer func() { _ = windows.CloseHandle(h) }() // only the handle
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil {
		return false
	}
	return code == stillActive
}

// OwnedByMe reports whether the file fi describes belongs to this process's user; Windows files carry
// no uid that os.FileInfo shows, so every file counts as this user's.
func OwnedByMe(os.FileInfo) bool { return true }
