package simhost

import "fmt"

// WriteGPULayer writes the simulated GPU layer of a machine into dir, as Ensure does but without
// starting anything: the stand-ins in dir/bin, the GPU description they read (dir/gpus.json), their
// fault directory (dir/faults) and the root they keep their state under (dir/root). The stand-ins find
// these files relative to their own (resolved) path, so a link to dir/bin/nvidia-smi from anywhere
// answers for this machine.
//
// internal/testsupport/realos puts this directory into a real Debian system container, where only the GPU
// commands (nvidia-smi, dcgmi, nv-hostengine, dcgm-exporter, nvidia-ctk, the docker client) are linked
// to it; the container's own systemctl, dpkg-query, shutdown and systemd-detect-virt are the real ones.
func WriteGPULayer(dir string, spec Spec) error {
	if spec.GPUCount < 0 || spec.GPUModel == "" && spec.GPUCount > 0 {
		return fmt.Errorf("simhost: a GPU layer needs a GPU model and a count of at least 0 (got %q, %d)", spec.GPUModel, spec.GPUCount)
	}
	return writeMachineFiles(dir, spec)
}
