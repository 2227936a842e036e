//go:build unix

package osproc

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

// NewGroup starts a process as the leader of a new process group, so that SignalGroup reaches it and
// everything it forks.
func NewGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// NewSession starts a process in a new session (and group), detached from this process's terminal and
// signals, so that it can outlive this process.
func NewSession() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

func (s Signal) unix() syscall.Signal {
	switch s {
	case Interrupt:
		return syscall.SIGINT
	case Terminate:
		return syscall.SIGTERM
	default:
		return syscall.SIGKILL
	}
}

// SignalGroup sends s to every process of the group pgid leads.
func SignalGroup(pgid int, s Signal) error {
	if pgid <= 0 {
		return errors.New("osproc: no process group")
	}
	return syscall.Kill(-pgid, s.unix())
}

// SignalProcess sends s to the process pid alone.
func SignalProcess(pid int, s Signal) error {
	if pid <= 0 {
		return errors.New("osproc: no process")
	}
	return syscall.Kill(pid, s.unix())
}

// Alive reports whether pid names a live process: one that exists (even of another user) and is not a
// zombie waiting to be reaped.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	return state(pid) != 'Z'
}

// state is the state letter of /proc/<pid>/stat, or 0 where it cannot be read (no /proc).
func state(pid int) byte {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	if i := bytes.LastIndexByte(b, ')'); i > 0 && i+2 < len(b) {
		return b[i+2]
	}
	return 0
}

// OwnedByMe reports whether the file fi describes belongs to this process's effective user (true where
// the system does not say).
func OwnedByMe(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return !ok || int(st.Uid) == os.Geteuid()
}
