package primeintellect

import (
	"encoding/json"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/primeintellect"
)

// TestHardwareOffers: socket says the form factor, gpuMemory (the box total, as Prime sends it) over
// gpuCount the memory of one GPU, vcpu.defaultCount and memory.defaultCount the machine.
func TestHardwareOffers(t *testing.T) {
	offers := backendtest.Offers(t, newEnv(t, emu.Options{}).backend(t, nil))
	cases := []backendtest.HardwareCase{
		{Region: "CA-MTL-1", InstanceType: "runpod.H100_80GB.SXM5.1x", Want: cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 16, MemoryGB: 125}},
		{Region: "CA-MTL-3", InstanceType: "runpod.H100_80GB.PCIe.1x", Want: cloudprovider.Hardware{FormFactor: "pcie", GPUMemoryGB: 80, VCPUs: 16, MemoryGB: 125}},
		{Region: "US-KS-2", InstanceType: "runpod.A100_80GB.SXM4.2x", Want: cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 32, MemoryGB: 250}},
		{Region: "FIN-01", InstanceType: "datacrunch.H100_80GB.SXM5.8x", Want: cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 176, MemoryGB: 1480}},
		{Region: "US-TX-3", InstanceType: "runpod.L40S_48GB.PCIe.1x", Want: cloudprovider.Hardware{FormFactor: "pcie", GPUMemoryGB: 48, VCPUs: 16, MemoryGB: 125}},
		{Region: "FIN-03", InstanceType: "datacrunch.B200_180GB.SXM6.1x", Want: cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 180, VCPUs: 30, MemoryGB: 184}},
	}
	for i, o := range backendtest.WantHardwareOnly(t, offers, cases, "vcpus", "memory_gb") {
		if o.Details[DetailSocket] == "" {
			t.Errorf("%s: the socket detail, which Create needs, is gone", cases[i])
		}
	}
}

// TestHardwareInstance: a pod says socket, gpuName ("H100_80GB": 80 GB a GPU) and resources.
func TestHardwareInstance(t *testing.T) {
	backendtest.InstanceHardware(t, newEnv(t, emu.Options{}).backend(t, nil), "CA-MTL-3", "runpod.H100_80GB.PCIe.1x",
		cloudprovider.Hardware{FormFactor: "pcie", GPUMemoryGB: 80, VCPUs: 16, MemoryGB: 125})
}

// TestHardwareRecorded reads items of Prime's recorded availability answers, whose gpuMemory is the
// total of all GPUs.
func TestHardwareRecorded(t *testing.T) {
	var legacy map[string][]GPUAvailability
	if err := json.Unmarshal(loadRecorded(t, "capture.availability-legacy.200.json").Response.Body, &legacy); err != nil {
		t.Fatal(err)
	}
	var page struct {
		Items []GPUAvailability `json:"items"`
	}
	if err := json.Unmarshal(loadRecorded(t, "capture.availability-gpus.200.json").Response.Body, &page); err != nil {
		t.Fatal(err)
	}
	items := append(page.Items, legacy["A100_80GB"]...)
	items = append(items, legacy["A40_48GB"]...)
	want := map[string]cloudprovider.Hardware{
		"lambdalabs/gpu_8x_a100_80gb_sxm4/us-east-1":  {FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 240, MemoryGB: 1800},
		"crusoecloud/a100-80gb.2x/us-northcentral1-a": {FormFactor: "pcie", GPUMemoryGB: 80, VCPUs: 24, MemoryGB: 240},
		"crusoecloud/a40.8x/us-northcentral1-a":       {FormFactor: "pcie", GPUMemoryGB: 48, VCPUs: 48, MemoryGB: 480},
		"runpod/NVIDIA H100 80GB HBM3/CA-MTL-1":       {FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 28, MemoryGB: 251},
		"runpod/NVIDIA H100 PCIe/CA-MTL-3":            {FormFactor: "pcie", GPUMemoryGB: 80, VCPUs: 31, MemoryGB: 176},
	}
	seen := map[string]bool{}
	for _, it := range items {
		k := it.Provider + "/" + it.CloudID + "/" + it.DataCenter
		w, ok := want[k]
		if !ok {
			continue
		}
		seen[k] = true
		if got := itemHardware(it); got != w {
			t.Errorf("%s: hardware %+v, want %+v", k, got, w)
		}
	}
	if len(seen) != len(want) {
		t.Errorf("found %d of %d items in the recordings", len(seen), len(want))
	}
}

func TestPerGPUMemory(t *testing.T) {
	num := func(v float64) Number { return Number{V: v, Set: true} }
	tests := []struct {
		gpuType string
		mem     Number
		count   int
		want    int
	}{
		{"A100_80GB", num(160), 2, 80}, // the box total, as recorded
		{"A100_80GB", num(80), 2, 80},  // per GPU, as the spec says
		{"A100_80GB", num(80), 1, 80},
		{"H100_80GB", Number{}, 8, 80},  // null: the name says it
		{"GH200_480GB", num(96), 1, 96}, // the name counts the Grace CPU's memory too
		{"GH200_480GB", Number{}, 1, 0},
		{"A100_80GB", num(40), 1, 40}, // the field wins over the name
		{"MI300X", num(384), 2, 192},  // no memory in the name: a multiple of the count is a total
		{"MI300X", num(192), 1, 192},
		{"MI300X", Number{}, 1, 0},
	}
	for _, tt := range tests {
		if got := perGPUMemory(tt.gpuType, tt.mem, tt.count); got != tt.want {
			t.Errorf("perGPUMemory(%s, %+v, %d) = %d, want %d", tt.gpuType, tt.mem, tt.count, got, tt.want)
		}
	}
}

func TestPodResourcesLenient(t *testing.T) {
	tests := []struct {
		in   string
		want cloudprovider.Hardware
	}{
		{`{"gpuName":"H100_80GB","socket":"SXM5","resources":{"memory":251,"disk":100,"vcpus":28}}`, cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 28, MemoryGB: 251}},
		{`{"gpuName":"L40S_48GB","socket":"PCIe","resources":{"memory":"64","vcpus":"8"}}`, cloudprovider.Hardware{FormFactor: "pcie", GPUMemoryGB: 48, VCPUs: 8, MemoryGB: 64}},
		{`{"gpuName":"A100_80GB","resources":null}`, cloudprovider.Hardware{GPUMemoryGB: 80}},
		{`{"gpuName":"A100_80GB","socket":"PCIe","resources":{"memory":{"size":1},"vcpus":true}}`, cloudprovider.Hardware{FormFactor: "pcie", GPUMemoryGB: 80}},
	}
	for _, tt := range tests {
		var p Pod
		if err := json.Unmarshal([]byte(tt.in), &p); err != nil {
			t.Errorf("%s: %v", tt.in, err)
			continue
		}
		if got := podHardware(p); got != tt.want {
			t.Errorf("%s: hardware %+v, want %+v", tt.in, got, tt.want)
		}
	}
}
