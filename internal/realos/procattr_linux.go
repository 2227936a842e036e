//go:build linux

package realos

import (
	"os"

	"golang.org/x/sys/unix"
)

// setns moves the calling thread into the network namespace open as f.
func setns(f *os.File) error {
	return unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
}
