package clouds

import (
	"bufio"
	"fmt"
	"go/parser"
	"go/token"
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

// testKits are the packages only tests import (it is checked): test code, like _test.go files, so
// their lines do not count.
var testKits = []string{"internal/testsupport/", "internal/backends/conformance/"}

// TestCloudNamesStayHome counts the lines of non-test Go files that name a real cloud (its name or its
// title, in any case) outside that cloud's own files: internal/backends/<cloud>/,
// internal/emulator/<cloud>/ and internal/clouds/<cloud>.go. Test kits are test code. Run with -v to
// see the lines.
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
		if inTestKit(rel) != "" {
			return nil
		}
		if err := importsNoTestKit(path, rel); err != nil {
			t.Error(err)
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

// inTestKit is the test kit rel (a slash path from the module's root) is in, or "".
func inTestKit(rel string) string {
	for _, kit := range testKits {
		if strings.HasPrefix(rel, kit) {
			return kit
		}
	}
	return ""
}

// importsNoTestKit fails for a file outside the test kits that imports one: that kit's lines are product code.
func importsNoTestKit(path, rel string) error {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
	if err != nil {
		return err
	}
	for _, imp := range f.Imports {
		p := strings.Trim(imp.Path.Value, `"`)
		if i := strings.Index(p, "/internal/"); i >= 0 {
			if kit := inTestKit(p[i+1:] + "/"); kit != "" {
				return fmt.Errorf("%s imports %s, a test kit: its cloud names would be product code's", rel, kit)
			}
		}
	}
	return nil
}
