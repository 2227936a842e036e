import {
  to = hydra_gpu_instance.trainer
  id = "sbx-vm-trainer--k3j9x2ab"
}
