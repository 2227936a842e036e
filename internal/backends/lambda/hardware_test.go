package lambda

import (
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/lambda"
)

// TestHardwareOffers: gpu_description ("H100 (80 GB SXM5)") says form factor and GPU memory; specs say
// vcpus and memory_gib.
func TestHardwareOffers(t *testing.T) {
	offers := backendtest.Offers(t, startEmulator(t, emu.Options{}).backend(t, nil))
	backendtest.WantHardware(t, offers, []backendtest.HardwareCase{
		{Region: "us-east-1", InstanceType: "gpu_1x_h100_sxm5", Want: cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 26, MemoryGB: 225}},
		{Region: "us-south-1", InstanceType: "gpu_8x_h100_sxm5", Want: cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 208, MemoryGB: 1800}},
		{Region: "us-midwest-1", InstanceType: "gpu_1x_h100_pcie", Want: cloudprovider.Hardware{FormFactor: "pcie", GPUMemoryGB: 80, VCPUs: 26, MemoryGB: 200}},
		{Region: "us-east-1", InstanceType: "gpu_8x_a100_80gb_sxm4", Want: cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 240, MemoryGB: 1800}},
		{Region: "us-south-1", InstanceType: "gpu_1x_b200_sxm6", Want: cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 180, VCPUs: 26, MemoryGB: 360}},
	})
}

// TestHardwareInstance: an instance carries its instance type object, specs included.
func TestHardwareInstance(t *testing.T) {
	backendtest.InstanceHardware(t, startEmulator(t, emu.Options{}).backend(t, nil), "us-midwest-1", "gpu_1x_h100_pcie",
		cloudprovider.Hardware{FormFactor: "pcie", GPUMemoryGB: 80, VCPUs: 26, MemoryGB: 200})
}

// TestHardwareOlderShape: API versions without gpu_description (v1.4.0) are read from the description
// and, for the form factor, the type's name.
func TestHardwareOlderShape(t *testing.T) {
	tests := []struct {
		t    InstanceType
		want cloudprovider.Hardware
	}{
		{InstanceType{Name: "gpu_8x_h100_sxm5", Description: "8x H100 (80 GB SXM5)", Specs: InstanceTypeSpecs{VCPUs: 208, MemoryGiB: 1800}},
			cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 208, MemoryGB: 1800}},
		{InstanceType{Name: "gpu_1x_h100_pcie", Specs: InstanceTypeSpecs{VCPUs: 26, MemoryGiB: 200}},
			cloudprovider.Hardware{FormFactor: "pcie", VCPUs: 26, MemoryGB: 200}},
		{InstanceType{Name: "gpu_1x_gh200", Description: "1x GH200 (96 GB)", GPUDescription: "GH200 (96 GB)", Specs: InstanceTypeSpecs{VCPUs: 64, MemoryGiB: 432}},
			cloudprovider.Hardware{FormFactor: "", GPUMemoryGB: 96, VCPUs: 64, MemoryGB: 432}},
	}
	for _, tc := range tests {
		if got := hardware(tc.t); got != tc.want {
			t.Errorf("%s: hardware %+v, want %+v", tc.t.Name, got, tc.want)
		}
	}
}
