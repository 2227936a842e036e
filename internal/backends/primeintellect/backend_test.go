package primeintellect

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/sshkeys"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/primeintellect"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

func findOffer(t *testing.T, offers []cloudprovider.Offer, provider, gpuType string, count int, spot bool) cloudprovider.Offer {
	t.Helper()
	for _, o := range offers {
		if o.Details[DetailProvider] == provider && o.Details[DetailGPUType] == gpuType && o.GPUCount == count && o.Spot == spot {
			return o
		}
	}
	t.Fatalf("no offer %s %dx%s spot=%v in %d offers", provider, count, gpuType, spot, len(offers))
	return cloudprovider.Offer{}
}

// TestOffersMapping: the emulator's default catalog mapped onto offers. Its A40 is a GPU the inventory
// does not map: it is offered with GPUType "" and Prime's gpuType as CloudGPU, which every offer carries.
func TestOffersMapping(t *testing.T) {
	e := newEnv(t, emu.Options{})
	_, offers := e.backendOffers(t, nil)
	unmapped := 0
	soldOutListed := false
	for _, o := range offers {
		soldOut := o.Details[DetailStock] == "Unavailable"
		if o.Cloud != "primeintellect" || o.ID != "" || o.Pool != "" || o.Available != map[bool]int{true: 0, false: -1}[soldOut] || o.CloudGPU != o.Details[DetailGPUType] {
			t.Errorf("bad offer %+v", o)
		}
		if o.GPUType == "" {
			unmapped++
			if o.CloudGPU != "A40_48GB" || o.GPUCount != 1 || o.PricePerHour <= 0 || o.Details[DetailCloudID] != "NVIDIA A40" {
				t.Errorf("unmapped offer %+v: only the A40 is not in the inventory", o)
			}
		}
		if o.Details[DetailProvider] == "runpod" && o.Details[DetailGPUType] == "B200_180GB" {
			// Sold out: listed with its price and Available 0, which the control plane shows as not eligible.
			soldOutListed = true
			if !soldOut || o.Available != 0 || o.PricePerHour <= 0 || o.GPUType != "b200" {
				t.Errorf("sold-out B200 listed as %+v", o)
			}
		}
		if strings.Contains(o.InstanceType, "/") {
			t.Errorf("instance type %q must not contain a slash (offer ids use them)", o.InstanceType)
		}
	}
	if !soldOutListed {
		t.Error("the sold-out (Unavailable) runpod B200 is not listed")
	}
	tests := []struct {
		name              string
		provider, gpu     string
		count             int
		spot              bool
		wantType          string
		wantPrice         money.USD
		wantResale        string
		wantRegion        string
		wantInstanceType  string
		wantCloudIDDetail string
	}{
		// Where the disk is not included: runpod 2.69 + 120 GB * 0.00014, upcloud 1.39 + 100 GB *
		// 0.00012, tensordock 1.0 + 260 GB * 0.00005.
		{"runpod adds the excluded disk", "runpod", "H100_80GB", 1, false, "h100", 2_706_800, "", "CA-MTL-1", "runpod.H100_80GB.SXM5.1x", "NVIDIA H100 80GB HBM3"},
		{"disk included adds nothing", "hyperstack", "H100_80GB", 1, false, "h100", 1_900_000, "", "NORWAY-1", "hyperstack.H100_80GB.PCIe.1x", "n3-H100x1"},
		{"verda resale", "datacrunch", "H100_80GB", 1, false, "h100", 2_290_000, "verda", "FIN-01", "datacrunch.H100_80GB.SXM5.1x", "1H100.80S.30V"},
		{"8 GPUs, whole-box price", "datacrunch", "H100_80GB", 8, false, "h100", 18_320_000, "verda", "FIN-01", "datacrunch.H100_80GB.SXM5.8x", "8H100.80S.176V"},
		{"upcloud resale", "upcloud", "L40S_48GB", 1, false, "l40s", 1_402_000, "upcloud", "fi-hel2", "upcloud.L40S_48GB.PCIe.1x", "GPU-8xCPU-64GB-1xL40S"},
		{"community price", "tensordock", "A100_80GB", 1, false, "a100-80gb", 1_013_000, "", "US-NV-1", "tensordock.A100_80GB.PCIe.1x", "a100-80gb-1x-td"},
		{"spot", "crusoecloud", "A100_80GB", 1, true, "a100-80gb", 574_800, "", "eu-iceland1-a", "crusoecloud.A100_80GB.SXM4.1x", "a100-80gb-sxm4-spot"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o cloudprovider.Offer
			for _, c := range offers {
				if c.InstanceType == tt.wantInstanceType && c.Spot == tt.spot {
					o = c
				}
			}
			if o.Details[DetailProvider] != tt.provider || o.Details[DetailGPUType] != tt.gpu || o.GPUCount != tt.count ||
				o.GPUType != tt.wantType || o.PricePerHour != tt.wantPrice || o.ResaleOf != tt.wantResale ||
				o.Region != tt.wantRegion || o.InstanceType != tt.wantInstanceType || o.Details[DetailCloudID] != tt.wantCloudIDDetail {
				t.Fatalf("offer = %+v", o)
			}
		})
	}
	for i := 1; i < len(offers); i++ {
		if offers[i].PricePerHour < offers[i-1].PricePerHour {
			t.Fatal("offers are not sorted by price")
		}
	}
	if unmapped != 1 {
		t.Errorf("%d unmapped offers, want the A40 once", unmapped)
	}
}

func TestOffersSkipsCountsAboveMax(t *testing.T) {
	e := newEnv(t, emu.Options{Catalog: []emu.Item{
		{CloudID: "l4x1", GPUType: "L4_24GB", Socket: "PCIe", Provider: "runpod", DataCenter: "DC", GPUCount: 1, Security: "secure_cloud", Price: 0.4, Capacity: -1},
		{CloudID: "l4x16", GPUType: "L4_24GB", Socket: "PCIe", Provider: "runpod", DataCenter: "DC", GPUCount: 16, Security: "secure_cloud", Price: 6.4, Capacity: -1},
		{CloudID: "eur", GPUType: "L4_24GB", Socket: "PCIe", Provider: "runpod", DataCenter: "DC2", GPUCount: 1, Security: "secure_cloud", Price: 0.3, Currency: "EUR", Capacity: -1},
		// Two items with the same shape and place: the cheaper one wins.
		{CloudID: "l4x1-b", GPUType: "L4_24GB", Socket: "PCIe", Provider: "runpod", DataCenter: "DC", GPUCount: 1, Security: "secure_cloud", Price: 0.35, Capacity: -1},
	}})
	offers, err := e.backend(t, nil).Offers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(offers) != 1 || offers[0].Details[DetailCloudID] != "l4x1-b" || offers[0].PricePerHour != money.MustFromFloat(0.35) {
		t.Fatalf("offers = %+v", offers)
	}
}

func TestResaleConfigurable(t *testing.T) {
	e := newEnv(t, emu.Options{})
	_, offers := e.backendOffers(t, func(c *Config) { c.ResaleClouds = map[string]string{"RunPod": "runpod-direct"} })
	for _, o := range offers {
		want := ""
		if o.Details[DetailProvider] == "runpod" {
			want = "runpod-direct"
		}
		if o.ResaleOf != want {
			t.Fatalf("%s: ResaleOf %q, want %q", o.InstanceType, o.ResaleOf, want)
		}
	}
}

func createReq(o cloudprovider.Offer, name string) cloudprovider.CreateRequest {
	pool := inventory.Pool{Name: "prime-intellect-vm-pool", Cloud: CloudName, Kind: "vm", Prefix: "pi-vm-"}
	return cloudprovider.CreateRequest{Name: name, Pool: pool, Offer: o, SSHPublicKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHydra user@host"}}
}

func lastCreate(t *testing.T, e *env) map[string]any {
	t.Helper()
	reqs := e.emu.CreateRequests()
	if len(reqs) == 0 {
		t.Fatal("no create request reached the emulator")
	}
	var body struct {
		Pod      map[string]any `json:"pod"`
		Provider map[string]any `json:"provider"`
	}
	if err := json.Unmarshal(reqs[len(reqs)-1], &body); err != nil {
		t.Fatal(err)
	}
	body.Pod["provider.type"] = body.Provider["type"]
	return body.Pod
}

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

func TestCreateGetListDelete(t *testing.T) {
	e := newEnv(t, emu.Options{Options: simulation.Options{BootDuration: 40 * time.Second}, SSH: emukit.SSH{Host: "192.0.2.10", Port: 40022}})
	ctx := context.Background()
	b, offers := e.backendOffers(t, nil)
	o := findOffer(t, offers, "runpod", "L40S_48GB", 1, false)
	inst, err := b.Create(ctx, createReq(o, "pi-vm-web1"))
	if err != nil {
		t.Fatal(err)
	}
	if inst.ID == "" || inst.Name != "pi-vm-web1" || inst.Status != cloudprovider.StatusPending || inst.SSH != nil ||
		inst.InstanceType != o.InstanceType || inst.GPUType != "l40s" || inst.GPUCount != 1 || inst.Region != o.Region {
		t.Fatalf("created = %+v", inst)
	}
	body := lastCreate(t, e)
	if body["cloudId"] != "NVIDIA L40S" || body["dataCenterId"] != "US-TX-3" || body["country"] != "US" || body["socket"] != "PCIe" ||
		body["provider.type"] != "runpod" || body["security"] != "secure_cloud" || body["name"] != "pi-vm-web1" || body["sshKeyId"] == nil {
		t.Fatalf("create body = %v", body)
	}
	var seen []cloudprovider.Status
	for i := 0; i < 6; i++ {
		got, err := b.Get(ctx, inst.ID)
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, got.Status)
		if got.Status == cloudprovider.StatusRunning {
			if got.SSH == nil || got.SSH.Host != "192.0.2.10" || got.SSH.Port != 40022 || got.SSH.User != "root" {
				t.Fatalf("running without the SSH endpoint: %+v", got.SSH)
			}
			break
		}
		e.clock.Advance(10 * time.Second)
	}
	if seen[len(seen)-1] != cloudprovider.StatusRunning || len(seen) < 4 {
		t.Fatalf("statuses %v: want pending (PROVISIONING, ACTIVE without ssh, [null] ssh) then running", seen)
	}
	// A second instance in another pool; List filters by prefix.
	if _, err := b.Create(ctx, createReq(findOffer(t, offers, "runpod", "L4_24GB", 1, false), "pi-ex-job")); err != nil {
		t.Fatal(err)
	}
	list, err := b.List(ctx, "pi-vm-")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != inst.ID || list[0].Status != cloudprovider.StatusRunning {
		t.Fatalf("list = %+v", list)
	}
	if err := b.Delete(ctx, inst.ID); err != nil {
		t.Fatal(err)
	}
	got, err := b.Get(ctx, inst.ID)
	if err != nil || got.Status != cloudprovider.StatusPending || got.CloudStatus != "DELETING" {
		t.Fatalf("deleting = %+v %v", got, err)
	}
	e.clock.Advance(10 * time.Second)
	got, err = b.Get(ctx, inst.ID)
	if err != nil || got.Status != cloudprovider.StatusTerminated {
		t.Fatalf("terminated = %+v %v", got, err)
	}
	if list, _ := b.List(ctx, "pi-vm-"); len(list) != 0 {
		t.Fatalf("terminated pods must leave List: %+v", list)
	}
	e.clock.Advance(5 * time.Minute)
	_, err = b.Get(ctx, inst.ID)
	wantKind(t, err, cloudprovider.ErrNotFound)
}

func TestCreateReResolvesFlippedCloudID(t *testing.T) {
	e := newEnv(t, emu.Options{})
	ctx := context.Background()
	b, offers := e.backendOffers(t, nil)
	o := findOffer(t, offers, "datacrunch", "H100_80GB", 1, false)
	if err := e.emu.FlipCloudIDs(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Create(ctx, createReq(o, "pi-vm-flip")); err != nil {
		t.Fatalf("create after the cloudId changed: %v", err)
	}
	body := lastCreate(t, e)
	if body["cloudId"] != "1H100.80S.30V#r1" || body["dataCenterId"] != "FIN-01" || body["provider.type"] != "datacrunch" {
		t.Fatalf("create used %v, want the re-resolved cloudId", body)
	}
	// The create body carries what availability says now, never the stale token.
	if e.Requests("GET /api/v1/availability/gpus") < 2 {
		t.Fatal("create did not query availability again")
	}
}

func TestCreateMaxPriceAlwaysNumeric(t *testing.T) {
	tests := []struct {
		name      string
		marginPct float64
		userMax   money.USD
		want      money.USD
	}{
		// The quote is 0.43 + 120 GB * 0.00014 = 0.4468; the quote plus the margin is rounded up to a
		// hundredth of a cent.
		{"default margin 10%", 0, 0, 491_500}, // 0.49148
		{"custom margin 25%", 25, 0, 558_500},
		{"no margin", -1, 0, 446_800},
		{"user ceiling wins", 0, 3 * money.Dollar, 3 * money.Dollar},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, emu.Options{}) // rejects null maxPrice
			b, offers := e.backendOffers(t, func(c *Config) { c.MaxPriceMarginPercent = tt.marginPct })
			req := createReq(findOffer(t, offers, "runpod", "L4_24GB", 1, false), "pi-vm-price")
			req.MaxPricePerHour = tt.userMax
			if _, err := b.Create(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			mp, ok := lastCreate(t, e)["maxPrice"].(float64)
			if got, err := money.FromFloat(mp); !ok || err != nil || got != tt.want {
				t.Fatalf("maxPrice = %#v, want %s", lastCreate(t, e)["maxPrice"], tt.want)
			}
		})
	}
}

// TestCreateCapacityErrors covers what re-resolving the offer at create finds; nothing is created.
func TestCreateCapacityErrors(t *testing.T) {
	tests := []struct {
		name  string
		setup func(e *env)
		text  string
	}{
		{"sold out between offer and create (Unavailable)", func(e *env) { _ = e.emu.SetCapacity("L40S_48GB", 0) }, ""},
		{"offer vanished", func(e *env) { _ = e.emu.SetCatalog(emu.DefaultCatalog()[:2]) }, ""},
		// Quoted at 0.86 + 120 GB * 0.00014 = 0.8768, plus 10% is 0.96448, rounded up to 0.9645; now
		// 0.86 * 1.2 + 0.0168 = 1.0488.
		{"price rose above the quote plus the margin", func(e *env) {
			cat := emu.DefaultCatalog()
			for i := range cat {
				if cat[i].GPUType == "L40S_48GB" && cat[i].Provider == "runpod" {
					cat[i].Price *= 1.2
				}
			}
			_ = e.emu.SetCatalog(cat)
		}, "offer runpod.L40S_48GB.PCIe.1x now costs $1.0488/h, above the maximum $0.9645/h"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, emu.Options{})
			b, offers := e.backendOffers(t, nil)
			o := findOffer(t, offers, "runpod", "L40S_48GB", 1, false)
			tt.setup(e)
			_, err := b.Create(context.Background(), createReq(o, "pi-vm-cap"))
			backendtest.WantError(t, err, cloudprovider.ErrCapacity, tt.text)
			if e.emu.CreateCount() != 0 || e.Requests("POST /api/v1/pods") != 0 {
				t.Fatal("no pod may be created")
			}
		})
	}
}

// TestCreatePrefersItemWithinCeiling: of two items of one shape and place, the one within the
// user's ceiling is created even when the other has the offer's cloudId.
func TestCreatePrefersItemWithinCeiling(t *testing.T) {
	l4 := func(id string, price float64) emu.Item {
		return emu.Item{CloudID: id, GPUType: "L4_24GB", Socket: "PCIe", Provider: "runpod", DataCenter: "DC", GPUCount: 1, Security: "secure_cloud", Price: price, Capacity: -1}
	}
	e := newEnv(t, emu.Options{Catalog: []emu.Item{l4("a", 0.4)}})
	b := e.backend(t, nil)
	offers, err := b.Offers(context.Background())
	if err != nil || len(offers) != 1 {
		t.Fatalf("offers = %+v %v", offers, err)
	}
	_ = e.emu.SetCatalog([]emu.Item{l4("a", 0.6), l4("b", 0.45)})
	req := createReq(offers[0], "pi-vm-ceiling")
	req.MaxPricePerHour = money.MustFromFloat(0.5)
	if _, err := b.Create(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if body := lastCreate(t, e); body["cloudId"] != "b" || body["maxPrice"] != 0.5 {
		t.Fatalf("create body = %v", body)
	}
}

func TestCreateInstallsSSHKeysOnce(t *testing.T) {
	e := newEnv(t, emu.Options{})
	b := e.backend(t, nil)
	ctx := context.Background()
	offers, _ := b.Offers(ctx)
	o := findOffer(t, offers, "runpod", "L4_24GB", 1, false)
	for _, name := range []string{"pi-vm-a", "pi-vm-b"} {
		req := createReq(o, name)
		req.SSHPublicKeys = append(req.SSHPublicKeys, "ssh-rsa AAAAB3NzaSecond other@host")
		if _, err := b.Create(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := b.Client().SSHKeys(ctx)
	if err != nil || len(keys) != 2 {
		t.Fatalf("keys = %+v %v", keys, err)
	}
	if got := e.Requests("POST /api/v1/ssh_keys"); got != 2 {
		t.Fatalf("%d key uploads, want 2 (each key once)", got)
	}
	if lastCreate(t, e)["sshKeyId"] != keys[0].ID {
		t.Fatal("the first key should be named in the create body")
	}
	for _, k := range keys {
		if k.Name != sshkeys.Name(k.PublicKey) {
			t.Errorf("key %q registered as %q, want the shared name %q", k.PublicKey, k.Name, sshkeys.Name(k.PublicKey))
		}
	}
}

func TestOffersEmptyAnswerRetried(t *testing.T) {
	e := newEnv(t, emu.Options{})
	_ = e.emu.SetCloudFaults(emu.CloudFaults{EmptyAvailability: 2})
	offers, err := e.backend(t, nil).Offers(context.Background())
	if err != nil || len(offers) == 0 {
		t.Fatalf("offers = %d, %v: an empty answer must be asked again", len(offers), err)
	}
}

func TestCreateReResolveRetriesEmptyAnswer(t *testing.T) {
	e := newEnv(t, emu.Options{})
	b := e.backend(t, nil)
	offers, _ := b.Offers(context.Background())
	o := findOffer(t, offers, "runpod", "L4_24GB", 1, false)
	_ = e.emu.SetCloudFaults(emu.CloudFaults{EmptyAvailability: 2})
	if _, err := b.Create(context.Background(), createReq(o, "pi-vm-empty")); err != nil {
		t.Fatalf("create after two empty answers: %v", err)
	}
}

func TestInstanceTypeRoundTrip(t *testing.T) {
	tests := []struct {
		provider, gpu, socket string
		count                 int
	}{
		{"runpod", "H100_80GB", "SXM5", 1},
		{"dc_kudu", "RTX_PRO_6000B_96GB", "PCIe", 8},
		{"datacrunch", "GH200.96GB", "SXM5", 2},
	}
	for _, tt := range tests {
		s := instanceType(tt.provider, tt.gpu, tt.socket, tt.count)
		got, ok := parseInstanceType(s)
		if !ok || got != (shape{tt.provider, tt.gpu, tt.socket, tt.count}) {
			t.Errorf("%s: parsed %+v %v", s, got, ok)
		}
	}
	for _, bad := range []string{"", "a.b.c", "a.b.c.x", "a.b.c.0x", "a.b.c.2"} {
		if _, ok := parseInstanceType(bad); ok {
			t.Errorf("%q must not parse", bad)
		}
	}
}

// TestCreateFromOfferID creates from an offer rebuilt from its ID on another machine (no Details),
// after the cloudId changed; the instance found by name then matches the offer's instance type.
func TestCreateFromOfferID(t *testing.T) {
	e := newEnv(t, emu.Options{})
	ctx := context.Background()
	b, offers := e.backendOffers(t, nil)
	full := findOffer(t, offers, "upcloud", "L40S_48GB", 1, false)
	rebuilt := cloudprovider.Offer{Cloud: CloudName, Pool: "prime-intellect-vm-pool", Region: full.Region, InstanceType: full.InstanceType,
		GPUType: full.GPUType, GPUCount: full.GPUCount, PricePerHour: full.PricePerHour, Available: -1}
	_ = e.emu.FlipCloudIDs()
	if _, err := b.Create(ctx, createReq(rebuilt, "pi-vm-fromid")); err != nil {
		t.Fatal(err)
	}
	body := lastCreate(t, e)
	if body["cloudId"] != "GPU-8xCPU-64GB-1xL40S#r1" || body["provider.type"] != "upcloud" || body["dataCenterId"] != "fi-hel2" {
		t.Fatalf("create body = %v", body)
	}
	list, err := b.List(ctx, "pi-vm-fromid")
	if err != nil || len(list) != 1 || list[0].InstanceType != full.InstanceType || list[0].GPUType != "l40s" {
		t.Fatalf("list = %+v %v", list, err)
	}
	// A rebuilt spot offer must not take on-demand capacity.
	spot := rebuilt
	spot.Spot = true
	_, err = b.Create(ctx, createReq(spot, "pi-vm-spot"))
	wantKind(t, err, cloudprovider.ErrCapacity)
}

// TestNullLocationOffers: many real offers carry null dataCenter (runpod also null country and
// region). Such an offer is placed by its region or country ("global" when it names none), and a
// create from it, also from its ID alone after the cloudId changed, sends no data center and lands on
// that very item rather than on one of the same cloudId elsewhere.
func TestNullLocationOffers(t *testing.T) {
	e := newEnv(t, emu.Options{})
	ctx := context.Background()
	b, offers := e.backendOffers(t, nil)
	var global, cz, kansas cloudprovider.Offer
	for _, o := range offers {
		switch {
		case o.InstanceType == "runpod.A100_80GB.PCIe.1x" && o.Region == "global":
			global = o
		case o.InstanceType == "tensordock.A100_80GB.SXM4.1x" && o.Region == "CZ":
			cz = o
		case o.InstanceType == "runpod.A100_80GB.PCIe.1x" && o.Region == "US-KS-2":
			kansas = o
		}
	}
	if global.Details[DetailDataCenter] != "" || global.Details[DetailCountry] != "" || global.PricePerHour != 1_673_600 { // 1.6568 + 120 GB * 0.00014
		t.Fatalf("offer without any location = %+v", global)
	}
	if cz.Details[DetailDataCenter] != "" || cz.Details[DetailCountry] != "CZ" || cz.Spot {
		t.Fatalf("offer with only a country = %+v", cz)
	}
	if kansas.InstanceType == "" {
		t.Fatal("the same runpod shape with a data center must stay a separate offer")
	}
	inst, err := b.Create(ctx, createReq(global, "pi-vm-global"))
	if err != nil {
		t.Fatal(err)
	}
	body := lastCreate(t, e)
	if _, ok := body["dataCenterId"]; ok || body["country"] != nil || body["cloudId"] != "NVIDIA A100 80GB PCIe" {
		t.Fatalf("create body = %v", body)
	}
	if inst.Region != "global" || inst.PricePerHour != global.PricePerHour {
		t.Fatalf("instance = %+v", inst)
	}
	// Rebuilt from its ID (no Details) after the cloudIds changed.
	_ = e.emu.FlipCloudIDs()
	rebuilt := cloudprovider.Offer{Cloud: CloudName, Region: cz.Region, InstanceType: cz.InstanceType, GPUType: cz.GPUType, GPUCount: cz.GPUCount, PricePerHour: cz.PricePerHour, Available: -1}
	if _, err := b.Create(ctx, createReq(rebuilt, "pi-vm-cz")); err != nil {
		t.Fatal(err)
	}
	body = lastCreate(t, e)
	if body["country"] != "CZ" || body["cloudId"] != "7de483e8-55e2-41de-a8d7-75916f4f9ca0_1#r1" || body["provider.type"] != "tensordock" {
		t.Fatalf("create body = %v", body)
	}
	list, err := b.List(ctx, "pi-vm-")
	if err != nil || len(list) != 2 {
		t.Fatalf("list = %+v %v", list, err)
	}
}

// TestSoldOutListedNotEligible: a plan lists Prime's sold-out items (stockStatus "Unavailable") as not
// eligible, with their price, like every cloud that can tell; only the item in stock can win.
func TestSoldOutListedNotEligible(t *testing.T) {
	e := newEnv(t, emu.Options{})
	cp := controlplane.New(backendtest.Inventory(t), []cloudprovider.InstanceManagerBackend{e.backend(t, nil)}, controlplane.Options{})
	res, err := cp.Offers(context.Background(), controlplane.OfferRequest{GPUType: "b200", GPUCount: 1, Kind: "vm"}, true)
	if err != nil {
		t.Fatal(err)
	}
	var soldOut bool
	for _, o := range res.Ineligible {
		if o.Details[DetailProvider] == "runpod" {
			soldOut = true
			if o.Available != 0 || o.PricePerHour != money.MustFromFloat(6.0068) /* 5.99 + 120 GB disk */ || !strings.Contains(o.Ineligible, "sold out") {
				t.Errorf("sold-out offer listed as %s, %q", o.PricePerHour, o.Ineligible)
			}
		}
	}
	if !soldOut {
		t.Errorf("the sold-out runpod B200 is not listed as not eligible: %+v", res.Ineligible)
	}
	for _, o := range res.Offers {
		if o.Details[DetailProvider] == "runpod" {
			t.Errorf("sold-out offer ranked: %+v", o)
		}
	}
	if best, ok := res.Cheapest(); !ok || best.Details[DetailProvider] != "datacrunch" {
		t.Errorf("cheapest %+v, want the datacrunch B200 in stock", best)
	}
}
