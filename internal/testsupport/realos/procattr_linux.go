//go:build linux

package realos

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// setns moves the calling thread into the network namespace open as f.
func setns(f *os.File) error {
	return unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
}

// tryLock takes an exclusive lock on the file at path (creating it) if no one holds it, without
// waiting; unlock releases it and closes the file.
func tryLock(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close() // nothing was written
		return nil, err
	}
	return func() { _ = f.Close() }, nil // closing releases the lock
}

// gettid is the calling thread's id.
func gettid() int { return unix.Gettid() }

// waitExited waits until each of pids has exited (a pidfd becomes readable), at most until timeout.
func waitExited(pids []int, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue // gone already
		}
		for {
			ms := int(time.Until(deadline).Milliseconds())
			if ms <= 0 {
				break
			}
			n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, ms)
			if err == unix.EINTR {
				continue
			}
			_ = n
			break
		}
		_ = unix.Close(fd)
	}
}
