# Every hydra machine in the configured clouds, with who holds it.
data "hydra_gpu_instances" "all" {}

# Fail a CI job when a machine may be billed with no Terraform state holding it.
check "no_leaked_gpu_machines" {
  assert {
    condition     = length(data.hydra_gpu_instances.all.orphans) == 0
    error_message = "GPU machines with no state: ${join(", ", data.hydra_gpu_instances.all.orphans)}"
  }
}
