package primeintellect

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/primeintellect"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

func TestAvailabilityPagination(t *testing.T) {
	catalog := emu.DefaultCatalog()
	tests := []struct {
		name      string
		pageSize  int
		legacy    bool
		wantPages int
	}{
		{"one page", 100, false, 1},
		{"several pages", 4, false, (len(catalog) + 3) / 4},
		{"exact pages", len(catalog) / 3, false, 3},
		{"legacy fallback", 100, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, emu.Options{LegacyOnly: tt.legacy})
			c := e.client(t, func(c *ClientConfig) { c.PageSize = tt.pageSize })
			items, err := c.Availability(context.Background(), AvailabilityFilter{})
			if err != nil {
				t.Fatal(err)
			}
			if len(items) != len(catalog) {
				t.Fatalf("got %d items, want all %d", len(items), len(catalog))
			}
			seen := map[string]bool{}
			for _, it := range items {
				k := itemKey(it)
				if seen[k] {
					t.Fatalf("duplicate item %s", k)
				}
				seen[k] = true
			}
			if !tt.legacy {
				if got := e.Requests("GET /api/v1/availability/gpus OK"); got != tt.wantPages {
					t.Fatalf("read %d pages, want %d", got, tt.wantPages)
				}
			} else if e.Requests("GET /api/v1/availability/ OK") != 1 {
				t.Fatalf("legacy endpoint not read: %v", e.Log())
			}
		})
	}
}

func TestAvailabilityFilter(t *testing.T) {
	e := newEnv(t, emu.Options{})
	c := e.client(t, nil)
	items, err := c.Availability(context.Background(), AvailabilityFilter{GPUType: "H100_80GB", GPUCount: 1, DataCenter: "FIN-01"})
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 1 || items[0].Provider != "datacrunch" || items[0].CloudID != "1H100.80S.30V" {
		t.Fatalf("filtered availability = %+v", items)
	}
}

func TestAvailabilityPageSizeTooLarge(t *testing.T) {
	e := newEnv(t, emu.Options{MaxPageSize: 10})
	c := e.client(t, func(c *ClientConfig) { c.PageSize = 50 })
	_, err := c.Availability(context.Background(), AvailabilityFilter{})
	backendtest.WantError(t, err, cloudprovider.ErrInvalid, "page_size")
}

func TestEmptyAvailabilityRetried(t *testing.T) {
	tests := []struct {
		name      string
		empties   int
		retries   int
		wantEmpty bool
		wantReqs  int
	}{
		{"flaky replica recovers", 2, 3, false, 3},
		{"empty is believed after retries", 10, 2, true, 3},
		{"retries off", 1, -1, true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, emu.Options{})
			if err := e.emu.SetCloudFaults(emu.CloudFaults{EmptyAvailability: tt.empties}); err != nil {
				t.Fatal(err)
			}
			c := e.client(t, func(c *ClientConfig) { c.EmptyRetries = tt.retries })
			items, err := c.Availability(context.Background(), AvailabilityFilter{GPUType: "L40S_48GB"})
			if err != nil {
				t.Fatal(err)
			}
			if (len(items) == 0) != tt.wantEmpty {
				t.Fatalf("got %d items, want empty=%v", len(items), tt.wantEmpty)
			}
			if got := e.Requests("GET /api/v1/availability/gpus"); got != tt.wantReqs {
				t.Fatalf("%d availability requests, want %d", got, tt.wantReqs)
			}
		})
	}
}

func TestEmptyAvailabilityStopsOnCancel(t *testing.T) {
	e := newEnv(t, emu.Options{})
	_ = e.emu.SetCloudFaults(emu.CloudFaults{EmptyAvailability: 100})
	c := e.client(t, func(c *ClientConfig) { c.EmptyRetries = 50; c.EmptyRetryWait = time.Hour })
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for e.Requests("GET /api/v1/availability/gpus") == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	if _, err := c.Availability(ctx, AvailabilityFilter{}); err == nil {
		t.Fatal("a cancelled wait must return an error")
	}
}

// TestRetries covers what the conformance suite does not: Prime's answers classified after the
// retries run out, a 404 never retried, and a create retried on 429 (the server did not act on it).
func TestRetries(t *testing.T) {
	tests := []struct {
		name     string
		faults   simulation.Faults
		call     func(*Client) error
		wantErr  bool
		wantKind cloudprovider.ErrorKind
		wantReqs int
	}{
		{"5xx storm longer than the retries", simulation.Faults{ServerErrors: 10},
			func(c *Client) error { _, err := c.Pods(context.Background()); return err }, true, cloudprovider.ErrOther, 5},
		{"404 not retried", simulation.Faults{},
			func(c *Client) error { _, err := c.Pod(context.Background(), "nope"); return err }, true, cloudprovider.ErrNotFound, 1},
		{"create retried on 429", simulation.Faults{RateLimited: 2},
			func(c *Client) error { _, err := c.CreatePod(context.Background(), validCreate()); return err }, false, 0, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, emu.Options{})
			_ = e.emu.SetFaults(tt.faults)
			c := e.client(t, nil)
			err := tt.call(c)
			if tt.wantErr {
				wantKind(t, err, tt.wantKind)
			} else if err != nil {
				t.Fatal(err)
			}
			if got := int(e.Count.Load()); got != tt.wantReqs {
				t.Fatalf("%d requests, want %d: %v", got, tt.wantReqs, e.Log())
			}
		})
	}
}

// validCreate is a create body for the default catalog's L4 offer.
func validCreate() CreatePodRequest {
	return CreatePodRequest{
		Pod:      PodSpec{Name: "pi-vm-x", CloudID: "NVIDIA L4", GPUType: "L4_24GB", Socket: "PCIe", GPUCount: 1, MaxPrice: 1, DataCenterID: "US-CA-2"},
		Provider: ProviderRef{Type: "runpod"},
	}
}

func TestAuthFailure(t *testing.T) {
	e := newEnv(t, emu.Options{})
	secret := "wrong-key-do-not-log"
	c := e.client(t, func(c *ClientConfig) { c.APIKey = secret })
	_, err := c.Availability(context.Background(), AvailabilityFilter{})
	backendtest.WantAuthError(t, err, secret)
	if e.Count.Load() != 1 {
		t.Fatalf("a 401 must not be retried: %d requests", e.Count.Load())
	}
	c = e.client(t, func(c *ClientConfig) { c.APIKey = "" })
	_, err = c.Pods(context.Background())
	wantKind(t, err, cloudprovider.ErrAuth)
}

func TestSharedRateLimit(t *testing.T) {
	e := newEnv(t, emu.Options{})
	c := e.client(t, func(c *ClientConfig) { c.RequestsPerSecond = 20; c.Burst = 1 })
	backendtest.WantSharedLimit(t, func() { _, _ = c.Pods(context.Background()) })
}

func TestPodLifecycleAndSSHForms(t *testing.T) {
	for _, asList := range []bool{false, true} {
		t.Run(map[bool]string{false: "string", true: "list"}[asList], func(t *testing.T) {
			e := newEnv(t, emu.Options{Options: simulation.Options{BootDuration: 40 * time.Second}, SSHAsList: asList, SSH: emukit.SSH{Host: "10.1.2.3", Port: 2222}})
			c := e.client(t, nil)
			ctx := context.Background()
			p, err := c.CreatePod(ctx, validCreate())
			if err != nil {
				t.Fatal(err)
			}
			if p.ID == "" || p.Status != "PROVISIONING" || p.SSHConnection != nil {
				t.Fatalf("new pod = %+v", p)
			}
			steps := []struct {
				advance     time.Duration
				wantStatus  string
				wantInstall string
				wantSSH     bool
			}{
				{15 * time.Second, "ACTIVE", "ACTIVE", false},   // ACTIVE before sshConnection: null
				{10 * time.Second, "ACTIVE", "FINISHED", false}, // finished, sshConnection [null]
				{20 * time.Second, "ACTIVE", "FINISHED", true},
			}
			for _, s := range steps {
				e.clock.Advance(s.advance)
				got, err := c.Pod(ctx, p.ID)
				if err != nil {
					t.Fatal(err)
				}
				ep := parseSSH(got.SSHConnection)
				if got.Status != s.wantStatus || got.InstallationStatus != s.wantInstall || (ep != nil) != s.wantSSH {
					t.Fatalf("after %v: %s/%s ssh=%v", s.advance, got.Status, got.InstallationStatus, got.SSHConnection)
				}
				if ep != nil && (ep.Host != "10.1.2.3" || ep.Port != 2222 || ep.User != "root") {
					t.Fatalf("ssh endpoint %+v", ep)
				}
			}
			st, err := c.PodStatuses(ctx, p.ID, "unknown-id")
			if err != nil {
				t.Fatal(err)
			}
			if len(st) != 1 || st[0].PodID != p.ID || parseSSH(st[0].SSHConnection) == nil {
				t.Fatalf("status endpoint = %+v", st)
			}
			if s, err := c.DeletePod(ctx, p.ID); err != nil || s != "DELETING" {
				t.Fatalf("delete = %q, %v", s, err)
			}
			e.clock.Advance(10 * time.Second)
			got, err := c.Pod(ctx, p.ID)
			if err != nil || got.Status != "TERMINATED" {
				t.Fatalf("after delete: %+v %v", got.Status, err)
			}
			_, err = c.DeletePod(ctx, p.ID)
			wantKind(t, err, cloudprovider.ErrNotFound)
			e.clock.Advance(2 * time.Minute)
			_, err = c.Pod(ctx, p.ID)
			wantKind(t, err, cloudprovider.ErrNotFound)
		})
	}
}

func TestCreateErrors(t *testing.T) {
	tests := []struct {
		name   string
		faults simulation.Faults
		cloud  emu.CloudFaults
		mut    func(*CreatePodRequest)
		want   cloudprovider.ErrorKind
		text   string
	}{
		{"capacity gone", simulation.Faults{SoldOut: true}, emu.CloudFaults{}, nil, cloudprovider.ErrCapacity, "No capacity"},
		{"stale cloudId", simulation.Faults{}, emu.CloudFaults{}, func(r *CreatePodRequest) { r.Pod.CloudID = "old-token" }, cloudprovider.ErrCapacity, "no longer available"},
		{"price above max", simulation.Faults{}, emu.CloudFaults{}, func(r *CreatePodRequest) { r.Pod.MaxPrice = 0.1 }, cloudprovider.ErrCapacity, "exceeds max price"},
		{"no balance", simulation.Faults{}, emu.CloudFaults{PaymentRequired: true}, nil, cloudprovider.ErrQuota, "Insufficient balance"},
		{"missing field", simulation.Faults{}, emu.CloudFaults{}, func(r *CreatePodRequest) { r.Pod.Socket = "" }, cloudprovider.ErrInvalid, "socket"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, emu.Options{})
			_ = e.emu.SetFaults(tt.faults)
			_ = e.emu.SetCloudFaults(tt.cloud)
			req := validCreate()
			if tt.mut != nil {
				tt.mut(&req)
			}
			_, err := e.client(t, nil).CreatePod(context.Background(), req)
			backendtest.WantError(t, err, tt.want, tt.text)
			if e.emu.CreateCount() != 0 {
				t.Fatal("a failed create made a pod")
			}
		})
	}
}

func TestNullMaxPriceRejected(t *testing.T) {
	e := newEnv(t, emu.Options{})
	c := e.client(t, nil)
	body := map[string]any{"pod": map[string]any{"name": "x", "cloudId": "NVIDIA L4", "gpuType": "L4_24GB", "socket": "PCIe", "gpuCount": 1, "maxPrice": nil},
		"provider": map[string]any{"type": "runpod"}}
	_, err := c.REST().Do(context.Background(), restclient.Request{Method: http.MethodPost, Path: "/api/v1/pods/", Body: body, NotIdempotent: true})
	err = classify("creating pod", err)
	backendtest.WantError(t, err, cloudprovider.ErrInvalid, "max_price not specified")
}

func TestSSHKeys(t *testing.T) {
	e := newEnv(t, emu.Options{})
	c := e.client(t, nil)
	ctx := context.Background()
	k, err := c.CreateSSHKey(ctx, "hydra", "ssh-ed25519 AAAAC3Nza test@host")
	if err != nil || k.ID == "" {
		t.Fatalf("create key: %+v %v", k, err)
	}
	keys, err := c.SSHKeys(ctx)
	if err != nil || len(keys) != 1 || keys[0].PublicKey != "ssh-ed25519 AAAAC3Nza test@host" {
		t.Fatalf("keys = %+v %v", keys, err)
	}
	_, err = c.CreateSSHKey(ctx, "bad", "not a key")
	wantKind(t, err, cloudprovider.ErrInvalid)
}

// TestSSHKeyAddSurvivesOne5xx: one 5xx on POST /ssh_keys, whether Prime stored the key or not, does
// not fail the create, and the key is registered once; a 5xx on every add still fails it.
func TestSSHKeyAddSurvivesOne5xx(t *testing.T) {
	backendtest.WantKeyAddSurvives5xx(t, "/api/v1/ssh_keys", func(t *testing.T, tr http.RoundTripper) (int, int, error) {
		ctx := context.Background()
		e := newEnv(t, emu.Options{})
		b := e.backend(t, func(c *Config) { c.Transport = tr })
		offers, err := b.Offers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, createErr := b.Create(ctx, createReq(findOffer(t, offers, "runpod", "L4_24GB", 1, false), "pi-vm-k"))
		keys, err := b.Client().SSHKeys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(keys), e.emu.CreateCount(), createErr
	})
}

func TestTrailingSlashPaths(t *testing.T) {
	e := newEnv(t, emu.Options{})
	c := e.client(t, nil)
	for _, p := range []string{"/api/v1/pods", "/api/v1/pods/", "/api/v1/availability/gpus/", "/api/v1/availability"} {
		if _, err := c.REST().Do(context.Background(), restclient.Request{Method: http.MethodGet, Path: p}); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
