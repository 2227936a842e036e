package gpuname

import (
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

func TestFormFactor(t *testing.T) {
	const sxm, pcie = cloudprovider.FormFactorSXM, cloudprovider.FormFactorPCIe
	tests := []struct {
		names []string
		want  string
	}{
		// Verda gpu descriptions and names.
		{[]string{"1x H100 SXM5 80GB"}, sxm},
		{[]string{"A100 SXM4 40GB"}, sxm},
		{[]string{"8x B300 SXM6 262GB"}, sxm},
		{[]string{"1x L40S 48GB"}, pcie},
		{[]string{"2x RTX A6000 48GB"}, pcie},
		{[]string{"1x RTX 6000 Ada 48GB"}, pcie},
		{[]string{"RTX PRO 6000 96GB"}, pcie},
		{[]string{"1x Tesla V100 16GB"}, ""},
		{[]string{"1x AMD 7900XTX"}, ""},
		// Lambda gpu descriptions and type names.
		{[]string{"H100 (80 GB SXM5)"}, sxm},
		{[]string{"H100 (80 GB PCIe)"}, pcie},
		{[]string{"GH200 (96 GB)"}, ""},
		{[]string{"", "gpu_8x_h100_sxm5"}, sxm},
		{[]string{"gpu_1x_a10"}, ""},
		// Prime Intellect sockets and GPU types.
		{[]string{"SXM5"}, sxm},
		{[]string{"SXM2"}, sxm},
		{[]string{"PCIe"}, pcie},
		{[]string{"PCIE"}, pcie},
		{[]string{"L4_24GB"}, pcie},
		{[]string{"L40_48GB"}, pcie},
		{[]string{"RTX6000Ada_48GB"}, pcie},
		{[]string{"RTX_PRO_6000B_96GB"}, pcie},
		{[]string{"A6000_48GB"}, pcie},
		{[]string{"H100_80GB"}, ""},
		{[]string{"A100_80GB"}, ""},
		// nvidia-smi names (Atlas gpu_model, Prime cloudIds, UpCloud gpu_model).
		{[]string{"NVIDIA H100 80GB HBM3"}, sxm},
		{[]string{"nvidia h100 80gb hbm3"}, sxm},
		{[]string{"NVIDIA H100 PCIe"}, pcie},
		{[]string{"NVIDIA H100 NVL"}, pcie},
		{[]string{"NVIDIA A100-SXM4-80GB"}, sxm},
		{[]string{"NVIDIA A100 80GB PCIe"}, pcie},
		{[]string{"NVIDIA A100 80GB"}, ""},
		{[]string{"NVIDIA H100"}, ""},
		{[]string{"NVIDIA L40S"}, pcie},
		{[]string{"NVIDIA L4"}, pcie},
		{[]string{"NVIDIA RTX 6000 Ada Generation"}, pcie},
		{[]string{"NVIDIA HGX B200"}, sxm},
		{[]string{"NVIDIA B200"}, ""},
		// UpCloud plan names: the GPU suffix says it.
		{[]string{"GPU-8xCPU-64GB-1xL40S"}, pcie},
		{[]string{"GPU-SPOT-8xCPU-64GB-1xL4"}, pcie},
		{[]string{"GPU-12xCPU-240GB-1xH100"}, ""},
		// An explicit marker wins over the model rule; the first name that says wins.
		{[]string{"H100 NVL", "SXM5"}, pcie},
		{[]string{"", "  ", "H100_80GB", "SXM5"}, sxm},
		{nil, ""},
		// Not fooled by substrings.
		{[]string{"L400"}, ""},
		{[]string{"L4X"}, ""},
		{[]string{"PCIEX"}, ""},
	}
	for _, tt := range tests {
		if got := FormFactor(tt.names...); got != tt.want {
			t.Errorf("FormFactor(%q) = %q, want %q", tt.names, got, tt.want)
		}
	}
}

func TestGPUMemoryGBInName(t *testing.T) {
	tests := []struct {
		name string
		want int
	}{
		{"H100 SXM5 80GB", 80},
		{"1x H200 SXM5 141GB", 141},
		{"H100 (80 GB SXM5)", 80},
		{"GH200 (96 GB)", 96},
		{"A100_80GB", 80},
		{"RTX_PRO_6000B_96GB", 96},
		{"RTX6000Ada_48GB", 48},
		{"NVIDIA H100 80GB HBM3", 80},
		{"NVIDIA A100-SXM4-80GB", 80},
		{"nvidia a100 80gb pcie", 80},
		{"NVIDIA L40S", 0},
		{"H100 PCIe", 0},
		{"1x AMD 7900XTX", 0},
		{"A100_80GBX", 0},
		{"", 0},
	}
	for _, tt := range tests {
		if got := MemoryGB(tt.name); got != tt.want {
			t.Errorf("MemoryGB(%q) = %d, want %d", tt.name, got, tt.want)
		}
	}
}
