package sandbox

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

func newBackend(t *testing.T, dir string, boot time.Duration) *Backend {
	t.Helper()
	return newBackendWith(t, Config{Dir: dir, BootTime: boot, DeleteTime: time.Millisecond, Tuning: fastRetries})
}

// fastRetries keeps restclient's number of attempts but waits milliseconds between them.
var fastRetries = restclient.Tuning{RetryWaitMin: time.Millisecond, RetryWaitMax: 5 * time.Millisecond}

// attempts is how often a call meets a persistent fault before it fails: restclient's default policy.
const attempts = restclient.DefaultRetryMax + 1

func newBackendWith(t *testing.T, cfg Config) *Backend {
	t.Helper()
	return backendtest.Must(New(cfg, backendtest.Inventory(t), nil))(t)
}

func offerFor(t *testing.T, b *Backend, gpuType string, count int) cloudprovider.Offer {
	t.Helper()
	offers, err := b.Offers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range offers {
		if o.GPUType == gpuType && o.GPUCount == count && !o.Spot && o.Region == "sbx-eu-1" {
			return o
		}
	}
	t.Fatalf("no %dx %s offer", count, gpuType)
	return cloudprovider.Offer{}
}

// TestLifecycleSharedAcrossProcesses: two handles on one directory stand for two provider processes
// (plan, then apply); they see one cloud, its name lock, its ownership records and its counters.
func TestLifecycleSharedAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	a, b := newBackend(t, dir, 50*time.Millisecond), newBackend(t, dir, 50*time.Millisecond)
	o := offerFor(t, a, "h100", 1)
	if o.PricePerHour != money.MustFromFloat(2.49) || o.InstanceType != "sbx.h100.1x" {
		t.Fatalf("default catalog changed: %+v", o)
	}
	owner := cloudprovider.Ownership{Resource: "x", Token: "k3j5q2xa"}
	inst, err := a.Create(ctx, cloudprovider.CreateRequest{Name: "sbx-vm-x--k3j5q2xa", Offer: o, Owner: owner})
	if err != nil || inst.Status != cloudprovider.StatusPending || inst.Owner != owner {
		t.Fatalf("Create = %+v, %v", inst, err)
	}
	again, err := b.Create(ctx, cloudprovider.CreateRequest{Name: "sbx-vm-x--k3j5q2xa", Offer: o, Owner: owner})
	if err != nil || again.ID != inst.ID {
		t.Fatalf("a create of the same name in another process = %+v, %v; want the first instance", again, err)
	}
	if err := b.ConfirmOwnership(ctx, inst.ID); err != nil {
		t.Fatal(err)
	}
	time.Sleep(80 * time.Millisecond)
	got, err := a.Get(ctx, inst.ID)
	if err != nil || got.Status != cloudprovider.StatusRunning || got.SSH == nil || !got.Owner.Confirmed {
		t.Fatalf("after boot: %+v, %v", got, err)
	}
	list, err := b.List(ctx, "sbx-vm-")
	if err != nil || len(list) != 1 || list[0].Name != "sbx-vm-x--k3j5q2xa" || list[0].Owner.Token != "k3j5q2xa" {
		t.Fatalf("List = %+v, %v", list, err)
	}
	if err := b.Delete(ctx, inst.ID); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	if got, err := a.Get(ctx, inst.ID); err != nil || got.Status != cloudprovider.StatusTerminated {
		t.Fatalf("after delete: %+v, %v", got, err)
	}
	if n, _ := a.CreatedCount(); n != 1 {
		t.Fatalf("created %d", n)
	}
	if c, _ := b.Counters(); c.OfferRequests != 1 {
		t.Fatalf("offer requests = %d, want 1", c.OfferRequests)
	}
}

// fakeMachines stands in for SSHMachines and remembers which machines run.
type fakeMachines struct {
	mu      sync.Mutex
	running map[string]bool
	starts  int
	// gate, when set, holds every Start until it is closed.
	gate chan struct{}
}

func (m *fakeMachines) Start(dir string, _ Record) (cloudprovider.SSHEndpoint, error) {
	if m.gate != nil {
		<-m.gate
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.running[dir] = true
	m.starts++
	return cloudprovider.SSHEndpoint{Host: "127.0.0.1", Port: 2222, User: "root"}, nil
}

func (m *fakeMachines) Stop(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.running, dir)
	return nil
}

// TestDeletedInstancesKeepNoMachine: a machine comes up while its instance boots (Create brings it up
// in the background), a read of a booting instance reports no SSH endpoint, a machine that fails to
// boot never comes up, and the machine of a deleted instance never stays up, whatever the order of
// the create's bring-up, the reads and the Delete.
func TestDeletedInstancesKeepNoMachine(t *testing.T) {
	m := &fakeMachines{running: map[string]bool{}}
	b := newBackendWith(t, Config{Dir: t.TempDir(), BootTime: time.Hour, DeleteTime: time.Hour, Machines: m})
	ctx := context.Background()
	o := offerFor(t, b, "l4", 1)
	slow, err := b.Create(ctx, cloudprovider.CreateRequest{Name: "sbx-vm-slow", Offer: o})
	if err != nil {
		t.Fatal(err)
	}
	b.WaitBooting()
	if got, err := b.Get(ctx, slow.ID); err != nil || got.SSH != nil || got.Status != cloudprovider.StatusPending {
		t.Fatalf("a booting instance: %+v, %v; want pending without an SSH endpoint", got, err)
	}
	m.mu.Lock()
	up := m.running[b.MachineDir(slow.ID)]
	m.mu.Unlock()
	if !up {
		t.Fatal("the machine of a booting instance was not brought up")
	}
	if err := b.SetAllFaults(Faults{Faults: simulation.Faults{BootFailures: 1}}); err != nil {
		t.Fatal(err)
	}
	failed, err := b.Create(ctx, cloudprovider.CreateRequest{Name: "sbx-vm-fails", Offer: o})
	if err != nil {
		t.Fatal(err)
	}
	b.WaitBooting()
	m.mu.Lock()
	up = m.running[b.MachineDir(failed.ID)]
	m.mu.Unlock()
	if up {
		t.Fatal("the machine of an instance that fails to boot was brought up")
	}
	// A Delete that stops the machine before the create's bring-up has started it.
	m.gate = make(chan struct{})
	late, err := b.Create(ctx, cloudprovider.CreateRequest{Name: "sbx-vm-late", Offer: o})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, late.ID); err != nil {
		t.Fatal(err)
	}
	close(m.gate)
	b.WaitBooting()
	m.gate = nil
	m.mu.Lock()
	up = m.running[b.MachineDir(late.ID)]
	m.mu.Unlock()
	if up {
		t.Fatal("the machine of an instance deleted while it came up is running")
	}
	if err := b.SetAllFaults(Faults{BootTime: "1ms"}); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		inst, err := b.Create(ctx, cloudprovider.CreateRequest{Name: "sbx-vm-r" + strings.Repeat("x", i), Offer: o})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
		var wg sync.WaitGroup
		for range 3 {
			wg.Add(1)
			go func() { defer wg.Done(); _, _ = b.Get(ctx, inst.ID); _, _ = b.List(ctx, "sbx-vm-r") }()
		}
		if err := b.Delete(ctx, inst.ID); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		b.WaitBooting()
		if _, err := b.Get(ctx, inst.ID); err != nil {
			t.Fatal(err)
		}
		m.mu.Lock()
		up := m.running[b.MachineDir(inst.ID)]
		m.mu.Unlock()
		if up {
			t.Fatalf("round %d: the machine of a deleted instance is running", i)
		}
	}
	if st, _ := b.Stats(); st.Created != 23 || len(st.Live) != 2 || st.Live[0].ID != slow.ID {
		t.Fatalf("stats %+v", st)
	}
}

// faultCase is a case of a fault test: faults armed on a fresh backend, then check run on it with what
// the test made there first (an offer, a cluster request).
type faultCase[T any] struct {
	name   string
	faults Faults
	check  func(t *testing.T, b *Backend, made T)
}

// runFaultCases runs each case on a fresh backend whose machines boot in boot: setup makes what the
// case's check is given before its faults are armed.
func runFaultCases[T any](t *testing.T, boot time.Duration, setup func(t *testing.T, b *Backend) T, cases []faultCase[T]) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBackend(t, t.TempDir(), boot)
			made := setup(t, b)
			if err := b.SetAllFaults(tc.faults); err != nil {
				t.Fatal(err)
			}
			tc.check(t, b, made)
		})
	}
}

func TestFaults(t *testing.T) {
	ctx := context.Background()
	runFaultCases(t, time.Second, func(t *testing.T, b *Backend) cloudprovider.Offer { return offerFor(t, b, "l4", 1) }, []faultCase[cloudprovider.Offer]{
		{"out of stock at create", Faults{OutOfStock: []string{"sbx-eu-1/sbx.l4.1x"}}, func(t *testing.T, b *Backend, o cloudprovider.Offer) {
			if _, err := b.Create(ctx, cloudprovider.CreateRequest{Name: "sbx-vm-a", Offer: o}); !cloudprovider.IsCapacity(err) {
				t.Fatalf("want a capacity error, got %v", err)
			}
			other := o
			other.Region = "sbx-us-1"
			if _, err := b.Create(ctx, cloudprovider.CreateRequest{Name: "sbx-vm-a", Offer: other}); err != nil {
				t.Fatalf("another region: %v", err)
			}
		}},
		{"server errors are retried and used up", Faults{Faults: simulation.Faults{ServerErrors: 2}}, func(t *testing.T, b *Backend, _ cloudprovider.Offer) {
			if _, err := b.List(ctx, ""); err != nil {
				t.Fatalf("List through 2 server errors: %v", err)
			}
			if f, _ := b.Faults(); f.ServerErrors != 0 {
				t.Fatalf("faults left %+v", f)
			}
		}},
		{"a server error storm fails the call", Faults{Faults: simulation.Faults{ServerErrors: 100}}, func(t *testing.T, b *Backend, _ cloudprovider.Offer) {
			_, err := b.Offers(ctx)
			if cloudprovider.KindOf(err) != cloudprovider.ErrOther || !strings.Contains(err.Error(), "sandbox: listing offers: injected API error") {
				t.Fatalf("want an unclassified injected API error, got %v", err)
			}
			if f, _ := b.Faults(); f.ServerErrors != 100-attempts {
				t.Fatalf("%d server errors left, want %d", f.ServerErrors, 100-attempts)
			}
		}},
		{"boot failures are counted", Faults{Faults: simulation.Faults{BootFailures: 1}, BootTime: "1ms"}, func(t *testing.T, b *Backend, o cloudprovider.Offer) {
			bad, err := b.Create(ctx, cloudprovider.CreateRequest{Name: "sbx-vm-a", Offer: o})
			if err != nil {
				t.Fatal(err)
			}
			good, err := b.Create(ctx, cloudprovider.CreateRequest{Name: "sbx-vm-b", Offer: o})
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(5 * time.Millisecond)
			if got, _ := b.Get(ctx, bad.ID); got.Status != cloudprovider.StatusError || got.Message == "" {
				t.Fatalf("want error status with a message, got %+v", got)
			}
			if got, _ := b.Get(ctx, good.ID); got.Status != cloudprovider.StatusRunning {
				t.Fatalf("the second machine must boot: %+v", got)
			}
		}},
		{"slow boot", Faults{BootTime: "1h"}, func(t *testing.T, b *Backend, o cloudprovider.Offer) {
			inst, err := b.Create(ctx, cloudprovider.CreateRequest{Name: "sbx-vm-a", Offer: o})
			if err != nil || !inst.CreatedAt.Add(time.Hour).After(time.Now().Add(50*time.Minute)) {
				t.Fatalf("Create = %+v, %v", inst, err)
			}
			time.Sleep(5 * time.Millisecond)
			if got, _ := b.Get(ctx, inst.ID); got.Status != cloudprovider.StatusPending {
				t.Fatalf("want pending, got %+v", got)
			}
		}},
		{"slow offers respect the context", Faults{OffersDelay: "1m"}, func(t *testing.T, b *Backend, _ cloudprovider.Offer) {
			c, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
			defer cancel()
			if _, err := b.Offers(c); err == nil {
				t.Fatal("Offers ignored the context")
			}
		}},
		{"latency respects the context", Faults{Faults: simulation.Faults{Latency: simulation.Duration(time.Minute)}}, func(t *testing.T, b *Backend, _ cloudprovider.Offer) {
			c, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
			defer cancel()
			if _, err := b.List(c, ""); err == nil {
				t.Fatal("List ignored the context")
			}
		}},
	})
}

// TestFaultsFile: faults.json speaks the shared vocabulary plus the sandbox's own words, and the
// admin's SetFaults leaves the sandbox's own alone.
func TestFaultsFile(t *testing.T) {
	b := newBackend(t, t.TempDir(), time.Second)
	raw := `{"rate_limited": 1, "retry_after_seconds": 2, "server_errors": 3, "lose_create_responses": 4,
	  "boot_failures": 5, "sold_out": true, "latency": "1ms",
	  "out_of_stock": ["sbx-eu-1/sbx.l4.1x"], "offers_delay": "2s", "boot_time": "3s"}`
	if err := os.WriteFile(filepath.Join(b.Dir(), FaultsFile), []byte(raw), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := b.AllFaults()
	if err != nil {
		t.Fatal(err)
	}
	want := simulation.Faults{RateLimited: 1, RetryAfterSeconds: 2, ServerErrors: 3, LoseCreateResponses: 4, BootFailures: 5, SoldOut: true, Latency: simulation.Duration(time.Millisecond)}
	if f.Faults != want || len(f.OutOfStock) != 1 || f.OffersDelay != "2s" || f.BootTime != "3s" {
		t.Fatalf("read %+v", f)
	}
	if err := b.SetFaults(simulation.Faults{ServerErrors: 1}); err != nil {
		t.Fatal(err)
	}
	if f, _ := b.AllFaults(); f.Faults != (simulation.Faults{ServerErrors: 1}) || len(f.OutOfStock) != 1 || f.BootTime != "3s" {
		t.Fatalf("after SetFaults: %+v", f)
	}
}

func TestCatalogEdits(t *testing.T) {
	b := newBackend(t, t.TempDir(), time.Second)
	c, err := b.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	for i := range c {
		if c[i].GPU == "L4" && c[i].GPUCount == 1 && !c[i].Spot && c[i].Region == "sbx-eu-1" {
			c[i].PricePerHour, c[i].Available = 0.11, 2
		}
	}
	if err := b.SetCatalog(c); err != nil {
		t.Fatal(err)
	}
	o := offerFor(t, b, "l4", 1)
	if o.PricePerHour != money.MustFromFloat(0.11) || o.Available != 2 {
		t.Fatalf("offer %+v", o)
	}
	ctx := context.Background()
	if _, err := b.Create(ctx, cloudprovider.CreateRequest{Name: "sbx-vm-c", Offer: o, MaxPricePerHour: money.MustFromFloat(0.10)}); !cloudprovider.IsCapacity(err) || !strings.Contains(err.Error(), "now costs $0.11/h, above the maximum $0.10/h") {
		t.Fatalf("above the max price: %v, want a capacity error", err)
	}
	if _, err := b.Create(ctx, cloudprovider.CreateRequest{Name: "sbx-vm-a", Offer: o, MaxPricePerHour: money.MustFromFloat(0.11)}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Create(ctx, cloudprovider.CreateRequest{Name: "sbx-vm-b", Offer: o}); err != nil {
		t.Fatal(err)
	}
	// The last unit was taken.
	if _, err := b.Create(ctx, cloudprovider.CreateRequest{Name: "sbx-vm-d", Offer: o}); !cloudprovider.IsCapacity(err) {
		t.Fatalf("want capacity error, got %v", err)
	}
	// The price moved after the plan: the create pays the catalog's price now.
	for i := range c {
		if c[i].GPU == "L4" && c[i].GPUCount == 1 && !c[i].Spot && c[i].Region == "sbx-eu-1" {
			c[i].PricePerHour, c[i].Available = 0.5, -1
		}
	}
	if err := b.SetCatalog(c); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Create(ctx, cloudprovider.CreateRequest{Name: "sbx-vm-e", Offer: o, MaxPricePerHour: money.MustFromFloat(0.2)}); !cloudprovider.IsCapacity(err) {
		t.Fatalf("a price raised above the cap after the plan: %v, want a capacity error", err)
	}
	if n, _ := b.CreatedCount(); n != 2 {
		t.Fatalf("created %d, want 2", n)
	}
}

// TestHardwareOffers: the default catalog gives every offer its hardware.
func TestHardwareOffers(t *testing.T) {
	b := newBackend(t, t.TempDir(), time.Millisecond)
	offers, err := b.Offers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	backendtest.WantHardware(t, offers, []backendtest.HardwareCase{
		{Region: "sbx-eu-1", InstanceType: "sbx.h100.1x", Want: cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 26, MemoryGB: 225}},
		{Region: "sbx-eu-1", InstanceType: "sbx.h100.1x", Spot: true, Want: cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 26, MemoryGB: 225}},
		{Region: "sbx-us-1", InstanceType: "sbx.h100.8x", Want: cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 208, MemoryGB: 1800}},
		{Region: "sbx-ap-1", InstanceType: "sbx.b200.8x", Want: cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 180, VCPUs: 208, MemoryGB: 2880}},
		{Region: "sbx-eu-1", InstanceType: "sbx.l40s.4x", Want: cloudprovider.Hardware{FormFactor: "pcie", GPUMemoryGB: 48, VCPUs: 32, MemoryGB: 256}},
		{Region: "sbx-eu-1", InstanceType: "sbx.l4.1x", Want: cloudprovider.Hardware{FormFactor: "pcie", GPUMemoryGB: 24, VCPUs: 8, MemoryGB: 32}},
		{Region: "sbx-eu-1", InstanceType: "sbx.rtxpro6000.2x", Want: cloudprovider.Hardware{FormFactor: "pcie", GPUMemoryGB: 96, VCPUs: 60, MemoryGB: 240}},
	})
	for _, o := range offers {
		if o.FormFactor == "" || o.GPUMemoryGB == 0 || o.VCPUs == 0 || o.MemoryGB == 0 {
			t.Errorf("%s %s: the default catalog leaves hardware out: %+v", o.Region, o.InstanceType, o.Hardware)
		}
	}
}

// TestHardwareCatalogFile: the fields are optional in catalog.json, written under their JSON names, and
// a form factor is read as the clouds' names are.
func TestHardwareCatalogFile(t *testing.T) {
	dir := t.TempDir()
	b := newBackend(t, dir, time.Millisecond)
	data, err := os.ReadFile(filepath.Join(dir, CatalogFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"form_factor": "sxm"`, `"gpu_memory_gb": 80`, `"vcpus": 26`, `"memory_gb": 225`} {
		if !strings.Contains(string(data), k) {
			t.Errorf("catalog.json lacks %s", k)
		}
	}
	var entries []CatalogEntry
	if err := json.Unmarshal([]byte(`[
		{"region": "r1", "instance_type": "bare", "gpu": "H100", "gpu_count": 1, "price_per_hour": 2, "available": -1},
		{"region": "r1", "instance_type": "sxm5", "gpu": "H100", "gpu_count": 1, "price_per_hour": 2, "available": -1, "form_factor": "SXM5", "gpu_memory_gb": 80},
		{"region": "r1", "instance_type": "odd", "gpu": "L40S", "gpu_count": 1, "price_per_hour": 1, "available": -1, "form_factor": "socketed", "vcpus": 8, "memory_gb": 64}
	]`), &entries); err != nil {
		t.Fatal(err)
	}
	if err := b.SetCatalog(entries); err != nil {
		t.Fatal(err)
	}
	offers, err := b.Offers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]cloudprovider.Hardware{
		"bare": {},
		"sxm5": {FormFactor: "sxm", GPUMemoryGB: 80},
		"odd":  {VCPUs: 8, MemoryGB: 64},
	}
	for _, typ := range []string{"bare", "sxm5", "odd"} {
		if o, ok := backendtest.FindOffer(offers, "r1", typ, false); !ok || o.Hardware != want[typ] {
			t.Errorf("%s: offer found %v, hardware %+v, want %+v", typ, ok, o.Hardware, want[typ])
		}
	}
}

// TestHardwareInstance: an instance keeps the hardware of the entry it was created from.
func TestHardwareInstance(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b := newBackend(t, dir, time.Millisecond)
	offers, err := b.Offers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := backendtest.FindOffer(offers, "sbx-eu-1", "sbx.l40s.2x", false)
	if !ok {
		t.Fatal("no sbx.l40s.2x offer in sbx-eu-1")
	}
	inst, err := b.Create(ctx, cloudprovider.CreateRequest{Name: "sbx-hw", Offer: o})
	if err != nil {
		t.Fatal(err)
	}
	want := cloudprovider.Hardware{FormFactor: "pcie", GPUMemoryGB: 48, VCPUs: 16, MemoryGB: 128}
	if inst.Hardware != want {
		t.Errorf("created: hardware %+v, want %+v", inst.Hardware, want)
	}
	// Another process reads the same directory.
	got, err := newBackend(t, dir, time.Millisecond).Get(ctx, inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Hardware != want {
		t.Errorf("get: hardware %+v, want %+v", got.Hardware, want)
	}
}
