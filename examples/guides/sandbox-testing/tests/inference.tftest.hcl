# `terraform test` against the sandbox: a simulated cloud in a directory of its own, no credentials, no
# cost. Every run shares the provider below; the machines of `command = apply` runs are destroyed when
# the file's runs are done.
provider "hydra" {
  sandbox {
    # Relative to the directory `terraform test` runs in. Delete it before a run for the default
    # catalog, or put your own catalog.json and faults.json in it.
    dir       = ".hydra-sandbox-test"
    boot_time = "1s"
  }
  plan_quote_dir = ".hydra-test-quotes"

  # Only the HCL is under test: machines are ready as soon as they run. Remove this block to run
  # hydra's playbooks on the sandbox's machines too (needs ansible-core and openssh-server; minutes).
  provisioning {
    enabled = false
  }
}

run "plan_picks_an_offer_within_the_cap" {
  command = plan

  assert {
    condition     = hydra_gpu_instance.inference.cloud == "sandbox"
    error_message = "with only the sandbox configured, the machine must come from the sandbox"
  }
  assert {
    condition     = hydra_gpu_instance.inference.price_usd_per_hour <= var.max_price_per_hour
    error_message = "planned ${hydra_gpu_instance.inference.price_usd_per_hour} USD/h, above the cap"
  }
}

run "bigger_gpu_same_module" {
  command = plan

  variables {
    gpu_type           = "h100"
    max_price_per_hour = 3
  }

  assert {
    condition     = hydra_gpu_instance.inference.instance_type == "sbx.h100.1x"
    error_message = "expected the sandbox's one-GPU H100 shape, got ${hydra_gpu_instance.inference.instance_type}"
  }
}

run "apply_reaches_ready" {
  command = apply

  assert {
    condition     = hydra_gpu_instance.inference.status == "ready"
    error_message = "status is ${hydra_gpu_instance.inference.status}, want ready"
  }
  assert {
    condition     = output.endpoint != ""
    error_message = "no SSH endpoint"
  }
}
