# Every real cloud's block pointed at hydra's local emulator of its API: the real client code paths
# (authentication, paging, errors, statuses), no account and no cost. Each emulator keeps its state in
# its own directory, so separate plan, apply and destroy runs see the same machines.
terraform {
  required_providers {
    hydra = { source = "hydragpu/hydra" }
  }
}

variable "emulators" {
  description = "Parent directory of the emulators' state"
  type        = string
  default     = ".hydra-emulators"
}

provider "hydra" {
  atlas {
    emulator_dir = "${var.emulators}/atlas"
  }
  lambda {
    emulator_dir = "${var.emulators}/lambda"
  }
  mithril {
    enabled      = true
    emulator_dir = "${var.emulators}/mithril"
  }
  primeintellect {
    emulator_dir = "${var.emulators}/primeintellect"
  }
  upcloud {
    emulator_dir = "${var.emulators}/upcloud"
  }
  verda {
    emulator_dir = "${var.emulators}/verda"
  }

  # Emulated machines cannot be reached over SSH.
  provisioning {
    enabled = false
  }
}

data "hydra_gpu_offer" "h100" {
  gpu_type = "h100"
}

resource "hydra_gpu_instance" "trainer" {
  name     = "trainer"
  gpu_type = "h100"
}

output "chosen" {
  value = "${hydra_gpu_instance.trainer.cloud} ${hydra_gpu_instance.trainer.region} ${hydra_gpu_instance.trainer.instance_type} at ${hydra_gpu_instance.trainer.price_usd_per_hour} USD/h"
}

output "rejections" {
  value = data.hydra_gpu_offer.h100.rejections
}
