// Package playbooks embeds hydra's provisioning playbooks and roles, so the provider binary carries them.
//
// bare-vm.yml and execlet.yml share one layout: a preflight (what kind of machine it is, cloud-init,
// automatic upgrades stopped, the dpkg lock), the driver layer (NVIDIA driver, fabric manager on
// NVSwitch machines, container toolkit, DCGM), monitoring (node_exporter, dcgm-exporter), the role the
// machine plays (customer SSH access, or the execlet runtime), health checks that fail the run, and the
// provisioning marker recording a successful run (roles/marker). health-probe.yml applies the same
// health criteria (files/health_probe.py) alone, reading only. See README.md.
package playbooks

import "embed"

// FS holds every playbook, role and file under this directory.
//
//go:embed *.yml roles files
var FS embed.FS
