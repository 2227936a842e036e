package verda

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/sshkeys"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/verda"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// TestOffersMapping: the emulator's default catalog mapped onto offers. Its V100 and A6000 are GPUs the
// inventory does not map: they are offered with GPUType "" and Verda's name for them as CloudGPU, which
// every offer carries.
func TestOffersMapping(t *testing.T) {
	f := startEmulator(t, emu.Options{})
	b := f.backend(t, nil)
	offers := backendtest.Offers(t, b)
	tests := []struct {
		region, typ string
		spot        bool
		present     bool
		gpu         string
		cloudGPU    string
		count       int
		price       money.USD
	}{
		{"FIN-01", "1H100.80S.30V", false, true, "h100", "H100 SXM5 80GB", 1, money.MustFromFloat(2.65)},
		{"FIN-01", "1H100.80S.30V", true, true, "h100", "H100 SXM5 80GB", 1, money.MustFromFloat(1.15)},
		{"FIN-03", "8H100.80S.176V", false, true, "h100", "H100 SXM5 80GB", 8, money.MustFromFloat(21.20)},
		{"FIN-01", "1B200.30V", true, true, "b200", "B200 SXM6 180GB", 1, money.MustFromFloat(1.79)},      // spot stock only
		{"FIN-01", "1B200.30V", false, false, "", "", 0, 0},                                               // on-demand sold out
		{"FIN-01", "1A100.22V", false, true, "a100-80gb", "A100 SXM4 80GB", 1, money.MustFromFloat(1.29)}, // "A100 SXM4 80GB"
		{"FIN-01", "1RTX6000ADA.10V", false, true, "rtx6000ada", "RTX 6000 Ada 48GB", 1, money.MustFromFloat(0.89)},
		{"FIN-03", "2RTXPRO6000.60V", false, true, "rtxpro6000", "RTX PRO 6000 96GB", 2, money.MustFromFloat(2.78)},
		{"FIN-02", "1L40S.20V", true, true, "l40s", "L40S 48GB", 1, money.MustFromFloat(0.35)},
		{"ICE-01", "1H200.141S.44V", false, true, "h200", "H200 SXM5 141GB", 1, money.MustFromFloat(3.59)},
		{"FIN-01", "1A100.40S.22V", false, false, "", "", 0, 0}, // available but not in the catalog
		{"FIN-01", "CPU.4V.16G", false, false, "", "", 0, 0},    // no GPU
		// Not in the inventory: offered unmapped, for the control plane to report.
		{"FIN-01", "2A6000.20V", false, true, "", "RTX A6000 48GB", 2, money.MustFromFloat(1.98)},
		{"FIN-01", "1V100.6V", false, true, "", "Tesla V100 16GB", 1, money.MustFromFloat(0.39)},
		{"FIN-01", "1V100.6V", true, true, "", "Tesla V100 16GB", 1, money.MustFromFloat(0.14)},
	}
	for _, tc := range tests {
		o, ok := backendtest.FindOffer(offers, tc.region, tc.typ, tc.spot)
		if ok != tc.present {
			t.Errorf("%s %s spot=%v: present=%v, want %v", tc.region, tc.typ, tc.spot, ok, tc.present)
			continue
		}
		if !ok {
			continue
		}
		if o.GPUType != tc.gpu || o.CloudGPU != tc.cloudGPU || o.GPUCount != tc.count || o.PricePerHour != tc.price || o.Cloud != "verda" ||
			o.Available != -1 || o.ID != "" || o.Pool != "" {
			t.Errorf("%s %s spot=%v: %+v", tc.region, tc.typ, tc.spot, o)
		}
		if o.Details[DetailLocationCode] != tc.region || o.Details[DetailInstanceType] != tc.typ || o.Details[DetailCatalogCurrency] != "usd" {
			t.Errorf("details: %+v", o.Details)
		}
	}
	for _, o := range offers {
		if strings.HasPrefix(o.InstanceType, "8B300") {
			t.Errorf("offered a type with no capacity: %+v", o)
		}
		if o.CloudGPU == "" {
			t.Errorf("offer without CloudGPU: %+v", o)
		}
	}
}

// TestCloudGPU: a type is reported by its name, else by its gpu description without the count, else by
// its model.
func TestCloudGPU(t *testing.T) {
	tests := []struct {
		t    InstanceType
		want string
	}{
		{InstanceType{Name: "Tesla V100 16GB", Model: "Tesla V100", GPU: GPU{Description: "1x Tesla V100 16GB"}}, "Tesla V100 16GB"},
		{InstanceType{Model: "MI300X", GPU: GPU{Description: "8x AMD MI300X 192GB"}}, "AMD MI300X 192GB"},
		{InstanceType{Model: "MI300X"}, "MI300X"},
		{InstanceType{}, ""},
	}
	for _, tc := range tests {
		if got := cloudGPU(tc.t); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.t, got, tc.want)
		}
	}
}

func TestOffersMaxCountLocationsAndSpotSwitch(t *testing.T) {
	f := startEmulator(t, emu.Options{})
	inv := backendtest.Inventory(t)
	h := inv.GPUs["h100"]
	h.MaxCount = 2
	inv.GPUs["h100"] = h
	b, err := New(func() Config {
		c := f.config()
		c.Locations = []string{"FIN-01", "fin-03"}
		c.DisableSpot = true
		return c
	}(), inv, nil)
	if err != nil {
		t.Fatal(err)
	}
	offers := backendtest.Offers(t, b)
	if len(offers) == 0 {
		t.Fatal("no offers")
	}
	for _, o := range offers {
		if o.Spot || (o.Region != "FIN-01" && o.Region != "FIN-03") || (o.GPUType == "h100" && o.GPUCount > 2) {
			t.Errorf("unexpected offer %+v", o)
		}
	}
	if _, ok := backendtest.FindOffer(offers, "FIN-01", "2H100.80S.80V", false); !ok {
		t.Error("2x H100 within max_count missing")
	}
	if got := f.srv.RequestCount("GET /instance-availability"); got != 1 {
		t.Errorf("spot availability asked although disabled: %d calls", got)
	}
}

func TestOffersEUR(t *testing.T) {
	tests := []struct {
		name string
		rate float64
		want money.USD
	}{
		// Euro prices are converted and rounded up once to the cent (money.Converted), as UpCloud's are.
		{"default rate", 0, 2_870_000},      // 2.65 EUR * 1.08 = 2.862, rounded up to 2.87
		{"configured rate", 1.5, 3_980_000}, // 2.65 EUR * 1.5 = 3.975, rounded up to 3.98
		// 2.65 EUR * 1.083713 = 2.87183945 USD exactly, rounded up once: 2.88. Converting through a
		// float and rounding to the micro-dollar first would change nothing here, but never rounds down.
		{"rate with six decimals", 1.083713, 2_880_000},
		// An exact product is not rounded: 2.65 EUR * 1.2 = 3.18.
		{"exact product", 1.2, 3_180_000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := startEmulator(t, emu.Options{Currency: "eur"})
			b := f.backend(t, func(c *Config) { c.EURToUSD = tc.rate })
			offers := backendtest.Offers(t, b)
			o, ok := backendtest.FindOffer(offers, "FIN-01", "1H100.80S.30V", false)
			if !ok || o.PricePerHour != tc.want || o.Details[DetailCatalogCurrency] != "eur" || o.Details[DetailCatalogPrice] != "2.65" {
				t.Errorf("got %+v", o)
			}
		})
	}
}

func createRequest(t *testing.T, b *Backend, name, region, typ string, spot bool) cloudprovider.CreateRequest {
	t.Helper()
	offers := backendtest.Offers(t, b)
	o, ok := backendtest.FindOffer(offers, region, typ, spot)
	if !ok {
		t.Fatalf("no offer %s %s spot=%v", region, typ, spot)
	}
	pool, _ := b.inv.PoolByName("verda-vm-pool")
	owner := cloudprovider.Ownership{Resource: name, Token: cloudprovider.NewOwnerToken()}
	return cloudprovider.CreateRequest{Name: cloudprovider.CloudName(pool, name, owner.Token), Pool: pool, Offer: o,
		Owner: owner, SSHPublicKeys: []string{testKey}}
}

// TestCreateKeepsOwnershipAndStatuses follows one instance through Verda's own status words and checks
// that the ownership record is stored as description and tags and read back.
func TestCreateKeepsOwnershipAndStatuses(t *testing.T) {
	ctx := context.Background()
	f := startEmulator(t, emu.Options{})
	b := f.backend(t, nil)
	req := createRequest(t, b, "web1", "FIN-01", "1H100.80S.30V", true)
	inst, err := b.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if inst.Status != cloudprovider.StatusPending || inst.CloudStatus != "ordered" || inst.SSH != nil || inst.Name != req.Name ||
		inst.GPUType != "h100" || inst.GPUCount != 1 || !inst.Spot || inst.PricePerHour != money.MustFromFloat(1.15) || inst.Region != "FIN-01" ||
		inst.CreatedAt.IsZero() || inst.Owner != req.Owner {
		t.Fatalf("created: %+v", inst)
	}
	raw, err := b.Client().Instance(ctx, inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	if raw.Description != cloudprovider.OwnerDescription(req.Owner) {
		t.Errorf("description %q", raw.Description)
	}
	labels := cloudprovider.OwnerLabels(req.Owner)
	if len(raw.Tags) != len(labels) {
		t.Fatalf("tags %+v, want %v", raw.Tags, labels)
	}
	for i, kv := range labels {
		if raw.Tags[i] != (Tag{Key: kv[0], Value: kv[1]}) {
			t.Errorf("tag %d = %+v, want %v", i, raw.Tags[i], kv)
		}
	}
	steps := []struct {
		advance time.Duration
		status  cloudprovider.Status
		cloud   string
		ssh     bool
	}{
		{bootTime / 2, cloudprovider.StatusPending, "provisioning", false},
		{bootTime, cloudprovider.StatusRunning, "running", true},
	}
	for _, s := range steps {
		f.clock.Advance(s.advance)
		got, err := b.Get(ctx, inst.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != s.status || got.CloudStatus != s.cloud || (got.SSH != nil) != s.ssh || got.Owner != req.Owner {
			t.Fatalf("status %s/%s ssh %v owner %+v, want %s/%s ssh %v", got.Status, got.CloudStatus, got.SSH, got.Owner, s.status, s.cloud, s.ssh)
		}
		if s.ssh && (got.SSH.Port != 22 || got.SSH.User != "root" || !strings.HasPrefix(got.SSH.Host, "198.51.")) {
			t.Errorf("ssh endpoint %+v", got.SSH)
		}
	}
	if err := b.Delete(ctx, inst.ID); err != nil {
		t.Fatal(err)
	}
	// Verda keeps a deleted instance readable by id, as discontinued.
	got, err := b.Get(ctx, inst.ID)
	if err != nil || got.Status != cloudprovider.StatusTerminated || got.CloudStatus != "discontinued" || got.SSH != nil {
		t.Errorf("after delete: %+v %v", got, err)
	}
	// Deleting again ("Can't discontinue a discontinued instance") and deleting an id Verda does not
	// know (400 "Invalid instance id") both find the instance gone.
	before := f.srv.RequestCount("PUT /instances")
	for _, id := range []string{inst.ID, "00000000-0000-4000-8000-000000000000", "not-a-uuid"} {
		if err := b.Delete(ctx, id); err != nil {
			t.Errorf("Delete(%s) of a gone instance: %v", id, err)
		}
	}
	if got := f.srv.RequestCount("PUT /instances") - before; got != 3 {
		t.Errorf("%d delete requests, want 3 (a gone instance is not retried)", got)
	}
}

// TestOwnerReadBack reads the ownership record from tags, else from the description, else none.
func TestOwnerReadBack(t *testing.T) {
	f := startEmulator(t, emu.Options{})
	b := f.backend(t, nil)
	o := cloudprovider.Ownership{Resource: "web", Token: "abcdefgh"}
	var tags []Tag
	for _, kv := range cloudprovider.OwnerLabels(cloudprovider.Ownership{Resource: "tagged", Token: "tttttttt"}) {
		tags = append(tags, Tag{Key: kv[0], Value: kv[1]})
	}
	tests := []struct {
		name string
		in   Instance
		want cloudprovider.Ownership
	}{
		{"tags win", Instance{Tags: tags, Description: cloudprovider.OwnerDescription(o)}, cloudprovider.Ownership{Resource: "tagged", Token: "tttttttt"}},
		{"description", Instance{Description: "made by hydra: " + cloudprovider.OwnerDescription(o)}, o},
		{"tags without a token", Instance{Tags: []Tag{{Key: "team", Value: "ml"}}, Description: cloudprovider.OwnerDescription(o)}, o},
		{"none", Instance{Description: "hope you enjoy your GPU"}, cloudprovider.Ownership{}},
	}
	for _, tc := range tests {
		if got := b.toInstance(tc.in).Owner; got != tc.want {
			t.Errorf("%s: owner %+v, want %+v", tc.name, got, tc.want)
		}
	}
	// A create without an ownership record still sends a description (Verda requires one) and no tags
	// with empty values.
	if tags := ownerTags(cloudprovider.Ownership{}); len(tags) != 2 {
		t.Errorf("tags of an empty record: %+v", tags)
	}
	if cloudprovider.OwnerDescription(cloudprovider.Ownership{}) == "" {
		t.Error("empty description")
	}
}

func TestCreateRegistersAndReusesSSHKeys(t *testing.T) {
	ctx := context.Background()
	f := startEmulator(t, emu.Options{})
	b := f.backend(t, nil)
	// A key already in the account (registered with another comment) is reused.
	pre, err := b.Client().CreateSSHKey(ctx, "mine", strings.Replace(testKey, "hydra@test", "laptop", 1))
	if err != nil {
		t.Fatal(err)
	}
	req := createRequest(t, b, "a", "FIN-01", "1A100.22V", false)
	req.SSHPublicKeys = []string{`from="10.0.0.0/8" ` + testKey, `no-pty ` + otherKey, otherKey}
	a, err := b.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	req.Name = "verda-vm-b"
	if _, err := b.Create(ctx, req); err != nil {
		t.Fatal(err)
	}
	keys, err := b.Client().SSHKeys(ctx)
	if err != nil || len(keys) != 2 {
		t.Fatalf("SSH keys at Verda = %+v %v, want 2 (one reused, one added once)", keys, err)
	}
	// The added key is registered without its options, under the name every cloud uses.
	added := keys[0]
	if added.ID == pre {
		added = keys[1]
	}
	if added.Key != otherKey || added.Name != sshkeys.Name(otherKey) {
		t.Errorf("registered %+v", added)
	}
	raw, err := b.Client().Instance(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw.SSHKeyIDs) != 2 || raw.SSHKeyIDs[0] != pre {
		t.Errorf("instance keys %v, want the existing key %s first", raw.SSHKeyIDs, pre)
	}
	// Configured key ids go on every instance, without duplicates.
	bk := f.backend(t, func(c *Config) { c.SSHKeyIDs = []string{pre} })
	req.Name = "verda-vm-d"
	req.SSHPublicKeys = []string{testKey}
	d, err := bk.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if raw, _ := b.Client().Instance(ctx, d.ID); len(raw.SSHKeyIDs) != 1 || raw.SSHKeyIDs[0] != pre {
		t.Errorf("instance keys %v, want only %s", raw.SSHKeyIDs, pre)
	}
	req.Name = "verda-vm-c"
	req.SSHPublicKeys = []string{"garbage"}
	_, err = b.Create(ctx, req)
	wantKind(t, err, cloudprovider.ErrInvalid)
}

// TestSSHKeyAddSurvivesOne5xx: one 5xx on POST /ssh-keys, whether Verda stored the key or not, does not
// fail the create, and the key is registered once and given to the instance; a 5xx on every add still
// fails it.
func TestSSHKeyAddSurvivesOne5xx(t *testing.T) {
	backendtest.WantKeyAddSurvives5xx(t, "/ssh-keys", func(t *testing.T, tr http.RoundTripper) (int, int, error) {
		f := startEmulator(t, emu.Options{})
		b := f.backend(t, func(c *Config) { c.Transport = tr })
		inst, err := b.Create(context.Background(), createRequest(t, b, "k", "FIN-01", "1A100.22V", false))
		if err == nil {
			if raw, _ := b.Client().Instance(context.Background(), inst.ID); len(raw.SSHKeyIDs) != 1 {
				t.Errorf("instance keys %v", raw.SSHKeyIDs)
			}
		}
		st, _ := f.srv.Stats()
		return f.srv.SSHKeyCount(), st.Created, err
	})
}

func TestCreateFallsBackToLegacyImage(t *testing.T) {
	ctx := context.Background()
	f := startEmulator(t, emu.Options{})
	b := f.backend(t, nil)
	req := cloudprovider.CreateRequest{Name: "verda-vm-v100", Offer: cloudprovider.Offer{Region: "FIN-01", InstanceType: "1V100.6V"}}
	inst, err := b.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := b.Client().Instance(ctx, inst.ID)
	if err != nil || raw.Image != DefaultFallbackImage {
		t.Errorf("image %q, %v", raw.Image, err)
	}
	if got := f.srv.RequestCount("POST /instances"); got != 2 {
		t.Errorf("creates = %d, want 2", got)
	}
	b2 := f.backend(t, func(c *Config) { c.FallbackImage = "-" })
	_, err = b2.Create(ctx, cloudprovider.CreateRequest{Name: "verda-vm-v100b", Offer: req.Offer})
	wantKind(t, err, cloudprovider.ErrInvalid)
}

func TestCreateRejectsBadRequests(t *testing.T) {
	f := startEmulator(t, emu.Options{})
	b := f.backend(t, nil)
	ctx := context.Background()
	for _, req := range []cloudprovider.CreateRequest{
		{Name: "", Offer: cloudprovider.Offer{Region: "FIN-01", InstanceType: "1H100.80S.30V"}},
		{Name: "verda-vm-x", Offer: cloudprovider.Offer{InstanceType: "1H100.80S.30V"}},
	} {
		_, err := b.Create(ctx, req)
		wantKind(t, err, cloudprovider.ErrInvalid)
	}
	if f.srv.CreateCount() != 0 {
		t.Error("an invalid request created an instance")
	}
}

// TestCreatePriceCap: a price above the cap in Verda's catalog now is a capacity error and creates
// nothing, whatever price the offer was planned at (the plan's is the control plane's to check).
func TestCreatePriceCap(t *testing.T) {
	f := startEmulator(t, emu.Options{}) // 1H100.80S.30V: 2.65 USD/h on demand, 1.15 spot
	b := f.backend(t, nil)
	ctx := context.Background()
	offer := cloudprovider.Offer{Region: "FIN-01", InstanceType: "1H100.80S.30V"}
	tests := []struct {
		name    string
		planned money.USD
		spot    bool
		max     money.USD
		wantErr string // "" for no error
	}{
		{"planned above the cap", 2_650_000, false, 2 * money.Dollar, "1H100.80S.30V now costs $2.65/h, above the maximum $2.00/h"},
		{"planned below, now above", 1_500_000, false, 2 * money.Dollar, "1H100.80S.30V now costs $2.65/h, above the maximum $2.00/h"},
		{"spot below the cap", 1_150_000, true, 2 * money.Dollar, ""},
		{"on demand at the cap", 2_650_000, false, 2_650_000, ""},
		{"one micro-dollar below the price", 2_650_000, false, 2_649_999, "1H100.80S.30V now costs $2.65/h, above the maximum $2.649999/h"},
	}
	created := 0
	for i, tc := range tests {
		o := offer
		o.PricePerHour, o.Spot = tc.planned, tc.spot
		_, err := b.Create(ctx, cloudprovider.CreateRequest{Name: "verda-vm-cap" + string(rune('a'+i)), Offer: o, MaxPricePerHour: tc.max})
		if tc.wantErr != "" {
			if !cloudprovider.IsCapacity(err) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: %v, want a capacity error with %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		created++
	}
	if got := f.srv.CreateCount(); got != created {
		t.Errorf("created %d, want %d", got, created)
	}
}

// TestCreateEURPriceCap compares the cap with the catalog converted from EUR.
func TestCreateEURPriceCap(t *testing.T) {
	f := startEmulator(t, emu.Options{Currency: "eur"}) // 2.65 EUR/h = 2.862 USD/h at 1.08, billed as 2.87
	b := f.backend(t, nil)
	o := cloudprovider.Offer{Region: "FIN-01", InstanceType: "1H100.80S.30V", PricePerHour: money.MustFromFloat(2.65)}
	_, err := b.Create(context.Background(), cloudprovider.CreateRequest{Name: "verda-vm-eur", Offer: o, MaxPricePerHour: money.MustFromFloat(2.80)})
	if want := "1H100.80S.30V now costs $2.87/h, above the maximum $2.80/h"; !cloudprovider.IsCapacity(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("%v, want a capacity error with %q", err, want)
	}
}

func TestDeleteWhileProvisioning(t *testing.T) {
	ctx := context.Background()
	f := startEmulator(t, emu.Options{})

	t.Run("retried until the instance can be deleted", func(t *testing.T) {
		b := f.backend(t, func(c *Config) { c.DeleteRetryMax = 1000; c.DeleteRetryWait = 2 * time.Millisecond })
		inst, err := b.Create(ctx, createRequest(t, b, "prov1", "FIN-01", "1A100.22V", false))
		if err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(bootTime / 2)
		before := f.srv.RequestCount("PUT /instances")
		done := make(chan error, 1)
		go func() { done <- b.Delete(ctx, inst.ID) }()
		for f.srv.RequestCount("PUT /instances") < before+2 {
			time.Sleep(time.Millisecond) // wait until Delete has been refused twice
		}
		f.clock.Advance(bootTime)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got, _ := b.Get(ctx, inst.ID); got.Status != cloudprovider.StatusTerminated {
			t.Errorf("status %s", got.Status)
		}
	})
	t.Run("bounded", func(t *testing.T) {
		b := f.backend(t, func(c *Config) { c.DeleteRetryMax = 2 })
		inst, err := b.Create(ctx, createRequest(t, b, "prov2", "FIN-01", "1A100.22V", false))
		if err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(bootTime / 2)
		before := f.srv.RequestCount("PUT /instances")
		err = b.Delete(ctx, inst.ID)
		backendtest.WantError(t, err, cloudprovider.ErrOther, "provisioning")
		if got := f.srv.RequestCount("PUT /instances") - before; got != 3 {
			t.Errorf("delete attempts = %d, want 3", got)
		}
	})
	t.Run("stops with the context", func(t *testing.T) {
		b := f.backend(t, func(c *Config) { c.DeleteRetryWait = time.Hour })
		inst, err := b.Create(ctx, createRequest(t, b, "prov3", "FIN-01", "1A100.22V", false))
		if err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(bootTime / 2)
		cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		err = b.Delete(cctx, inst.ID)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("want the context's error, got %v", err)
		}
	})
}

func TestAuthErrorFromBackend(t *testing.T) {
	f := startEmulator(t, emu.Options{ClientSecret: "the-real-secret"})
	b := f.backend(t, nil) // uses the default secret, which this emulator refuses
	_, err := b.Offers(context.Background())
	backendtest.WantAuthError(t, err, emu.DefaultClientSecret)
}

func TestStatusTable(t *testing.T) {
	backendtest.WantStatuses(t, mapStatus, []backendtest.StatusCase{
		{Word: "new", Reachable: false, Want: cloudprovider.StatusPending},
		{Word: "ordered", Reachable: false, Want: cloudprovider.StatusPending},
		{Word: "validating", Reachable: false, Want: cloudprovider.StatusPending},
		{Word: "pending", Reachable: false, Want: cloudprovider.StatusPending},
		{Word: "provisioning", Reachable: false, Want: cloudprovider.StatusPending},
		{Word: "running", Reachable: false, Want: cloudprovider.StatusPending},
		{Word: "running", Reachable: true, Want: cloudprovider.StatusRunning},
		{Word: "RUNNING", Reachable: true, Want: cloudprovider.StatusRunning},
		{Word: "offline", Reachable: true, Want: cloudprovider.StatusError},
		{Word: "hibernating", Reachable: false, Want: cloudprovider.StatusError},
		{Word: "restoring", Reachable: false, Want: cloudprovider.StatusPending},
		{Word: "deleting", Reachable: false, Want: cloudprovider.StatusTerminated},
		{Word: "discontinued", Reachable: false, Want: cloudprovider.StatusTerminated},
		{Word: "notfound", Reachable: false, Want: cloudprovider.StatusTerminated},
		{Word: "no_capacity", Reachable: false, Want: cloudprovider.StatusError},
		{Word: "installation_failed", Reachable: false, Want: cloudprovider.StatusError},
		{Word: "error", Reachable: false, Want: cloudprovider.StatusError},
		{Word: "unknown", Reachable: false, Want: cloudprovider.StatusError},
		{Word: "brand_new_word", Reachable: false, Want: cloudprovider.StatusPending},
	})
}

// Verda reports a spot machine it took back as discontinued, with no notice: an interruption with a
// reason and no times. On-demand machines and other statuses have none.
func TestInterruptionOf(t *testing.T) {
	tests := []struct {
		status string
		spot   bool
		want   bool
	}{
		{"discontinued", true, true},
		{"DISCONTINUED", true, true},
		{"discontinued", false, false},
		{"running", true, false},
		{"deleting", true, false},
	}
	for _, tc := range tests {
		got := interruptionOf(Instance{Status: tc.status, IsSpot: tc.spot})
		if (got != nil) != tc.want {
			t.Errorf("%s spot=%v: %+v, want interruption %v", tc.status, tc.spot, got, tc.want)
			continue
		}
		if got != nil && (!strings.Contains(got.Reason, "discontinued") || !got.NoticeAt.IsZero() || !got.EndsAt.IsZero()) {
			t.Errorf("%s: %+v", tc.status, got)
		}
	}
}

// TestClassify: the error body decides the kind when it names one (a known message, then the code);
// the HTTP status only when it does not.
func TestClassify(t *testing.T) {
	tests := []struct {
		status    int
		code, msg string
		want      cloudprovider.ErrorKind
	}{
		{503, "service_unavailable", "Not enough resources to deploy a 1 GPU instance type 1V100.6V in FIN-03", cloudprovider.ErrCapacity},
		{400, "invalid_request", "Not enough resources to deploy", cloudprovider.ErrCapacity},
		{401, "unauthorized_request", "Invalid token", cloudprovider.ErrAuth},
		{403, "", "Forbidden", cloudprovider.ErrAuth},
		{402, "insufficient_funds", "Not enough balance", cloudprovider.ErrQuota},
		{400, "insufficient_funds", "Not enough balance", cloudprovider.ErrQuota},
		{404, "not_found", "Invalid instance id", cloudprovider.ErrNotFound},
		{400, "invalid_request", "Invalid instance id", cloudprovider.ErrNotFound},
		{400, "forbidden_action", "Can't discontinue a provisioning instance", cloudprovider.ErrInvalid},
		{403, "forbidden_action", "Can't discontinue a discontinued instance", cloudprovider.ErrInvalid},
		{409, "", "Tag key already exists", cloudprovider.ErrInvalid},
		{400, "invalid_request", "Operating system is not valid for this instance type", cloudprovider.ErrInvalid},
		{500, "server_error", "boom", cloudprovider.ErrOther},
		{429, "", "slow down", cloudprovider.ErrOther},
		{429, "too_many_requests", "Rate limit exceeded", cloudprovider.ErrOther},
		{400, "invalid_request", "Instance limit reached for this project", cloudprovider.ErrQuota},
		// The code wins over the status.
		{404, "invalid_request", "Invalid ssh-key ID", cloudprovider.ErrInvalid},
		{400, "not_found", "No such volume", cloudprovider.ErrNotFound},
		{403, "insufficient_funds", "Add funds", cloudprovider.ErrQuota},
		{401, "invalid_request", "grant_type not specified", cloudprovider.ErrInvalid},
		{500, "unauthorized_request", "Token revoked", cloudprovider.ErrAuth},
		{503, "service_unavailable", "Maintenance", cloudprovider.ErrOther},
		// No known code: the status.
		{404, "", "Not Found", cloudprovider.ErrNotFound},
		{402, "payment_required", "Pay", cloudprovider.ErrQuota},
		{422, "", "Unprocessable", cloudprovider.ErrInvalid},
		{502, "", "<html>Bad Gateway</html>", cloudprovider.ErrOther},
	}
	for _, tc := range tests {
		re := &ResponseError{Status: tc.status, Code: tc.code, Message: tc.msg}
		if got := kindOf(re); got != tc.want {
			t.Errorf("%d %s %q = %v, want %v", tc.status, tc.code, tc.msg, got, tc.want)
		}
	}
}

// TestClassifyRecordedErrors classifies the recorded error bodies as the client receives them.
func TestClassifyRecordedErrors(t *testing.T) {
	tests := []struct {
		file string
		want cloudprovider.ErrorKind
		code string
	}{
		{"handwritten.error.invalid-request.400.json", cloudprovider.ErrInvalid, CodeInvalidRequest},
		{"reconstructed.error.sshkey-invalid-id.400.json", cloudprovider.ErrInvalid, CodeInvalidRequest},
	}
	for _, tc := range tests {
		rec := loadRecorded(t, tc.file)
		err := classify("testing", &restclient.HTTPError{Method: rec.Request.Method, Path: rec.Request.Path, Status: rec.Response.Status, Body: rec.Response.Body})
		wantKind(t, err, tc.want)
		if re, ok := asResponseError(err); !ok || re.Code != tc.code || re.Message == "" {
			t.Errorf("%s: %v", tc.file, err)
		}
	}
}

func TestGPUTypeFor(t *testing.T) {
	f := startEmulator(t, emu.Options{})
	b := f.backend(t, nil)
	tests := []struct {
		names []string
		want  string
	}{
		{[]string{"H100 SXM5 80GB"}, "h100"},
		{[]string{"", "8x H100 SXM5 80GB"}, "h100"},
		{[]string{"", "1x RTX6000 Ada 48GB"}, "rtx6000ada"},
		{[]string{"RTX 6000 Ada 48GB"}, "rtx6000ada"},
		{[]string{"", "1x A100 SXM4 80GB"}, "a100-80gb"},
		{[]string{"A100 80GB"}, "a100-80gb"},
		{[]string{"2x RTX PRO 6000 96GB"}, "rtxpro6000"},
		{[]string{"RTX A6000 48GB", "2x RTX A6000 48GB", "RTX A6000"}, ""},
		{[]string{"AMD EPYC", "", "CPU Node"}, ""},
	}
	for _, tc := range tests {
		if got := b.gpuTypeFor(tc.names...); got != tc.want {
			t.Errorf("%q = %q, want %q", tc.names, got, tc.want)
		}
	}
}
