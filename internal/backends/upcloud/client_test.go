package upcloud

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/upcloud"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

func testCreateBody(name, plan, zone string) CreateServer {
	cs := CreateServer{
		Zone: zone, Title: name, Hostname: name, Plan: plan, Metadata: true, PasswordDelivery: "none",
		Labels:    Labels{{Key: NameLabel, Value: name}},
		LoginUser: &LoginUser{Username: "root"},
	}
	cs.LoginUser.SSHKeys.SSHKey = []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHydraTestKey hydra@test"}
	cs.StorageDevices.StorageDevice = []CreateStorageDevice{{Action: "clone", Storage: emu.GPUTemplateUUID, Title: name + "-disk", Size: 50, Tier: "maxiops"}}
	return cs
}

func TestClientAuth(t *testing.T) {
	_, base := startEmulator(t, emu.Options{})
	ctx := context.Background()
	cases := []struct {
		name   string
		mod    func(*ClientConfig)
		wantOK bool
	}{
		{"basic", func(c *ClientConfig) {}, true},
		{"bearer", func(c *ClientConfig) { c.Username, c.Password, c.Token = "", "", testToken }, true},
		{"wrong password", func(c *ClientConfig) { c.Password = "wrong-password-xyz" }, false},
		{"wrong token", func(c *ClientConfig) { c.Username, c.Password, c.Token = "", "", "wrong-token-xyz" }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fastClientConfig(base)
			tc.mod(&cfg)
			ct := &countingTransport{next: http.DefaultTransport}
			cfg.Transport = ct
			c := newTestClient(t, cfg)
			_, err := c.ListPlans(ctx)
			if tc.wantOK {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if cloudprovider.KindOf(err) != cloudprovider.ErrAuth {
				t.Fatalf("err = %v, want kind auth", err)
			}
			if !strings.Contains(err.Error(), "AUTHENTICATION_FAILED") {
				t.Errorf("error lost UpCloud's code: %v", err)
			}
			for _, secret := range []string{"wrong-password-xyz", "wrong-token-xyz", testPass, testToken} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error leaks a credential: %v", err)
				}
			}
			if n := ct.n.Load(); n != 1 {
				t.Errorf("a 401 was retried: %d attempts", n)
			}
		})
	}
}

func TestClientCatalogEndpoints(t *testing.T) {
	_, base := startEmulator(t, emu.Options{})
	c := newTestClient(t, fastClientConfig(base))
	ctx := context.Background()

	zones, err := c.ListZones(ctx)
	if err != nil || len(zones) == 0 {
		t.Fatalf("zones: %v %v", zones, err)
	}
	plans, err := c.ListPlans(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var gpu *Plan
	for i := range plans {
		if plans[i].Name == "GPU-8xCPU-64GB-1xL40S" {
			gpu = &plans[i]
		}
	}
	if gpu == nil || gpu.GPUModel != "NVIDIA L40S" || gpu.GPUAmount != 1 || gpu.StorageSize != 0 || gpu.StorageTier != nil ||
		gpu.CurrentOffering == nil || !bool(*gpu.CurrentOffering) {
		t.Fatalf("GPU plan: %+v", gpu)
	}
	prices, err := c.ListPrices(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, z := range prices.Prices.Zone {
		if z.Name == "fi-hel2" {
			it := z.Items[PlanPriceKey("GPU-8xCPU-64GB-1xL40S")]
			found = it.Price == 111.1607 && it.Amount == 1
		}
	}
	if !found {
		t.Errorf("price of the L40S plan in fi-hel2 not read in cents")
	}
	av, err := c.DeviceAvailability(ctx)
	if err != nil || av["fi-hel2"].GPUPlans["GPU-8xCPU-64GB-1xL40S"].Amount != 6 {
		t.Errorf("availability %+v %v", av, err)
	}
	acct, err := c.GetAccount(ctx)
	if err != nil || acct.Account.ResourceLimits["gpus"] == nil {
		t.Errorf("account %+v %v", acct, err)
	}
	tmpls, err := c.ListTemplates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := pickTemplate(tmpls, "")
	if err != nil || tmpl.UUID != emu.GPUTemplateUUID || tmpl.TemplateType != "cloud-init" {
		t.Errorf("picked template %+v %v", tmpl, err)
	}
}

func TestClientServerLifecycle(t *testing.T) {
	clock := newFakeClock()
	srv, base := startEmulator(t, emu.Options{Options: simulation.Options{Now: clock.Now, BootDuration: 30 * time.Second}, StopDuration: 5 * time.Second})
	c := newTestClient(t, fastClientConfig(base))
	ctx := context.Background()

	created, err := c.CreateServerRequest(ctx, testCreateBody("upcloud-vm-a", "GPU-8xCPU-64GB-1xL40S", "fi-hel2"))
	if err != nil {
		t.Fatal(err)
	}
	if created.State != "maintenance" || created.UUID == "" || created.CoreNumber != 8 || created.Username != "root" {
		t.Fatalf("create answered %+v", created)
	}
	clock.Advance(10 * time.Second)
	got, err := c.GetServer(ctx, created.UUID)
	if err != nil || got.State != "maintenance" || got.Progress <= 0 {
		t.Fatalf("mid-boot: %+v %v", got, err)
	}
	clock.Advance(30 * time.Second)
	got, err = c.GetServer(ctx, created.UUID)
	if err != nil || got.State != "started" || got.PublicIPv4() == "" || len(got.Devices.Device) != 1 {
		t.Fatalf("booted: %+v %v", got, err)
	}
	if got.Metadata == nil || !bool(*got.Metadata) {
		t.Errorf("metadata not read as yes")
	}

	// Delete of a started server is refused.
	err = c.DeleteServer(ctx, created.UUID)
	var ae *APIError
	if !errors.As(err, &ae) || ae.Code != "SERVER_STATE_ILLEGAL" || cloudprovider.KindOf(err) != cloudprovider.ErrInvalid {
		t.Fatalf("delete while started: %v", err)
	}
	// Stop answers with the old state.
	stopped, err := c.StopServer(ctx, created.UUID, "hard", time.Minute)
	if err != nil || stopped.State != "started" {
		t.Fatalf("stop answered %+v %v", stopped, err)
	}
	clock.Advance(6 * time.Second)
	got, err = c.GetServer(ctx, created.UUID)
	if err != nil || got.State != "stopped" {
		t.Fatalf("after stop: %+v %v", got, err)
	}
	if _, err := c.StopServer(ctx, created.UUID, "hard", time.Minute); cloudprovider.KindOf(err) != cloudprovider.ErrInvalid {
		t.Errorf("stop of a stopped server: %v", err)
	}
	// Start and stop again work as in the recorded traffic.
	if s, err := c.StartServer(ctx, created.UUID); err != nil || s.State != "started" {
		t.Fatalf("start: %+v %v", s, err)
	}
	if _, err := c.StopServer(ctx, created.UUID, "soft", time.Minute); err != nil {
		t.Fatal(err)
	}
	clock.Advance(6 * time.Second)

	if n := srv.StorageCount(); n != 1 {
		t.Fatalf("storage count %d", n)
	}
	if err := c.DeleteServer(ctx, created.UUID); err != nil {
		t.Fatal(err)
	}
	if n := srv.StorageCount(); n != 0 {
		t.Errorf("?storages=1 left %d disks", n)
	}
	_, err = c.GetServer(ctx, created.UUID)
	if !errors.As(err, &ae) || ae.Code != "SERVER_NOT_FOUND" || !cloudprovider.IsNotFound(err) {
		t.Fatalf("get after delete: %v", err)
	}
	if err := c.DeleteServer(ctx, created.UUID); !cloudprovider.IsNotFound(err) {
		t.Errorf("second delete: %v", err)
	}
	if _, err := c.GetServer(ctx, "invalid"); cloudprovider.KindOf(err) != cloudprovider.ErrInvalid {
		t.Errorf("invalid uuid: %v", err)
	}
}

func TestClientCreateErrors(t *testing.T) {
	srv, base := startEmulator(t, emu.Options{})
	c := newTestClient(t, fastClientConfig(base))
	ctx := context.Background()
	cases := []struct {
		name string
		mod  func(*CreateServer)
		code string
		kind cloudprovider.ErrorKind
	}{
		{"no disk size for a GPU plan", func(cs *CreateServer) { cs.StorageDevices.StorageDevice[0].Size = 0 }, "SIZE_MISSING", cloudprovider.ErrInvalid},
		{"disk smaller than template", func(cs *CreateServer) { cs.StorageDevices.StorageDevice[0].Size = 10 }, "SIZE_INVALID", cloudprovider.ErrInvalid},
		{"unknown template", func(cs *CreateServer) {
			cs.StorageDevices.StorageDevice[0].Storage = "01000000-0000-4000-8000-000099999999"
		}, "STORAGE_NOT_FOUND", cloudprovider.ErrInvalid},
		{"cloud-init without metadata", func(cs *CreateServer) { cs.Metadata = false }, "METADATA_DISABLED_ON_CLOUD-INIT", cloudprovider.ErrInvalid},
		{"unknown zone", func(cs *CreateServer) { cs.Zone = "xx-nowhere1" }, "ZONE_NOT_FOUND", cloudprovider.ErrInvalid},
		{"plan not sold in zone", func(cs *CreateServer) { cs.Zone = "nl-ams1" }, "PLAN_INVALID", cloudprovider.ErrInvalid},
		{"no ssh keys", func(cs *CreateServer) { cs.LoginUser.SSHKeys.SSHKey = nil }, "LOGIN_USER_INVALID", cloudprovider.ErrInvalid},
		{"no stock", func(cs *CreateServer) { cs.Plan = "GPU-48xCPU-960GB-4xH100" }, "SERVER_RESOURCES_UNAVAILABLE", cloudprovider.ErrCapacity},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs := testCreateBody("upcloud-vm-err", "GPU-8xCPU-64GB-1xL40S", "fi-hel2")
			tc.mod(&cs)
			_, err := c.CreateServerRequest(ctx, cs)
			var ae *APIError
			if !errors.As(err, &ae) || ae.Code != tc.code || ae.Message == "" {
				t.Fatalf("err = %v, want code %s", err, tc.code)
			}
			if k := cloudprovider.KindOf(err); k != tc.kind {
				t.Errorf("kind %v, want %v", k, tc.kind)
			}
		})
	}
	if n := srv.CreateCount(); n != 0 {
		t.Errorf("%d servers created by failing requests", n)
	}
}

func TestClientListServersPagingAndLabels(t *testing.T) {
	_, base := startEmulator(t, emu.Options{})
	c := newTestClient(t, fastClientConfig(base))
	ctx := context.Background()
	old := listPageSize
	listPageSize = 2
	t.Cleanup(func() { listPageSize = old })
	for _, n := range []string{"upcloud-vm-a", "upcloud-vm-b", "upcloud-vm-c", "other-d", "other-e"} {
		cs := testCreateBody(n, "GPU-SPOT-8xCPU-64GB-1xL4", "fi-hel2")
		if n == "other-e" {
			cs.Labels = nil
		}
		if _, err := c.CreateServerRequest(ctx, cs); err != nil {
			t.Fatal(err)
		}
	}
	all, err := c.ListServers(ctx)
	if err != nil || len(all) != 5 {
		t.Fatalf("listed %d servers over pages of 2: %v", len(all), err)
	}
	seen := map[string]bool{}
	for _, s := range all {
		if seen[s.UUID] {
			t.Errorf("server %s listed twice", s.UUID)
		}
		seen[s.UUID] = true
		if s.CoreNumber != 8 || s.State != "maintenance" {
			t.Errorf("summary %+v", s)
		}
	}
	labelled, err := c.ListServers(ctx, NameLabel)
	if err != nil || len(labelled) != 4 {
		t.Fatalf("label filter: %d %v", len(labelled), err)
	}
	one, err := c.ListServers(ctx, NameLabel+"=upcloud-vm-b")
	if err != nil || len(one) != 1 || one[0].Title != "upcloud-vm-b" {
		t.Fatalf("label=value filter: %+v %v", one, err)
	}
}

// TestClientGivesUpInUpCloudsShape: once the retries of a persistent 5xx run out, the error is an
// unknown outcome that keeps UpCloud's status and error code. (Retries themselves are in the
// conformance suite.)
func TestClientGivesUpInUpCloudsShape(t *testing.T) {
	srv, base := startEmulator(t, emu.Options{})
	cfg := fastClientConfig(base)
	ct := &countingTransport{next: http.DefaultTransport}
	cfg.Transport = ct
	c := newTestClient(t, cfg)
	_ = srv.SetCloudFaults(emu.Faults{Faults: simulation.Faults{ServerErrors: 100}, ServerErrorStatus: 502})
	_, err := c.ListPrices(context.Background())
	var ae *APIError
	if cloudprovider.KindOf(err) != cloudprovider.ErrOther || !errors.As(err, &ae) || ae.Status != 502 || ae.Code != "SERVICE_UNAVAILABLE" {
		t.Fatalf("err = %v", err)
	}
	if n := ct.n.Load(); n != 5 {
		t.Errorf("%d attempts, want 5 (RetryMax 4)", n)
	}
}

func TestClientSharedRateLimit(t *testing.T) {
	_, base := startEmulator(t, emu.Options{})
	cfg := fastClientConfig(base)
	cfg.RequestsPerSecond, cfg.Burst = 20, 1
	c := newTestClient(t, cfg)
	backendtest.WantSharedLimit(t, func() {
		if _, err := c.ListZones(context.Background()); err != nil {
			t.Error(err)
		}
	})
}

// listRequests counts the GET /server listings in a request log ("GET /1.3/server" and the SDK's
// "GET /1.3/server/" with label filters), not the reads of single servers.
func listRequests(l *backendtest.RequestLog) int {
	n := 0
	for _, e := range l.Log() {
		if strings.HasPrefix(e, "GET /1.3/server ") || strings.HasPrefix(e, "GET /1.3/server/ ") {
			n++
		}
	}
	return n
}

// createServers makes n servers named <prefix><i> on a general-purpose plan (no GPU stock needed).
func createServers(t *testing.T, c *Client, prefix string, n int) {
	t.Helper()
	for i := range n {
		cs := testCreateBody(fmt.Sprintf("%s%03d", prefix, i), "1xCPU-1GB", "fi-hel2")
		if _, err := c.CreateServerRequest(context.Background(), cs); err != nil {
			t.Fatal(err)
		}
	}
}

// The API may ignore limit and offset (UpCloud's SDK never sends them): listing 150 servers then
// returns each once in a bounded number of requests, where following offsets would re-read the first
// page until the page limit.
func TestClientListServersWhenPagingIsIgnored(t *testing.T) {
	for _, tc := range []struct {
		name         string
		ignore       bool
		labels       []string
		want         int
		wantRequests int
	}{
		{"paging honoured", false, nil, 150, 2},
		{"paging ignored", true, nil, 150, 2},
		{"paging ignored, label filter", true, []string{NameLabel}, 150, 2},
		{"paging ignored, one name", true, []string{NameLabel + "=upcloud-vm-p042"}, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := emu.New(emu.Options{Username: testUser, Password: testPass, IgnorePaging: tc.ignore})
			log := backendtest.NewRequestLog(t, srv)
			c := newTestClient(t, fastClientConfig(log.URL+emu.APIPrefix))
			createServers(t, c, "upcloud-vm-p", 150)
			got, err := c.ListServers(context.Background(), tc.labels...)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for _, s := range got {
				if seen[s.UUID] {
					t.Errorf("server %s listed twice", s.UUID)
				}
				seen[s.UUID] = true
			}
			if len(got) != tc.want || len(seen) != tc.want {
				t.Errorf("listed %d servers (%d distinct), want %d", len(got), len(seen), tc.want)
			}
			if n := listRequests(log); n != tc.wantRequests {
				t.Errorf("%d list requests, want %d: %v", n, tc.wantRequests, log.Log())
			}
		})
	}
}

// An API that honours limit but ignores offset answers the first page again: the listing stops there
// and asks once without limit and offset, as UpCloud's SDK lists.
func TestClientListServersWhenOffsetIsIgnored(t *testing.T) {
	var servers []map[string]any
	for i := range 150 {
		servers = append(servers, map[string]any{"uuid": fmt.Sprintf("00000000-0000-4000-a000-%012d", i), "title": fmt.Sprintf("s%d", i), "state": "started"})
	}
	var paged, unpaged int
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		list := servers
		if l, err := strconv.Atoi(r.URL.Query().Get("limit")); err == nil {
			paged++
			list = list[:min(l, len(list))] // offset ignored
		} else {
			unpaged++
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"servers": map[string]any{"server": list}})
	})
	c := newTestClient(t, fastClientConfig(backendtest.Serve(t, h)))
	got, err := c.ListServers(context.Background())
	if err != nil || len(got) != 150 {
		t.Fatalf("listed %d servers: %v", len(got), err)
	}
	if paged != 2 || unpaged != 1 {
		t.Errorf("%d paged and %d unpaged requests, want 2 and 1", paged, unpaged)
	}
}

// The backend's List filters by hydra's label at UpCloud and, with paging ignored, still finds every
// one of 150 machines once, in two listings.
func TestBackendListWhenPagingIsIgnored(t *testing.T) {
	srv := emu.New(emu.Options{Username: testUser, Password: testPass, IgnorePaging: true})
	log := backendtest.NewRequestLog(t, srv)
	c := newTestClient(t, fastClientConfig(log.URL+emu.APIPrefix))
	createServers(t, c, "upcloud-vm-l", 150)
	other := testCreateBody("upcloud-vm-unlabelled", "1xCPU-1GB", "fi-hel2")
	other.Labels = nil
	if _, err := c.CreateServerRequest(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	b := newTestBackend(t, log.URL+emu.APIPrefix, nil)
	list, err := b.List(context.Background(), "upcloud-vm-")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, inst := range list {
		names[inst.Name] = true
	}
	if len(list) != 150 || len(names) != 150 {
		t.Errorf("List found %d machines (%d names), want the 150 labelled ones once", len(list), len(names))
	}
	if n := listRequests(log); n != 2 {
		t.Errorf("%d list requests, want 2", n)
	}
	for _, e := range log.Log() {
		if strings.HasPrefix(e, "GET /1.3/server ") {
			t.Errorf("an unfiltered listing: %s", e)
		}
	}
}

// Every safe call (reads, and writes that are safe to repeat) goes through the shared client's retries:
// one 503 costs one more attempt, not the call. A create is retried on 429 only.
func TestClientRetriesSafeCalls(t *testing.T) {
	clock := newFakeClock()
	srv, base := startEmulator(t, emu.Options{Options: simulation.Options{Now: clock.Now, BootDuration: time.Second}, StopDuration: time.Second})
	cfg := fastClientConfig(base)
	ct := &countingTransport{next: http.DefaultTransport}
	cfg.Transport = ct
	c := newTestClient(t, cfg)
	ctx := context.Background()
	created, err := c.CreateServerRequest(ctx, testCreateBody("upcloud-vm-retry", "GPU-8xCPU-64GB-1xL4", "fi-hel2"))
	if err != nil {
		t.Fatal(err)
	}
	id := created.UUID
	clock.Advance(2 * time.Second) // started
	labels := Labels{{Key: NameLabel, Value: "upcloud-vm-retry"}}
	cases := []struct {
		name  string
		match string
		call  func() error
		after func() // moves the server on for the next case
	}{
		{"zones", "GET /zone", func() error { _, err := c.ListZones(ctx); return err }, nil},
		{"plans", "GET /plan", func() error { _, err := c.ListPlans(ctx); return err }, nil},
		{"prices", "GET /price", func() error { _, err := c.ListPrices(ctx); return err }, nil},
		{"availability", "GET /device/availability", func() error { _, err := c.DeviceAvailability(ctx); return err }, nil},
		{"account", "GET /account", func() error { _, err := c.GetAccount(ctx); return err }, nil},
		{"templates", "GET /storage/template", func() error { _, err := c.ListTemplates(ctx); return err }, nil},
		{"list servers", "GET /server/", func() error { _, err := c.ListServers(ctx, NameLabel); return err }, nil},
		{"get server", "GET /server/" + id, func() error { _, err := c.GetServer(ctx, id); return err }, nil},
		{"modify server", "PUT /server/" + id, func() error { _, err := c.ModifyServer(ctx, id, ModifyServer{Labels: &labels}); return err }, nil},
		{"stop server", "POST /server/" + id + "/stop", func() error { _, err := c.StopServer(ctx, id, "hard", time.Minute); return err },
			func() { clock.Advance(2 * time.Second) }},
		{"start server", "POST /server/" + id + "/start", func() error { _, err := c.StartServer(ctx, id); return err },
			func() {
				if _, err := c.StopServer(ctx, id, "hard", time.Minute); err != nil {
					t.Fatal(err)
				}
				clock.Advance(2 * time.Second)
			}},
		{"delete server", "DELETE /server/" + id, func() error { return c.DeleteServer(ctx, id) }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := srv.SetCloudFaults(emu.Faults{Faults: simulation.Faults{ServerErrors: 1}, Match: tc.match}); err != nil {
				t.Fatal(err)
			}
			before := ct.n.Load()
			if err := tc.call(); err != nil {
				t.Fatalf("one 503 failed the call: %v", err)
			}
			if n := ct.n.Load() - before; n != 2 {
				t.Errorf("%d attempts, want 2 (one retry)", n)
			}
			if f, _ := srv.CloudFaults(); f.ServerErrors != 0 {
				t.Errorf("the armed 503 never fired (match %q)", tc.match)
			}
			if tc.after != nil {
				tc.after()
			}
		})
	}
	t.Run("create", func(t *testing.T) {
		cs := testCreateBody("upcloud-vm-retry2", "GPU-8xCPU-64GB-1xL4", "fi-hel2")
		_ = srv.SetCloudFaults(emu.Faults{Faults: simulation.Faults{ServerErrors: 1}, Match: "POST /server"})
		before := ct.n.Load()
		if _, err := c.CreateServerRequest(ctx, cs); cloudprovider.KindOf(err) != cloudprovider.ErrOther || ct.n.Load()-before != 1 {
			t.Errorf("a 503 on create: %v after %d attempts, want ErrOther after 1", err, ct.n.Load()-before)
		}
		_ = srv.SetCloudFaults(emu.Faults{Faults: simulation.Faults{RateLimited: 1}, Match: "POST /server"})
		before = ct.n.Load()
		if _, err := c.CreateServerRequest(ctx, cs); err != nil || ct.n.Load()-before != 2 {
			t.Errorf("a 429 on create: %v after %d attempts, want success after 2", err, ct.n.Load()-before)
		}
	})
}
