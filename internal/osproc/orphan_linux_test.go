//go:build linux

package osproc

import (
	"syscall"
	"testing"
)

func TestNewGroupDyingWith(t *testing.T) {
	for s, want := range map[Signal]syscall.Signal{Kill: syscall.SIGKILL, Terminate: syscall.SIGTERM, Interrupt: syscall.SIGINT} {
		attr := NewGroupDyingWith(s)
		if !attr.Setpgid || attr.Pdeathsig != want {
			t.Errorf("NewGroupDyingWith(%d) = Setpgid %v, Pdeathsig %v; want a new group and %v", s, attr.Setpgid, attr.Pdeathsig, want)
		}
	}
}
