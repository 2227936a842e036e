//go:build !linux

package provision

import (
	"syscall"

	"github.com/hydragpu/terraform-provider-hydra/internal/osproc"
)

// ansibleProcAttr starts ansible-playbook as the leader of its own process group. There is no
// parent-death signal outside Linux: the run's guardian stops the group when the provider dies.
func ansibleProcAttr() *syscall.SysProcAttr { return osproc.NewGroup() }
