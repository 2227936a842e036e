data "hydra_gpu_offer" "h100x8" {
  gpu_type           = "h100"
  gpu_count          = 8
  max_price_per_hour = 25
}

output "cheapest" {
  value = "${data.hydra_gpu_offer.h100x8.cloud} ${data.hydra_gpu_offer.h100x8.region}: $${data.hydra_gpu_offer.h100x8.price_usd_per_hour}/h"
}

# Why each cloud that offered nothing said no (no capacity, timed out, above the max price, ...).
output "rejections" {
  value = data.hydra_gpu_offer.h100x8.rejections
}
