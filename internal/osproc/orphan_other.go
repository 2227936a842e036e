//go:build !linux

package osproc

import "syscall"

// NewGroupDyingWith starts a process as the leader of a new process group (as NewGroup). There is no
// parent-death signal outside Linux, so s is not sent when this process dies: the caller's own guardian
// (or a refusal to run at all) must cover that.
func NewGroupDyingWith(Signal) *syscall.SysProcAttr { return NewGroup() }
