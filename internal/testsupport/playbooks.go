// Package testsupport holds helpers that the tests of several packages share.
package testsupport

import (
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/hydragpu/terraform-provider-hydra/playbooks"
)

// PlaybooksWith is the embedded playbooks (playbooks.FS) with files (path: content) beside them, each
// in place of an embedded file of its path. It fails t when the embedded files cannot be read.
func PlaybooksWith(t testing.TB, files map[string]string) fstest.MapFS {
	t.Helper()
	m := fstest.MapFS{}
	err := fs.WalkDir(playbooks.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(playbooks.FS, p)
		m[p] = &fstest.MapFile{Data: b, Mode: 0o644}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for p, content := range files {
		m[p] = &fstest.MapFile{Data: []byte(content), Mode: 0o644}
	}
	return m
}
