//go:build !linux

package provision

import "syscall"

// ansibleProcAttr starts ansible-playbook as the leader of its own process group. There is no
// parent-death signal outside Linux: the run's guardian stops the group when the provider dies.
func ansibleProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// guardianProcAttr starts a run's guardian in its own process group; it must outlive the provider.
func guardianProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
