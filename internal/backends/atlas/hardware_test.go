package atlas

import (
	"context"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/atlas"
)

// TestHardwareOffers: offers carry gpu_memory_gb, vcpus and memory_gb; gpu_model (nvidia-smi's name)
// says the form factor where it can.
func TestHardwareOffers(t *testing.T) {
	offers := backendtest.Offers(t, newEnv(t, emu.Options{}).backend(t, nil))
	cases := []backendtest.HardwareCase{
		{InstanceType: "l40s.1x", Want: cloudprovider.Hardware{FormFactor: "pcie", GPUMemoryGB: 48, VCPUs: 16, MemoryGB: 128}},
		{InstanceType: "l40s.4x", Want: cloudprovider.Hardware{FormFactor: "pcie", GPUMemoryGB: 48, VCPUs: 64, MemoryGB: 512}},
		// "NVIDIA H100 80GB HBM3" is the SXM5 module's name.
		{InstanceType: "h100.8x", Want: cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 192, MemoryGB: 2048}},
		// "NVIDIA A100 80GB" does not say SXM4 or PCIe.
		{InstanceType: "a100.1x", Want: cloudprovider.Hardware{FormFactor: "", GPUMemoryGB: 80, VCPUs: 24, MemoryGB: 240}},
		{InstanceType: "l4.1x", Want: cloudprovider.Hardware{FormFactor: "pcie", GPUMemoryGB: 24, VCPUs: 8, MemoryGB: 64}},
	}
	backendtest.WantHardwareOnly(t, offers, cases, "vcpus", "memory_gb")
}

// TestHardwareInstance: an instance names only its gpu_model; the rest comes from its offer.
func TestHardwareInstance(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, emu.Options{})
	b := e.backend(t, nil)
	inst := backendtest.InstanceHardware(t, b, "", "h100.8x", cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 192, MemoryGB: 2048})
	// A backend that has not listed offers knows only what gpu_model says.
	fresh, err := e.backend(t, nil).Get(ctx, inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	if w := (cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80}); fresh.Hardware != w {
		t.Errorf("get without offers: hardware %+v, want %+v", fresh.Hardware, w)
	}
}
