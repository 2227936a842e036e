# With no cloud block, hydra uses the sandbox: a simulated cloud on this machine, no credentials.
provider "hydra" {
  sandbox {
    dir = "${path.cwd}/.hydra-sandbox"
  }
}

# Real clouds: each is asked only when its block is present. Credentials may also come from the
# environment variables each vendor's own tools use (VERDA_CLIENT_ID, UPCLOUD_TOKEN, PRIME_API_KEY, ...).
provider "hydra" {
  alias = "production"

  atlas {
    endpoint = "https://atlas.internal.example.com"
    token    = var.atlas_token
  }
  verda {
    client_id     = var.verda_client_id
    client_secret = var.verda_client_secret
  }
  upcloud {
    token = var.upcloud_token
  }
  primeintellect {
    api_key = var.prime_api_key
  }
  mithril {
    enabled            = true
    api_key            = var.mithril_api_key
    project            = "ml-research"
    win_margin_percent = 10
  }

  offer_timeout = "15s"

  provisioning {
    ssh_private_key = file("~/.ssh/hydra")
    max_attempts    = 3
  }
}

variable "atlas_token" {
  type      = string
  sensitive = true
}
variable "verda_client_id" {
  type      = string
  sensitive = true
}
variable "verda_client_secret" {
  type      = string
  sensitive = true
}
variable "upcloud_token" {
  type      = string
  sensitive = true
}
variable "prime_api_key" {
  type      = string
  sensitive = true
}
variable "mithril_api_key" {
  type      = string
  sensitive = true
}
