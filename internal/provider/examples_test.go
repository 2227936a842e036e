package provider

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestAccExamples_validate runs `terraform validate` with the real CLI on every example that feeds the
// docs, so a snippet users copy never fails on a renamed or removed attribute.
func TestAccExamples_validate(t *testing.T) {
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: set TF_ACC=1 (make test does)")
	}
	testAccPreCheck(t)
	t.Parallel()
	reattach := serveForReattach(t)
	dirs := []string{"../../examples/provider", "../../examples/quickstart"}
	for _, pattern := range []string{"../../examples/resources/*", "../../examples/data-sources/*"} {
		found, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, found...)
	}
	checked := 0
	for _, dir := range dirs {
		files, _ := filepath.Glob(filepath.Join(dir, "*.tf"))
		if len(files) == 0 {
			continue
		}
		checked++
		work := t.TempDir()
		required := true
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(data), "required_providers") {
				required = false
			}
			if err := os.WriteFile(filepath.Join(work, filepath.Base(f)), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if required {
			tf := "terraform {\n  required_providers {\n    hydra = { source = \"hydragpu/hydra\" }\n  }\n}\n"
			if err := os.WriteFile(filepath.Join(work, "zz_required_providers.tf"), []byte(tf), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command(os.Getenv("TF_ACC_TERRAFORM_PATH"), "validate", "-no-color")
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "TF_REATTACH_PROVIDERS="+reattach, "CHECKPOINT_DISABLE=1", "TF_CLI_CONFIG_FILE=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("terraform validate %s: %v\n%s", dir, err, out)
		}
	}
	if checked < 4 {
		t.Fatalf("validated %d example directories; want at least 4 (provider, resource, data source, quickstart)", checked)
	}
}
