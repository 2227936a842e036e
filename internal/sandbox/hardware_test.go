package sandbox

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

func hardwareBackend(t *testing.T, dir string) *Backend {
	t.Helper()
	inv := backendtest.Inventory(t)
	b, err := New(Config{Dir: dir, BootTime: time.Millisecond, DeleteTime: time.Millisecond}, inv, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHardwareOffers: the default catalog gives every offer its hardware.
func TestHardwareOffers(t *testing.T) {
	b := hardwareBackend(t, t.TempDir())
	offers, err := b.Offers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	backendtest.WantHardware(t, offers, []backendtest.HardwareCase{
		{Region: "sbx-eu-1", InstanceType: "sbx.h100.1x", Want: cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 26, MemoryGB: 225}},
		{Region: "sbx-eu-1", InstanceType: "sbx.h100.1x", Spot: true, Want: cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 26, MemoryGB: 225}},
		{Region: "sbx-us-1", InstanceType: "sbx.h100.8x", Want: cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 208, MemoryGB: 1800}},
		{Region: "sbx-ap-1", InstanceType: "sbx.b200.8x", Want: cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 180, VCPUs: 208, MemoryGB: 2880}},
		{Region: "sbx-eu-1", InstanceType: "sbx.l40s.4x", Want: cloudprovider.Hardware{FormFactor: "pcie", GPUMemoryGB: 48, VCPUs: 32, MemoryGB: 256}},
		{Region: "sbx-eu-1", InstanceType: "sbx.l4.1x", Want: cloudprovider.Hardware{FormFactor: "pcie", GPUMemoryGB: 24, VCPUs: 8, MemoryGB: 32}},
		{Region: "sbx-eu-1", InstanceType: "sbx.rtxpro6000.2x", Want: cloudprovider.Hardware{FormFactor: "pcie", GPUMemoryGB: 96, VCPUs: 60, MemoryGB: 240}},
	})
	for _, o := range offers {
		if o.FormFactor == "" || o.GPUMemoryGB == 0 || o.VCPUs == 0 || o.MemoryGB == 0 {
			t.Errorf("%s %s: the default catalog leaves hardware out: %+v", o.Region, o.InstanceType, o.Hardware)
		}
	}
}

// TestHardwareCatalogFile: the fields are optional in catalog.json, written under their JSON names, and
// a form factor is read as the clouds' names are.
func TestHardwareCatalogFile(t *testing.T) {
	dir := t.TempDir()
	b := hardwareBackend(t, dir)
	data, err := os.ReadFile(filepath.Join(dir, CatalogFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"form_factor": "sxm"`, `"gpu_memory_gb": 80`, `"vcpus": 26`, `"memory_gb": 225`} {
		if !strings.Contains(string(data), k) {
			t.Errorf("catalog.json lacks %s", k)
		}
	}
	var entries []CatalogEntry
	if err := json.Unmarshal([]byte(`[
		{"region": "r1", "instance_type": "bare", "gpu": "H100", "gpu_count": 1, "price_per_hour": 2, "available": -1},
		{"region": "r1", "instance_type": "sxm5", "gpu": "H100", "gpu_count": 1, "price_per_hour": 2, "available": -1, "form_factor": "SXM5", "gpu_memory_gb": 80},
		{"region": "r1", "instance_type": "odd", "gpu": "L40S", "gpu_count": 1, "price_per_hour": 1, "available": -1, "form_factor": "socketed", "vcpus": 8, "memory_gb": 64}
	]`), &entries); err != nil {
		t.Fatal(err)
	}
	if err := b.SetCatalog(entries); err != nil {
		t.Fatal(err)
	}
	offers, err := b.Offers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]cloudprovider.Hardware{
		"bare": {},
		"sxm5": {FormFactor: "sxm", GPUMemoryGB: 80},
		"odd":  {VCPUs: 8, MemoryGB: 64},
	}
	for _, typ := range []string{"bare", "sxm5", "odd"} {
		if o, ok := backendtest.FindOffer(offers, "r1", typ, false); !ok || o.Hardware != want[typ] {
			t.Errorf("%s: offer found %v, hardware %+v, want %+v", typ, ok, o.Hardware, want[typ])
		}
	}
}

// TestHardwareInstance: an instance keeps the hardware of the entry it was created from.
func TestHardwareInstance(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b := hardwareBackend(t, dir)
	offers, err := b.Offers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := backendtest.FindOffer(offers, "sbx-eu-1", "sbx.l40s.2x", false)
	if !ok {
		t.Fatal("no sbx.l40s.2x offer in sbx-eu-1")
	}
	inst, err := b.Create(ctx, cloudprovider.CreateRequest{Name: "sbx-hw", Offer: o})
	if err != nil {
		t.Fatal(err)
	}
	want := cloudprovider.Hardware{FormFactor: "pcie", GPUMemoryGB: 48, VCPUs: 16, MemoryGB: 128}
	if inst.Hardware != want {
		t.Errorf("created: hardware %+v, want %+v", inst.Hardware, want)
	}
	// Another process reads the same directory.
	got, err := hardwareBackend(t, dir).Get(ctx, inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Hardware != want {
		t.Errorf("get: hardware %+v, want %+v", got.Hardware, want)
	}
}
