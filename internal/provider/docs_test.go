package provider

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/clouds"
)

// cloudLists are the places in the docs that list every cloud hydra rents from, each found by the
// words that start it; the list runs to the end of its paragraph (or table). Generated docs/ follow
// their templates (make docs-check), so the templates are checked.
var cloudLists = []struct{ file, anchor string }{
	{"README.md", "`terraform plan` asks every eligible pool ("},
	{"README.md", "Each cloud is asked only when its block is in the provider configuration"},
	{"templates/index.md.tmpl", "hydra rents GPU machines from several clouds ("},
	{"templates/index.md.tmpl", "Each cloud is asked only when its block is present"},
	{"templates/guides/importing-machines.md.tmpl", "| prefix | pool | cloud | kind |"},
	{"templates/resources/gpu_instance.md.tmpl", "| cloud | where the record lives | confirmation recorded |"},
	{"templates/guides/testing-with-the-sandbox.md.tmpl", "| configure |"},
	{"DESIGN.md", "| cloud | a company that rents GPU machines"},
}

// paragraphAt returns the text from anchor to the next blank line.
func paragraphAt(t *testing.T, file, anchor string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", file))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	i := strings.Index(text, anchor)
	if i < 0 {
		t.Fatalf("%s: %q not found; update cloudLists if the text moved", file, anchor)
	}
	text = text[i:]
	if j := strings.Index(text, "\n\n"); j >= 0 {
		text = text[:j]
	}
	return text
}

// Every list of clouds in the docs names every cloud of the registry, by its title or its name.
func TestDocsNameEveryCloud(t *testing.T) {
	for _, l := range cloudLists {
		para := paragraphAt(t, l.file, l.anchor)
		for _, d := range clouds.All() {
			byTitle := regexp.MustCompile(`\b` + regexp.QuoteMeta(d.Title) + `\b`)
			if !byTitle.MatchString(para) && !strings.Contains(para, "`"+d.Name+"`") {
				t.Errorf("%s: the list starting %q leaves out %s (name `%s`):\n%s", l.file, l.anchor, d.Title, d.Name, para)
			}
		}
	}
}

// The resource's price attribute is price_usd_per_hour; price_per_hour survives only as the sandbox
// catalog's own JSON field (quoted) and the row that explains that field.
func TestDocsNoStalePriceAttribute(t *testing.T) {
	stale := regexp.MustCompile(`\bprice_per_hour\b`)
	var files []string
	for _, pattern := range []string{"../../README.md", "../../DESIGN.md", "../../CHANGELOG.md", "../../docs/*.md", "../../docs/*/*.md",
		"../../templates/*.tmpl", "../../templates/*/*.tmpl", "../../examples/*/*/*", "../../examples/*/*/*/*", "../../examples/*/*"} {
		found, _ := filepath.Glob(pattern)
		files = append(files, found...)
	}
	if len(files) < 20 {
		t.Fatalf("found only %d doc and example files", len(files))
	}
	for _, f := range files {
		if info, err := os.Stat(f); err != nil || info.IsDir() {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range strings.Split(string(data), "\n") {
			if !stale.MatchString(line) || strings.Contains(line, "the catalog's own field name") {
				continue
			}
			if stale.MatchString(strings.ReplaceAll(line, `"price_per_hour"`, "")) {
				t.Errorf("%s:%d says price_per_hour; the attribute is price_usd_per_hour:\n%s", f, n+1, line)
			}
		}
	}
}
