//go:build windows

package filelock

import (
	"os"

	"golang.org/x/sys/windows"
)

// allBytes locks the whole file, whatever its length (LockFileEx locks byte ranges).
const allBytes = ^uint32(0)

func lockFile(f *os.File) error {
	return windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK, 0, allBytes, allBytes, new(windows.Overlapped))
}

func unlockFile(f *os.File) error {
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, allBytes, allBytes, new(windows.Overlapped))
}
