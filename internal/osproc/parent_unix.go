//go:build unix

package osproc

import "os"

func openParent(pid int) *Parent { return &Parent{pid: pid} }

// Gone reports whether the parent has exited: this process was re-parented.
func (p *Parent) Gone() bool { return os.Getppid() != p.pid }

// wait cannot block on a Unix parent: Wait polls.
func (p *Parent) wait() bool { return false }
