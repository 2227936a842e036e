package lambda

import "github.com/hydragpu/terraform-provider-hydra/internal/backends/lambda/lambdaapi"

// CatalogEntry is one instance type the emulated Lambda offers, with its capacity per region.
type CatalogEntry struct {
	// Name is the instance type's name ("gpu_1x_h100_sxm5").
	Name string
	// Description is Lambda's long name ("1x H100 (80 GB SXM5)").
	Description string
	// GPUDescription is the GPU ("H100 (80 GB SXM5)"); empty for CPU-only types.
	GPUDescription string
	// PriceCentsPerHour is the price of the whole machine in US cents per hour.
	PriceCentsPerHour int64
	VCPUs             int
	MemoryGiB         int
	StorageGiB        int
	GPUs              int
	// Capacity is how many machines of this type may run in each region at once; a region with no free
	// machine is not in regions_with_capacity_available.
	Capacity map[string]int
}

// Region is one of the emulated regions.
type Region = lambdaapi.Region

// DefaultRegions are the regions of the default catalog. The names are Lambda's; the descriptions of
// us-east-1 and us-west-1 appear in public examples of the API, the others are not confirmed.
func DefaultRegions() []Region {
	return []Region{
		{Name: "us-east-1", Description: "Virginia, USA"},
		{Name: "us-west-1", Description: "California, USA"},
		{Name: "us-south-1", Description: "Texas, USA"},
		{Name: "us-midwest-1", Description: "Illinois, USA"},
		{Name: "europe-central-1", Description: "Germany"},
	}
}

// DefaultCatalog is a plausible Lambda catalog. The type names, descriptions and GPU descriptions are
// those Lambda answers (seen in public clients and examples); prices and specs are from public examples
// of different dates, so they are plausible rather than current. gpu_1x_a100_sxm4 is an A100 with
// 40 GB, which hydra does not rent; gpu_1x_gh200 and gpu_1x_a10 are GPUs hydra does not know; the 8x B200
// has no capacity anywhere.
func DefaultCatalog() []CatalogEntry {
	return []CatalogEntry{
		{Name: "gpu_1x_h100_pcie", Description: "1x H100 (80 GB PCIe)", GPUDescription: "H100 (80 GB PCIe)",
			PriceCentsPerHour: 249, VCPUs: 26, MemoryGiB: 200, StorageGiB: 1024, GPUs: 1,
			Capacity: map[string]int{"us-midwest-1": 2, "us-west-1": 1}},
		{Name: "gpu_1x_h100_sxm5", Description: "1x H100 (80 GB SXM5)", GPUDescription: "H100 (80 GB SXM5)",
			PriceCentsPerHour: 329, VCPUs: 26, MemoryGiB: 225, StorageGiB: 2816, GPUs: 1,
			Capacity: map[string]int{"us-east-1": 2, "us-south-1": 1}},
		{Name: "gpu_8x_h100_sxm5", Description: "8x H100 (80 GB SXM5)", GPUDescription: "H100 (80 GB SXM5)",
			PriceCentsPerHour: 2392, VCPUs: 208, MemoryGiB: 1800, StorageGiB: 22528, GPUs: 8,
			Capacity: map[string]int{"us-south-1": 1}},
		{Name: "gpu_1x_a100_sxm4", Description: "1x A100 (40 GB SXM4)", GPUDescription: "A100 (40 GB SXM4)",
			PriceCentsPerHour: 129, VCPUs: 30, MemoryGiB: 200, StorageGiB: 512, GPUs: 1,
			Capacity: map[string]int{"us-east-1": 3, "europe-central-1": 1}},
		{Name: "gpu_8x_a100_80gb_sxm4", Description: "8x A100 (80 GB SXM4)", GPUDescription: "A100 (80 GB SXM4)",
			PriceCentsPerHour: 1432, VCPUs: 240, MemoryGiB: 1800, StorageGiB: 19456, GPUs: 8,
			Capacity: map[string]int{"us-east-1": 1, "us-midwest-1": 1}},
		{Name: "gpu_1x_gh200", Description: "1x GH200 (96 GB)", GPUDescription: "GH200 (96 GB)",
			PriceCentsPerHour: 149, VCPUs: 64, MemoryGiB: 432, StorageGiB: 4096, GPUs: 1,
			Capacity: map[string]int{"us-east-1": 2}},
		{Name: "gpu_1x_b200_sxm6", Description: "1x B200 (180 GB SXM6)", GPUDescription: "B200 (180 GB SXM6)",
			PriceCentsPerHour: 699, VCPUs: 26, MemoryGiB: 360, StorageGiB: 2867, GPUs: 1,
			Capacity: map[string]int{"us-south-1": 1}},
		{Name: "gpu_8x_b200_sxm6", Description: "8x B200 (180 GB SXM6)", GPUDescription: "B200 (180 GB SXM6)",
			PriceCentsPerHour: 5352, VCPUs: 208, MemoryGiB: 2900, StorageGiB: 22528, GPUs: 8,
			Capacity: map[string]int{}},
		{Name: "gpu_1x_a10", Description: "1x A10 (24 GB PCIe)", GPUDescription: "A10 (24 GB PCIe)",
			PriceCentsPerHour: 75, VCPUs: 30, MemoryGiB: 200, StorageGiB: 1400, GPUs: 1,
			Capacity: map[string]int{"us-west-1": 5}},
	}
}
