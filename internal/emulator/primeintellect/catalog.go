package primeintellect

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Item is one availability offer in the emulator's catalog.
type Item struct {
	CloudID    string `json:"cloud_id"`
	GPUType    string `json:"gpu_type"`
	Socket     string `json:"socket"`
	Provider   string `json:"provider"`
	Region     string `json:"region"`      // "" renders as null
	DataCenter string `json:"data_center"` // "" renders as null
	Country    string `json:"country"`     // "" renders as null
	GPUCount   int    `json:"gpu_count"`
	// GPUMemory is the memory of ONE GPU (GB). It is rendered as gpuMemory times gpuCount, the box
	// total, as Prime's recorded answers send it (gpuMemory 160 for 2x A100_80GB), although the spec
	// calls the field per GPU.
	GPUMemory int `json:"gpu_memory"`
	// Security is secure_cloud (priced onDemand) or community_cloud (priced communityPrice).
	Security string `json:"security"`
	// Price is the offer's price per hour for all its GPUs, without the disk.
	Price    float64 `json:"price"`
	Currency string  `json:"currency"`
	Spot     bool    `json:"spot"`
	// DiskGB is the default disk; DiskPricePerUnit its $/GB/h; DiskIncluded says whether the default
	// disk is in Price (defaultIncludedInPrice).
	DiskGB           int     `json:"disk_gb"`
	DiskPricePerUnit float64 `json:"disk_price_per_unit"`
	DiskIncluded     bool    `json:"disk_included"`
	VCPUs            int     `json:"vcpus"`
	MemoryGB         int     `json:"memory_gb"`
	// Capacity is how many more pods this offer can start (-1: unlimited). 0 shows as Unavailable.
	Capacity     int     `json:"capacity"`
	PrepaidHours float64 `json:"prepaid_hours"`
}

// PodPrice is what a pod from this item costs per hour: the price plus the default disk when it is
// not included.
func (it Item) PodPrice() float64 {
	p := it.Price
	if !it.DiskIncluded {
		p += it.DiskPricePerUnit * float64(it.DiskGB)
	}
	return p
}

func (it Item) stock() string {
	switch {
	case it.Capacity < 0:
		return "Available"
	case it.Capacity == 0:
		return "Unavailable"
	case it.Capacity == 1:
		return "Low"
	case it.Capacity < 5:
		return "Medium"
	default:
		return "High"
	}
}

// slot identifies an item's hardware independently of its (changing) cloudId.
func (it Item) slot() string {
	return strings.Join([]string{strings.ToLower(it.Provider), it.GPUType, it.Socket, strconv.Itoa(it.GPUCount), it.DataCenter, it.Security, strconv.FormatBool(it.Spot)}, "|")
}

const runpodDiskInfo = "Runpod uses 40GB of disk size for the filesystem. Only additional disk size is available for the user. If you order 80GB you'll only get 40GB of volume size, 100GB -> 60GB of volume size etc."

var images = []string{"ubuntu_22_cuda_12", "cuda_12_1_pytorch_2_2", "cuda_12_4_pytorch_2_4", "cuda_12_4_pytorch_2_5", "flux", "vllm_llama_8b"}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func resource(minC, defC, maxC, price, step any, included, info any) map[string]any {
	return map[string]any{"minCount": minC, "defaultCount": defC, "maxCount": maxC, "pricePerUnit": price, "step": step,
		"defaultIncludedInPrice": included, "additionalInfo": info}
}

func nullResource() map[string]any { return resource(nil, nil, nil, nil, nil, nil, nil) }

// render builds the JSON object Prime sends for one offer. The legacy form has no region or sharedDisk.
func (it Item) render(legacy bool) map[string]any {
	var info any
	if strings.EqualFold(it.Provider, "runpod") {
		info = runpodDiskInfo
	}
	disk := resource(it.DiskGB, it.DiskGB, it.DiskGB*25, it.DiskPricePerUnit, 1, it.DiskIncluded, info)
	switch {
	case it.DiskGB == 0:
		disk = nullResource()
	case strings.EqualFold(it.Provider, "lambdalabs") && it.DiskPricePerUnit == 0:
		// A fixed disk, as the legacy capture shows lambdalabs': its size and nothing else.
		disk = nullResource()
		disk["defaultCount"] = it.DiskGB
	}
	vcpu := nullResource()
	if it.VCPUs > 0 {
		vcpu["defaultCount"] = it.VCPUs
	}
	mem := nullResource()
	if it.MemoryGB > 0 {
		mem["defaultCount"] = it.MemoryGB
	}
	prices := map[string]any{"onDemand": it.Price, "communityPrice": nil, "isVariable": nil, "currency": it.currency()}
	if it.Security == "community_cloud" {
		prices["onDemand"], prices["communityPrice"] = nil, it.Price
	}
	var spot any // the real API sends null, not false, on on-demand offers
	if it.Spot {
		spot = true
	}
	m := map[string]any{
		"cloudId": it.CloudID, "gpuType": it.GPUType, "socket": it.Socket, "provider": it.Provider,
		"dataCenter": nullable(it.DataCenter), "country": nullable(it.Country),
		"gpuCount": it.GPUCount, "gpuMemory": it.GPUMemory * max(it.GPUCount, 1),
		"disk": disk, "vcpu": vcpu, "memory": mem,
		"internetSpeed": nil, "interconnect": nil, "interconnectType": nil, "provisioningTime": nil,
		"stockStatus": it.stock(), "security": it.Security, "prices": prices, "images": images, "isSpot": spot,
	}
	m["prepaidTime"] = nil
	if it.PrepaidHours > 0 {
		m["prepaidTime"] = it.PrepaidHours
	}
	if !legacy {
		m["region"] = nullable(it.Region)
		m["sharedDisk"] = nullResource()
	}
	return m
}

func (it Item) currency() string {
	if it.Currency == "" {
		return "USD"
	}
	return it.Currency
}

// DefaultCatalog is a realistic catalog: the upstream providers and price levels seen in Prime's
// recorded availability (runpod with an excluded disk and float noise, hyperstack and crusoe with the
// disk included, community-cloud tensordock offers, a spot offer, an 8-GPU box, offers with null
// dataCenter and country), resold Verda (datacrunch) and UpCloud capacity, one GPU hydra does not
// rent (A40), and one sold-out offer.
func DefaultCatalog() []Item {
	rp := func(cloudID, gpu, socket string, count, mem int, dc, region, country string, price float64, capacity int) Item {
		return Item{CloudID: cloudID, GPUType: gpu, Socket: socket, Provider: "runpod", DataCenter: dc, Region: region, Country: country,
			GPUCount: count, GPUMemory: mem, Security: "secure_cloud", Price: price, DiskGB: 120, DiskPricePerUnit: 0.00014,
			VCPUs: 16 * count, MemoryGB: 125 * count, Capacity: capacity}
	}
	// dc is a resold Verda (datacrunch) offer in Finland, its boot disk included.
	dc := func(cloudID, gpu, socket string, count, mem int, dataCenter string, price float64, diskGB, vcpus, memGB, capacity int) Item {
		return Item{CloudID: cloudID, GPUType: gpu, Socket: socket, Provider: "datacrunch", DataCenter: dataCenter, Region: "eu_north", Country: "FI",
			GPUCount: count, GPUMemory: mem, Security: "secure_cloud", Price: price, DiskGB: diskGB, DiskPricePerUnit: 0.0001, DiskIncluded: true,
			VCPUs: vcpus, MemoryGB: memGB, Capacity: capacity}
	}
	return []Item{
		rp("NVIDIA H100 80GB HBM3", "H100_80GB", "SXM5", 1, 80, "CA-MTL-1", "canada", "CA", 2.6899999999999999, 4),
		rp("NVIDIA H100 PCIe", "H100_80GB", "PCIe", 1, 80, "CA-MTL-3", "canada", "CA", 2.39, 3),
		rp("NVIDIA A100 80GB PCIe", "A100_80GB", "PCIe", 1, 80, "US-KS-2", "united_states", "US", 1.64, 5),
		rp("NVIDIA A100-SXM4-80GB", "A100_80GB", "SXM4", 1, 80, "US-KS-2", "united_states", "US", 1.74, 2),
		rp("NVIDIA A100-SXM4-80GB", "A100_80GB", "SXM4", 2, 80, "US-KS-2", "united_states", "US", 3.48, 1),
		rp("NVIDIA L40S", "L40S_48GB", "PCIe", 1, 48, "US-TX-3", "united_states", "US", 0.86, 6),
		rp("NVIDIA L4", "L4_24GB", "PCIe", 1, 24, "US-CA-2", "united_states", "US", 0.43, -1),
		rp("NVIDIA RTX 6000 Ada Generation", "RTX6000Ada_48GB", "PCIe", 1, 48, "EU-RO-1", "eu_east", "RO", 0.77, 3),
		rp("NVIDIA RTX PRO 6000 Blackwell", "RTX_PRO_6000B_96GB", "PCIe", 1, 96, "EU-RO-1", "eu_east", "RO", 1.79, 2),
		rp("NVIDIA A40", "A40_48GB", "PCIe", 1, 48, "EU-SE-1", "eu_north", "SE", 0.44, 8),
		rp("NVIDIA B200", "B200_180GB", "SXM6", 1, 180, "US-TX-4", "united_states", "US", 5.99, 0),
		{CloudID: "n3-H100x1", GPUType: "H100_80GB", Socket: "PCIe", Provider: "hyperstack", DataCenter: "NORWAY-1", Region: "eu_north", Country: "NO",
			GPUCount: 1, GPUMemory: 80, Security: "secure_cloud", Price: 1.9, DiskGB: 750, DiskPricePerUnit: 0.000097, DiskIncluded: true,
			VCPUs: 28, MemoryGB: 180, Capacity: 5},
		dc("1H100.80S.30V", "H100_80GB", "SXM5", 1, 80, "FIN-01", 2.29, 100, 30, 120, 3),
		dc("8H100.80S.176V", "H100_80GB", "SXM5", 8, 80, "FIN-01", 18.32, 800, 176, 1480, 1),
		dc("1B200.30V", "B200_180GB", "SXM6", 1, 180, "FIN-03", 4.49, 100, 30, 184, 2),
		dc("1H200.141S.44V", "H200_141GB", "SXM5", 1, 141, "FIN-01", 3.59, 100, 44, 185, 2),
		{CloudID: "GPU-8xCPU-64GB-1xL40S", GPUType: "L40S_48GB", Socket: "PCIe", Provider: "upcloud", DataCenter: "fi-hel2", Region: "eu_north", Country: "FI",
			GPUCount: 1, GPUMemory: 48, Security: "secure_cloud", Price: 1.39, DiskGB: 100, DiskPricePerUnit: 0.00012, DiskIncluded: false,
			VCPUs: 8, MemoryGB: 64, Capacity: 4},
		{CloudID: "gpu_8x_h100_sxm5", GPUType: "H100_80GB", Socket: "SXM5", Provider: "lambdalabs", DataCenter: "us-east-1", Region: "united_states", Country: "US",
			GPUCount: 8, GPUMemory: 80, Security: "secure_cloud", Price: 23.92, DiskGB: 20480, DiskIncluded: true,
			VCPUs: 208, MemoryGB: 1800, Capacity: 1},
		{CloudID: "a100-80gb-pcie-1x", GPUType: "A100_80GB", Socket: "PCIe", Provider: "massedcompute", DataCenter: "US-CENTRAL-1", Region: "united_states", Country: "US",
			GPUCount: 1, GPUMemory: 80, Security: "secure_cloud", Price: 1.72, DiskGB: 768, DiskIncluded: true, VCPUs: 12, MemoryGB: 64, Capacity: 2},
		{CloudID: "a100-80gb-1x-td", GPUType: "A100_80GB", Socket: "PCIe", Provider: "tensordock", DataCenter: "US-NV-1", Region: "united_states", Country: "US",
			GPUCount: 1, GPUMemory: 80, Security: "community_cloud", Price: 1.0, DiskGB: 260, DiskPricePerUnit: 0.00005, VCPUs: 8, MemoryGB: 64, Capacity: 2},
		// As in the recorded availability, runpod and tensordock offers often carry null dataCenter
		// (and runpod null country and region too): the upstream places the pod.
		rp("NVIDIA A100 80GB PCIe", "A100_80GB", "PCIe", 1, 80, "", "", "", 1.6567999999999998, 4),
		{CloudID: "NVIDIA A100 80GB PCIe", GPUType: "A100_80GB", Socket: "PCIe", Provider: "runpod", GPUCount: 2, GPUMemory: 80,
			Security: "community_cloud", Price: 2.3968, DiskGB: 120, DiskPricePerUnit: 0.00014, VCPUs: 32, MemoryGB: 250, Capacity: 3},
		{CloudID: "7de483e8-55e2-41de-a8d7-75916f4f9ca0_1", GPUType: "A100_80GB", Socket: "SXM4", Provider: "tensordock", Country: "CZ",
			GPUCount: 1, GPUMemory: 80, Security: "community_cloud", Price: 0.95, DiskGB: 80, DiskPricePerUnit: 0.00005, VCPUs: 8, MemoryGB: 64, Capacity: 2},
		{CloudID: "a100-80gb-sxm4-spot", GPUType: "A100_80GB", Socket: "SXM4", Provider: "crusoecloud", DataCenter: "eu-iceland1-a", Region: "eu_north", Country: "IS",
			GPUCount: 1, GPUMemory: 80, Security: "secure_cloud", Price: 0.5748, Spot: true, DiskGB: 960, DiskPricePerUnit: 0.000115, DiskIncluded: true,
			VCPUs: 12, MemoryGB: 120, Capacity: 3},
	}
}

// summary builds the /availability/gpu-summary answer: gpuType → count → region and "cheapest" →
// prices.
func summary(items []Item) map[string]map[string]map[string]map[string]any {
	out := map[string]map[string]map[string]map[string]any{}
	type best struct{ onDemand, community, spot *float64 }
	cheaper := func(cur *float64, v float64) *float64 {
		if cur == nil || v < *cur {
			return &v
		}
		return cur
	}
	agg := map[string]map[string]map[string]*best{}
	for _, it := range items {
		if it.Capacity == 0 {
			continue
		}
		c := strconv.Itoa(it.GPUCount)
		if agg[it.GPUType] == nil {
			agg[it.GPUType] = map[string]map[string]*best{}
		}
		if agg[it.GPUType][c] == nil {
			agg[it.GPUType][c] = map[string]*best{}
		}
		region := it.Region
		if region == "" {
			region = "unknown"
		}
		for _, r := range []string{"cheapest", region} {
			b := agg[it.GPUType][c][r]
			if b == nil {
				b = &best{}
				agg[it.GPUType][c][r] = b
			}
			p := it.PodPrice()
			switch {
			case it.Spot:
				b.spot = cheaper(b.spot, p)
			case it.Security == "community_cloud":
				b.community = cheaper(b.community, p)
			default:
				b.onDemand = cheaper(b.onDemand, p)
			}
		}
	}
	val := func(p *float64) any {
		if p == nil {
			return nil
		}
		return *p
	}
	for g, counts := range agg {
		out[g] = map[string]map[string]map[string]any{}
		for c, regions := range counts {
			out[g][c] = map[string]map[string]any{}
			for r, b := range regions {
				out[g][c][r] = map[string]any{"onDemand": val(b.onDemand), "communityPrice": val(b.community), "spotPrice": val(b.spot)}
			}
		}
	}
	return out
}

// disks builds the /availability/disks items from the catalog's disk places (diskPlaces), shaped like
// Prime's (cloudId null, spec counts from 0).
func disks(items []Item) []map[string]any {
	var out []map[string]any
	for _, p := range diskPlaces(items) {
		out = append(out, map[string]any{
			"cloudId": nil, "provider": p.Provider, "dataCenter": nullable(p.DataCenter), "country": nullable(p.Country),
			"region":      nullable(p.Region),
			"spec":        resource(0, 0, p.MaxGB, p.PricePerUnit, 1, false, nil),
			"stockStatus": "Available", "security": p.Security, "isMultinode": p.Multinode,
		})
	}
	return out
}

// sortedItems returns the catalog in the order the API lists it (GPU type, count, price).
func sortedItems(items []Item) []Item {
	out := append([]Item(nil), items...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].GPUType != out[j].GPUType {
			return out[i].GPUType < out[j].GPUType
		}
		if out[i].GPUCount != out[j].GPUCount {
			return out[i].GPUCount < out[j].GPUCount
		}
		return out[i].PodPrice() < out[j].PodPrice()
	})
	return out
}

func (it Item) String() string {
	return fmt.Sprintf("%s %dx%s/%s at %s", it.Provider, it.GPUCount, it.GPUType, it.Socket, it.DataCenter)
}
