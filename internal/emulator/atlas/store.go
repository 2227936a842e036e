package atlas

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// store keeps the cloud's state in memory, or in StateDir/state.json guarded by an exclusive flock on
// StateDir/state.lock so several processes share one cloud.
type store struct {
	dir  string
	mu   sync.Mutex
	mem  *state
	init func() *state
}

const stateFile = "state.json"

// with runs fn on the current state and saves it when fn returns nil (and write is true).
func (s *store) with(write bool, fn func(st *state) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dir == "" {
		if s.mem == nil {
			s.mem = s.init()
		}
		return fn(s.mem)
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	lf, err := os.OpenFile(filepath.Join(s.dir, "state.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer func() { _ = syscall.Flock(int(lf.Fd()), syscall.LOCK_UN) }()
	path := filepath.Join(s.dir, stateFile)
	st := &state{}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		st = s.init()
		write = true
	case err != nil:
		return err
	default:
		if err := json.Unmarshal(data, st); err != nil {
			return fmt.Errorf("emulator state %s: %w", path, err)
		}
	}
	if err := fn(st); err != nil {
		return err
	}
	if !write {
		return nil
	}
	out, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, out, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
