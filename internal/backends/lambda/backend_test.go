package lambda

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/sshkeys"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/lambda"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// One offer per instance type and region with capacity; the price is the whole machine's, in dollars.
// GPUs the inventory does not map (the emulator's default catalog has three) are offered with GPUType ""
// and Lambda's name for them as CloudGPU, which every offer carries.
func TestOffersFromInstanceTypes(t *testing.T) {
	f := startEmulator(t, emu.Options{})
	b := f.backend(t, nil)
	offers := backendtest.Offers(t, b)
	tests := []struct {
		region, typ string
		present     bool
		gpu         string
		cloudGPU    string
		count       int
		price       money.USD
	}{
		{"us-midwest-1", "gpu_1x_h100_pcie", true, "h100", "H100 (80 GB PCIe)", 1, money.MustFromFloat(2.49)},
		{"us-west-1", "gpu_1x_h100_pcie", true, "h100", "H100 (80 GB PCIe)", 1, money.MustFromFloat(2.49)},
		{"us-east-1", "gpu_1x_h100_sxm5", true, "h100", "H100 (80 GB SXM5)", 1, money.MustFromFloat(3.29)},
		{"us-south-1", "gpu_1x_h100_sxm5", true, "h100", "H100 (80 GB SXM5)", 1, money.MustFromFloat(3.29)},
		{"us-south-1", "gpu_8x_h100_sxm5", true, "h100", "H100 (80 GB SXM5)", 8, money.MustFromFloat(23.92)},
		{"us-east-1", "gpu_8x_a100_80gb_sxm4", true, "a100-80gb", "A100 (80 GB SXM4)", 8, money.MustFromFloat(14.32)},
		{"us-midwest-1", "gpu_8x_a100_80gb_sxm4", true, "a100-80gb", "A100 (80 GB SXM4)", 8, money.MustFromFloat(14.32)},
		{"us-south-1", "gpu_1x_b200_sxm6", true, "b200", "B200 (180 GB SXM6)", 1, money.MustFromFloat(6.99)},
		{"us-east-1", "gpu_8x_h100_sxm5", false, "", "", 0, 0},  // no capacity in that region
		{"us-south-1", "gpu_8x_b200_sxm6", false, "", "", 0, 0}, // sold out everywhere
		// Not in the inventory: offered unmapped, for the control plane to report.
		{"us-east-1", "gpu_1x_a100_sxm4", true, "", "A100 (40 GB SXM4)", 1, money.MustFromFloat(1.29)}, // 40 GB: not a100-80gb
		{"europe-central-1", "gpu_1x_a100_sxm4", true, "", "A100 (40 GB SXM4)", 1, money.MustFromFloat(1.29)},
		{"us-east-1", "gpu_1x_gh200", true, "", "GH200 (96 GB)", 1, money.MustFromFloat(1.49)},
		{"us-west-1", "gpu_1x_a10", true, "", "A10 (24 GB PCIe)", 1, money.MustFromFloat(0.75)},
	}
	for _, tc := range tests {
		o, ok := backendtest.FindOffer(offers, tc.region, tc.typ, false)
		if ok != tc.present {
			t.Errorf("%s %s: present=%v, want %v", tc.region, tc.typ, ok, tc.present)
			continue
		}
		if !ok {
			continue
		}
		if o.GPUType != tc.gpu || o.CloudGPU != tc.cloudGPU || o.GPUCount != tc.count || o.PricePerHour != tc.price || o.Cloud != "lambda" ||
			o.Available != -1 || o.Spot || o.ID != "" || o.Pool != "" {
			t.Errorf("%s %s: %+v", tc.region, tc.typ, o)
		}
		if o.Details[DetailRegionName] != tc.region || o.Details[DetailInstanceTypeName] != tc.typ ||
			o.Details[DetailPriceCentsPerHour] != fmt.Sprint(int64(tc.price/money.Cent)) {
			t.Errorf("details: %+v", o.Details)
		}
	}
	if len(offers) != 12 {
		t.Errorf("%d offers, want 12: %+v", len(offers), offers)
	}
	if !slices.IsSortedFunc(offers, func(a, c cloudprovider.Offer) int {
		return strings.Compare(a.Region+"/"+a.InstanceType, c.Region+"/"+c.InstanceType)
	}) {
		t.Error("offers are not sorted by region and type")
	}
	if st, _ := f.srv.Stats(); st.Created != 0 {
		t.Error("Offers launched something")
	}
}

// Lambda's prices are whole US cents per hour; the conversion is exact to the cent.
func TestPriceCents(t *testing.T) {
	for cents, want := range map[int64]money.USD{1: 10_000, 75: 750_000, 249: 2_490_000, 329: 3_290_000, 1432: 14_320_000,
		2392: 23_920_000, 5352: 53_520_000, 100000: 1_000_000_000, 0: 0, -5: 0} {
		if got := usd(cents); got != want {
			t.Errorf("usd(%d) = %s, want %s", cents, got, want)
		}
	}
}

// A region appears in the offers while it has a free machine; when the last one is taken only that
// region's offer goes, and a create from the stale offer is a capacity error that launches nothing.
func TestCapacityPerRegion(t *testing.T) {
	catalog := []emu.CatalogEntry{{Name: "gpu_1x_h100_sxm5", Description: "1x H100 (80 GB SXM5)", GPUDescription: "H100 (80 GB SXM5)",
		PriceCentsPerHour: 329, VCPUs: 26, MemoryGiB: 225, StorageGiB: 2816, GPUs: 1,
		Capacity: map[string]int{"us-east-1": 1, "us-west-1": 2}}}
	f := startEmulator(t, emu.Options{Catalog: catalog})
	b := f.backend(t, nil)
	ctx := context.Background()
	offers, err := b.Offers(ctx)
	if err != nil || len(offers) != 2 {
		t.Fatalf("offers: %+v, %v", offers, err)
	}
	east, _ := backendtest.FindOffer(offers, "us-east-1", "gpu_1x_h100_sxm5", false)
	if _, err := b.Create(ctx, request(t, east, "first", testKey)); err != nil {
		t.Fatal(err)
	}
	offers, _ = b.Offers(ctx)
	if _, ok := backendtest.FindOffer(offers, "us-east-1", "gpu_1x_h100_sxm5", false); ok || len(offers) != 1 {
		t.Errorf("after the last machine in us-east-1 was taken: %+v", offers)
	}
	launches := f.srv.RequestCount("POST /instance-operations/launch")
	_, err = b.Create(ctx, request(t, east, "second", testKey))
	wantKind(t, err, cloudprovider.ErrCapacity)
	if n := f.srv.RequestCount("POST /instance-operations/launch"); n != launches {
		t.Errorf("a create into a full region spent a launch (Lambda allows one per 12 s)")
	}
	// The backend can be limited to some regions.
	only := f.backend(t, func(c *Config) { c.Regions = []string{"US-WEST-1"} })
	offers, _ = only.Offers(ctx)
	if len(offers) != 1 || offers[0].Region != "us-west-1" {
		t.Errorf("offers limited to us-west-1: %+v", offers)
	}
}

// The GPU is matched through the inventory's api_names for lambda: gpu_description first, then the
// description without its count (older API versions), then the type's name without "gpu_<n>x_".
func TestGPUTypeMatching(t *testing.T) {
	b := &Backend{inv: testInventory(t)}
	for _, tc := range []struct {
		t     InstanceType
		gpu   string
		count int
	}{
		{InstanceType{Name: "gpu_1x_h100_sxm5", GPUDescription: "H100 (80 GB SXM5)", Specs: InstanceTypeSpecs{GPUs: 1}}, "h100", 1},
		{InstanceType{Name: "gpu_8x_a100_80gb_sxm4", Description: "8x A100 (80 GB SXM4)"}, "a100-80gb", 8},
		{InstanceType{Name: "gpu_2x_h100_sxm5"}, "h100", 2},
		{InstanceType{Name: "gpu_4x_b200_sxm6", Description: "4x B200 (180 GB SXM6)"}, "b200", 4},
		{InstanceType{Name: "gpu_1x_h100_pcie", GPUDescription: "h100 (80 gb pcie)"}, "h100", 1}, // case-insensitive
		{InstanceType{Name: "gpu_1x_a100_sxm4", Description: "1x A100 (40 GB SXM4)", GPUDescription: "A100 (40 GB SXM4)"}, "", 1},
		{InstanceType{Name: "gpu_1x_a100", Description: "1x A100 (40 GB PCIe)"}, "", 1},
		{InstanceType{Name: "gpu_1x_gh200", GPUDescription: "GH200 (96 GB)"}, "", 1},
		// CPU types: the "4x" counts CPUs; never an offer of GPUs.
		{InstanceType{Name: "cpu_4x_general", Description: "4x CPU"}, "", 0},
		{InstanceType{Name: "cpu_4x_general", Description: "4x CPU General", GPUDescription: "N/A"}, "", 0},
		{InstanceType{Name: "general_4x", Description: "4x General", GPUDescription: "N/A"}, "", 0},
		{InstanceType{Name: "custom", Description: "big box"}, "", 0},
	} {
		if got := b.gpuTypeFor(tc.t); got != tc.gpu {
			t.Errorf("gpuTypeFor(%+v) = %q, want %q", tc.t, got, tc.gpu)
		}
		if got := gpuCount(tc.t); got != tc.count {
			t.Errorf("gpuCount(%+v) = %d, want %d", tc.t, got, tc.count)
		}
	}
}

// TestCloudGPU: the name an unmapped GPU is reported by is the one api_names.lambda would list.
func TestCloudGPU(t *testing.T) {
	for _, tc := range []struct {
		t    InstanceType
		want string
	}{
		{InstanceType{Name: "gpu_1x_gh200", Description: "1x GH200 (96 GB)", GPUDescription: "GH200 (96 GB)"}, "GH200 (96 GB)"},
		{InstanceType{Name: "gpu_1x_a10", Description: "1x A10 (24 GB PCIe)"}, "A10 (24 GB PCIe)"}, // older API: no gpu_description
		{InstanceType{Name: "gpu_2x_a6000"}, "a6000"},
		{InstanceType{Name: "custom", Description: "1x MI300X (192 GB)", Specs: InstanceTypeSpecs{GPUs: 1}}, "MI300X (192 GB)"},
		{InstanceType{Name: "cpu_4x_general", Description: "4x CPU"}, ""},
		{InstanceType{Name: "custom", Description: "big box"}, ""},
	} {
		if got := cloudGPU(tc.t); got != tc.want {
			t.Errorf("cloudGPU(%+v) = %q, want %q", tc.t, got, tc.want)
		}
	}
}

func cheapestH100(t *testing.T, b *Backend) cloudprovider.Offer {
	t.Helper()
	offers := backendtest.Offers(t, b)
	o, ok := backendtest.FindOffer(offers, "us-midwest-1", "gpu_1x_h100_pcie", false)
	if !ok {
		t.Fatal("no H100 PCIe offer in us-midwest-1")
	}
	return o
}

// Lambda allows at most 64 characters in a name: a longer one is refused before anything is launched.
func TestCreateNameTooLong(t *testing.T) {
	f := startEmulator(t, emu.Options{})
	b := f.backend(t, nil)
	offer := cheapestH100(t, b)
	req := request(t, offer, strings.Repeat("n", 45), testKey)
	if len(req.Name) != 65 {
		t.Fatalf("name %q is %d long", req.Name, len(req.Name))
	}
	_, err := b.Create(context.Background(), req)
	backendtest.WantError(t, err, cloudprovider.ErrInvalid, "at most 64")
	if n := f.srv.RequestCount("POST /instance-operations/launch"); n != 0 {
		t.Errorf("%d launches for a name that is too long", n)
	}
	// 64 characters are fine.
	req = request(t, offer, strings.Repeat("n", 44), testKey)
	if _, err := b.Create(context.Background(), req); err != nil {
		t.Fatalf("a 64-character name: %v", err)
	}
	if got := f.srv.Instances(); len(got) != 1 || got[0].Name != req.Name {
		t.Errorf("instances: %+v", got)
	}
}

// Lambda takes exactly one SSH key name per launch: the first key is registered and named, the others
// are installed by cloud-init user data. The key is registered once however many creates use it.
func TestCreateSSHKeys(t *testing.T) {
	f := startEmulator(t, emu.Options{})
	b := f.backend(t, nil)
	offer := cheapestH100(t, b)
	ctx := context.Background()
	in, err := b.Create(ctx, request(t, offer, "keys", testKey, otherKey, "  ", testKey))
	if err != nil {
		t.Fatal(err)
	}
	if in.Status != cloudprovider.StatusPending || in.CloudStatus != StatusBooting || in.SSH != nil {
		t.Errorf("a new instance: %+v", in)
	}
	got := f.srv.Instances()
	if len(got) != 1 || !slices.Equal(got[0].SSHKeyNames, []string{sshkeys.Name(testKey)}) {
		t.Fatalf("instances: %+v", got)
	}
	ud := got[0].UserData
	if !strings.HasPrefix(ud, "#cloud-config\nssh_authorized_keys:\n") || !strings.Contains(ud, `- "`+otherKey+`"`) || strings.Contains(ud, testKey) {
		t.Errorf("user data:\n%s", ud)
	}
	// One key only: no user data; the registered key is reused.
	again, err := b.Create(ctx, request(t, offer, "again", "no-from=\"x\" "+testKey))
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range f.srv.Instances() {
		if in.ID == again.ID && (in.UserData != "" || !slices.Equal(in.SSHKeyNames, []string{sshkeys.Name(testKey)})) {
			t.Errorf("instance: %+v", in)
		}
	}
	if keys := f.srv.SSHKeyNames(); len(keys) != 1 {
		t.Errorf("account keys %v, want one", keys)
	}
	// A line that holds no key is refused before anything is launched.
	_, err = b.Create(ctx, request(t, offer, "bad", "not a key"))
	wantKind(t, err, cloudprovider.ErrInvalid)
}

// A create without keys launches with a key pair Lambda generated and hydra threw away: Lambda requires
// one key, and nobody can log in with this one.
func TestCreateWithoutKeys(t *testing.T) {
	f := startEmulator(t, emu.Options{})
	b := f.backend(t, nil)
	offer := cheapestH100(t, b)
	for _, name := range []string{"nokey", "nokey2"} {
		if _, err := b.Create(context.Background(), request(t, offer, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, in := range f.srv.Instances() {
		if !slices.Equal(in.SSHKeyNames, []string{NoLoginKeyName}) {
			t.Errorf("instance %s has keys %v", in.Name, in.SSHKeyNames)
		}
	}
	if keys := f.srv.SSHKeyNames(); !slices.Equal(keys, []string{NoLoginKeyName}) {
		t.Errorf("account keys %v", keys)
	}
}

// An instance is running, with its SSH endpoint (ip, 22, ubuntu), once Lambda says active; its ip may
// show earlier, while it is still booting.
func TestStatusAndSSHEndpoint(t *testing.T) {
	f := startEmulator(t, emu.Options{})
	b := f.backend(t, nil)
	ctx := context.Background()
	in, err := b.Create(ctx, request(t, cheapestH100(t, b), "ssh", testKey))
	if err != nil {
		t.Fatal(err)
	}
	if in.GPUType != "h100" || in.GPUCount != 1 || in.PricePerHour != money.MustFromFloat(2.49) || in.Region != "us-midwest-1" || in.InstanceType != "gpu_1x_h100_pcie" {
		t.Errorf("created: %+v", in)
	}
	f.clock.Advance(bootTime / 2)
	got, err := b.Get(ctx, in.ID)
	if err != nil || got.Status != cloudprovider.StatusPending || got.SSH != nil || got.CloudStatus != StatusBooting {
		t.Errorf("half-way through booting: %+v, %v", got, err)
	}
	f.clock.Advance(bootTime / 2)
	got, err = b.Get(ctx, in.ID)
	if err != nil || got.Status != cloudprovider.StatusRunning || got.SSH == nil {
		t.Fatalf("booted: %+v, %v", got, err)
	}
	if got.SSH.Port != 22 || got.SSH.User != "ubuntu" || !strings.HasPrefix(got.SSH.Host, "203.0.113.") {
		t.Errorf("SSH endpoint %+v", got.SSH)
	}
	// Lambda keeps no labels: the ownership record is the name's, which the pool manager reads.
	if got.Owner != (cloudprovider.Ownership{}) || cloudprovider.WithOwner(pool(t), got).Owner.Resource != "ssh" {
		t.Errorf("owner %+v", got.Owner)
	}
}

// Delete terminates; deleting again while Lambda still reports the instance terminating, after it is
// terminated, and once Lambda has forgotten it, all succeed. List leaves terminating instances out.
func TestDelete(t *testing.T) {
	f := startEmulator(t, emu.Options{TerminateDuration: 10 * time.Second, TerminatedRetention: time.Minute})
	b := f.backend(t, nil)
	ctx := context.Background()
	in, err := b.Create(ctx, request(t, cheapestH100(t, b), "gone", testKey))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
	got, err := b.Get(ctx, in.ID)
	if err != nil || got.Status != cloudprovider.StatusTerminated || got.CloudStatus != StatusTerminating {
		t.Errorf("after Delete: %+v, %v", got, err)
	}
	if list, _ := b.List(ctx, pool(t).Prefix); len(list) != 0 {
		t.Errorf("List holds a terminating instance: %+v", list)
	}
	if err := b.Delete(ctx, in.ID); err != nil {
		t.Errorf("Delete of a terminating instance: %v", err)
	}
	f.clock.Advance(20 * time.Second)
	if err := b.Delete(ctx, in.ID); err != nil {
		t.Errorf("Delete of a terminated instance: %v", err)
	}
	f.clock.Advance(2 * time.Minute)
	if _, err := b.Get(ctx, in.ID); !cloudprovider.IsNotFound(err) {
		t.Errorf("Get of a forgotten instance: %v", err)
	}
	if err := b.Delete(ctx, in.ID); err != nil {
		t.Errorf("Delete of a forgotten instance: %v", err)
	}
	if err := b.Delete(ctx, "0123456789abcdef0123456789abcdef"); err != nil {
		t.Errorf("Delete of an unknown id: %v", err)
	}
	if n := f.srv.RequestCount("POST /instance-operations/terminate"); n != 5 {
		t.Errorf("%d terminate calls, want 5", n)
	}
}

// A wrong API key is an auth error and nothing is retried.
func TestWrongAPIKey(t *testing.T) {
	f := startEmulator(t, emu.Options{})
	b := f.backend(t, func(c *Config) { c.APIKey = "wrong" })
	_, err := b.Offers(context.Background())
	backendtest.WantError(t, err, cloudprovider.ErrAuth, "global/invalid-api-key")
	if n := f.srv.RequestCount("GET /instance-types"); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
	if _, err := New(Config{}, testInventory(t), nil); err == nil {
		t.Error("a backend without an API key")
	}
}

// A launch refused because something it names does not exist (Lambda's object-does-not-exist on a
// launch) is an invalid request, not a missing instance.
func TestLaunchResourceNotFoundIsInvalid(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/instances", func(w http.ResponseWriter, _ *http.Request) {
		emukit.WriteJSON(w, 200, map[string]any{"data": []any{}}, nil)
	})
	mux.HandleFunc("GET /api/v1/instance-types", func(w http.ResponseWriter, _ *http.Request) {
		emukit.WriteJSON(w, 200, map[string]any{"data": map[string]any{"gpu_1x_h100_pcie": map[string]any{
			"instance_type":                   map[string]any{"name": "gpu_1x_h100_pcie", "price_cents_per_hour": 249},
			"regions_with_capacity_available": []any{map[string]any{"name": "us-west-1"}}}}}, nil)
	})
	mux.HandleFunc("GET /api/v1/ssh-keys", func(w http.ResponseWriter, _ *http.Request) {
		emukit.WriteJSON(w, 200, map[string]any{"data": []any{map[string]any{"id": "k", "name": "mine", "public_key": testKey}}}, nil)
	})
	mux.HandleFunc("POST /api/v1/instance-operations/launch", func(w http.ResponseWriter, _ *http.Request) {
		emukit.WriteJSON(w, 400, map[string]any{"error": map[string]any{"code": CodeObjectDoesNotExist,
			"message": "SSH key mine does not exist", "suggestion": "Add it"}}, nil)
	})
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	b, err := New(Config{APIKey: "k", BaseURL: hs.URL + "/api/v1", Tuning: fastTuning, LaunchInterval: -1}, testInventory(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	offer := cloudprovider.Offer{Cloud: CloudName, Region: "us-west-1", InstanceType: "gpu_1x_h100_pcie", GPUType: "h100", GPUCount: 1, PricePerHour: money.MustFromFloat(2.49)}
	_, err = b.Create(context.Background(), request(t, offer, "x", testKey))
	backendtest.WantError(t, err, cloudprovider.ErrInvalid, "SSH key mine does not exist")
}

// Launches are spaced by LaunchInterval in one process (Lambda allows one every 12 seconds), on the real clock.
func TestLaunchInterval(t *testing.T) {
	f := startEmulator(t, emu.Options{})
	b := f.backend(t, func(c *Config) { c.LaunchInterval = 300 * time.Millisecond })
	offer := cheapestH100(t, b)
	start := time.Now()
	for _, name := range []string{"one", "two"} {
		if _, err := b.Create(context.Background(), request(t, offer, name, testKey)); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Errorf("two launches within %v", d)
	}
	// A create whose context ends while it waits for its turn launches nothing.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := b.Create(ctx, request(t, offer, "three", testKey))
	if err == nil {
		t.Fatal("a create launched while waiting for its turn")
	}
	if st, _ := f.srv.Stats(); st.Created != 2 {
		t.Errorf("created %d", st.Created)
	}
}

// Spot offers do not exist at Lambda; a create from one is refused.
func TestCreateRefusesSpot(t *testing.T) {
	f := startEmulator(t, emu.Options{})
	b := f.backend(t, nil)
	offer := cheapestH100(t, b)
	offer.Spot = true
	_, err := b.Create(context.Background(), request(t, offer, "spot", testKey))
	wantKind(t, err, cloudprovider.ErrInvalid)
}
