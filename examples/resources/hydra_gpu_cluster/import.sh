# Import takes the cloud's name and the cloud's own id of the cluster (`cloud_cluster_id`),
# `<cloud>/<cluster id>`. hydra reads every node from the cloud and, with provisioning on, each node's
# provisioning marker.
terraform import hydra_gpu_cluster.train sandbox/sbxc-3f9a61d2e0b4
