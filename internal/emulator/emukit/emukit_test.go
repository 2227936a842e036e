package emukit

import (
	"context"
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

func TestTakeFault(t *testing.T) {
	tests := []struct {
		name                  string
		tooMany, retry, errs  int
		status                int
		wantStatus            int
		wantRetryAfter        string
		wantTooMany, wantErrs int
	}{
		{name: "none", status: 500},
		{name: "429 first", tooMany: 2, errs: 1, retry: 3, status: 500, wantStatus: 429, wantRetryAfter: "3", wantTooMany: 1, wantErrs: 1},
		{name: "429 default retry", tooMany: 1, status: 500, wantStatus: 429, wantRetryAfter: "1"},
		{name: "5xx", errs: 2, status: 503, wantStatus: 503, wantErrs: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tooMany, errs := tt.tooMany, tt.errs
			status, header := TakeFault(&tooMany, tt.retry, &errs, tt.status)
			if status != tt.wantStatus || header.Get("Retry-After") != tt.wantRetryAfter {
				t.Errorf("got %d Retry-After %q, want %d %q", status, header.Get("Retry-After"), tt.wantStatus, tt.wantRetryAfter)
			}
			if tooMany != tt.wantTooMany || errs != tt.wantErrs {
				t.Errorf("counters left %d/%d, want %d/%d", tooMany, errs, tt.wantTooMany, tt.wantErrs)
			}
		})
	}
}

func TestDelayCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Delay(ctx, time.Hour) {
		t.Error("Delay waited out an hour on a cancelled context")
	}
	if !Delay(ctx, 0) {
		t.Error("Delay of 0 reported a cancel")
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
