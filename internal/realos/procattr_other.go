//go:build !linux

package realos

import (
	"syscall"

	"github.com/hydragpu/terraform-provider-hydra/internal/osproc"
)

// nspawnProcAttr starts the container in its own process group (Available refuses other systems
// before any container starts).
func nspawnProcAttr() *syscall.SysProcAttr { return osproc.NewGroup() }
