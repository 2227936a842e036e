# With no cloud block, hydra uses the sandbox: a simulated cloud on this machine, no credentials.
provider "hydra" {
  sandbox {
    dir = "${path.cwd}/.hydra-sandbox"
  }

  provisioning {
    max_attempts = 3
  }
}
