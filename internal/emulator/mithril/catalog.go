package mithril

// Offering is one spot auction of the emulated catalog: an instance type in one region.
type Offering struct {
	// Name is Mithril's instance type name, e.g. "h100-80gb.sxm.8x".
	Name string
	// GPUType, NumGPUs, GPUMemoryGB and GPUSocket describe the GPUs ("H100", 8, 80, "SXM5").
	GPUType     string
	NumGPUs     int
	GPUMemoryGB int
	GPUSocket   string
	// NumCPUs, RAMGB and LocalStorageGB describe the rest of the machine.
	NumCPUs, RAMGB, LocalStorageGB int
	// Region is a GCP-like zone name, e.g. "us-central1-a".
	Region string
	// Capacity is how many instances the auction can allocate in total.
	Capacity int
	// MinimumCents is the reserve price (minimum_price_cents) in cents per instance-hour.
	MinimumCents int64
	// LastPriceCents is the last clearing price (last_instance_price) before any bid of this emulator.
	LastPriceCents int64
	// MarketBids are other customers' one-instance bids (limit prices in cents), allocated when the
	// emulator starts: they hold capacity and set lowest_allocated_price.
	MarketBids []int64
}

// DefaultCatalog is a realistic spot market: 8x H100 around $12/instance-hour (Mithril's published
// 7-day spot average is about $12.03), 1x H100 about $1, A100 80GB nodes, H200 and B200, plus a region
// whose H100 auction is full and one GPU type hydra does not rent (A10).
//
// Its names come in every style Mithril writes (reference section 4.7 and its naming table): model,
// memory, form factor and count ("h100-80gb.sxm.8x", "h100-80gb.pcie.8x"), model and count only
// ("b200.8x"), memory without a form factor ("b200-192gb.8x"), and dots throughout without a count
// ("h100.80gb.sxm", whose count is num_gpus alone).
func DefaultCatalog() []Offering {
	h100x8 := Offering{Name: "h100-80gb.sxm.8x", GPUType: "H100", NumGPUs: 8, GPUMemoryGB: 80, GPUSocket: "SXM5", NumCPUs: 208, RAMGB: 1800, LocalStorageGB: 15000}
	h100x1 := Offering{Name: "h100-80gb.sxm.1x", GPUType: "H100", NumGPUs: 1, GPUMemoryGB: 80, GPUSocket: "SXM5", NumCPUs: 26, RAMGB: 225, LocalStorageGB: 1875}
	a100x1 := Offering{Name: "a100-80gb.sxm.1x", GPUType: "A100", NumGPUs: 1, GPUMemoryGB: 80, GPUSocket: "SXM4", NumCPUs: 30, RAMGB: 240, LocalStorageGB: 1000}
	a100x8 := Offering{Name: "a100-80gb.sxm.8x", GPUType: "A100", NumGPUs: 8, GPUMemoryGB: 80, GPUSocket: "SXM4", NumCPUs: 240, RAMGB: 1920, LocalStorageGB: 8000}
	h200x8 := Offering{Name: "h200-141gb.sxm.8x", GPUType: "H200", NumGPUs: 8, GPUMemoryGB: 141, GPUSocket: "SXM5", NumCPUs: 208, RAMGB: 2000, LocalStorageGB: 28000}
	b200x8 := Offering{Name: "b200.8x", GPUType: "B200", NumGPUs: 8, GPUMemoryGB: 180, GPUSocket: "SXM6", NumCPUs: 224, RAMGB: 2900, LocalStorageGB: 30000}
	a10x1 := Offering{Name: "a10-24gb.pcie.1x", GPUType: "A10", NumGPUs: 1, GPUMemoryGB: 24, GPUSocket: "PCIe", NumCPUs: 30, RAMGB: 200, LocalStorageGB: 1400}
	b200mem := Offering{Name: "b200-192gb.8x", GPUType: "B200", NumGPUs: 8, GPUMemoryGB: 192, GPUSocket: "SXM6", NumCPUs: 224, RAMGB: 2900, LocalStorageGB: 30000}
	h100dots := Offering{Name: "h100.80gb.sxm", GPUType: "H100", NumGPUs: 8, GPUMemoryGB: 80, GPUSocket: "SXM5", NumCPUs: 208, RAMGB: 1800, LocalStorageGB: 15000}
	h100pcie := Offering{Name: "h100-80gb.pcie.8x", GPUType: "H100", NumGPUs: 8, GPUMemoryGB: 80, GPUSocket: "PCIe", NumCPUs: 192, RAMGB: 1500, LocalStorageGB: 12000}
	at := func(o Offering, region string, capacity int, minimum, last int64, market ...int64) Offering {
		o.Region, o.Capacity, o.MinimumCents, o.LastPriceCents, o.MarketBids = region, capacity, minimum, last, market
		return o
	}
	return []Offering{
		at(h100x8, "us-central1-a", 4, 800, 1203, 1250, 1300),
		at(a100x1, "us-central1-a", 8, 60, 95, 100),
		at(a100x8, "us-central1-a", 2, 600, 780),
		at(h100x8, "us-central1-b", 2, 800, 1150, 1200, 1220),
		at(h100x1, "us-central5-a", 8, 80, 100, 105),
		at(h200x8, "us-central3-a", 2, 1200, 1500),
		at(b200x8, "us-central3-a", 1, 2000, 2600),
		at(a10x1, "us-central5-a", 4, 40, 60),
		at(b200mem, "us-central5-a", 1, 2000, 2550),
		at(h100dots, "us-central3-a", 2, 800, 1180, 1210),
		at(h100pcie, "us-central1-a", 2, 600, 890),
	}
}
