//go:build !linux

package realos

import (
	"errors"
	"os"
)

// setns is Linux's; Available refuses other systems first.
func setns(*os.File) error { return errors.New("realos: network namespaces are Linux's") }
