package provider

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"golang.org/x/crypto/ssh"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	"github.com/hydragpu/terraform-provider-hydra/internal/filelock"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/provision"
)

// sandboxKeyFile is the provisioning key hydra generates for a sandbox-only configuration.
const sandboxKeyFile = "hydra_provisioning_ed25519"

func provisioningEnabled(pc *provisioningModel) bool {
	return pc == nil || pc.Enabled.IsNull() || pc.Enabled.ValueBool()
}

// provisioningUnsupported says why provisioning cannot run on the operating system goos, or "" when it
// can. It runs ansible-playbook, whose control node needs a Unix-like system.
func provisioningUnsupported(goos string) string {
	if goos != "windows" {
		return ""
	}
	return "hydra provisions machines by running ansible-playbook on the machine running Terraform, and " +
		"Ansible does not run on Windows. Run Terraform under WSL (with hydra's linux build and ansible-core installed " +
		"there), or set provisioning { enabled = false } to rent machines without hydra's setup."
}

// provisioningUnavailable is why this machine cannot run provisioning: Windows, or no ansible-playbook.
// It belongs to where Terraform runs, not to the configuration, so only what needs provisioning fails
// on it (a plan that creates, replaces or provisions a machine); refresh, import and destroy still work.
type provisioningUnavailable struct {
	summary, detail string
}

// error adds the refusal to plan what needs provisioning, for the instance name.
func (u *provisioningUnavailable) error(diags *diag.Diagnostics, name string) {
	diags.AddError(u.summary, fmt.Sprintf("%s needs provisioning, which cannot run where Terraform runs now: %s", name, u.detail))
}

// locateAnsible finds ansible-playbook: the configured path, or the one on PATH. It says why provisioning
// cannot run here when it cannot.
func locateAnsible(pc *provisioningModel, goos string) (string, *provisioningUnavailable) {
	if why := provisioningUnsupported(goos); why != "" {
		return "", &provisioningUnavailable{"Provisioning is not available on " + goos, why}
	}
	ansible := pc.AnsiblePlaybook.ValueString()
	if ansible == "" {
		if _, err := exec.LookPath("ansible-playbook"); err != nil {
			return "", &provisioningUnavailable{"ansible-playbook not found",
				"hydra provisions machines with Ansible, and ansible-playbook is not on PATH. Install ansible-core 2.14 or later " +
					"on the machine running Terraform (`apt-get install ansible-core`, or `pipx install ansible-core`), set " +
					"provisioning { ansible_playbook = \"/path/to/ansible-playbook\" }, or switch provisioning off with " +
					"provisioning { enabled = false } for images that need no setup."}
		}
		return "", nil
	}
	if _, err := os.Stat(ansible); err != nil {
		return "", &provisioningUnavailable{"ansible-playbook not found",
			fmt.Sprintf("provisioning.ansible_playbook: %v. Install ansible-core there, point ansible_playbook at it, or set provisioning { enabled = false }.", err)}
	}
	return ansible, nil
}

// newProvisioner builds the Ansible runner (ansible: its path, "" for the one on PATH) and returns the
// public key to install on new machines (with only the sandbox, a key kept in sandboxDir).
func newProvisioner(pc *provisioningModel, ansible string, sandboxDir string, realClouds bool, logger hclog.Logger) (*provision.Runner, string, diag.Diagnostics) {
	var diags diag.Diagnostics
	keyPath := path.Root("provisioning").AtName("ssh_private_key")
	var key []byte
	switch {
	case pc.SSHPrivateKey.ValueString() != "":
		key = []byte(pc.SSHPrivateKey.ValueString())
	case realClouds:
		diags.AddAttributeError(keyPath, "Provisioning needs an SSH key",
			"hydra logs in to new machines with an SSH key to provision them. Set provisioning { ssh_private_key = file(\"~/.ssh/hydra\") } "+
				"(a key without passphrase), or provisioning { enabled = false }.")
		return nil, "", diags
	default:
		k, err := sandboxKey(sandboxDir)
		if err != nil {
			diags.AddAttributeError(keyPath, "Cannot create the sandbox's provisioning key", err.Error())
			return nil, "", diags
		}
		key = k
	}
	if _, err := ssh.ParsePrivateKey(key); err != nil {
		diags.AddAttributeError(keyPath, "Invalid SSH private key",
			"provisioning.ssh_private_key could not be parsed: expected an OpenSSH or PEM private key without passphrase.")
		return nil, "", diags
	}
	runner, err := provision.New(provision.Config{
		PrivateKey: key, PlaybookDir: pc.PlaybookDir.ValueString(), AnsiblePlaybook: ansible, Logger: logger.Named("provision"),
	})
	if err != nil {
		diags.AddAttributeError(path.Root("provisioning"), "Invalid provisioning configuration", err.Error())
		return nil, "", diags
	}
	return runner, runner.AuthorizedKey(), diags
}

// sandboxKey returns the sandbox's provisioning key, generating it once (0600) for all processes.
func sandboxKey(dir string) ([]byte, error) {
	p := filepath.Join(dir, sandboxKeyFile)
	unlock, err := filelock.Lock(p+".lock", 0o600)
	if err != nil {
		return nil, err
	}
	defer unlock()
	data, err := os.ReadFile(p)
	if err == nil {
		return data, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	block, err := ssh.MarshalPrivateKey(priv, "hydra sandbox provisioning")
	if err != nil {
		return nil, err
	}
	data = pem.EncodeToMemory(block)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		return nil, fmt.Errorf("writing %s: %w", p, err)
	}
	return data, nil
}

// runnerInspector lets the control plane read provisioned machines (health, marker) and drain
// execlets through the Ansible runner.
type runnerInspector struct{ r *provision.Runner }

var _ controlplane.Inspector = runnerInspector{}

// ProbeHealth is the runner's health probe; reasons is "" when the machine is healthy.
func (ri runnerInspector) ProbeHealth(ctx context.Context, ep cloudprovider.SSHEndpoint, hostKey string) (string, error) {
	h, err := ri.r.ProbeHealth(ctx, ep, hostKey)
	if err != nil || h.Healthy {
		return "", err
	}
	if reason := h.Reason(); reason != "" {
		return reason, nil
	}
	if len(h.Failed) > 0 {
		return strings.Join(h.Failed, ", "), nil
	}
	return "the health checks failed", nil
}

// ReadMarker is the runner's marker reader.
func (ri runnerInspector) ReadMarker(ctx context.Context, ep cloudprovider.SSHEndpoint, hostKey string) (controlplane.Marker, string, error) {
	m, key, err := ri.r.ReadMarker(ctx, ep, hostKey)
	return controlplane.Marker{Digest: m.Digest, Playbook: m.Playbook, ProvisionedAt: m.ProvisionedAt}, key, err
}

// Drain is the runner's drain.
func (ri runnerInspector) Drain(ctx context.Context, inst cloudprovider.Instance, pool inventory.Pool, gpuType string, gpuCount int, hostKey string) error {
	return ri.r.Drain(ctx, inst, pool, gpuType, gpuCount, hostKey)
}
