//go:build linux

package realos

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/hydragpu/terraform-provider-hydra/internal/osproc"
)

// nspawnProcAttr starts systemd-nspawn as the leader of its own process group and has the kernel send
// it SIGTERM (an orderly poweroff of the container) when the test process dies, however it dies.
// Pdeathsig fires when the forking thread exits; the Go runtime ends threads only under
// runtime.LockOSThread, which this package does not use.
func nspawnProcAttr() *syscall.SysProcAttr {
	attr := osproc.NewGroup()
	attr.Pdeathsig = syscall.SIGTERM
	return attr
}

// setns moves the calling thread into the network namespace open as f.
func setns(f *os.File) error {
	return unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
}
