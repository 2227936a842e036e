package upcloud

import "time"

// Plan is one plan of the emulated catalog. GPU plans have GPUModel and GPUAmount and no storage.
type Plan struct {
	Name        string
	Cores       int
	MemoryMiB   int
	StorageGB   int // 0 for GPU plans
	GPUModel    string
	GPUAmount   int
	GPUMemoryGB int
	// Retired plans are listed with current_offering "no" and cannot be created.
	Retired bool
	// Zones maps a zone to the plan's price there (euro cents per hour) and its stock (GPU plans: how many
	// servers of this plan can still be started there; ignored for plans without GPUs). A zone left out
	// does not sell the plan.
	Zones map[string]ZoneOffer
}

// ZoneOffer is a plan's price and stock in one zone.
type ZoneOffer struct {
	PriceCents float64
	Stock      int
}

// Template is an OS template servers can be cloned from.
type Template struct {
	UUID  string
	Title string
	// SizeGB is the template's size; a clone may not be smaller.
	SizeGB int
	// CloudInit templates need metadata "yes" on create; they accept SSH keys only.
	CloudInit bool
	// Access is "public" (default) or "private".
	Access string
	// Zone and Tier are a private template's (POST /storage/{uuid}/templatize makes one in its disk's
	// zone; default fi-hel2 and maxiops).
	Zone, Tier string
	// Created is when a private template was made (zero for public ones, which list no "created").
	Created time.Time
	// ReadyAt is when a template made by templatize leaves state "maintenance" for "online".
	ReadyAt time.Time
}

// Zone is one zone of the emulated cloud.
type Zone struct {
	ID          string
	Description string
	Public      bool
}

// DefaultZones are the zones the emulator lists by default.
func DefaultZones() []Zone {
	return []Zone{
		{"de-fra1", "Frankfurt #1", true},
		{"fi-hel1", "Helsinki #1", true},
		{"fi-hel2", "Helsinki #2", true},
		{"nl-ams1", "Amsterdam #1", true},
		{"us-nyc1", "New York #1", true},
		{"uk-tst1", "Test Cloud #1", false},
	}
}

// GPUTemplateUUID is the uuid of the default GPU-ready Ubuntu template.
const GPUTemplateUUID = "01000000-0000-4000-8000-000030240300"

// DebianNativeTemplateUUID is the public template UpCloud's SDK clones in its recorded creates
// (server.create.202.json, server.create-2025.202.json): a native template, so those creates send
// metadata "no" and no login user.
const DebianNativeTemplateUUID = "01000000-0000-4000-8000-000020060100"

// DefaultTemplates are the public templates the emulator lists by default: plain Ubuntu and Debian
// (among them the native Debian 11 of the recorded creates), and a GPU-ready Ubuntu (NVIDIA driver +
// CUDA) whose title is a guess (the real one is unconfirmed).
func DefaultTemplates() []Template {
	return []Template{
		{UUID: DebianNativeTemplateUUID, Title: "Debian GNU/Linux 11 (Bullseye)", SizeGB: 4},
		{UUID: "01000000-0000-4000-8000-000020070100", Title: "Debian GNU/Linux 12 (Bookworm)", SizeGB: 4, CloudInit: true},
		{UUID: "01000000-0000-4000-8000-000030220200", Title: "Ubuntu Server 22.04 LTS (Jammy Jellyfish)", SizeGB: 4, CloudInit: true},
		{UUID: "01000000-0000-4000-8000-000030240200", Title: "Ubuntu Server 24.04 LTS (Noble Numbat)", SizeGB: 4, CloudInit: true},
		{UUID: GPUTemplateUUID, Title: "Ubuntu Server 24.04 LTS (Noble Numbat) for GPU (NVIDIA driver, CUDA)", SizeGB: 30, CloudInit: true},
		{UUID: "01000000-0000-4000-8000-000010070300", Title: "Windows Server 2019 Standard", SizeGB: 25},
	}
}

func gpuPlan(name string, cores, memGB int, model string, n, vram int, zones map[string]ZoneOffer) Plan {
	return Plan{Name: name, Cores: cores, MemoryMiB: memGB * 1024, GPUModel: model, GPUAmount: n, GPUMemoryGB: vram, Zones: zones}
}

// GPU models as UpCloud's plans name them (gpu_model, and a GPU device's model): the full names
// nvidia-smi prints. "NVIDIA L40S" is in UpCloud's own fixtures; for H100 and B200 the reference has no
// sample of UpCloud's own (it guesses "NVIDIA H100"), so the emulator serves the long real form, which
// supported_gpus.yml must map (it keeps the short one as an alias).
const (
	ModelL4   = "NVIDIA L4"
	ModelL40S = "NVIDIA L40S"
	ModelH100 = "NVIDIA H100 80GB HBM3"
	ModelB200 = "NVIDIA B200"
)

// DefaultPlans is a realistic catalog: a few general-purpose plans in every public zone, and UpCloud's
// L4, L40S, H100 and B200 GPU plans (on-demand, and spot for L4, L40S and H100) in fi-hel2 and de-fra1
// with prices in euro cents per hour (L40S 1x at 111.1607 and spot L4 at 57 as in a live dump; the B200
// prices are made up) and some stock. Every GPU model is one supported_gpus.yml maps for upcloud (the
// conformance suite wants every offer mapped); tests of unmapped models bring their own plans.
func DefaultPlans() []Plan {
	all := func(price float64) map[string]ZoneOffer {
		return map[string]ZoneOffer{"de-fra1": {price, 0}, "fi-hel1": {price, 0}, "fi-hel2": {price, 0}, "nl-ams1": {price, 0}, "us-nyc1": {price, 0}}
	}
	hel := func(price float64, stock int) map[string]ZoneOffer {
		return map[string]ZoneOffer{"fi-hel2": {price, stock}}
	}
	helFra := func(price float64, helStock, fraStock int) map[string]ZoneOffer {
		return map[string]ZoneOffer{"fi-hel2": {price, helStock}, "de-fra1": {price * 1.05, fraStock}}
	}
	return []Plan{
		// The general-purpose plans of the recorded /plan and /price answers (2020), at de-fra1's prices.
		{Name: "1xCPU-1GB", Cores: 1, MemoryMiB: 1024, StorageGB: 25, Zones: all(0.744)},
		{Name: "1xCPU-2GB", Cores: 1, MemoryMiB: 2048, StorageGB: 50, Zones: all(1.488)},
		{Name: "2xCPU-4GB", Cores: 2, MemoryMiB: 4096, StorageGB: 80, Zones: all(2.9761)},
		{Name: "4xCPU-8GB", Cores: 4, MemoryMiB: 8192, StorageGB: 160, Zones: all(5.9523)},
		{Name: "6xCPU-16GB", Cores: 6, MemoryMiB: 16384, StorageGB: 320, Zones: all(11.9047)},
		{Name: "8xCPU-32GB", Cores: 8, MemoryMiB: 32768, StorageGB: 640, Zones: all(23.8095)},
		{Name: "12xCPU-48GB", Cores: 12, MemoryMiB: 49152, StorageGB: 960, Zones: all(35.7142)},
		{Name: "16xCPU-64GB", Cores: 16, MemoryMiB: 65536, StorageGB: 1280, Zones: all(47.619)},
		{Name: "20xCPU-96GB", Cores: 20, MemoryMiB: 98304, StorageGB: 1920, Zones: all(71.4285)},
		{Name: "20xCPU-128GB", Cores: 20, MemoryMiB: 131072, StorageGB: 2048, Zones: all(95.238)},
		gpuPlan("GPU-8xCPU-64GB-1xL4", 8, 64, ModelL4, 1, 24, helFra(65.4761, 6, 2)),
		gpuPlan("GPU-12xCPU-128GB-1xL4", 12, 128, ModelL4, 1, 24, hel(80.3571, 4)),
		gpuPlan("GPU-16xCPU-192GB-2xL4", 16, 192, ModelL4, 2, 24, hel(141.0714, 2)),
		gpuPlan("GPU-32xCPU-384GB-3xL4", 32, 384, ModelL4, 3, 24, hel(215.4761, 1)),
		gpuPlan("GPU-8xCPU-64GB-1xL40S", 8, 64, ModelL40S, 1, 48, helFra(111.1607, 6, 0)),
		gpuPlan("GPU-12xCPU-128GB-1xL40S", 12, 128, ModelL40S, 1, 48, hel(126.1904, 4)),
		gpuPlan("GPU-16xCPU-192GB-2xL40S", 16, 192, ModelL40S, 2, 48, hel(232.1428, 2)),
		gpuPlan("GPU-32xCPU-384GB-3xL40S", 32, 384, ModelL40S, 3, 48, hel(342.2619, 1)),
		gpuPlan("GPU-12xCPU-240GB-1xH100", 12, 240, ModelH100, 1, 80, hel(252.9761, 2)),
		gpuPlan("GPU-24xCPU-480GB-2xH100", 24, 480, ModelH100, 2, 80, hel(505.9523, 1)),
		gpuPlan("GPU-48xCPU-960GB-4xH100", 48, 960, ModelH100, 4, 80, hel(1011.9047, 0)),
		gpuPlan("GPU-96xCPU-1920GB-8xH100", 96, 1920, ModelH100, 8, 80, hel(2023.8095, 1)),
		gpuPlan("GPU-12xCPU-240GB-1xB200", 12, 240, ModelB200, 1, 192, hel(452.3809, 2)),
		gpuPlan("GPU-24xCPU-480GB-2xB200", 24, 480, ModelB200, 2, 192, hel(904.7619, 1)),
		gpuPlan("GPU-48xCPU-960GB-4xB200", 48, 960, ModelB200, 4, 192, hel(1809.5238, 1)),
		gpuPlan("GPU-96xCPU-1920GB-8xB200", 96, 1920, ModelB200, 8, 192, hel(3619.0476, 0)),
		gpuPlan("GPU-SPOT-8xCPU-64GB-1xL4", 8, 64, ModelL4, 1, 24, helFra(57, 8, 4)),
		gpuPlan("GPU-SPOT-8xCPU-64GB-1xL40S", 8, 64, ModelL40S, 1, 48, hel(72.2222, 4)),
		gpuPlan("GPU-SPOT-12xCPU-240GB-1xH100", 12, 240, ModelH100, 1, 80, hel(164.4345, 2)),
	}
}

// zonePriceItems are the items every zone's price list carries besides its plans, in euro cents per
// amount per hour, as UpCloud's recorded GET /1.3/price answers them for de-fra1 (price.list.200.json,
// a go-vcr recording of 2020). storage_standard is the newer name of storage_hdd's tier.
var zonePriceItems = map[string][2]float64{ // name -> {amount, price}
	"firewall":                      {1, 0.56},
	"io_request_backup":             {1000000, 0},
	"io_request_hdd":                {1000000, 0},
	"io_request_maxiops":            {1000000, 0},
	"ipv4_address":                  {1, 0.336},
	"ipv6_address":                  {1, 0},
	"network_private_vlan":          {1, 0.694},
	"public_ipv4_bandwidth_in":      {1, 0},
	"public_ipv4_bandwidth_out":     {1, 1},
	"public_ipv6_bandwidth_in":      {1, 0},
	"public_ipv6_bandwidth_out":     {1, 1},
	"server_core":                   {1, 1.12},
	"server_memory":                 {256, 0.14},
	"simple_backup_extra_dailies":   {1, 0.0069},
	"simple_backup_extra_monthlies": {1, 0.0208},
	"simple_backup_extra_weeklies":  {1, 0.0138},
	"storage_backup":                {1, 0.0078},
	"storage_hdd":                   {1, 0.0078},
	"storage_maxiops":               {1, 0.031},
	"storage_standard":              {1, 0.017},
	"storage_template":              {1, 0.031},
}

// simpleBackupPrices are the recorded price list's simple backup items of the general-purpose plans
// (simple_backup_dailies_<plan>, _weeklies_, _monthlies_; euro cents per hour, de-fra1, 2020). The
// recording has none for GPU plans, so the emulator prices none.
var simpleBackupPrices = map[string][3]float64{ // plan -> {dailies, weeklies, monthlies}
	"1xCPU-1GB":    {0.1488, 0.2976, 0.4464},
	"1xCPU-2GB":    {0.2976, 0.5952, 0.8928},
	"2xCPU-4GB":    {0.5952, 1.1904, 1.7857},
	"4xCPU-8GB":    {1.1905, 2.3809, 3.5714},
	"6xCPU-16GB":   {2.3809, 4.7619, 7.1428},
	"8xCPU-32GB":   {4.7619, 9.5238, 14.2857},
	"12xCPU-48GB":  {7.1428, 14.2857, 21.4285},
	"16xCPU-64GB":  {9.5238, 19.0476, 28.5714},
	"20xCPU-96GB":  {14.2857, 28.5714, 42.8571},
	"20xCPU-128GB": {19.0476, 38.0952, 57.1428},
}
