# The quickstart: one H100 machine from the cheapest pool of the sandbox cloud, which runs on this
# machine and needs no credentials. `make quickstart` plans, applies, shows and destroys it.
terraform {
  required_providers {
    hydra = {
      source = "hydragpu/hydra"
      # The version `make install` builds (`make version`). Terraform selects a prerelease such as
      # 0.1.0-dev only when it is named exactly; with a release, say "~> 0.1".
      version = "0.1.0-dev"
    }
  }
}

provider "hydra" {
  sandbox {
    dir = "${path.cwd}/.hydra-sandbox"
  }
}

data "hydra_gpu_offer" "h100" {
  gpu_type = "h100"
}

resource "hydra_gpu_instance" "trainer" {
  name     = "quickstart"
  gpu_type = "h100"

  # Never pay more than this for the whole machine (US dollars per hour).
  max_price_per_hour = 4
}

output "machine" {
  value = {
    id                 = hydra_gpu_instance.trainer.id
    cloud              = hydra_gpu_instance.trainer.cloud
    region             = hydra_gpu_instance.trainer.region
    instance_type      = hydra_gpu_instance.trainer.instance_type
    price_usd_per_hour = hydra_gpu_instance.trainer.price_usd_per_hour
    status             = hydra_gpu_instance.trainer.status
    ssh                = "${hydra_gpu_instance.trainer.ssh_user}@${hydra_gpu_instance.trainer.ssh_host}:${hydra_gpu_instance.trainer.ssh_port}"
  }
}

output "cheapest_h100_offers" {
  value = [for o in data.hydra_gpu_offer.h100.offers : "${o.id}"]
}
