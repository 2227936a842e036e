# A cheapest H100 in a region that keeps shared file systems, a file system there, and a machine that
# mounts it at /data. A replacement of the machine (a changed shape, replace_when_unhealthy, a
# preemption) gets the same file system with its data; destroying the machine never deletes it.
data "hydra_gpu_offer" "h100" {
  gpu_type    = "h100"
  volume_type = "shared_fs"
}

resource "hydra_volume" "data" {
  name    = "data"
  type    = "shared_fs"
  size_gb = 500 # ignored by a cloud whose file systems grow with their data
  cloud   = data.hydra_gpu_offer.h100.cloud
  region  = data.hydra_gpu_offer.h100.region

  lifecycle {
    prevent_destroy = true # the data outlives every machine: never delete it by accident
  }
}

output "volume_id" {
  value = hydra_volume.data.id # <cloud>/<region>/data: what a machine's volumes[*].volume_id takes
}

output "volume_price" {
  value = hydra_volume.data.price_usd_per_month # null where the cloud states no price
}
