# Adopting a machine that already runs, by its cloud-side name (the `id` listed by
# data "hydra_gpu_instances"). `terraform plan` shows the import; `terraform apply` records it.
terraform {
  required_providers {
    hydra = { source = "hydragpu/hydra" }
  }
}

provider "hydra" {}

import {
  to = hydra_gpu_instance.trainer
  id = "sbx-vm-trainer--k3j9x2ab"
}

# Describe the machine as it is: a gpu_type, gpu_count, kind or spot that differs from the machine's
# replaces it. offer_id is optional; the import reads it from the cloud.
resource "hydra_gpu_instance" "trainer" {
  name      = "trainer"
  gpu_type  = "h100"
  gpu_count = 1
}
