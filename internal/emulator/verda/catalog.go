package verda

import (
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/verda/verdaapi"
)

// Location is one datacenter the emulator serves (GET /locations).
type Location = verdaapi.Location

// CatalogEntry is one instance type of the emulated catalog, with its prices and capacity.
type CatalogEntry struct {
	// InstanceType is Verda's type name, e.g. "1H100.80S.30V".
	InstanceType string
	// Name is the type's `name`, e.g. "H100 SXM5 80GB" (what hydra's api_names match).
	Name string
	// Model is the short model ("H100", "RTX A6000", "CPU Node").
	Model string
	// Manufacturer is "NVIDIA" or "AMD".
	Manufacturer string
	// GPUCount is the number of GPUs (0 for CPU nodes); GPUMemoryGB is the memory of ONE GPU.
	GPUCount    int
	GPUMemoryGB int
	// CPUCores and MemoryGB describe the host.
	CPUCores int
	MemoryGB int
	// PricePerHour and SpotPrice are the whole instance's prices per hour in the emulator's account
	// currency (Options.Currency). A running instance reports the same price_per_hour (the emulator's
	// rule for the per-instance/per-GPU ambiguity: always the whole instance).
	PricePerHour float64
	SpotPrice    float64
	// OnDemand and Spot give, per location code, how many instances of this type may run at once.
	// A location left out has none. Spot and on-demand stock are independent.
	OnDemand map[string]int
	Spot     map[string]int
	// Hidden types appear in availability answers but not in GET /instance-types (Verda's lists do not
	// always agree; clients must join them on instance_type).
	Hidden bool
	// LocalStorageGB is the fixed local NVMe disk of older types (the recorded catalog shows 1V100.6V's
	// as {"description": "225GB NVME", "size_in_gigabytes": 225}); 0 is Verda's "dynamic" storage.
	LocalStorageGB int
	// LegacyImagesOnly types refuse newer images with 400 "Operating system is not valid for this
	// instance type" (as Verda does for V100 and A6000); only Ubuntu 22.04 images work.
	LegacyImagesOnly bool
}

// DefaultLocations are Verda's known locations.
func DefaultLocations() []Location {
	return []Location{
		{Code: "FIN-01", Name: "Finland 1", CountryCode: "FI"},
		{Code: "FIN-02", Name: "Finland 2", CountryCode: "FI"},
		{Code: "FIN-03", Name: "Finland 3", CountryCode: "FI"},
		{Code: "ICE-01", Name: "Iceland 1", CountryCode: "IS"},
	}
}

// DefaultCatalog is a realistic slice of Verda's catalog (2026 names, USD prices). It includes the
// quirks clients must survive: a CPU node, a type listed in the catalog but never available
// (8B300.240V), a type available but missing from the catalog (1A100.40S.22V), B200 spot stock in
// FIN-01 where on-demand is sold out, and V100/A6000 that only take Ubuntu 22.04 images.
func DefaultCatalog() []CatalogEntry {
	return []CatalogEntry{
		{InstanceType: "1H100.80S.30V", Name: "H100 SXM5 80GB", Model: "H100", Manufacturer: "NVIDIA", GPUCount: 1, GPUMemoryGB: 80, CPUCores: 30, MemoryGB: 120,
			PricePerHour: 2.65, SpotPrice: 1.15, OnDemand: map[string]int{"FIN-01": 4, "FIN-03": 2}, Spot: map[string]int{"FIN-01": 2}},
		{InstanceType: "2H100.80S.80V", Name: "H100 SXM5 80GB", Model: "H100", Manufacturer: "NVIDIA", GPUCount: 2, GPUMemoryGB: 80, CPUCores: 80, MemoryGB: 370,
			PricePerHour: 5.30, SpotPrice: 2.30, OnDemand: map[string]int{"FIN-01": 2}, Spot: map[string]int{"FIN-01": 1}},
		{InstanceType: "8H100.80S.176V", Name: "H100 SXM5 80GB", Model: "H100", Manufacturer: "NVIDIA", GPUCount: 8, GPUMemoryGB: 80, CPUCores: 176, MemoryGB: 1480,
			PricePerHour: 21.20, SpotPrice: 9.20, OnDemand: map[string]int{"FIN-03": 1}},
		{InstanceType: "1H200.141S.44V", Name: "H200 SXM5 141GB", Model: "H200", Manufacturer: "NVIDIA", GPUCount: 1, GPUMemoryGB: 141, CPUCores: 44, MemoryGB: 185,
			PricePerHour: 3.59, SpotPrice: 1.49, OnDemand: map[string]int{"FIN-02": 2, "ICE-01": 2}, Spot: map[string]int{"ICE-01": 2}},
		{InstanceType: "8H200.141S.176V", Name: "H200 SXM5 141GB", Model: "H200", Manufacturer: "NVIDIA", GPUCount: 8, GPUMemoryGB: 141, CPUCores: 176, MemoryGB: 1480,
			PricePerHour: 28.72, SpotPrice: 11.92, OnDemand: map[string]int{"ICE-01": 1}},
		{InstanceType: "1B200.30V", Name: "B200 SXM6 180GB", Model: "B200", Manufacturer: "NVIDIA", GPUCount: 1, GPUMemoryGB: 180, CPUCores: 30, MemoryGB: 184,
			PricePerHour: 4.49, SpotPrice: 1.79, Spot: map[string]int{"FIN-01": 2}},
		{InstanceType: "8B300.240V", Name: "B300 SXM6 262GB", Model: "B300", Manufacturer: "NVIDIA", GPUCount: 8, GPUMemoryGB: 262, CPUCores: 240, MemoryGB: 2000,
			PricePerHour: 49.52, SpotPrice: 19.92},
		{InstanceType: "1A100.22V", Name: "A100 SXM4 80GB", Model: "A100", Manufacturer: "NVIDIA", GPUCount: 1, GPUMemoryGB: 80, CPUCores: 22, MemoryGB: 120,
			PricePerHour: 1.29, SpotPrice: 0.49, OnDemand: map[string]int{"FIN-01": 3, "FIN-02": 3}, Spot: map[string]int{"FIN-01": 3}},
		{InstanceType: "1A100.40S.22V", Name: "A100 SXM4 40GB", Model: "A100", Manufacturer: "NVIDIA", GPUCount: 1, GPUMemoryGB: 40, CPUCores: 22, MemoryGB: 120,
			PricePerHour: 0.72, SpotPrice: 0.29, OnDemand: map[string]int{"FIN-01": 2}, Hidden: true},
		{InstanceType: "1L40S.20V", Name: "L40S 48GB", Model: "L40S", Manufacturer: "NVIDIA", GPUCount: 1, GPUMemoryGB: 48, CPUCores: 20, MemoryGB: 60,
			PricePerHour: 0.91, SpotPrice: 0.35, OnDemand: map[string]int{"FIN-02": 4, "FIN-03": 4}, Spot: map[string]int{"FIN-02": 2}},
		{InstanceType: "1RTX6000ADA.10V", Name: "RTX 6000 Ada 48GB", Model: "RTX 6000 Ada", Manufacturer: "NVIDIA", GPUCount: 1, GPUMemoryGB: 48, CPUCores: 10, MemoryGB: 60,
			PricePerHour: 0.89, SpotPrice: 0.30, OnDemand: map[string]int{"FIN-01": 4}, Spot: map[string]int{"FIN-01": 4}},
		{InstanceType: "1RTXPRO6000.30V", Name: "RTX PRO 6000 96GB", Model: "RTX PRO 6000", Manufacturer: "NVIDIA", GPUCount: 1, GPUMemoryGB: 96, CPUCores: 30, MemoryGB: 120,
			PricePerHour: 1.39, SpotPrice: 0.60, OnDemand: map[string]int{"FIN-03": 4}, Spot: map[string]int{"FIN-03": 2}},
		{InstanceType: "2RTXPRO6000.60V", Name: "RTX PRO 6000 96GB", Model: "RTX PRO 6000", Manufacturer: "NVIDIA", GPUCount: 2, GPUMemoryGB: 96, CPUCores: 60, MemoryGB: 240,
			PricePerHour: 2.78, SpotPrice: 1.20, OnDemand: map[string]int{"FIN-03": 2}},
		{InstanceType: "2A6000.20V", Name: "RTX A6000 48GB", Model: "RTX A6000", Manufacturer: "NVIDIA", GPUCount: 2, GPUMemoryGB: 48, CPUCores: 20, MemoryGB: 120,
			PricePerHour: 1.98, SpotPrice: 0.70, OnDemand: map[string]int{"FIN-01": 2}, Spot: map[string]int{"FIN-01": 2}, LegacyImagesOnly: true},
		{InstanceType: "1V100.6V", Name: "Tesla V100 16GB", Model: "Tesla V100", Manufacturer: "NVIDIA", GPUCount: 1, GPUMemoryGB: 16, CPUCores: 6, MemoryGB: 23,
			PricePerHour: 0.39, SpotPrice: 0.14, OnDemand: map[string]int{"FIN-01": 4}, Spot: map[string]int{"FIN-01": 4}, LegacyImagesOnly: true, LocalStorageGB: 225},
		{InstanceType: "CPU.4V.16G", Name: "AMD EPYC", Model: "CPU Node", Manufacturer: "AMD", CPUCores: 4, MemoryGB: 16,
			PricePerHour: 0.10, SpotPrice: 0.05, OnDemand: map[string]int{"FIN-01": 10, "ICE-01": 10}, Spot: map[string]int{"FIN-01": 10}},
	}
}

// image is one OS image of GET /images (the wire type hydra's client shares).
type image = verdaapi.Image

// legacyImage reports whether the image works on LegacyImagesOnly types.
func legacyImage(i image) bool { return len(i.ImageType) >= 12 && i.ImageType[:12] == "ubuntu-22.04" }

var images = []image{
	{ID: "5a1b0c3e-7c5d-4d2b-9a0e-1f6e2c8b9d01", ImageType: "ubuntu-24.04-cuda-12.8-open-docker", Name: "Ubuntu 24.04 + CUDA 12.8 Open + Docker",
		IsDefault: true, Details: []string{"Ubuntu 24.04", "CUDA 12.8", "Docker"}, Category: "ubuntu"},
	{ID: "0d3c2b1a-4e5f-4a6b-8c7d-9e0f1a2b3c4d", ImageType: "ubuntu-24.04", Name: "Ubuntu 24.04",
		Details: []string{"Ubuntu 24.04"}, Category: "ubuntu"},
	{ID: "2088da25-bb0d-41cc-a191-dccae45d96fd", ImageType: "ubuntu-22.04-cuda-12.0-docker", Name: "Ubuntu 22.04 + CUDA 12.0 + Docker",
		Details: []string{"Ubuntu 22.04", "CUDA 12.0", "Docker"}, Category: "ubuntu"},
	{ID: "7e6d5c4b-3a29-4181-9f0e-d1c2b3a49586", ImageType: "ubuntu-22.04", Name: "Ubuntu 22.04",
		Details: []string{"Ubuntu 22.04"}, Category: "ubuntu"},
}
