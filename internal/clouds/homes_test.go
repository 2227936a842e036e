package clouds

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// maxCloudLinesAway is the most lines of Go (tests aside) outside a cloud's own files that may name a
// cloud: what a cloud is, the cloud says through the contract (cloudprovider), not code elsewhere.
const maxCloudLinesAway = 30

// TestCloudNamesStayHome counts the lines of non-test Go files that name a real cloud (its name or its
// title, in any case) outside that cloud's own files: internal/backends/<cloud>/,
// internal/emulator/<cloud>/ and internal/clouds/<cloud>.go. Run with -v to see them.
func TestCloudNamesStayHome(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var words []string
	own := map[string]bool{}
	for _, d := range All() {
		words = append(words, regexp.QuoteMeta(d.Name), strings.ReplaceAll(regexp.QuoteMeta(d.Title), " ", `\s*`))
		own["internal/backends/"+d.Name+"/"] = true
		own["internal/emulator/"+d.Name+"/"] = true
		own["internal/clouds/"+d.Name+".go"] = true
	}
	if len(words) == 0 {
		t.Fatal("no clouds registered")
	}
	re := regexp.MustCompile(`(?i)\b(` + strings.Join(words, "|") + `)`)
	count := 0
	err = filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if e.IsDir() {
			if strings.HasPrefix(e.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		for prefix := range own {
			if strings.HasPrefix(rel, prefix) {
				return nil
			}
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for n := 1; sc.Scan(); n++ {
			if re.MatchString(sc.Text()) {
				count++
				t.Logf("%s:%d: %s", rel, n, strings.TrimSpace(sc.Text()))
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d lines name a cloud outside its own files (at most %d)", count, maxCloudLinesAway)
	if count > maxCloudLinesAway {
		t.Errorf("%d lines name a cloud outside its own files, more than %d: say it through the cloud's backend "+
			"(cloudprovider.Facts or an optional ability) or in the cloud's own files", count, maxCloudLinesAway)
	}
}
