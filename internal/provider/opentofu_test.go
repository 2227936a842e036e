package provider

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// The acceptance tests drive whichever CLI TF_ACC_TERRAFORM_PATH names: Terraform or OpenTofu (make
// test runs a chosen set of them under OpenTofu too: test-tofu, tools/opentofu.sh). OpenTofu resolves
// "hydragpu/hydra" on its own registry host, so every address the tests hand the CLI (a reattached
// provider, a filesystem mirror's layout) takes the host of the CLI in use.

// Registry hosts: a bare source address ("hydragpu/hydra") means the first under Terraform and the
// second under OpenTofu.
const (
	terraformRegistryHost = "registry.terraform.io"
	opentofuRegistryHost  = "registry.opentofu.org"
)

var (
	cliOnce sync.Once
	cliName string // "Terraform" or "OpenTofu": the first word `version` prints
	cliErr  error
)

// testCLI names the CLI TF_ACC_TERRAFORM_PATH runs, from its `version` output: "Terraform" or
// "OpenTofu".
func testCLI() (string, error) {
	cliOnce.Do(func() {
		cmd := exec.Command(os.Getenv("TF_ACC_TERRAFORM_PATH"), "version")
		cmd.Env = append(os.Environ(), "CHECKPOINT_DISABLE=1")
		out, err := cmd.Output()
		if err != nil {
			cliErr = fmt.Errorf("%s version: %v", os.Getenv("TF_ACC_TERRAFORM_PATH"), err)
			return
		}
		cliName, _, _ = strings.Cut(strings.TrimSpace(string(out)), " ")
		if cliName != "Terraform" && cliName != "OpenTofu" {
			cliErr = fmt.Errorf("%s version prints %q: neither Terraform nor OpenTofu", os.Getenv("TF_ACC_TERRAFORM_PATH"), out)
		}
	})
	return cliName, cliErr
}

// registryHost is the registry host the CLI in use gives hydragpu/hydra.
func registryHost() string {
	if name, _ := testCLI(); name == "OpenTofu" {
		return opentofuRegistryHost
	}
	return terraformRegistryHost
}

// testProviderAddress is hydra's provider address under the CLI in use: what a configuration's
// `source = "hydragpu/hydra"` means there, and so the key TF_REATTACH_PROVIDERS must use.
func testProviderAddress() string { return registryHost() + "/hydragpu/hydra" }

// useTestCLI runs before the tests when TF_ACC is set. It fails when HYDRA_ACC_CLI (make test's
// test-tofu sets "OpenTofu") names another CLI than TF_ACC_TERRAFORM_PATH runs, so that a run meant for
// OpenTofu cannot pass under Terraform. Under OpenTofu it sets TF_ACC_PROVIDER_HOST (unless set) for
// terraform-plugin-testing: the provider it serves is reattached as <host>/hashicorp/hydra, the address
// OpenTofu gives a configuration without required_providers.
func useTestCLI() error {
	if os.Getenv("TF_ACC") == "" || os.Getenv("TF_ACC_TERRAFORM_PATH") == "" {
		return nil
	}
	name, err := testCLI()
	if err != nil {
		return err
	}
	if want := os.Getenv("HYDRA_ACC_CLI"); want != "" && want != name {
		return fmt.Errorf("HYDRA_ACC_CLI=%s, but TF_ACC_TERRAFORM_PATH=%s is %s", want, os.Getenv("TF_ACC_TERRAFORM_PATH"), name)
	}
	if name == "OpenTofu" && os.Getenv("TF_ACC_PROVIDER_HOST") == "" {
		return os.Setenv("TF_ACC_PROVIDER_HOST", opentofuRegistryHost)
	}
	return nil
}

// The OpenTofu version make test runs (tools/opentofu.sh's tested=) is the one the README and the
// provider's documentation name.
func TestOpenTofuVersionDocumented(t *testing.T) {
	script, err := os.ReadFile("../../tools/opentofu.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^tested=([0-9]+\.[0-9]+\.[0-9]+)$`).FindSubmatch(script)
	if m == nil {
		t.Fatal("tools/opentofu.sh has no tested=<version> line")
	}
	for _, f := range []string{"../../README.md", "../../docs/index.md"} {
		doc, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(doc), "OpenTofu "+string(m[1])) {
			t.Errorf("%s does not name the tested OpenTofu %s", f, m[1])
		}
	}
}
