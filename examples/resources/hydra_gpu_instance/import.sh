# Import takes the instance's cloud-side name: the pool's prefix followed by the machine's name.
# The prefix routes it to its pool (here sandbox-vm-pool).
terraform import hydra_gpu_instance.trainer sbx-vm-trainer
