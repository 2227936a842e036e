# A shared file system for datasets and checkpoints. A volume never moves: changing cloud, region, name,
# type or size_gb replaces it (a new, empty volume), so write the place down rather than following the
# cheapest offer. hydra_gpu_offer's volume_type says where the file systems and the GPUs are.
data "hydra_gpu_offer" "h100" {
  gpu_type    = "h100"
  volume_type = "shared_fs"
}

output "cheapest_place_with_file_systems" {
  value = "${data.hydra_gpu_offer.h100.cloud}/${data.hydra_gpu_offer.h100.region}"
}

resource "hydra_volume" "data" {
  name    = "data"
  type    = "shared_fs"
  size_gb = 500 # ignored by a cloud whose file systems grow with their data
  cloud   = "lambda"
  region  = "us-east-1"

  lifecycle {
    prevent_destroy = true # the data outlives every machine: never delete it by accident
  }
}

output "volume_id" {
  value = hydra_volume.data.id # lambda/us-east-1/data: what a machine's volumes[*].volume_id takes
}

output "volume_price" {
  value = hydra_volume.data.price_usd_per_month # null where the cloud states no price
}
