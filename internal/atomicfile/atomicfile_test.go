package atomicfile

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	tests := []struct {
		name string
		data string
		perm os.FileMode
	}{
		{"creates", `{"a":1}`, 0o600},
		{"replaces, with new permissions", `{"a":2}`, 0o644},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := Write(path, []byte(tt.data), tt.perm); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil || string(got) != tt.data {
				t.Fatalf("read %q, %v; want %q", got, err, tt.data)
			}
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if runtime.GOOS != "windows" && st.Mode().Perm() != tt.perm {
				t.Errorf("mode %v, want %v", st.Mode().Perm(), tt.perm)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				t.Errorf("directory holds %d entries, want only the file (no temporary left)", len(entries))
			}
		})
	}
}

// A write that cannot finish (the target is a directory) leaves no temporary file behind and the old
// content in place.
func TestWriteFailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "taken")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(target, "inside"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(target, []byte("new"), 0o644); err == nil {
		t.Fatal("renaming over a non-empty directory succeeded")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "taken" {
		t.Errorf("directory holds %v, want only the old directory", entries)
	}
	if err := Write(filepath.Join(dir, "missing", "f"), []byte("x"), 0o644); err == nil {
		t.Error("a write into a missing directory succeeded")
	}
}

// Update leaves a file that already holds the content and permissions alone (the same file: no
// rename), and replaces one whose content or permissions differ.
func TestUpdate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	stat := func() os.FileInfo {
		t.Helper()
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if err := Update(path, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	first := stat()
	if err := Update(path, []byte("one"), 0o644); err != nil || !os.SameFile(first, stat()) {
		t.Errorf("the same content and permissions: %v, replaced: %v; want no error and the file left alone", err, !os.SameFile(first, stat()))
	}
	for _, c := range []struct {
		name string
		data string
		perm os.FileMode
	}{
		{"other content, same size", "two", 0o644},
		{"other permissions", "two", 0o600},
		{"longer content", "three", 0o600},
	} {
		if c.perm != 0o644 && runtime.GOOS == "windows" {
			continue // no permission bits to compare
		}
		before := stat()
		if err := Update(path, []byte(c.data), c.perm); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, _ := os.ReadFile(path)
		after := stat()
		if string(got) != c.data || after.Mode().Perm() != c.perm || os.SameFile(before, after) {
			t.Errorf("%s: file holds %q with %v (replaced: %v); want %q with %v, replaced", c.name, got, after.Mode().Perm(), !os.SameFile(before, after), c.data, c.perm)
		}
	}
}
