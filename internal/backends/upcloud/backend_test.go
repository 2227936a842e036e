package upcloud

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/upcloud"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

const testKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHydraBackendKey hydra@test"

func newTestBackend(t *testing.T, base string, mod func(*Config)) *Backend {
	t.Helper()
	cfg := Config{
		Username:      testUser,
		Password:      testPass,
		BaseURL:       base,
		Tuning:        backendtest.Retrying(4, time.Millisecond, 20*time.Millisecond),
		PollInterval:  2 * time.Millisecond,
		DeleteTimeout: 10 * time.Second,
	}
	if mod != nil {
		mod(&cfg)
	}
	b, err := New(cfg, backendtest.Inventory(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func findOffer(offers []cloudprovider.Offer, zone, plan string) *cloudprovider.Offer {
	for i := range offers {
		if offers[i].Region == zone && offers[i].InstanceType == plan {
			return &offers[i]
		}
	}
	return nil
}

// New, and NewClient for the credentials, accept exactly one of Username with Password, or Token;
// New also refuses negative settings and fills in the defaults. A refusal never quotes a credential.
func TestNewValidatesConfig(t *testing.T) {
	inv := backendtest.Inventory(t)
	cases := []struct {
		name     string
		cfg      Config
		clientOK bool // NewClient accepts the credentials
		ok       bool
	}{
		{"basic", Config{Username: "u", Password: "p"}, true, true},
		{"token", Config{Token: "t"}, true, true},
		{"both", Config{Username: "u", Password: "p", Token: "t"}, false, false},
		{"none", Config{}, false, false},
		{"user without password", Config{Username: "u"}, false, false},
		{"negative rate", Config{Token: "t", EURToUSD: -1}, true, false},
		{"negative disk", Config{Token: "t", DiskSizeGB: -5}, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, cerr := NewClient(ClientConfig{Username: tc.cfg.Username, Password: tc.cfg.Password, Token: tc.cfg.Token})
			if (cerr == nil) != tc.clientOK {
				t.Fatalf("NewClient: err = %v", cerr)
			}
			b, err := New(tc.cfg, inv, nil)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v", err)
			}
			for _, err := range []error{cerr, err} {
				if err != nil && (strings.Contains(err.Error(), "\"p\"") || strings.Contains(err.Error(), "\"t\"")) {
					t.Errorf("error leaks a credential: %v", err)
				}
			}
			if err == nil && (b.cfg.EURToUSD != DefaultEURToUSD || b.cfg.DiskSizeGB != DefaultDiskSizeGB || b.Cloud() != "upcloud") {
				t.Errorf("defaults not applied: %+v", b.cfg)
			}
		})
	}
}

func TestOffers(t *testing.T) {
	_, base := startEmulator(t, emu.Options{})
	cases := []struct {
		name  string
		mod   func(*Config)
		check func(t *testing.T, offers []cloudprovider.Offer)
	}{
		{"on-demand GPU plans mapped and priced", nil, func(t *testing.T, offers []cloudprovider.Offer) {
			o := findOffer(offers, "fi-hel2", "GPU-8xCPU-64GB-1xL40S")
			if o == nil {
				t.Fatal("L40S offer missing")
			}
			if o.GPUType != "l40s" || o.GPUCount != 1 || o.Spot || o.Cloud != "upcloud" || o.ID != "" || o.Pool != "" {
				t.Errorf("offer %+v", o)
			}
			// 111.1607 euro cents * 1.08 = 120.053556 US cents, rounded up once to the cent: a converted
			// price shows no digits the conversion invented and never less than the exact product.
			if want := money.USD(1_210_000); o.PricePerHour != want {
				t.Errorf("price %s, want %s (cents -> EUR -> USD)", o.PricePerHour, want)
			}
			if o.Available != 6 || o.Ineligible != "" {
				t.Errorf("availability %d %q", o.Available, o.Ineligible)
			}
			if o.Details["plan"] != o.InstanceType || o.Details["zone"] != "fi-hel2" || o.Details["gpu_model"] != "NVIDIA L40S" {
				t.Errorf("details %v", o.Details)
			}
			if h := findOffer(offers, "fi-hel2", "GPU-96xCPU-1920GB-8xH100"); h == nil || h.GPUType != "h100" || h.GPUCount != 8 {
				t.Errorf("8x H100 offer %+v", h)
			}
			if l4 := findOffer(offers, "de-fra1", "GPU-8xCPU-64GB-1xL4"); l4 == nil || l4.GPUType != "l4" || l4.Available != 2 {
				t.Errorf("L4 in de-fra1 %+v", l4)
			}
			for _, o := range offers {
				if o.Spot || strings.HasPrefix(o.InstanceType, "GPU-SPOT-") {
					t.Errorf("spot offer %s without AllowSpotPlans", o.InstanceType)
				}
				if !strings.HasPrefix(o.InstanceType, "GPU-") {
					t.Errorf("non-GPU plan offered: %s", o.InstanceType)
				}
				if o.Region == "nl-ams1" {
					t.Errorf("offer in a zone without a price for it: %+v", o)
				}
			}
		}},
		{"out of stock is ineligible", nil, func(t *testing.T, offers []cloudprovider.Offer) {
			o := findOffer(offers, "fi-hel2", "GPU-48xCPU-960GB-4xH100")
			if o == nil || o.Available != 0 || !strings.Contains(o.Ineligible, "no stock") {
				t.Errorf("offer %+v", o)
			}
			if o := findOffer(offers, "de-fra1", "GPU-8xCPU-64GB-1xL40S"); o == nil || o.Available != 0 || o.Ineligible == "" {
				t.Errorf("offer %+v", o)
			}
		}},
		{"spot plans when allowed", func(c *Config) { c.AllowSpotPlans = true }, func(t *testing.T, offers []cloudprovider.Offer) {
			o := findOffer(offers, "fi-hel2", "GPU-SPOT-8xCPU-64GB-1xL4")
			if o == nil || !o.Spot || o.GPUType != "l4" || o.PricePerHour != 620_000 { // 57 cents * 1.08 = 61.56 cents, up to 62
				t.Errorf("spot offer %+v", o)
			}
		}},
		{"custom exchange rate", func(c *Config) { c.EURToUSD = 1.25 }, func(t *testing.T, offers []cloudprovider.Offer) {
			o := findOffer(offers, "fi-hel2", "GPU-12xCPU-240GB-1xH100")
			// 252.9761 cents * 1.25 = 3.16220125 USD
			if o == nil || o.PricePerHour != 3_170_000 || o.Details["eur_to_usd"] != "1.25" {
				t.Errorf("offer %+v", o)
			}
		}},
		// 111.1607 cents * 1.080026 = 120.0564461782 US cents, rounded up once to the cent: $1.21, never
		// below the exact product and with no digits the conversion invented.
		{"conversion rounded up once to the cent", func(c *Config) { c.EURToUSD = 1.080026 }, func(t *testing.T, offers []cloudprovider.Offer) {
			o := findOffer(offers, "fi-hel2", "GPU-8xCPU-64GB-1xL40S")
			if o == nil || o.PricePerHour != 1_210_000 || o.PricePerHour.String() != "1.21" {
				t.Errorf("offer %+v", o)
			}
		}},
		{"zone filter", func(c *Config) { c.Zones = []string{"de-fra1"} }, func(t *testing.T, offers []cloudprovider.Offer) {
			if len(offers) == 0 {
				t.Fatal("no offers")
			}
			for _, o := range offers {
				if o.Region != "de-fra1" {
					t.Errorf("offer outside the zone filter: %+v", o)
				}
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newTestBackend(t, base, tc.mod)
			offers := backendtest.Offers(t, b)
			tc.check(t, offers)
		})
	}
}

// TestCentsToUSD: a euro price list is converted and rounded up once to the cent at every rate, 1.0
// included (it is not taken for a dollar list); a list that states US dollars is taken as written.
func TestCentsToUSD(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cents    FlexFloat
		currency string
		rate     float64
		want     money.USD
	}{
		{"euro cents at eur_to_usd 1.0 round up to the cent", 132.6889, "EUR", 1.0, money.MustFromFloat(1.33)},
		{"euro cents at the default rate", 132.6889, "EUR", DefaultEURToUSD, money.MustFromFloat(1.44)}, // 143.304012 cents
		{"whole euro cents at 1.0 stay", 250, "EUR", 1.0, money.MustFromFloat(2.5)},
		{"a list without a currency is in euros", 132.6889, "", 1.0, money.MustFromFloat(1.33)},
		{"a dollar list is taken as written", 132.6889, "USD", 1.08, money.MustFromFloat(1.326889)},
		{"a negative price is no offer", -5, "EUR", 1.08, 0},
		{"another currency is no offer", 100, "GBP", 1.08, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &Backend{cfg: Config{EURToUSD: tc.rate}}
			prices := &PriceList{}
			prices.Prices.Currency = tc.currency
			if got := b.centsToUSD(tc.cents, currency(prices)); got != tc.want {
				t.Errorf("centsToUSD(%v %q) at %v = %s, want %s", float64(tc.cents), tc.currency, tc.rate, got, tc.want)
			}
		})
	}
}

// Nothing vanishes: a plan whose GPU the inventory does not map is an offer with GPUType "" and
// CloudGPU set to UpCloud's gpu_model (the control plane reports it and never ranks it), a plan with
// more GPUs than max_count is offered ineligible, saying why, and a retired plan is left out.
func TestOffersReportUnmappedAndTooLarge(t *testing.T) {
	z := func(stock int) map[string]emu.ZoneOffer {
		return map[string]emu.ZoneOffer{"fi-hel2": {PriceCents: 100, Stock: stock}}
	}
	plans := []emu.Plan{
		{Name: "GPU-8xCPU-64GB-1xL40S", Cores: 8, MemoryMiB: 65536, GPUModel: "NVIDIA L40S", GPUAmount: 1, Zones: z(1)},
		{Name: "GPU-8xCPU-64GB-1xA10", Cores: 8, MemoryMiB: 65536, GPUModel: "NVIDIA A10", GPUAmount: 1, Zones: z(1)},
		{Name: "GPU-SPOT-8xCPU-64GB-1xA10", Cores: 8, MemoryMiB: 65536, GPUModel: "NVIDIA A10", GPUAmount: 1, Zones: z(1)},
		{Name: "GPU-12xCPU-240GB-1xH100", Cores: 12, MemoryMiB: 245760, GPUModel: "NVIDIA H100 80GB HBM3", GPUAmount: 1, Zones: z(1)},
		{Name: "GPU-12xCPU-240GB-1xH100S", Cores: 12, MemoryMiB: 245760, GPUModel: "NVIDIA  H100 ", GPUAmount: 1, Zones: z(1)},
		{Name: "GPU-96xCPU-1920GB-16xL4", Cores: 96, MemoryMiB: 1966080, GPUModel: "NVIDIA L4", GPUAmount: 16, Zones: z(1)},
		{Name: "GPU-12xCPU-128GB-1xL40S", Cores: 12, MemoryMiB: 131072, GPUModel: "NVIDIA L40S", GPUAmount: 1, Retired: true, Zones: z(1)},
	}
	_, base := startEmulator(t, emu.Options{Plans: plans})
	b := newTestBackend(t, base, nil)
	offers := backendtest.Offers(t, b)
	cases := []struct {
		plan, gpuType, cloudGPU string
		spot                    bool
		ineligible              string
	}{
		{"GPU-8xCPU-64GB-1xL40S", "l40s", "NVIDIA L40S", false, ""},
		{"GPU-8xCPU-64GB-1xA10", "", "NVIDIA A10", false, ""},
		{"GPU-SPOT-8xCPU-64GB-1xA10", "", "NVIDIA A10", true, ""},
		{"GPU-12xCPU-240GB-1xH100", "h100", "NVIDIA H100 80GB HBM3", false, ""},
		// Mapped after collapsing white space; CloudGPU keeps UpCloud's spelling.
		{"GPU-12xCPU-240GB-1xH100S", "h100", "NVIDIA  H100 ", false, ""},
		{"GPU-96xCPU-1920GB-16xL4", "l4", "NVIDIA L4", false, "at most 8 of l4 (max_count)"},
	}
	if len(offers) != len(cases) {
		t.Errorf("%d offers, want %d: %+v", len(offers), len(cases), offers)
	}
	for _, tc := range cases {
		o := findOffer(offers, "fi-hel2", tc.plan)
		if o == nil {
			t.Errorf("%s: no offer", tc.plan)
			continue
		}
		if o.GPUType != tc.gpuType || o.CloudGPU != tc.cloudGPU || o.Spot != tc.spot || o.GPUCount < 1 {
			t.Errorf("%s: type %q cloud GPU %q spot %v count %d, want %q %q %v", tc.plan, o.GPUType, o.CloudGPU, o.Spot, o.GPUCount, tc.gpuType, tc.cloudGPU, tc.spot)
		}
		if (tc.ineligible == "") != (o.Ineligible == "") || !strings.Contains(o.Ineligible, tc.ineligible) {
			t.Errorf("%s: ineligible %q, want %q", tc.plan, o.Ineligible, tc.ineligible)
		}
	}
	if o := findOffer(offers, "fi-hel2", "GPU-12xCPU-128GB-1xL40S"); o != nil {
		t.Errorf("a retired plan is offered: %+v", o)
	}

	// The control plane names the unmapped GPU once and ranks only the mapped offer.
	cp := controlplane.New(backendtest.Inventory(t), []cloudprovider.InstanceManagerBackend{b}, controlplane.Options{})
	res, err := cp.Offers(context.Background(), controlplane.OfferRequest{GPUType: "l40s", GPUCount: 1, Kind: "vm"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Unmapped[CloudName]; len(got) != 1 || got[0] != "NVIDIA A10" {
		t.Errorf("Unmapped = %v, want upcloud's NVIDIA A10", res.Unmapped)
	}
	for _, o := range res.Offers {
		if o.InstanceType != "GPU-8xCPU-64GB-1xL40S" {
			t.Errorf("ranked %s", o.InstanceType)
		}
	}
	if len(res.Offers) == 0 {
		t.Error("the mapped L40S offer is not ranked")
	}
}

// The default catalog serves the GPU names UpCloud writes, and the inventory maps each of them: every
// GPU plan is offered with a GPU type, and CloudGPU is the catalog's gpu_model.
func TestOffersDefaultCatalogMapped(t *testing.T) {
	_, base := startEmulator(t, emu.Options{})
	b := newTestBackend(t, base, func(c *Config) { c.AllowSpotPlans = true })
	models := map[string]string{}
	for _, p := range emu.DefaultPlans() {
		if p.GPUAmount > 0 {
			models[p.Name] = p.GPUModel
		}
	}
	seen := map[string]bool{}
	for _, o := range backendtest.Offers(t, b) {
		seen[o.InstanceType] = true
		if o.GPUType == "" || o.CloudGPU != models[o.InstanceType] {
			t.Errorf("%s in %s: type %q, cloud GPU %q (catalog %q)", o.InstanceType, o.Region, o.GPUType, o.CloudGPU, models[o.InstanceType])
		}
	}
	for plan := range models {
		if !seen[plan] {
			t.Errorf("GPU plan %s offered nowhere", plan)
		}
	}
	for _, want := range []struct{ model, gpuType string }{{emu.ModelH100, "h100"}, {emu.ModelB200, "b200"}, {emu.ModelL40S, "l40s"}, {emu.ModelL4, "l4"}} {
		if got := b.gpuType(want.model); got != want.gpuType {
			t.Errorf("%q maps to %q, want %q", want.model, got, want.gpuType)
		}
	}
}

func TestOffersAuthError(t *testing.T) {
	_, base := startEmulator(t, emu.Options{})
	b := newTestBackend(t, base, func(c *Config) { c.Password = "not-the-password" })
	_, err := b.Offers(context.Background())
	backendtest.WantAuthError(t, err, "not-the-password")
}

func offerFor(t *testing.T, b *Backend, zone, plan string) cloudprovider.Offer {
	t.Helper()
	offers := backendtest.Offers(t, b)
	o := findOffer(offers, zone, plan)
	if o == nil {
		t.Fatalf("no offer %s in %s", plan, zone)
	}
	return *o
}

func TestBackendLifecycle(t *testing.T) {
	clock := newFakeClock()
	srv, base := startEmulator(t, emu.Options{Options: simulation.Options{Now: clock.Now, BootDuration: 40 * time.Second}, StopDuration: 5 * time.Second})
	b := newTestBackend(t, base, nil)
	ctx := context.Background()
	offer := offerFor(t, b, "fi-hel2", "GPU-8xCPU-64GB-1xL40S")
	owner := cloudprovider.Ownership{Resource: "train1", Token: "abcdefgh"}
	name := "upcloud-vm-train1--abcdefgh"

	inst, err := b.Create(ctx, cloudprovider.CreateRequest{Name: name, Offer: offer, Owner: owner, SSHPublicKeys: []string{testKey, " "}})
	if err != nil {
		t.Fatal(err)
	}
	if inst.ID == "" || inst.Name != name || inst.Status != cloudprovider.StatusPending || inst.CloudStatus != "maintenance" ||
		inst.GPUType != "l40s" || inst.GPUCount != 1 || inst.Region != "fi-hel2" || inst.PricePerHour != offer.PricePerHour || inst.Owner != owner {
		t.Fatalf("created %+v", inst)
	}
	servers := srv.Servers()
	if len(servers) != 1 {
		t.Fatalf("emulator has %d servers", len(servers))
	}
	s := servers[0]
	if s.Title != name || s.Hostname != name || s.Labels[NameLabel] != name || s.Template != emu.GPUTemplateUUID ||
		s.StorageSizeGB != DefaultDiskSizeGB || !s.Metadata || len(s.SSHKeys) != 1 || s.SSHKeys[0] != testKey {
		t.Errorf("server at the cloud %+v", s)
	}
	wantLabels := map[string]string{NameLabel: name, cloudprovider.LabelManagedBy: "hydra", cloudprovider.LabelOwner: "abcdefgh",
		cloudprovider.LabelResource: "train1", cloudprovider.LabelConfirmed: "false"}
	if len(s.Labels) != len(wantLabels) {
		t.Errorf("labels at the cloud %v, want %v", s.Labels, wantLabels)
	}
	for k, v := range wantLabels {
		if s.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, s.Labels[k], v)
		}
	}

	got, err := b.Get(ctx, inst.ID)
	if err != nil || got.Status != cloudprovider.StatusPending || got.SSH == nil {
		// The address is known during maintenance, but the server is not started yet.
		t.Fatalf("get during boot %+v %v", got, err)
	}
	clock.Advance(41 * time.Second)
	got, err = b.Get(ctx, inst.ID)
	if err != nil || got.Status != cloudprovider.StatusRunning || got.CloudStatus != "started" {
		t.Fatalf("after boot %+v %v", got, err)
	}
	if got.SSH == nil || got.SSH.Host == "" || got.SSH.Port != 22 || got.SSH.User != "root" || got.CreatedAt.IsZero() {
		t.Errorf("ssh endpoint %+v created %v", got.SSH, got.CreatedAt)
	}
	if got.GPUType != "l40s" || got.GPUCount != 1 || got.Name != name || got.Owner != owner {
		t.Errorf("instance %+v", got)
	}

	list, err := b.List(ctx, "upcloud-vm-")
	if err != nil || len(list) != 1 || list[0].ID != inst.ID || list[0].Status != cloudprovider.StatusRunning {
		t.Fatalf("list %+v %v", list, err)
	}
	if list, err := b.List(ctx, "upcloud-vm-other"); err != nil || len(list) != 0 {
		t.Fatalf("list with another prefix %+v %v", list, err)
	}

	// Delete stops, waits for "stopped" and deletes with the storages; the clock moves while it waits.
	done := make(chan error, 1)
	go func() { done <- b.Delete(ctx, inst.ID) }()
	var derr error
wait:
	for i := 0; i < 100000; i++ {
		select {
		case derr = <-done:
			break wait
		case <-time.After(time.Millisecond):
			clock.Advance(time.Second)
		}
	}
	if derr != nil {
		t.Fatal(derr)
	}
	if _, err := b.Get(ctx, inst.ID); !cloudprovider.IsNotFound(err) {
		t.Fatalf("get after delete: %v", err)
	}
	if n := srv.StorageCount(); n != 0 {
		t.Errorf("%d disks left behind", n)
	}
	if err := b.Delete(ctx, inst.ID); err != nil {
		t.Errorf("delete of a gone server: %v, want success", err)
	}
	if list, _ := b.List(ctx, "upcloud-vm-"); len(list) != 0 {
		t.Errorf("list after delete %+v", list)
	}
	if n := srv.Stock("fi-hel2", "GPU-8xCPU-64GB-1xL40S"); n != 6 {
		t.Errorf("stock %d after delete, want 6", n)
	}
}

func TestBackendDeleteStates(t *testing.T) {
	ctx := context.Background()
	t.Run("during maintenance it waits for the boot", func(t *testing.T) {
		_, base := startEmulator(t, emu.Options{Options: simulation.Options{BootDuration: 30 * time.Millisecond}, StopDuration: 10 * time.Millisecond})
		b := newTestBackend(t, base, nil)
		inst, err := b.Create(ctx, cloudprovider.CreateRequest{Name: "upcloud-vm-m", Offer: offerFor(t, b, "fi-hel2", "GPU-8xCPU-64GB-1xL4"), SSHPublicKeys: []string{testKey}})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Delete(ctx, inst.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Get(ctx, inst.ID); !cloudprovider.IsNotFound(err) {
			t.Fatalf("get: %v", err)
		}
	})
	t.Run("an already stopped server is deleted at once", func(t *testing.T) {
		clock := newFakeClock()
		_, base := startEmulator(t, emu.Options{Options: simulation.Options{Now: clock.Now, BootDuration: time.Second}, StopDuration: time.Second})
		b := newTestBackend(t, base, nil)
		inst, err := b.Create(ctx, cloudprovider.CreateRequest{Name: "upcloud-vm-s", Offer: offerFor(t, b, "fi-hel2", "GPU-8xCPU-64GB-1xL4"), SSHPublicKeys: []string{testKey}})
		if err != nil {
			t.Fatal(err)
		}
		clock.Advance(2 * time.Second)
		if _, err := b.Client().StopServer(ctx, inst.ID, "soft", 0); err != nil {
			t.Fatal(err)
		}
		clock.Advance(2 * time.Second)
		got, err := b.Get(ctx, inst.ID)
		if err != nil || got.Status != cloudprovider.StatusError || !strings.Contains(got.Message, "stopped") {
			t.Fatalf("a server stopped outside hydra: %+v %v", got, err)
		}
		if err := b.Delete(ctx, inst.ID); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("the wait is bounded", func(t *testing.T) {
		clock := newFakeClock()
		_, base := startEmulator(t, emu.Options{Options: simulation.Options{Now: clock.Now, BootDuration: time.Second}, StopDuration: time.Hour})
		b := newTestBackend(t, base, func(c *Config) { c.DeleteTimeout = 50 * time.Millisecond })
		inst, err := b.Create(ctx, cloudprovider.CreateRequest{Name: "upcloud-vm-t", Offer: offerFor(t, b, "fi-hel2", "GPU-8xCPU-64GB-1xL4"), SSHPublicKeys: []string{testKey}})
		if err != nil {
			t.Fatal(err)
		}
		clock.Advance(2 * time.Second)
		err = b.Delete(ctx, inst.ID)
		if err == nil || cloudprovider.KindOf(err) != cloudprovider.ErrOther || !strings.Contains(err.Error(), "did not stop and delete in time") {
			t.Fatalf("err = %v", err)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := b.Delete(cctx, inst.ID); err == nil {
			t.Fatal("delete with a cancelled context succeeded")
		}
	})
}

func TestBackendCreateErrors(t *testing.T) {
	ctx := context.Background()
	t.Run("stock exhausted", func(t *testing.T) {
		srv, base := startEmulator(t, emu.Options{})
		b := newTestBackend(t, base, nil)
		offer := offerFor(t, b, "fi-hel2", "GPU-24xCPU-480GB-2xH100") // stock 1
		for i, name := range []string{"upcloud-vm-1", "upcloud-vm-2"} {
			_, err := b.Create(ctx, cloudprovider.CreateRequest{Name: name, Offer: offer, SSHPublicKeys: []string{testKey}})
			if i == 0 && err != nil {
				t.Fatal(err)
			}
			if i == 1 && !cloudprovider.IsCapacity(err) {
				t.Fatalf("second create: %v", err)
			}
		}
		if srv.CreateCount() != 1 {
			t.Errorf("created %d", srv.CreateCount())
		}
	})
	invalid := []struct {
		name string
		mod  func(*Config)
		req  func(o cloudprovider.Offer) cloudprovider.CreateRequest
	}{
		{"spot plan not enabled", nil, func(o cloudprovider.Offer) cloudprovider.CreateRequest {
			o.InstanceType = "GPU-SPOT-8xCPU-64GB-1xL4"
			return cloudprovider.CreateRequest{Name: "upcloud-vm-x", Offer: o, SSHPublicKeys: []string{testKey}}
		}},
		{"no ssh key", nil, func(o cloudprovider.Offer) cloudprovider.CreateRequest {
			return cloudprovider.CreateRequest{Name: "upcloud-vm-x", Offer: o}
		}},
		{"no name", nil, func(o cloudprovider.Offer) cloudprovider.CreateRequest {
			return cloudprovider.CreateRequest{Offer: o, SSHPublicKeys: []string{testKey}}
		}},
		{"unknown template", func(c *Config) { c.Template = "No Such Template" }, func(o cloudprovider.Offer) cloudprovider.CreateRequest {
			return cloudprovider.CreateRequest{Name: "upcloud-vm-x", Offer: o, SSHPublicKeys: []string{testKey}}
		}},
		{"invalid hostname", nil, func(o cloudprovider.Offer) cloudprovider.CreateRequest {
			return cloudprovider.CreateRequest{Name: "upcloud_vm_x", Offer: o, SSHPublicKeys: []string{testKey}}
		}},
	}
	for _, tc := range invalid {
		t.Run(tc.name, func(t *testing.T) {
			srv, base := startEmulator(t, emu.Options{})
			b := newTestBackend(t, base, tc.mod)
			_, err := b.Create(ctx, tc.req(offerFor(t, b, "fi-hel2", "GPU-8xCPU-64GB-1xL4")))
			if cloudprovider.KindOf(err) != cloudprovider.ErrInvalid {
				t.Fatalf("err = %v", err)
			}
			if srv.CreateCount() != 0 {
				t.Error("a server was created")
			}
		})
	}
}

func TestBackendSpotCreate(t *testing.T) {
	srv, base := startEmulator(t, emu.Options{})
	b := newTestBackend(t, base, func(c *Config) {
		c.AllowSpotPlans = true
		c.Template = "Ubuntu Server 24.04 LTS (Noble Numbat)"
		c.DiskSizeGB = 40
	})
	inst, err := b.Create(context.Background(), cloudprovider.CreateRequest{Name: "upcloud-vm-spot", Offer: offerFor(t, b, "fi-hel2", "GPU-SPOT-8xCPU-64GB-1xL4"), SSHPublicKeys: []string{testKey}})
	if err != nil {
		t.Fatal(err)
	}
	if !inst.Spot || inst.GPUType != "l4" {
		t.Errorf("instance %+v", inst)
	}
	s := srv.Servers()[0]
	if s.Template != "01000000-0000-4000-8000-000030240200" || s.StorageSizeGB != 40 {
		t.Errorf("server %+v", s)
	}
}

// When the availability call fails, the offers come with their stock marked unknown (they then rank
// behind every offer with known stock) instead of looking as good as in-stock ones.
func TestOffersStockUnknownWhenAvailabilityFails(t *testing.T) {
	srv, base := startEmulator(t, emu.Options{})
	if err := srv.SetCloudFaults(emu.Faults{Faults: simulation.Faults{ServerErrors: 100}, Match: "GET /device/availability"}); err != nil {
		t.Fatal(err)
	}
	b := newTestBackend(t, base, nil)
	offers := backendtest.Offers(t, b)
	if len(offers) == 0 {
		t.Fatal("no offers")
	}
	for _, o := range offers {
		if !o.StockUnknown || o.Available != -1 || o.Ineligible != "" || !strings.Contains(o.Details["stock"], "unknown") {
			t.Fatalf("offer %+v: want stock marked unknown", o)
		}
	}
}

// UpCloud's spot plans are offered for exactly the GPU types whose inventory entry enables them.
func TestOffersSpotPlansFromInventory(t *testing.T) {
	_, base := startEmulator(t, emu.Options{})
	gpus := strings.Replace(string(backendtest.Must(os.ReadFile("../../../inventory/supported_gpus.yml"))(t)),
		"  l4:\n    max_count: 8\n", "  l4:\n    max_count: 8\n    spot: [upcloud]\n", 1)
	if !strings.Contains(gpus, "spot: [upcloud]") {
		t.Fatal("could not enable spot for l4 in the test inventory")
	}
	inv := backendtest.Must(inventory.Parse("supported_gpus.yml", []byte(gpus), "pools.yml",
		backendtest.Must(os.ReadFile("../../../inventory/pools.yml"))(t)))(t)
	cfg := newTestBackend(t, base, nil).cfg
	b := backendtest.Must(New(cfg, inv, nil))(t)
	offers := backendtest.Offers(t, b)
	var l4Spot, otherSpot int
	for _, o := range offers {
		switch {
		case o.Spot && o.GPUType == "l4":
			l4Spot++
		case o.Spot:
			otherSpot++
		}
	}
	if l4Spot == 0 || otherSpot != 0 {
		t.Fatalf("spot offers: %d for l4 (want some), %d for other types (want none)", l4Spot, otherSpot)
	}
}
