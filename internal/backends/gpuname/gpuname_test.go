package gpuname

import (
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// TestFormFactor: each name alone reads as the form factor it is listed under ("" where it does not say).
func TestFormFactor(t *testing.T) {
	const sxm, pcie = cloudprovider.FormFactorSXM, cloudprovider.FormFactorPCIe
	byFormFactor := map[string][]string{
		sxm: {
			// Verda gpu descriptions and names.
			"1x H100 SXM5 80GB", "A100 SXM4 40GB", "8x B300 SXM6 262GB",
			// Lambda gpu descriptions and type names.
			"H100 (80 GB SXM5)",
			// Prime Intellect sockets.
			"SXM5", "SXM2",
			// nvidia-smi names (Atlas gpu_model, Prime cloudIds, UpCloud gpu_model).
			"NVIDIA H100 80GB HBM3", "nvidia h100 80gb hbm3", "NVIDIA A100-SXM4-80GB", "NVIDIA HGX B200",
		},
		pcie: {
			// Verda.
			"1x L40S 48GB", "2x RTX A6000 48GB", "1x RTX 6000 Ada 48GB", "RTX PRO 6000 96GB",
			// Lambda.
			"H100 (80 GB PCIe)",
			// Prime Intellect sockets and GPU types.
			"PCIe", "PCIE", "L4_24GB", "L40_48GB", "RTX6000Ada_48GB", "RTX_PRO_6000B_96GB", "A6000_48GB",
			// nvidia-smi names.
			"NVIDIA H100 PCIe", "NVIDIA H100 NVL", "NVIDIA A100 80GB PCIe", "NVIDIA L40S", "NVIDIA L4",
			"NVIDIA RTX 6000 Ada Generation",
			// UpCloud plan names: the GPU suffix says it.
			"GPU-8xCPU-64GB-1xL40S", "GPU-SPOT-8xCPU-64GB-1xL4",
		},
		"": {
			// Verda.
			"1x Tesla V100 16GB", "1x AMD 7900XTX",
			// Lambda.
			"GH200 (96 GB)", "gpu_1x_a10",
			// Prime Intellect GPU types.
			"H100_80GB", "A100_80GB",
			// nvidia-smi names.
			"NVIDIA A100 80GB", "NVIDIA H100", "NVIDIA B200",
			// UpCloud plan name.
			"GPU-12xCPU-240GB-1xH100",
			// Not fooled by substrings.
			"L400", "L4X", "PCIEX",
		},
	}
	for want, names := range byFormFactor {
		for _, n := range names {
			if got := FormFactor(n); got != want {
				t.Errorf("FormFactor(%q) = %q, want %q", n, got, want)
			}
		}
	}
	// Several names: the first name that says wins; an explicit marker wins over the model rule.
	several := []struct {
		names []string
		want  string
	}{
		{[]string{"", "gpu_8x_h100_sxm5"}, sxm}, // Lambda: no description, the type name
		{[]string{"H100 NVL", "SXM5"}, pcie},
		{[]string{"", "  ", "H100_80GB", "SXM5"}, sxm},
		{nil, ""},
	}
	for _, tt := range several {
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
