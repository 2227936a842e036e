//go:build linux

package osproc

import "syscall"

// NewGroupDyingWith starts a process as the leader of a new process group (as NewGroup) and has the
// kernel send it s when this process dies, however it dies. The parent-death signal fires when the
// thread that forked the child exits; the Go runtime never ends its threads except under
// runtime.LockOSThread, which callers of this function must not use around the start.
func NewGroupDyingWith(s Signal) *syscall.SysProcAttr {
	attr := NewGroup()
	attr.Pdeathsig = s.unix()
	return attr
}
