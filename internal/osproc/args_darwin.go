//go:build darwin

package osproc

import "golang.org/x/sys/unix"

// processArgs reads pid's command line from the kernel (sysctl kern.procargs2, as ps does); nil when
// the kernel does not give it (another user's process, or one that is gone).
func processArgs(pid int) []string {
	data, err := unix.SysctlRaw("kern.procargs2", pid)
	if err != nil {
		return nil
	}
	return procArgs2Args(data)
}
