// Package playbooks embeds hydra's provisioning playbooks and roles, so the provider binary carries them.
package playbooks

import "embed"

// FS holds every playbook, role and file under this directory.
//
//go:embed *.yml
var FS embed.FS
