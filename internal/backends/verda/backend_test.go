package verda

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/verda"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
)

func findOffer(offers []controlplane.Offer, region, typ string, spot bool) (controlplane.Offer, bool) {
	for _, o := range offers {
		if o.Region == region && o.InstanceType == typ && o.Spot == spot {
			return o, true
		}
	}
	return controlplane.Offer{}, false
}

func TestOffersMapping(t *testing.T) {
	f := startEmulator(t, emu.Options{})
	b := f.backend(t, nil)
	offers, err := b.Offers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		region, typ string
		spot        bool
		present     bool
		gpu         string
		count       int
		price       float64
	}{
		{"FIN-01", "1H100.80S.30V", false, true, "h100", 1, 2.65},
		{"FIN-01", "1H100.80S.30V", true, true, "h100", 1, 1.15},
		{"FIN-03", "8H100.80S.176V", false, true, "h100", 8, 21.20},
		{"FIN-01", "1B200.30V", true, true, "b200", 1, 1.79},       // spot stock only
		{"FIN-01", "1B200.30V", false, false, "", 0, 0},            // on-demand sold out
		{"FIN-01", "1A100.22V", false, true, "a100-80gb", 1, 1.29}, // "A100 SXM4 80GB"
		{"FIN-01", "1RTX6000ADA.10V", false, true, "rtx6000ada", 1, 0.89},
		{"FIN-03", "2RTXPRO6000.60V", false, true, "rtxpro6000", 2, 2.78},
		{"FIN-02", "1L40S.20V", true, true, "l40s", 1, 0.35},
		{"ICE-01", "1H200.141S.44V", false, true, "h200", 1, 3.59},
		{"FIN-01", "1A100.40S.22V", false, false, "", 0, 0}, // available but not in the catalog
		{"FIN-01", "CPU.4V.16G", false, false, "", 0, 0},    // no GPU
		{"FIN-01", "2A6000.20V", false, false, "", 0, 0},    // not in the inventory
		{"FIN-01", "1V100.6V", false, false, "", 0, 0},      // not in the inventory
	}
	for _, tc := range tests {
		o, ok := findOffer(offers, tc.region, tc.typ, tc.spot)
		if ok != tc.present {
			t.Errorf("%s %s spot=%v: present=%v, want %v", tc.region, tc.typ, tc.spot, ok, tc.present)
			continue
		}
		if !ok {
			continue
		}
		if o.GPUType != tc.gpu || o.GPUCount != tc.count || o.PricePerHour != tc.price || o.Cloud != "verda" ||
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
	}
}

func TestOffersMaxCountLocationsAndSpotSwitch(t *testing.T) {
	f := startEmulator(t, emu.Options{})
	inv, err := inventory.Default()
	if err != nil {
		t.Fatal(err)
	}
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
	offers, err := b.Offers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(offers) == 0 {
		t.Fatal("no offers")
	}
	for _, o := range offers {
		if o.Spot || (o.Region != "FIN-01" && o.Region != "FIN-03") || (o.GPUType == "h100" && o.GPUCount > 2) {
			t.Errorf("unexpected offer %+v", o)
		}
	}
	if _, ok := findOffer(offers, "FIN-01", "2H100.80S.80V", false); !ok {
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
		want float64
	}{{"default rate", 0, 2.862}, {"configured rate", 1.5, 3.975}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := startEmulator(t, emu.Options{Currency: "eur"})
			b := f.backend(t, func(c *Config) { c.EURToUSD = tc.rate })
			offers, err := b.Offers(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			o, ok := findOffer(offers, "FIN-01", "1H100.80S.30V", false)
			if !ok || o.PricePerHour != tc.want || o.Details[DetailCatalogCurrency] != "eur" || o.Details[DetailCatalogPrice] != "2.65" {
				t.Errorf("got %+v", o)
			}
		})
	}
}

func createRequest(t *testing.T, b *Backend, name, region, typ string, spot bool) controlplane.CreateRequest {
	t.Helper()
	offers, err := b.Offers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	o, ok := findOffer(offers, region, typ, spot)
	if !ok {
		t.Fatalf("no offer %s %s spot=%v", region, typ, spot)
	}
	pool, _ := b.inv.PoolByName("verda-vm-pool")
	return controlplane.CreateRequest{Name: pool.Prefix + name, Pool: pool, Offer: o, SSHPublicKeys: []string{testKey}}
}

func TestCreateGetRunningDeleteGone(t *testing.T) {
	ctx := context.Background()
	f := startEmulator(t, emu.Options{})
	b := f.backend(t, nil)
	req := createRequest(t, b, "web1", "FIN-01", "1H100.80S.30V", true)
	inst, err := b.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if inst.Status != controlplane.StatusPending || inst.CloudStatus != "ordered" || inst.SSH != nil || inst.Name != "verda-vm-web1" ||
		inst.GPUType != "h100" || inst.GPUCount != 1 || !inst.Spot || inst.PricePerHour != 1.15 || inst.Region != "FIN-01" || inst.CreatedAt.IsZero() {
		t.Fatalf("created: %+v", inst)
	}
	steps := []struct {
		advance time.Duration
		status  controlplane.Status
		cloud   string
		ssh     bool
	}{
		{bootTime / 2, controlplane.StatusPending, "provisioning", false},
		{bootTime, controlplane.StatusRunning, "running", true},
	}
	for _, s := range steps {
		f.clock.Advance(s.advance)
		got, err := b.Get(ctx, inst.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != s.status || got.CloudStatus != s.cloud || (got.SSH != nil) != s.ssh {
			t.Fatalf("status %s/%s ssh %v, want %s/%s ssh %v", got.Status, got.CloudStatus, got.SSH, s.status, s.cloud, s.ssh)
		}
		if s.ssh && (got.SSH.Port != 22 || got.SSH.User != "root" || !strings.HasPrefix(got.SSH.Host, "198.51.")) {
			t.Errorf("ssh endpoint %+v", got.SSH)
		}
	}
	list, err := b.List(ctx, "verda-vm-")
	if err != nil || len(list) != 1 || list[0].ID != inst.ID {
		t.Fatalf("list: %+v %v", list, err)
	}
	if err := b.Delete(ctx, inst.ID); err != nil {
		t.Fatal(err)
	}
	got, err := b.Get(ctx, inst.ID)
	if err != nil || got.Status != controlplane.StatusTerminated || got.CloudStatus != "discontinued" || got.SSH != nil {
		t.Errorf("after delete: %+v %v", got, err)
	}
	if list, _ := b.List(ctx, "verda-vm-"); len(list) != 0 {
		t.Errorf("deleted instance still listed: %+v", list)
	}
	// A second delete finds it gone.
	wantKind(t, b.Delete(ctx, inst.ID), controlplane.ErrNotFound)
	wantKind(t, b.Delete(ctx, "00000000-0000-4000-8000-000000000000"), controlplane.ErrNotFound)
	_, err = b.Get(ctx, "00000000-0000-4000-8000-000000000000")
	wantKind(t, err, controlplane.ErrNotFound)
	if n := len(f.srv.LiveInstances()); n != 0 {
		t.Errorf("%d instances left at the cloud", n)
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
	req.SSHPublicKeys = []string{`from="10.0.0.0/8" ` + testKey, otherKey, otherKey}
	a, err := b.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	req.Name = "verda-vm-b"
	if _, err := b.Create(ctx, req); err != nil {
		t.Fatal(err)
	}
	if got := f.srv.SSHKeyCount(); got != 2 {
		t.Errorf("SSH keys at Verda = %d, want 2 (one reused, one added once)", got)
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
	wantKind(t, err, controlplane.ErrInvalid)
}

func TestListByPrefix(t *testing.T) {
	ctx := context.Background()
	f := startEmulator(t, emu.Options{})
	b := f.backend(t, nil)
	req := createRequest(t, b, "x", "FIN-01", "1A100.22V", false)
	for _, name := range []string{"verda-vm-one", "verda-vm-two", "other-three"} {
		req.Name = name
		if _, err := b.Create(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		prefix string
		want   int
	}{{"verda-vm-", 2}, {"verda-vm-one", 1}, {"other-", 1}, {"", 3}, {"nope", 0}}
	for _, tc := range tests {
		list, err := b.List(ctx, tc.prefix)
		if err != nil || len(list) != tc.want {
			t.Errorf("List(%q) = %d, %v; want %d", tc.prefix, len(list), err, tc.want)
		}
	}
}

func TestCreateCapacityErrors(t *testing.T) {
	ctx := context.Background()
	f := startEmulator(t, emu.Options{})
	b := f.backend(t, nil)
	req := createRequest(t, b, "cap", "FIN-01", "1H100.80S.30V", false)
	f.setFaults(t, emu.Faults{CapacityGone: true})
	_, err := b.Create(ctx, req)
	wantKind(t, err, controlplane.ErrCapacity)
	f.setFaults(t, emu.Faults{})
	// 2x H100 in FIN-01 has room for two on-demand instances; the third finds none.
	req = createRequest(t, b, "cap", "FIN-01", "2H100.80S.80V", false)
	for i := 0; i < 2; i++ {
		req.Name = "verda-vm-cap" + string(rune('a'+i))
		if _, err := b.Create(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	req.Name = "verda-vm-capz"
	_, err = b.Create(ctx, req)
	wantKind(t, err, controlplane.ErrCapacity)
	if f.srv.CreateCount() != 2 {
		t.Errorf("created %d", f.srv.CreateCount())
	}
}

func TestCreateExactlyOneMachineUnderStorms(t *testing.T) {
	tests := []struct {
		name       string
		faults     emu.Faults
		wantErr    bool
		wantListed int // instances with the name after the call (what adoption by name finds)
	}{
		{"429 storm on create", emu.Faults{Match: "POST /instances", RateLimitStorm: 3}, false, 1},
		{"429 storm on everything", emu.Faults{RateLimitStorm: 3}, false, 1},
		{"5xx before acting", emu.Faults{Match: "POST /instances", ServerErrors: 3, ServerErrorStatus: 503}, true, 0},
		{"5xx after acting (lost response)", emu.Faults{LoseCreateResponses: 3}, true, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := startEmulator(t, emu.Options{})
			b := f.backend(t, nil)
			req := createRequest(t, b, "storm", "FIN-01", "1H100.80S.30V", false)
			f.setFaults(t, tc.faults)
			_, err := b.Create(ctx, req)
			if tc.wantErr {
				wantKind(t, err, controlplane.ErrOther)
			} else if err != nil {
				t.Fatal(err)
			}
			f.setFaults(t, emu.Faults{})
			list, err := b.List(ctx, req.Name)
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != tc.wantListed || f.srv.CreateCount() != tc.wantListed {
				t.Errorf("listed %d, created %d; want %d", len(list), f.srv.CreateCount(), tc.wantListed)
			}
		})
	}
}

func TestCreateFallsBackToLegacyImage(t *testing.T) {
	ctx := context.Background()
	f := startEmulator(t, emu.Options{})
	b := f.backend(t, nil)
	req := controlplane.CreateRequest{Name: "verda-vm-v100", Offer: controlplane.Offer{Region: "FIN-01", InstanceType: "1V100.6V"}}
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
	_, err = b2.Create(ctx, controlplane.CreateRequest{Name: "verda-vm-v100b", Offer: req.Offer})
	wantKind(t, err, controlplane.ErrInvalid)
}

func TestCreateRejectsBadRequests(t *testing.T) {
	f := startEmulator(t, emu.Options{})
	b := f.backend(t, nil)
	ctx := context.Background()
	for _, req := range []controlplane.CreateRequest{
		{Name: "", Offer: controlplane.Offer{Region: "FIN-01", InstanceType: "1H100.80S.30V"}},
		{Name: "verda-vm-x", Offer: controlplane.Offer{InstanceType: "1H100.80S.30V"}},
		{Name: "verda-vm-x", MaxPricePerHour: 1, Offer: controlplane.Offer{Region: "FIN-01", InstanceType: "1H100.80S.30V", PricePerHour: 2.65}},
	} {
		_, err := b.Create(ctx, req)
		wantKind(t, err, controlplane.ErrInvalid)
	}
	if f.srv.CreateCount() != 0 {
		t.Error("an invalid request created an instance")
	}
}

func TestBootFailureIsError(t *testing.T) {
	ctx := context.Background()
	f := startEmulator(t, emu.Options{})
	b := f.backend(t, nil)
	req := createRequest(t, b, "bad", "FIN-01", "1A100.22V", false)
	f.setFaults(t, emu.Faults{BootFailure: true, SlowBoot: time.Minute})
	inst, err := b.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(bootTime + 30*time.Second) // still booting: the slow boot adds a minute
	if got, _ := b.Get(ctx, inst.ID); got.Status != controlplane.StatusPending {
		t.Errorf("slow boot: %s/%s", got.Status, got.CloudStatus)
	}
	f.clock.Advance(time.Minute)
	got, err := b.Get(ctx, inst.ID)
	if err != nil || got.Status != controlplane.StatusError || got.Message == "" || got.SSH != nil {
		t.Errorf("boot failure: %+v %v", got, err)
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
		if got, _ := b.Get(ctx, inst.ID); got.Status != controlplane.StatusTerminated {
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
		wantKind(t, err, controlplane.ErrOther)
		if !strings.Contains(err.Error(), "provisioning") {
			t.Errorf("message: %v", err)
		}
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
	wantKind(t, err, controlplane.ErrAuth)
	if strings.Contains(err.Error(), emu.DefaultClientSecret) {
		t.Errorf("secret leaked: %v", err)
	}
}

func TestStatusTable(t *testing.T) {
	tests := []struct {
		status string
		ip     bool
		want   controlplane.Status
	}{
		{"new", false, controlplane.StatusPending},
		{"ordered", false, controlplane.StatusPending},
		{"validating", false, controlplane.StatusPending},
		{"pending", false, controlplane.StatusPending},
		{"provisioning", false, controlplane.StatusPending},
		{"running", false, controlplane.StatusPending},
		{"running", true, controlplane.StatusRunning},
		{"RUNNING", true, controlplane.StatusRunning},
		{"offline", true, controlplane.StatusError},
		{"hibernating", false, controlplane.StatusError},
		{"restoring", false, controlplane.StatusPending},
		{"deleting", false, controlplane.StatusTerminated},
		{"discontinued", false, controlplane.StatusTerminated},
		{"notfound", false, controlplane.StatusTerminated},
		{"no_capacity", false, controlplane.StatusError},
		{"installation_failed", false, controlplane.StatusError},
		{"error", false, controlplane.StatusError},
		{"unknown", false, controlplane.StatusError},
		{"brand_new_word", false, controlplane.StatusPending},
	}
	for _, tc := range tests {
		got, msg := mapStatus(tc.status, tc.ip)
		if got != tc.want {
			t.Errorf("%s (ip %v) = %s, want %s", tc.status, tc.ip, got, tc.want)
		}
		if (got == controlplane.StatusError) != (msg != "") {
			t.Errorf("%s: message %q", tc.status, msg)
		}
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		status    int
		code, msg string
		want      controlplane.ErrorKind
	}{
		{503, "service_unavailable", "Not enough resources to deploy a 1 GPU instance type 1V100.6V in FIN-03", controlplane.ErrCapacity},
		{400, "invalid_request", "Not enough resources to deploy", controlplane.ErrCapacity},
		{401, "unauthorized_request", "Invalid token", controlplane.ErrAuth},
		{403, "", "Forbidden", controlplane.ErrAuth},
		{402, "insufficient_funds", "Not enough balance", controlplane.ErrQuota},
		{400, "insufficient_funds", "Not enough balance", controlplane.ErrQuota},
		{404, "not_found", "Invalid instance id", controlplane.ErrNotFound},
		{400, "invalid_request", "Invalid instance id", controlplane.ErrNotFound},
		{400, "forbidden_action", "Can't discontinue a provisioning instance", controlplane.ErrInvalid},
		{403, "forbidden_action", "Can't discontinue a discontinued instance", controlplane.ErrInvalid},
		{409, "", "Tag key already exists", controlplane.ErrInvalid},
		{400, "invalid_request", "Operating system is not valid for this instance type", controlplane.ErrInvalid},
		{500, "server_error", "boom", controlplane.ErrOther},
		{429, "", "slow down", controlplane.ErrOther},
	}
	for _, tc := range tests {
		re := &ResponseError{Status: tc.status, Code: tc.code, Message: tc.msg}
		if got := kindOf(re); got != tc.want {
			t.Errorf("%d %s %q = %v, want %v", tc.status, tc.code, tc.msg, got, tc.want)
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
