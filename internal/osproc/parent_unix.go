//go:build unix

package osproc

import "os"

// parentSys is the parent pid this process started with: a Unix process whose parent dies is
// re-parented, so its parent pid changes.
type parentSys struct{ ppid int }

func openParent(pid int) *Parent { return &Parent{pid: pid, sys: parentSys{ppid: pid}} }

// Gone reports whether the parent has exited: this process was re-parented.
func (p *Parent) Gone() bool { return os.Getppid() != p.sys.ppid }

// wait cannot block on a Unix parent: Wait polls.
func (p *Parent) wait() bool { return false }
