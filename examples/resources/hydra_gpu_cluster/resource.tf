# Four nodes of 8 H100s each on one InfiniBand fabric, from the cheapest cloud that can deliver them
# all, chosen at plan time. Apply blocks until every node is provisioned and the cluster check passed.
resource "hydra_gpu_cluster" "train" {
  name               = "train"
  gpu_type           = "h100"
  gpu_count          = 8 # per node
  nodes              = 4
  interconnect       = "fabric"
  max_price_per_hour = 120 # for the whole cluster

  ssh_public_keys = [var.customer_ssh_key]

  # Refuse `ready` below 100 GB/s of NCCL all-reduce bus bandwidth across the nodes.
  nccl_check = {
    min_bus_bandwidth_gbps = 100
  }

  timeouts = {
    create = "90m"
  }
}

output "hostfile" {
  value = hydra_gpu_cluster.train.hostfile
}

output "master_addr" {
  value = hydra_gpu_cluster.train.node[0].private_ip
}

variable "customer_ssh_key" {
  description = "authorized_keys line of the nodes' user"
  type        = string
}
