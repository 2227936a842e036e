package emukit

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type counter struct{ N int }

func TestStore(t *testing.T) {
	for _, dir := range []string{"", t.TempDir()} {
		a, b := NewStore[counter](dir, "state"), NewStore[counter](dir, "state")
		init := func() *counter { return &counter{N: 10} }
		inc := func(save bool) func(st *counter) (bool, error) {
			return func(st *counter) (bool, error) { st.N++; return save, nil }
		}
		get := func(s *Store[counter]) int {
			n := 0
			if err := s.Update(init, func(st *counter) (bool, error) { n = st.N; return false, nil }); err != nil {
				t.Fatal(err)
			}
			return n
		}
		if err := a.Update(init, inc(true)); err != nil {
			t.Fatal(err)
		}
		if got := get(a); got != 11 {
			t.Errorf("dir %q: after a saved increment N = %d, want 11", dir, got)
		}
		if err := a.Update(init, inc(false)); err != nil {
			t.Fatal(err)
		}
		want := 11 // an unsaved change is lost with a directory
		if dir == "" {
			want = 12 // in memory the state is the state
		}
		if got := get(a); got != want {
			t.Errorf("dir %q: after an unsaved increment N = %d, want %d", dir, got, want)
		}
		if dir != "" {
			if got := get(b); got != 11 {
				t.Errorf("second store in the same dir sees N = %d, want 11", got)
			}
		} else if got := get(b); got != 10 {
			t.Errorf("in-memory stores share state: N = %d, want 10", got)
		}
	}
}

func TestStoreCorrupt(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := NewStore[counter](dir, "x").Update(func() *counter { return &counter{} }, func(*counter) (bool, error) { return false, nil })
	if err == nil || !strings.Contains(err.Error(), "x.json") {
		t.Fatalf("corrupt state: err = %v, want one naming x.json", err)
	}
}

func TestServe(t *testing.T) {
	url, stop, err := Serve("127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusTeapot, map[string]string{"a": "b"}, http.Header{"X-Y": {"z"}})
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer stop(context.Background()) //nolint:errcheck
	resp, err := http.Get(url + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTeapot || resp.Header.Get("X-Y") != "z" || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("got %d %v", resp.StatusCode, resp.Header)
	}
}

// stopWithin runs stop(ctx) and fails the test when it has not returned after limit. The limit is far
// above the bound stop keeps and far below the 5 s http.Server.Shutdown can take, so it is no race.
func stopWithin(t *testing.T, ctx context.Context, stop func(context.Context) error, limit time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- stop(ctx) }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		t.Fatalf("stop did not return within %v", limit)
		return nil
	}
}

// A client that opened a connection and sent nothing (as a transport's spare dial does) holds
// http.Server.Shutdown for 5 s; stop closes it after its short grace.
func TestServeStopWithIdleConnection(t *testing.T) {
	url, stop, err := Serve("127.0.0.1:0", http.NotFoundHandler())
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }() // the test only needs it open until it returns
	// A request on another connection proves the server is serving before stop.
	resp, err := http.Get(url + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := stopWithin(t, context.Background(), stop, 4*time.Second); err != nil {
		t.Errorf("stop: %v", err)
	}
	// The idle connection was closed by the server.
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	if n, err := conn.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read %d bytes, %v from the idle connection: want it closed", n, err)
	}
	if _, err := http.Get(url + "/"); err == nil {
		t.Error("the server still answers after stop")
	}
}

// A request that never finishes is cut off when stop's context ends, even before the grace.
func TestServeStopWithHungRequest(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	defer close(release)
	url, stop, err := Serve("127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
	}))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		resp, err := http.Get(url + "/")
		if err == nil {
			resp.Body.Close()
		}
		got <- err
	}()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := stopWithin(t, ctx, stop, 4*time.Second); err != nil {
		t.Errorf("stop: %v", err)
	}
	select {
	case err := <-got:
		if err == nil {
			t.Error("the hung request got an answer")
		}
	case <-time.After(4 * time.Second):
		t.Error("the hung request's connection is still open after stop")
	}
}
