package emukit

import (
	"os"
	"path/filepath"
	"testing"
)

func TestStoreRepaired(t *testing.T) {
	type st struct{ M map[string]int }
	repair := func(s *st) { MakeMaps(&s.M) }
	dir := t.TempDir()
	// A state file that lacks the map (an older emulator wrote it) is repaired before fn sees it.
	if err := os.WriteFile(filepath.Join(dir, "s.json"), []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, ""} { // "": a fresh in-memory state is repaired too
		s := NewStore[st](d, "s")
		if err := s.Repaired(repair, func(x *st) error { x.M["k"]++; return nil }); err != nil {
			t.Fatalf("dir %q: %v", d, err)
		}
		n := 0
		_ = s.Repaired(repair, func(x *st) error { n = x.M["k"]; return nil })
		if n != 1 {
			t.Fatalf("dir %q: after one increment k = %d, want 1 (always saved)", d, n)
		}
	}
}
