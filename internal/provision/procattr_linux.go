//go:build linux

package provision

import (
	"syscall"

	"github.com/hydragpu/terraform-provider-hydra/internal/osproc"
)

// ansibleProcAttr starts ansible-playbook as the leader of its own process group (so cancellation can
// stop it with every worker and ssh client it forked) and has the kernel SIGKILL it when the provider
// dies, however it dies. Pdeathsig fires when the thread that forked the child exits; the Go runtime
// never ends its threads except under runtime.LockOSThread, which this package does not use.
func ansibleProcAttr() *syscall.SysProcAttr {
	attr := osproc.NewGroup()
	attr.Pdeathsig = syscall.SIGKILL
	return attr
}
