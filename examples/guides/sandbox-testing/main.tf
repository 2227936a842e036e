# The module under test: one inference machine whose GPU type and price ceiling are inputs.
terraform {
  required_providers {
    hydra = { source = "hydragpu/hydra" }
  }
}

variable "gpu_type" {
  type    = string
  default = "l40s"
}

variable "max_price_per_hour" {
  type    = number
  default = 1.5
}

resource "hydra_gpu_instance" "inference" {
  name               = "inference"
  gpu_type           = var.gpu_type
  max_price_per_hour = var.max_price_per_hour
}

output "endpoint" {
  value = "${hydra_gpu_instance.inference.ssh_user}@${hydra_gpu_instance.inference.ssh_host}:${hydra_gpu_instance.inference.ssh_port}"
}

output "price_usd_per_hour" {
  value = hydra_gpu_instance.inference.price_usd_per_hour
}
