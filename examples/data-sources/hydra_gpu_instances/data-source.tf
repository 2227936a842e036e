# Every hydra machine in the configured clouds, with who holds it.
data "hydra_gpu_instances" "all" {}

# Fail a CI job when a machine may be billed with no Terraform state holding it.
check "no_leaked_gpu_machines" {
  assert {
    condition     = length(data.hydra_gpu_instances.all.orphans) == 0
    error_message = "GPU machines with no state: ${join(", ", data.hydra_gpu_instances.all.orphans)}"
  }
}

# What the machines cost: fail the pipeline when they run over a budget.
check "gpu_budget" {
  assert {
    condition     = data.hydra_gpu_instances.all.total_usd_per_hour <= 20
    error_message = "GPU machines cost $${data.hydra_gpu_instances.all.total_usd_per_hour}/h (over $20/h); $${data.hydra_gpu_instances.all.total_accrued_usd} so far."
  }
}
