# The cheapest H100 any configured cloud offers, chosen at plan time.
resource "hydra_gpu_instance" "trainer" {
  name               = "trainer"
  gpu_type           = "h100"
  gpu_count          = 1
  max_price_per_hour = 3.5

  ssh_public_keys = [var.customer_ssh_key]

  provisioning_vars = {
    team     = "research"
    packages = ["htop", "nvtop"]
  }

  timeouts = {
    create = "45m"
  }
}

# For pipelines that plan on one machine and apply on another: pin the offer through the data source,
# which is read once at plan time and frozen into the saved plan.
data "hydra_gpu_offer" "l40s" {
  gpu_type = "l40s"
  clouds   = ["sandbox"]
}

resource "hydra_gpu_instance" "inference" {
  name     = "inference"
  gpu_type = "l40s"
  offer_id = data.hydra_gpu_offer.l40s.id

  # The data source answers anew on every plan: once the machine exists, keep it where it is.
  lifecycle {
    ignore_changes = [offer_id]
  }
}

# Capacity over predictability: let apply take the next cheapest offer within the same limits.
resource "hydra_gpu_instance" "batch" {
  name               = "batch"
  gpu_type           = "l4"
  kind               = "execlet"
  spot               = true
  allow_fallback     = true
  max_price_per_hour = 0.8
}

# Checkpoints that outlive the machine: a block volume, and a machine placed in its cloud and region
# that mounts it at /data. A replacement (a changed gpu_count, `terraform apply -replace`,
# replace_when_unhealthy, a preemption) mounts the same volume with its data; destroying the machine
# never deletes the volume.
resource "hydra_volume" "checkpoints" {
  name    = "checkpoints"
  type    = "block"
  size_gb = 1000
  cloud   = "sandbox"
  region  = "sbx-eu-1"
}

resource "hydra_gpu_instance" "finetune" {
  name                   = "finetune"
  gpu_type               = "h100"
  gpu_count              = 2
  replace_when_unhealthy = true

  volumes = [{
    volume_id  = hydra_volume.checkpoints.id
    mount_path = "/data"
  }]
}

variable "customer_ssh_key" {
  description = "authorized_keys line of the machine's user"
  type        = string
}
