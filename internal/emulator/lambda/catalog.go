package lambda

import (
	"fmt"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/lambda/lambdaapi"
)

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
	// entry is one type of gpus GPUs described by gpu, which Lambda's description names as "<gpus>x <gpu>".
	entry := func(name, gpu string, gpus int, cents int64, vcpus, memGiB, storageGiB int, capacity map[string]int) CatalogEntry {
		return CatalogEntry{Name: name, Description: fmt.Sprintf("%dx %s", gpus, gpu), GPUDescription: gpu, PriceCentsPerHour: cents,
			VCPUs: vcpus, MemoryGiB: memGiB, StorageGiB: storageGiB, GPUs: gpus, Capacity: capacity}
	}
	return []CatalogEntry{
		entry("gpu_1x_h100_pcie", "H100 (80 GB PCIe)", 1, 249, 26, 200, 1024, map[string]int{"us-midwest-1": 2, "us-west-1": 1}),
		entry("gpu_1x_h100_sxm5", "H100 (80 GB SXM5)", 1, 329, 26, 225, 2816, map[string]int{"us-east-1": 2, "us-south-1": 1}),
		entry("gpu_8x_h100_sxm5", "H100 (80 GB SXM5)", 8, 2392, 208, 1800, 22528, map[string]int{"us-south-1": 1}),
		entry("gpu_1x_a100_sxm4", "A100 (40 GB SXM4)", 1, 129, 30, 200, 512, map[string]int{"us-east-1": 3, "europe-central-1": 1}),
		entry("gpu_8x_a100_80gb_sxm4", "A100 (80 GB SXM4)", 8, 1432, 240, 1800, 19456, map[string]int{"us-east-1": 1, "us-midwest-1": 1}),
		entry("gpu_1x_gh200", "GH200 (96 GB)", 1, 149, 64, 432, 4096, map[string]int{"us-east-1": 2}),
		entry("gpu_1x_b200_sxm6", "B200 (180 GB SXM6)", 1, 699, 26, 360, 2867, map[string]int{"us-south-1": 1}),
		entry("gpu_8x_b200_sxm6", "B200 (180 GB SXM6)", 8, 5352, 208, 2900, 22528, map[string]int{}),
		entry("gpu_1x_a10", "A10 (24 GB PCIe)", 1, 75, 30, 200, 1400, map[string]int{"us-west-1": 5}),
	}
}
