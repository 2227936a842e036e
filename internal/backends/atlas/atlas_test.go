package atlas

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/atlas/atlasapi"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/atlas"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

const testToken = "atlas-test-token"

type clock = backendtest.Clock

// env is an emulator behind a real HTTP server, with a request log.
type env struct {
	*backendtest.RequestLog
	emu   *emu.Server
	clock *clock
}

func newEnv(t *testing.T, opts emu.Options) *env {
	t.Helper()
	e := &env{clock: backendtest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}
	backendtest.Clocked(&opts.Options, e.clock, 30*time.Second)
	e.emu = emu.New(opts)
	e.RequestLog = backendtest.NewRequestLog(t, e.emu)
	return e
}

func (e *env) backend(t *testing.T, mut func(*Config)) *Backend {
	t.Helper()
	cfg := Config{
		BaseURL: e.URL,
		Token:   testToken,
		Tuning:  backendtest.Retrying(4, time.Millisecond, 10*time.Millisecond),
	}
	if mut != nil {
		mut(&cfg)
	}
	return backendtest.Must(New(cfg, backendtest.Inventory(t), nil))(t)
}

// wantKind fails the test unless err is a classified cloud error (cloudprovider.Error) of kind.
var wantKind = backendtest.WantKind

func offer(t *testing.T, offers []cloudprovider.Offer, instanceType string) cloudprovider.Offer {
	t.Helper()
	for _, o := range offers {
		if o.InstanceType == instanceType {
			return o
		}
	}
	t.Fatalf("no offer %s in %+v", instanceType, offers)
	return cloudprovider.Offer{}
}

func req(o cloudprovider.Offer, name string) cloudprovider.CreateRequest {
	return cloudprovider.CreateRequest{Name: name, Offer: o, SSHPublicKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHydra user@host"}}
}

// TestOffers: the emulator's default catalog mapped onto offers. Its sold-out rtx6000ada.2x is listed
// with Available 0 (the control plane shows it as not eligible, with its price);
// its a10.1x is a GPU the inventory does not map, offered with GPUType "" and its gpu_model as CloudGPU,
// which every offer carries.
func TestOffers(t *testing.T) {
	tests := []struct {
		name   string
		factor float64
		want   map[string]money.USD // instance type -> ranking price; absent types must be dropped
	}{
		{"default factor 0.5", 0, map[string]money.USD{"l40s.1x": 800_000, "l40s.4x": 3_200_000, "h100.8x": 12 * money.Dollar, "a100.1x": 900_000, "l4.1x": 350_000, "a10.1x": 250_000, "rtx6000ada.2x": 1_100_000}},
		{"list price", 1, map[string]money.USD{"l40s.1x": 1_600_000, "l40s.4x": 6_400_000, "h100.8x": 24 * money.Dollar, "a100.1x": 1_800_000, "l4.1x": 700_000, "a10.1x": 500_000, "rtx6000ada.2x": 2_200_000}},
	}
	gpuModels := map[string]string{"l40s.1x": "NVIDIA L40S", "l40s.4x": "NVIDIA L40S", "h100.8x": "NVIDIA H100 80GB HBM3",
		"a100.1x": "NVIDIA A100 80GB", "l4.1x": "NVIDIA L4", "a10.1x": "NVIDIA A10", "rtx6000ada.2x": "NVIDIA RTX 6000 Ada Generation"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, emu.Options{})
			offers, err := e.backend(t, func(c *Config) { c.PriceFactor = tt.factor }).Offers(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(offers) != len(tt.want) {
				t.Fatalf("got %d offers, want %d (sold-out rtx6000ada.2x listed): %+v", len(offers), len(tt.want), offers)
			}
			list := map[string]money.USD{"l40s.1x": 1_600_000, "l40s.4x": 6_400_000, "h100.8x": 24 * money.Dollar, "a100.1x": 1_800_000, "l4.1x": 700_000, "a10.1x": 500_000, "rtx6000ada.2x": 2_200_000}
			for _, o := range offers {
				// The billed price is the list price; the factor only ranks.
				p, ok := tt.want[o.InstanceType]
				if !ok || o.RankingPrice() != p || o.PricePerHour != list[o.InstanceType] {
					t.Errorf("%s: ranked at %v billed %v, want ranked %v billed %v (present %v)", o.InstanceType, o.RankingPrice(), o.PricePerHour, p, list[o.InstanceType], ok)
				}
				if o.Cloud != "atlas" || (o.GPUType == "") != (o.InstanceType == "a10.1x") || o.CloudGPU != gpuModels[o.InstanceType] ||
					(o.Available < 1) != (o.InstanceType == "rtx6000ada.2x") || o.Spot || o.ID != "" || o.Details[DetailRankPrice] != tt.want[o.InstanceType].String() {
					t.Errorf("bad offer %+v", o)
				}
			}
			h := offer(t, offers, "h100.8x")
			if h.GPUType != "h100" || h.GPUCount != 8 || h.Region != "ams1" || h.Available != 1 {
				t.Errorf("h100 offer %+v", h)
			}
		})
	}
	e := newEnv(t, emu.Options{})
	inv := backendtest.Inventory(t)
	if _, err := New(Config{BaseURL: e.URL, Token: testToken, PriceFactor: -1}, inv, nil); err == nil {
		t.Fatal("a negative price factor must be refused")
	}
}

// TestHardwareOffers: offers carry gpu_memory_gb, vcpus and memory_gb; gpu_model (nvidia-smi's name)
// says the form factor where it can.
func TestHardwareOffers(t *testing.T) {
	offers := backendtest.Offers(t, newEnv(t, emu.Options{}).backend(t, nil))
	cases := []backendtest.HardwareCase{
		{InstanceType: "l40s.1x", Want: cloudprovider.Hardware{FormFactor: "pcie", GPUMemoryGB: 48, VCPUs: 16, MemoryGB: 128}},
		{InstanceType: "l40s.4x", Want: cloudprovider.Hardware{FormFactor: "pcie", GPUMemoryGB: 48, VCPUs: 64, MemoryGB: 512}},
		// "NVIDIA H100 80GB HBM3" is the SXM5 module's name.
		{InstanceType: "h100.8x", Want: cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 192, MemoryGB: 2048}},
		// "NVIDIA A100 80GB" does not say SXM4 or PCIe.
		{InstanceType: "a100.1x", Want: cloudprovider.Hardware{FormFactor: "", GPUMemoryGB: 80, VCPUs: 24, MemoryGB: 240}},
		{InstanceType: "l4.1x", Want: cloudprovider.Hardware{FormFactor: "pcie", GPUMemoryGB: 24, VCPUs: 8, MemoryGB: 64}},
	}
	backendtest.WantHardwareOnly(t, offers, cases, "vcpus", "memory_gb")
}

// TestHardwareInstance: an instance names only its gpu_model; the rest comes from its offer.
func TestHardwareInstance(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, emu.Options{})
	b := e.backend(t, nil)
	inst := backendtest.InstanceHardware(t, b, "", "h100.8x", cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 192, MemoryGB: 2048})
	// A backend that has not listed offers knows only what gpu_model says.
	fresh, err := e.backend(t, nil).Get(ctx, inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	if w := (cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80}); fresh.Hardware != w {
		t.Errorf("get without offers: hardware %+v, want %+v", fresh.Hardware, w)
	}
}

// Atlas without capacity lists every offer as sold out (Available 0): shown, never chosen.
func TestNoCapacityAllSoldOut(t *testing.T) {
	e := newEnv(t, emu.Options{})
	for _, o := range emu.DefaultCatalog() {
		_ = e.emu.SetAvailable(o.InstanceType, o.Region, 0)
	}
	offers, err := e.backend(t, nil).Offers(context.Background())
	if err != nil || len(offers) != len(emu.DefaultCatalog()) {
		t.Fatalf("offers = %+v, %v: want every entry listed", offers, err)
	}
	for _, o := range offers {
		if o.Available != 0 {
			t.Errorf("%s: Available %d, want 0 (sold out)", o.InstanceType, o.Available)
		}
	}
}

// TestStatusesAndHostKey follows one instance through Atlas's own statuses: booting is pending,
// active is running with the endpoint and the host key Atlas reports, terminating stays pending,
// terminated leaves List and is purged (404) after the retention; the name is free again then.
func TestStatusesAndHostKey(t *testing.T) {
	e := newEnv(t, emu.Options{SSH: emukit.SSH{Host: "10.20.0.15", Port: 2222}, HostKey: "ssh-ed25519 AAAAhostkey"})
	b := e.backend(t, nil)
	ctx := context.Background()
	offers := backendtest.Offers(t, b)
	o := offer(t, offers, "l40s.1x")
	inst, err := b.Create(ctx, req(o, "atlas-vm-web1"))
	if err != nil {
		t.Fatal(err)
	}
	if inst.Status != cloudprovider.StatusPending || inst.CloudStatus != "provisioning" || inst.GPUType != "l40s" ||
		inst.PricePerHour != money.MustFromFloat(1.6) || inst.SSH != nil || inst.HostKey != "" || inst.Region != "ams1" {
		t.Fatalf("created %+v", inst)
	}
	if got := e.emu.Instances(); len(got) != 1 || len(got[0].SSHPublicKeys) != 1 {
		t.Fatalf("keys not installed: %+v", got)
	}
	steps := []struct {
		advance time.Duration
		cloud   string
		want    cloudprovider.Status
	}{
		{15 * time.Second, "booting", cloudprovider.StatusPending},
		{20 * time.Second, "active", cloudprovider.StatusRunning},
	}
	for _, s := range steps {
		e.clock.Advance(s.advance)
		got, err := b.Get(ctx, inst.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.CloudStatus != s.cloud || got.Status != s.want {
			t.Fatalf("after %v: %s/%s", s.advance, got.CloudStatus, got.Status)
		}
		if s.want == cloudprovider.StatusRunning {
			if got.SSH == nil || *got.SSH != (cloudprovider.SSHEndpoint{Host: "10.20.0.15", Port: 2222, User: "ubuntu"}) || got.HostKey != "ssh-ed25519 AAAAhostkey" {
				t.Fatalf("running without endpoint or host key: %+v %q", got.SSH, got.HostKey)
			}
		}
	}
	if err := b.Delete(ctx, inst.ID); err != nil {
		t.Fatal(err)
	}
	got, _ := b.Get(ctx, inst.ID)
	if got.CloudStatus != "terminating" || got.Status != cloudprovider.StatusPending || got.SSH != nil {
		t.Fatalf("deleting: %+v", got)
	}
	if err := b.Delete(ctx, inst.ID); err != nil {
		t.Fatalf("deleting a terminating instance again: %v", err)
	}
	e.clock.Advance(10 * time.Second)
	if got, _ = b.Get(ctx, inst.ID); got.Status != cloudprovider.StatusTerminated {
		t.Fatalf("terminated: %+v", got)
	}
	if list, _ := b.List(ctx, "atlas-vm-"); len(list) != 0 {
		t.Fatalf("terminated instances must leave List: %+v", list)
	}
	e.clock.Advance(2 * time.Hour)
	_, err = b.Get(ctx, inst.ID)
	wantKind(t, err, cloudprovider.ErrNotFound)
	if err := b.Delete(ctx, inst.ID); err != nil {
		t.Fatalf("deleting a purged instance: %v, want success", err)
	}
	again, err := b.Create(ctx, req(o, "atlas-vm-web1"))
	if err != nil || again.ID == inst.ID {
		t.Fatalf("the name must be free once terminated: %+v, %v", again, err)
	}
}

// TestCreateRetried: Atlas's create is idempotent by name, so the client retries it like a read
// through 5xx and 429 storms, and still makes one instance.
func TestCreateRetried(t *testing.T) {
	tests := []struct {
		name   string
		faults simulation.Faults
	}{
		{"500 storm during create", simulation.Faults{ServerErrors: 3}},
		{"429 storm during create", simulation.Faults{RateLimited: 3, RetryAfterSeconds: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, emu.Options{})
			b := e.backend(t, nil)
			ctx := context.Background()
			offers, _ := b.Offers(ctx)
			_ = e.emu.SetFaults(tt.faults)
			inst, err := b.Create(ctx, req(offer(t, offers, "a100.1x"), "atlas-vm-once"))
			if err != nil || inst.ID == "" {
				t.Fatalf("Create = %+v, %v", inst, err)
			}
			if n := e.emu.CreateCount(); n != 1 {
				t.Fatalf("%d instances created, want exactly 1", n)
			}
		})
	}
}

func TestCreateErrors(t *testing.T) {
	tests := []struct {
		name  string
		setup func(*env)
		mut   func(*cloudprovider.CreateRequest)
		want  cloudprovider.ErrorKind
		text  string
	}{
		{"type sold out", func(e *env) { _ = e.emu.SetAvailable("l40s.1x", "ams1", 0) }, nil, cloudprovider.ErrCapacity, "no_capacity"},
		{"quota", func(e *env) { _ = e.emu.SetAllFaults(emu.Faults{QuotaExceeded: true}) }, nil, cloudprovider.ErrQuota, "quota"},
		{"bad name", func(*env) {}, func(r *cloudprovider.CreateRequest) { r.Name = "Atlas_VM" }, cloudprovider.ErrInvalid, "name must be"},
		{"no keys", func(*env) {}, func(r *cloudprovider.CreateRequest) { r.SSHPublicKeys = nil }, cloudprovider.ErrInvalid, "ssh_public_keys"},
		{"bad label", func(*env) {}, func(r *cloudprovider.CreateRequest) {
			r.Owner = cloudprovider.Ownership{Resource: strings.Repeat("x", 300), Token: "abcdefgh"}
		}, cloudprovider.ErrInvalid, "labels"},
		// The cap applies to the list price Atlas bills ($1.60), not to the ranking price ($0.80).
		{"cap below the list price", func(*env) {}, func(r *cloudprovider.CreateRequest) { r.MaxPricePerHour = money.MustFromFloat(1.5) }, cloudprovider.ErrCapacity, "price_above_max"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, emu.Options{})
			b := e.backend(t, nil)
			offers, _ := b.Offers(context.Background())
			r := req(offer(t, offers, "l40s.1x"), "atlas-vm-err")
			tt.setup(e)
			if tt.mut != nil {
				tt.mut(&r)
			}
			_, err := b.Create(context.Background(), r)
			backendtest.WantError(t, err, tt.want, tt.text)
			if e.emu.CreateCount() != 0 {
				t.Fatal("nothing may be created")
			}
		})
	}
}

// TestPriceCapIsTheListPrice: the cap is sent to Atlas and compared there with the list price, with
// the price factor applied to neither.
func TestPriceCapIsTheListPrice(t *testing.T) {
	for _, factor := range []float64{0.5, 2} {
		e := newEnv(t, emu.Options{})
		b := e.backend(t, func(c *Config) { c.PriceFactor = factor })
		offers, _ := b.Offers(context.Background())
		o := offer(t, offers, "l40s.1x") // list price $1.60
		r := req(o, "atlas-vm-capped")
		r.MaxPricePerHour = money.MustFromFloat(1.6)
		if _, err := b.Create(context.Background(), r); err != nil {
			t.Fatalf("factor %v: a cap equal to the list price: %v", factor, err)
		}
		r = req(o, "atlas-vm-capped2")
		r.MaxPricePerHour = money.MustFromFloat(1.59)
		_, err := b.Create(context.Background(), r)
		wantKind(t, err, cloudprovider.ErrCapacity)
		if n := e.emu.CreateCount(); n != 1 {
			t.Fatalf("factor %v: %d created, want 1", factor, n)
		}
	}
}

// TestOwnershipLabels: the record is kept as Atlas labels, read back from them, and confirmation
// changes only hydra-confirmed.
func TestOwnershipLabels(t *testing.T) {
	e := newEnv(t, emu.Options{})
	b := e.backend(t, nil)
	ctx := context.Background()
	offers, _ := b.Offers(ctx)
	r := req(offer(t, offers, "l4.1x"), "atlas-vm-web--k3j5q2xa")
	r.Owner = cloudprovider.Ownership{Resource: "web", Token: "k3j5q2xa"}
	inst, err := b.Create(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if inst.Owner != r.Owner {
		t.Fatalf("owner %+v, want %+v", inst.Owner, r.Owner)
	}
	want := map[string]string{"hydra-managed-by": "hydra", "hydra-owner": "k3j5q2xa", "hydra-resource": "web", "hydra-confirmed": "false"}
	if got := e.emu.Instances()[0].Labels; !maps.Equal(got, want) {
		t.Fatalf("labels at Atlas %v, want %v", got, want)
	}
	// Someone else's label survives the confirmation (PATCH merges).
	team := "ml"
	if _, err := b.Client().UpdateLabels(ctx, inst.ID, map[string]*string{"team": &team}); err != nil {
		t.Fatal(err)
	}
	if err := b.ConfirmOwnership(ctx, inst.ID); err != nil {
		t.Fatal(err)
	}
	want["hydra-confirmed"], want["team"] = "true", "ml"
	if got := e.emu.Instances()[0].Labels; !maps.Equal(got, want) {
		t.Fatalf("labels after confirmation %v, want %v", got, want)
	}
	list, err := b.List(ctx, "atlas-vm-web--")
	if err != nil || len(list) != 1 || list[0].Owner != (cloudprovider.Ownership{Resource: "web", Token: "k3j5q2xa", Confirmed: true}) {
		t.Fatalf("List = %+v, %v", list, err)
	}
	// A create without a record stores no labels; its owner stays empty.
	plain, err := b.Create(ctx, req(offer(t, offers, "l4.1x"), "atlas-vm-plain"))
	if err != nil || plain.Owner != (cloudprovider.Ownership{}) {
		t.Fatalf("plain create = %+v, %v", plain, err)
	}
	err = b.ConfirmOwnership(ctx, "i-missing")
	wantKind(t, err, cloudprovider.ErrNotFound)
}

func TestAuthAndRetries(t *testing.T) {
	e := newEnv(t, emu.Options{})
	secret := "wrong-token-never-logged"
	_, err := e.backend(t, func(c *Config) { c.Token = secret }).Offers(context.Background())
	backendtest.WantAuthError(t, err, secret)
	if !strings.Contains(err.Error(), "unauthorized") {
		t.Fatalf("error = %v", err)
	}
	if e.Count.Load() != 1 {
		t.Fatal("401 must not be retried")
	}
	_, err = e.backend(t, func(c *Config) { c.Token = "" }).Offers(context.Background())
	wantKind(t, err, cloudprovider.ErrAuth)

	b := e.backend(t, nil)
	e.Count.Store(0)
	_, err = b.Get(context.Background(), "i-missing")
	wantKind(t, err, cloudprovider.ErrNotFound)
	if e.Count.Load() != 1 {
		t.Fatal("404 must not be retried")
	}
	e.Count.Store(0)
	_ = e.emu.SetFaults(simulation.Faults{ServerErrors: 2, RateLimited: 1})
	if _, err := b.Offers(context.Background()); err != nil {
		t.Fatal(err)
	}
	if e.Count.Load() != 4 {
		t.Fatalf("%d requests, want 4 (429, 500, 500, ok)", e.Count.Load())
	}
	_ = e.emu.SetFaults(simulation.Faults{ServerErrors: 20})
	_, err = b.Offers(context.Background())
	wantKind(t, err, cloudprovider.ErrOther)
}

func TestSharedRateLimit(t *testing.T) {
	e := newEnv(t, emu.Options{})
	b := e.backend(t, func(c *Config) { c.RequestsPerSecond = 20; c.Burst = 1 })
	backendtest.WantSharedLimit(t, func() { _, _ = b.Offers(context.Background()) })
}

func TestListPagination(t *testing.T) {
	catalog := []emu.Offer{{InstanceType: "l4.1x", Region: "fra1", Spec: atlasapi.Spec{GPUModel: "NVIDIA L4", GPUCount: 1, PricePerHour: 0.7}, Available: 100}}
	e := newEnv(t, emu.Options{Catalog: catalog})
	b := e.backend(t, nil)
	c, err := NewClient(ClientConfig{BaseURL: e.URL, Token: testToken, PageSize: 3, Tuning: backendtest.Unlimited})
	if err != nil {
		t.Fatal(err)
	}
	offers, _ := b.Offers(context.Background())
	for i := 0; i < 8; i++ {
		if _, err := b.Create(context.Background(), req(offers[0], fmt.Sprintf("atlas-vm-n%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Create(context.Background(), req(offers[0], "atlas-ex-other")); err != nil {
		t.Fatal(err)
	}
	list, err := c.Instances(context.Background(), "atlas-vm-")
	if err != nil || len(list) != 8 {
		t.Fatalf("list = %d, %v", len(list), err)
	}
	if got := e.Requests("GET /v1/instances"); got != 3 {
		t.Fatalf("%d pages read, want 3", got)
	}
}

func TestMapStatus(t *testing.T) {
	ssh := &cloudprovider.SSHEndpoint{Host: "h", Port: 22, User: "u"}
	tests := []struct {
		status string
		ssh    *cloudprovider.SSHEndpoint
		want   cloudprovider.Status
	}{
		{"provisioning", nil, cloudprovider.StatusPending},
		{"booting", nil, cloudprovider.StatusPending},
		{"active", nil, cloudprovider.StatusPending},
		{"active", ssh, cloudprovider.StatusRunning},
		{"ACTIVE", ssh, cloudprovider.StatusRunning},
		{"failed", nil, cloudprovider.StatusError},
		{"terminating", nil, cloudprovider.StatusPending},
		{"terminated", nil, cloudprovider.StatusTerminated},
		{"rebooting", ssh, cloudprovider.StatusPending},
	}
	for _, tt := range tests {
		if got := mapStatus(tt.status, tt.ssh); got != tt.want {
			t.Errorf("%s ssh=%v: %s, want %s", tt.status, tt.ssh != nil, got, tt.want)
		}
	}
}
