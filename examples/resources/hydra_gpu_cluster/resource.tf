# Four nodes of 8 H100s each on one InfiniBand fabric with a shared file system, from the cheapest
# cloud that can deliver them all and keeps such file systems, chosen at plan time. Apply blocks until
# every node is provisioned, has mounted the file system, and the cluster check passed.
resource "hydra_gpu_cluster" "train" {
  name               = "train"
  gpu_type           = "h100"
  gpu_count          = 8 # per node
  nodes              = 4
  interconnect       = "fabric"
  max_price_per_hour = 120 # for the whole cluster

  ssh_public_keys = [var.customer_ssh_key]

  # Every node mounts the shared file system below at /data; a replacement of the cluster mounts it
  # again with its data. The cluster is planned in the file system's cloud and region.
  volumes = [{
    volume_id  = hydra_volume.dataset.id
    mount_path = "/data"
  }]

  # Refuse `ready` below 100 GB/s of NCCL all-reduce bus bandwidth across the nodes.
  nccl_check = {
    min_bus_bandwidth_gbps = 100
  }

  timeouts = {
    create = "90m"
  }
}

# The cheapest place for such a cluster that also keeps shared file systems, and a file system there.
data "hydra_gpu_offer" "train" {
  gpu_type     = "h100"
  gpu_count    = 8
  nodes        = 4
  interconnect = "fabric"
  volume_type  = "shared_fs"
}

resource "hydra_volume" "dataset" {
  name    = "dataset"
  type    = "shared_fs"
  size_gb = 2000
  cloud   = data.hydra_gpu_offer.train.cloud
  region  = data.hydra_gpu_offer.train.region

  lifecycle {
    prevent_destroy = true            # the data outlives every cluster
    ignore_changes  = [cloud, region] # a cheaper place later never moves (and empties) it
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
