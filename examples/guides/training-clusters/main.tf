resource "hydra_gpu_cluster" "train" {
  name      = "llama-ft"
  gpu_type  = "h100"
  gpu_count = 8
  nodes     = 4

  ssh_public_keys = [var.ssh_public_key]
}

# torchrun on every node: node i gets --node_rank i, the first node's private address is the
# rendezvous, and the cloud's fabric variables (nccl_env) are exported first.
resource "terraform_data" "launch" {
  count            = length(hydra_gpu_cluster.train.node)
  triggers_replace = [hydra_gpu_cluster.train.id, var.script]

  connection {
    type        = "ssh"
    host        = hydra_gpu_cluster.train.node[count.index].ssh_host
    port        = hydra_gpu_cluster.train.node[count.index].ssh_port
    user        = hydra_gpu_cluster.train.node[count.index].ssh_user
    private_key = file(var.ssh_private_key_file)
    host_key    = hydra_gpu_cluster.train.node[count.index].host_key

    # Through the cluster's login node where the cloud's nodes have no public address (Verda);
    # null for nodes reached directly.
    bastion_host     = hydra_gpu_cluster.train.node[count.index].ssh_jump_host
    bastion_port     = hydra_gpu_cluster.train.node[count.index].ssh_jump_port
    bastion_user     = hydra_gpu_cluster.train.node[count.index].ssh_jump_user
    bastion_host_key = hydra_gpu_cluster.train.node[count.index].ssh_jump_host_key
  }

  provisioner "file" {
    content     = hydra_gpu_cluster.train.hostfile
    destination = "/tmp/hostfile"
  }

  provisioner "file" {
    content = templatefile("${path.module}/launch.sh.tftpl", {
      nccl_env    = hydra_gpu_cluster.train.nccl_env
      nnodes      = hydra_gpu_cluster.train.nodes
      nproc       = hydra_gpu_cluster.train.gpu_count
      node_rank   = count.index
      master_addr = split(" ", split("\n", hydra_gpu_cluster.train.hostfile)[0])[0]
      script      = var.script
    })
    destination = "/tmp/launch.sh"
  }

  provisioner "remote-exec" {
    inline = ["nohup bash /tmp/launch.sh > /tmp/train.log 2>&1 &"]
  }
}

variable "ssh_public_key" {
  type = string
}

variable "ssh_private_key_file" {
  type = string
}

variable "script" {
  description = "the training script on every node, e.g. /home/ubuntu/train.py"
  type        = string
}
