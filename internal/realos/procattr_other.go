//go:build !linux

package realos

import (
	"errors"
	"os"
	"syscall"

	"github.com/hydragpu/terraform-provider-hydra/internal/osproc"
)

// nspawnProcAttr starts the container in its own process group (Available refuses other systems
// before any container starts).
func nspawnProcAttr() *syscall.SysProcAttr { return osproc.NewGroup() }

// setns is Linux's; Available refuses other systems first.
func setns(*os.File) error { return errors.New("realos: network namespaces are Linux's") }
