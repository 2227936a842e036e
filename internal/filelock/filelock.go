// Package filelock holds exclusive locks on files across processes: the sandbox's, the emulators' and
// the simulated machines' state is shared by every provider process Terraform starts, and by the
// emulators' servers. It wraps flock(2) on Unix and LockFileEx on Windows.
package filelock

import (
	"fmt"
	"io/fs"
	"os"
)

// Lock opens the file at path (creating it with perm) and takes an exclusive lock on it, waiting while
// another holder, in this process or any other, has it. unlock releases the lock and closes the file;
// a process that dies holding it releases it too. The file's content is never touched.
func Lock(path string, perm fs.FileMode) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, perm)
	if err != nil {
		return nil, err
	}
	if err := lockFile(f); err != nil {
		_ = f.Close() // nothing was written to it
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() {
		_ = unlockFile(f) // closing releases it as well
		_ = f.Close()     // a lock file: nothing was written to it
	}, nil
}
