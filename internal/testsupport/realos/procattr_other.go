//go:build !linux

package realos

import (
	"errors"
	"net/netip"
	"os"
	"time"
)

// setns is Linux's; Available refuses other systems first.
func setns(*os.File) error { return errors.New("realos: network namespaces are Linux's") }

// tryLock is Linux's here (flock without waiting); Available refuses other systems first.
func tryLock(string) (func(), error) { return nil, errors.New("realos: Linux only") }

// gettid is Linux's; Available refuses other systems first.
func gettid() int { return 0 }

// waitExited is Linux's; Available refuses other systems first.
func waitExited([]int, time.Duration) {}

// listeningTCP is Linux's (sock_diag); Available refuses other systems first.
func listeningTCP() ([]netip.AddrPort, error) { return nil, errors.New("realos: Linux only") }

// sockDiag is Linux's; Available refuses other systems first.
type sockDiag struct{}

func openSockDiag() (*sockDiag, error) { return nil, errors.New("realos: Linux only") }

func (*sockDiag) close() {}

func (*sockDiag) listening() ([]netip.AddrPort, error) { return nil, errors.New("realos: Linux only") }
