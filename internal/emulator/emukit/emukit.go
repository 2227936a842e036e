// Package emukit is the plumbing the cloud emulators share: a JSON state kept in memory or in a
// directory under an exclusive flock, serving on a local address, and the faults of the shared
// vocabulary (internal/simulation) answered the way an HTTP API answers them.
package emukit

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/atomicfile"
	"github.com/hydragpu/terraform-provider-hydra/internal/filelock"
)

// SSH is where an emulator reports that its running machines answer SSH.
type SSH struct {
	Host string
	Port int
	User string
}

// WithDefaults returns s with 127.0.0.1 as Host, 22 as Port and user as User where they are not set.
func (s SSH) WithDefaults(user string) SSH {
	s.Host = cmp.Or(s.Host, "127.0.0.1")
	s.Port = cmp.Or(s.Port, 22)
	s.User = cmp.Or(s.User, user)
	return s
}

// Positive is v when it is above zero, else def: the default of an emulator option (a duration, a
// count, a page size) for which zero and negative values both mean "not set".
func Positive[T ~int | ~int64 | ~float64](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Keys is keys when it holds at least one, else the one key def: the default of an emulator's accepted
// API keys or tokens.
func Keys(keys []string, def string) []string {
	if len(keys) == 0 {
		return []string{def}
	}
	return keys
}

// Seed is v when it is not nil, else def(): the default of a catalog-like option, where an empty but
// non-nil value is a deliberate choice (an empty catalog) and only nil takes the default.
func Seed[T any](v []T, def func() []T) []T {
	if v == nil {
		return def()
	}
	return v
}

// Repaired runs fn on the store's state and always saves it afterwards (Update with save true), after
// repair has made what a state file may lack (its maps, say); a new state is a zero S that repair has
// run on.
func (s *Store[S]) Repaired(repair func(st *S), fn func(st *S) error) error {
	fresh := func() *S {
		st := new(S)
		repair(st)
		return st
	}
	return s.Update(fresh, func(st *S) (bool, error) {
		repair(st)
		return true, fn(st)
	})
}

// Store holds an emulator's whole state S: in memory, or, when it has a directory, in the JSON file
// <name>.json there, read and written under an exclusive flock on <name>.lock so that several
// processes sharing the directory see one cloud.
type Store[S any] struct {
	dir, file, lock string
	mu              sync.Mutex
	mem             *S
}

// NewStore makes a store in dir (empty: in memory) whose files are name+".json" and name+".lock".
func NewStore[S any](dir, name string) *Store[S] {
	return &Store[S]{dir: dir, file: name + ".json", lock: name + ".lock"}
}

// Update runs fn on the state while holding the store's lock. A state that does not exist yet is
// made by init (and, in a directory, saved at once). Afterwards the state is saved when fn returns
// save true, whatever its error; Update returns fn's error.
func (s *Store[S]) Update(init func() *S, fn func(st *S) (save bool, err error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dir == "" {
		if s.mem == nil {
			s.mem = init()
		}
		_, err := fn(s.mem)
		return err
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	unlock, err := filelock.Lock(filepath.Join(s.dir, s.lock), 0o600)
	if err != nil {
		return fmt.Errorf("emulator state: %w", err)
	}
	defer unlock()
	path := filepath.Join(s.dir, s.file)
	var st *S
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		st = init()
		if err := s.save(path, st); err != nil {
			return err
		}
	case err != nil:
		return err
	default:
		st = new(S)
		if err := json.Unmarshal(data, st); err != nil {
			return fmt.Errorf("emulator state %s: %w", path, err)
		}
	}
	save, ferr := fn(st)
	if save {
		if err := s.save(path, st); err != nil {
			return err
		}
	}
	return ferr
}

// save replaces the state file atomically.
func (s *Store[S]) save(path string, st *S) error {
	out, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, out, 0o600)
}

// shutdownGrace bounds how long the stop function of Serve lets requests in flight finish before it
// closes every connection.
const shutdownGrace = time.Second

// Serve serves h on addr ("127.0.0.1:0" picks a port) and returns its base URL
// ("http://host:port") and a function that stops it.
//
// stop stops accepting connections, lets requests in flight finish for up to 1 s (less when
// ctx ends sooner), then closes every connection still open: a hung request, or a connection a
// client opened and never used, which http.Server.Shutdown alone would wait for (5 s for the latter,
// forever for the former). It returns once the server is stopped, nil unless closing failed.
func Serve(addr string, h http.Handler) (baseURL string, stop func(context.Context) error, err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln) //nolint:errcheck
	stop = func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, shutdownGrace)
		defer cancel()
		err := srv.Shutdown(ctx)
		if ctx.Err() == nil {
			return err
		}
		// Out of grace: err is only ctx's; cut off what is left.
		return srv.Close()
	}
	return "http://" + ln.Addr().String(), stop, nil
}

// WriteJSON answers status with v as JSON, after the headers in header.
func WriteJSON(w http.ResponseWriter, status int, v any, header http.Header) {
	for k, vs := range header {
		for _, x := range vs {
			w.Header().Add(k, x)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
