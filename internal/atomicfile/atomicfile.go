// Package atomicfile replaces files atomically: a reader sees the old content or the new, never a part,
// and a crash leaves the old file in place. The journal of creates, the plan quotes, the emulators' and
// the sandbox's state and the sandbox machines' keys are all written through it.
package atomicfile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Write replaces the file at path with data and permissions perm: it writes a temporary file in the
// same directory (".<name>.<random>.tmp", which directory listings that skip dot files or read only
// ".json" files pass over), then renames it over path. On failure the temporary file is removed and
// path is left as it was.
func Write(path string, data []byte, perm fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	merr := tmp.Chmod(perm)
	cerr := tmp.Close()
	if err := errors.Join(werr, merr, cerr); err != nil {
		_ = os.Remove(tmp.Name()) // best-effort cleanup: the write already failed
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name()) // best-effort cleanup: the rename already failed
		return err
	}
	return nil
}

// Update is Write for a file that is mostly already as wanted: it reads the file first and writes it
// only when its content or permissions differ, so that rewriting a whole set of files to the same
// content (a machine's files refreshed on every read) costs reads, not a create and rename each.
func Update(path string, data []byte, perm fs.FileMode) error {
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() && st.Mode().Perm() == perm && st.Size() == int64(len(data)) {
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
			return nil
		}
	}
	return Write(path, data, perm)
}
