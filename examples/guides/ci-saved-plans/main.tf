# A configuration planned by one CI job and applied by another, on a different runner that keeps
# nothing but the remote state: the offer is pinned through the data source, which Terraform reads once
# during plan and freezes into the saved plan file, so the apply job creates exactly what the plan job
# showed.
terraform {
  required_providers {
    hydra = { source = "hydragpu/hydra" }
  }

  # Remote state in PostgreSQL, with its lock; conn_str comes from the PG_CONN_STR environment variable.
  backend "pg" {
    schema_name = "hydra_training"
  }
}

variable "ssh_private_key" {
  description = "hydra's provisioning key, from a CI secret (TF_VAR_ssh_private_key)"
  type        = string
  sensitive   = true
}

provider "hydra" {
  # Credentials come from the CI job's environment (VERDA_CLIENT_ID, VERDA_CLIENT_SECRET, UPCLOUD_TOKEN).
  verda {}
  upcloud {}

  # Nothing of hydra's is kept on the runner between jobs: the choice travels in the plan file, and a
  # machine whose create a killed job cut short is recognised at the cloud by any later job.

  provisioning {
    ssh_private_key = var.ssh_private_key
  }
}

# Read once during `terraform plan -out`, frozen into the plan file.
data "hydra_gpu_offer" "trainer" {
  gpu_type           = "h100"
  gpu_count          = 8
  max_price_per_hour = 25
}

resource "hydra_gpu_instance" "trainer" {
  name               = "trainer"
  gpu_type           = "h100"
  gpu_count          = 8
  max_price_per_hour = 25
  offer_id           = data.hydra_gpu_offer.trainer.id

  # The data source answers anew on every later plan; without this, a cheaper offer found by a later
  # plan would replace the running machine.
  lifecycle {
    ignore_changes = [offer_id]
  }
}

output "trainer" {
  value = "${hydra_gpu_instance.trainer.cloud} ${hydra_gpu_instance.trainer.region} ${hydra_gpu_instance.trainer.instance_type}: $${hydra_gpu_instance.trainer.price_usd_per_hour}/h"
}
