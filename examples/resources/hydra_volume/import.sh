# Import takes the cloud's name and the cloud's own id of the volume (`cloud_volume_id`),
# `<cloud>/<volume id>`. hydra reads the volume's region and, from its cloud-side name, the
# resource's name, so the imported id is `<cloud>/<region>/<name>`.
terraform import hydra_volume.data sandbox/sbxv-5d1c0a9e7f21
