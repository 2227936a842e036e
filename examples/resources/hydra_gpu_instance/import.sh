# Import takes the machine's cloud-side name (its `id`): the pool's prefix, the machine's name, "--"
# and its ownership token. The prefix routes it to its pool (here sandbox-vm-pool).
# `data "hydra_gpu_instances"` lists the names of every machine hydra can see.
terraform import hydra_gpu_instance.trainer sbx-vm-trainer--k3j9x2ab
