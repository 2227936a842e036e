package upcloud

import (
	"encoding/json"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/upcloud"
)

// TestHardwareOffers: UpCloud's /plan says core_number and memory_amount (MiB); gpu_model names the GPU
// ("NVIDIA L40S" is a PCIe card; "NVIDIA H100 80GB HBM3" is the SXM H100 with 80 GB; "NVIDIA B200" says
// neither), and no other field gives GPU memory.
func TestHardwareOffers(t *testing.T) {
	_, base := startEmulator(t, emu.Options{})
	b := newTestBackend(t, base, nil)
	offers := backendtest.Offers(t, b)
	cases := []backendtest.HardwareCase{
		{Region: "fi-hel2", InstanceType: "GPU-8xCPU-64GB-1xL40S", Want: cloudprovider.Hardware{FormFactor: "pcie", VCPUs: 8, MemoryGB: 64}},
		{Region: "fi-hel2", InstanceType: "GPU-32xCPU-384GB-3xL40S", Want: cloudprovider.Hardware{FormFactor: "pcie", VCPUs: 32, MemoryGB: 384}},
		{Region: "de-fra1", InstanceType: "GPU-8xCPU-64GB-1xL4", Want: cloudprovider.Hardware{FormFactor: "pcie", VCPUs: 8, MemoryGB: 64}},
		{Region: "fi-hel2", InstanceType: "GPU-12xCPU-240GB-1xH100", Want: cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 12, MemoryGB: 240}},
		{Region: "fi-hel2", InstanceType: "GPU-96xCPU-1920GB-8xH100", Want: cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 96, MemoryGB: 1920}},
		{Region: "fi-hel2", InstanceType: "GPU-12xCPU-240GB-1xB200", Want: cloudprovider.Hardware{FormFactor: "", VCPUs: 12, MemoryGB: 240}},
	}
	backendtest.WantHardwareOnly(t, offers, cases, "cores", "memory_mib")
}

// TestHardwareInstance: a server's details add the memory of each GPU (devices[].metadata.memory).
func TestHardwareInstance(t *testing.T) {
	_, base := startEmulator(t, emu.Options{})
	b := newTestBackend(t, base, nil)
	backendtest.InstanceHardware(t, b, "fi-hel2", "GPU-16xCPU-192GB-2xL40S", cloudprovider.Hardware{FormFactor: "pcie", GPUMemoryGB: 48, VCPUs: 16, MemoryGB: 192})
}

// TestHardwareRecorded reads the go-api's GPU fixtures: a GPU plan and a server with two L40S devices.
func TestHardwareRecorded(t *testing.T) {
	var plans PlanList
	if err := json.Unmarshal(loadRecording(t, "handwritten.plan.list-with-gpu.json").Response.Body, &plans); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range plans.Plans.Plan {
		if p.Name != "GPU-8xCPU-64GB-1xL40S" {
			continue
		}
		found = true
		model, _ := gpuOfPlan(p)
		want := cloudprovider.Hardware{FormFactor: "pcie", VCPUs: 8, MemoryGB: 64}
		if got := planHardware(p, model); got != want {
			t.Errorf("plan: hardware %+v, want %+v", got, want)
		}
	}
	if !found {
		t.Error("no GPU plan in the recording")
	}

	var d ServerDetails
	if err := json.Unmarshal(loadRecording(t, "handwritten.server-details-gpu.json").Response.Body, &d); err != nil {
		t.Fatal(err)
	}
	b := newTestBackend(t, "http://127.0.0.1:1", nil)
	inst := b.instance(&d.Server)
	// core_number "0" and memory_amount "2048" (MiB) as the fixture has them; two NVIDIA L40S of 48 GB.
	want := cloudprovider.Hardware{FormFactor: "pcie", GPUMemoryGB: 48, VCPUs: 0, MemoryGB: 2}
	if inst.Hardware != want || inst.GPUCount != 2 {
		t.Errorf("server: hardware %+v (%d GPUs), want %+v (2 GPUs)", inst.Hardware, inst.GPUCount, want)
	}
}
