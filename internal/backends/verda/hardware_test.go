package verda

import (
	"encoding/json"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/verda"
)

func TestHardwareOffers(t *testing.T) {
	b := startEmulator(t, emu.Options{}).backend(t, nil)
	offers := backendtest.Offers(t, b)
	backendtest.WantHardware(t, offers, []backendtest.HardwareCase{
		// gpu.description "1x H100 SXM5 80GB", gpu_memory 80, cpu 30 cores, memory 120.
		{Region: "FIN-01", InstanceType: "1H100.80S.30V", Want: cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 30, MemoryGB: 120}},
		// gpu_memory.size_in_gigabytes is the total (160 for 2 GPUs): per GPU it is 80.
		{Region: "FIN-01", InstanceType: "2H100.80S.80V", Spot: true, Want: cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 80, MemoryGB: 370}},
		{Region: "FIN-03", InstanceType: "8H100.80S.176V", Want: cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 176, MemoryGB: 1480}},
		{Region: "FIN-01", InstanceType: "1B200.30V", Spot: true, Want: cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 180, VCPUs: 30, MemoryGB: 184}},
		{Region: "FIN-01", InstanceType: "1A100.22V", Want: cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 22, MemoryGB: 120}},
		// L40S and RTX cards are PCIe; their descriptions carry no marker.
		{Region: "FIN-02", InstanceType: "1L40S.20V", Want: cloudprovider.Hardware{FormFactor: "pcie", GPUMemoryGB: 48, VCPUs: 20, MemoryGB: 60}},
		{Region: "FIN-01", InstanceType: "1RTX6000ADA.10V", Want: cloudprovider.Hardware{FormFactor: "pcie", GPUMemoryGB: 48, VCPUs: 10, MemoryGB: 60}},
		{Region: "FIN-03", InstanceType: "2RTXPRO6000.60V", Want: cloudprovider.Hardware{FormFactor: "pcie", GPUMemoryGB: 96, VCPUs: 60, MemoryGB: 240}},
	})
}

func TestHardwareInstance(t *testing.T) {
	backendtest.InstanceHardware(t, startEmulator(t, emu.Options{}).backend(t, nil), "FIN-01", "2H100.80S.80V",
		cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 80, MemoryGB: 370})
}

// TestHardwareRecorded reads the hardware of the instance types in the recorded catalog (gpuhunt's
// fixture of GET /instance-types).
func TestHardwareRecorded(t *testing.T) {
	rec := backendtest.LoadRecorded(t, "edited-capture.instance-types.json")
	var types []InstanceType
	if err := json.Unmarshal(rec.Response.Body, &types); err != nil {
		t.Fatal(err)
	}
	want := map[string]cloudprovider.Hardware{
		"1H100.80S.30V": {FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 30, MemoryGB: 120},
		// "2x RTX A6000 48GB" with gpu_memory 96: PCIe, 48 GB each.
		"2A6000.20V": {FormFactor: "pcie", GPUMemoryGB: 48, VCPUs: 20, MemoryGB: 120},
		// "1x Tesla V100 16GB": V100 came as SXM2 and PCIe; the name does not say.
		"1V100.6V": {FormFactor: "", GPUMemoryGB: 16, VCPUs: 6, MemoryGB: 23},
		// A CPU node: no GPU memory, no form factor.
		"CPU.120V.480G": {VCPUs: 120, MemoryGB: 480},
	}
	seen := 0
	for _, it := range types {
		w, ok := want[it.InstanceType]
		if !ok {
			continue
		}
		seen++
		if got := hardware(it.Name, it.Model, it.GPU, it.GPUMemory, it.CPU, it.Memory); got != w {
			t.Errorf("%s: hardware %+v, want %+v", it.InstanceType, got, w)
		}
	}
	if seen != len(want) {
		t.Errorf("found %d of %d instance types in the recording", seen, len(want))
	}
}
