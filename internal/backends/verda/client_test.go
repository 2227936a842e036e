package verda

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/verda"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

func TestTokenCachedRefreshedAndRenewed(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		// between runs something before the second call
		between      func(t *testing.T, f *fixture)
		wantCC       int // client_credentials grants after both calls
		wantRefresh  int // successful refresh grants
		wantTokenReq int // POST /oauth2/token requests in all
	}{
		{"cached while valid", func(_ *testing.T, f *fixture) { f.clock.Advance(30 * time.Minute) }, 1, 0, 1},
		{"refreshed shortly before expiry", func(_ *testing.T, f *fixture) { f.clock.Advance(59*time.Minute + 1*time.Second) }, 1, 1, 2},
		{"refreshed after expiry", func(_ *testing.T, f *fixture) { f.clock.Advance(2 * time.Hour) }, 1, 1, 2},
		{"new grant when the refresh token expired", func(_ *testing.T, f *fixture) { f.clock.Advance(25 * time.Hour) }, 2, 0, 3},
		{"new grant when the server revoked every token", func(t *testing.T, f *fixture) { check(t, f.srv.RevokeTokens()) }, 2, 0, 3},
		{"refresh when the server dropped the access token", func(t *testing.T, f *fixture) { check(t, f.srv.ExpireAccessTokens()) }, 1, 1, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := startEmulator(t, emu.Options{})
			c := f.client(t)
			if _, err := c.Locations(ctx); err != nil {
				t.Fatal(err)
			}
			tc.between(t, f)
			if _, err := c.Locations(ctx); err != nil {
				t.Fatalf("second call: %v", err)
			}
			if got := f.srv.GrantCount("client_credentials"); got != tc.wantCC {
				t.Errorf("client_credentials grants = %d, want %d", got, tc.wantCC)
			}
			if got := f.srv.GrantCount("refresh_token"); got != tc.wantRefresh {
				t.Errorf("refresh grants = %d, want %d", got, tc.wantRefresh)
			}
			if got := f.srv.RequestCount("POST /oauth2/token"); got != tc.wantTokenReq {
				t.Errorf("token requests = %d, want %d", got, tc.wantTokenReq)
			}
		})
	}
}

func TestTokenFormFallback(t *testing.T) {
	f := startEmulator(t, emu.Options{TokenFormOnly: true})
	if _, err := f.client(t).Locations(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := f.srv.RequestCount("POST /oauth2/token"); got != 2 {
		t.Errorf("token requests = %d, want 2 (JSON refused, then form)", got)
	}
}

func TestAuthFailures(t *testing.T) {
	f := startEmulator(t, emu.Options{})
	cfg := f.clientConfig()
	cfg.ClientSecret = "wrong-secret-do-not-print"
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Instances(context.Background(), "")
	backendtest.WantAuthError(t, err, "wrong-secret-do-not-print", emu.DefaultClientID)
	if !strings.Contains(err.Error(), "Invalid client credentials") {
		t.Errorf("server message lost: %v", err)
	}
	if got := f.srv.RequestCount("POST /oauth2/token"); got != 1 {
		t.Errorf("a 401 was retried: %d token requests", got)
	}
	if _, err := NewClient(ClientConfig{BaseURL: f.url}); err == nil {
		t.Error("missing credentials accepted")
	}
}

func TestCatalogAndAvailability(t *testing.T) {
	ctx := context.Background()
	f := startEmulator(t, emu.Options{})
	c := f.client(t)
	types, err := c.InstanceTypes(ctx, "usd")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]InstanceType{}
	for _, ty := range types {
		byName[ty.InstanceType] = ty
	}
	h := byName["1H100.80S.30V"]
	if h.PricePerHour != 2.65 || h.SpotPrice != 1.15 || h.Currency != "usd" || h.GPU.Description != "1x H100 SXM5 80GB" || h.Name != "H100 SXM5 80GB" {
		t.Errorf("H100 = %+v", h)
	}
	if _, hidden := byName["1A100.40S.22V"]; hidden {
		t.Error("hidden type listed in the catalog")
	}
	eur, err := c.InstanceTypes(ctx, "eur")
	if err != nil || len(eur) == 0 || eur[0].Currency != "eur" || eur[0].PricePerHour != 2.454 {
		t.Fatalf("eur catalog: %v %v", eur, err)
	}

	in := func(list []LocationAvailability, loc, typ string) bool {
		for _, l := range list {
			for _, a := range l.Availabilities {
				if l.LocationCode == loc && a == typ {
					return true
				}
			}
		}
		return false
	}
	onDemand, err := c.Availability(ctx, false, "")
	if err != nil {
		t.Fatal(err)
	}
	spot, err := c.Availability(ctx, true, "")
	if err != nil {
		t.Fatal(err)
	}
	if in(onDemand, "FIN-01", "1B200.30V") || !in(spot, "FIN-01", "1B200.30V") {
		t.Error("B200 should be spot-only in FIN-01")
	}
	if !in(onDemand, "FIN-01", "1A100.40S.22V") {
		t.Error("availability should list the type the catalog hides")
	}
	fin3, err := c.Availability(ctx, false, "FIN-03")
	if err != nil || len(fin3) != 1 || fin3[0].LocationCode != "FIN-03" {
		t.Errorf("location filter: %+v %v", fin3, err)
	}
	for _, tc := range []struct {
		typ  string
		spot bool
		want bool
	}{{"1B200.30V", true, true}, {"1B200.30V", false, false}, {"8B300.240V", false, false}, {"1H100.80S.30V", false, true}} {
		got, err := c.InstanceTypeAvailable(ctx, tc.typ, tc.spot, "")
		if err != nil || got != tc.want {
			t.Errorf("available(%s, spot=%v) = %v, %v; want %v", tc.typ, tc.spot, got, err, tc.want)
		}
	}
	imgs, err := c.Images(ctx, "1V100.6V")
	if err != nil || len(imgs) == 0 {
		t.Fatal(imgs, err)
	}
	for _, im := range imgs {
		if !strings.HasPrefix(im.ImageType, "ubuntu-22.04") {
			t.Errorf("V100 offered image %s", im.ImageType)
		}
	}
}

func TestSSHKeys(t *testing.T) {
	ctx := context.Background()
	f := startEmulator(t, emu.Options{})
	c := f.client(t)
	id, err := c.CreateSSHKey(ctx, "k1", testKey)
	if err != nil || len(id) != 36 {
		t.Fatalf("plain-text id: %q %v", id, err)
	}
	k, err := c.SSHKey(ctx, id)
	if err != nil || k.ID != id || k.Key != testKey || !strings.HasPrefix(k.Fingerprint, "SHA256:") {
		t.Errorf("one key (array answer): %+v %v", k, err)
	}
	keys, err := c.SSHKeys(ctx)
	if err != nil || len(keys) != 1 {
		t.Errorf("list: %+v %v", keys, err)
	}
	// An unknown key id is Verda's 400 invalid_request "Invalid ssh-key ID", not retried.
	_, err = c.SSHKey(ctx, "77fe26ba-e58d-4420-aab2-75e967b181b01")
	wantKind(t, err, cloudprovider.ErrInvalid)
	if got := f.srv.RequestCount("GET /ssh-keys/{id}"); got != 2 {
		t.Errorf("GET /ssh-keys/{id} requests = %d, want 2 (a 400 is not retried)", got)
	}
	_, err = c.CreateSSHKey(ctx, "bad", "not a key")
	wantKind(t, err, cloudprovider.ErrInvalid)
	if err := c.DeleteSSHKey(ctx, id); err != nil {
		t.Fatal(err)
	}
	if keys, _ := c.SSHKeys(ctx); len(keys) != 0 {
		t.Errorf("key not deleted: %+v", keys)
	}
}

func createReq(typ, loc string) CreateInstanceRequest {
	return CreateInstanceRequest{InstanceType: typ, Image: DefaultImage, Hostname: "verda-vm-test", Description: "verda-vm-test", LocationCode: loc}
}

func TestInstanceLifecycleContract(t *testing.T) {
	ctx := context.Background()
	f := startEmulator(t, emu.Options{})
	c := f.client(t)

	// location_code is required.
	_, err := c.CreateInstance(ctx, createReq("1H100.80S.30V", ""))
	backendtest.WantError(t, err, cloudprovider.ErrInvalid, "location_code")
	// Older GPUs refuse new images.
	_, err = c.CreateInstance(ctx, createReq("1V100.6V", "FIN-01"))
	backendtest.WantError(t, err, cloudprovider.ErrInvalid, "Operating system is not valid")
	// Unknown key ids are refused.
	r := createReq("1H100.80S.30V", "FIN-01")
	r.SSHKeyIDs = []string{"00000000-0000-4000-8000-000000000000"}
	_, err = c.CreateInstance(ctx, r)
	wantKind(t, err, cloudprovider.ErrInvalid)

	id, err := c.CreateInstance(ctx, createReq("1H100.80S.30V", "FIN-01"))
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		advance time.Duration
		status  string
		ip      bool
	}{
		{0, "ordered", false},
		{bootTime / 2, "provisioning", false},
		{bootTime, "running", true},
	}
	for _, s := range steps {
		f.clock.Advance(s.advance)
		in, err := c.Instance(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if in.Status != s.status || (in.IP != nil) != s.ip {
			t.Fatalf("after %v: status %q ip %v; want %q ip %v", s.advance, in.Status, in.IP, s.status, s.ip)
		}
		if in.Hostname != "verda-vm-test" || in.Location != "FIN-01" || in.PricePerHour != 2.65 || in.GPU.NumberOfGPUs != 1 {
			t.Errorf("instance = %+v", in)
		}
	}
	list, err := c.Instances(ctx, "")
	if err != nil || len(list) != 1 || list[0].ID != id {
		t.Fatalf("list: %+v %v", list, err)
	}
	if running, _ := c.Instances(ctx, "ordered"); len(running) != 0 {
		t.Errorf("status filter ignored")
	}
	res, err := c.InstanceAction(ctx, InstanceActionRequest{ID: []string{id}, Action: "delete"})
	if err != nil || res != nil { // 202 with an empty body, as recorded
		t.Fatalf("delete: %+v %v", res, err)
	}
	in, err := c.Instance(ctx, id)
	if err != nil || in.Status != "discontinued" {
		t.Errorf("deleted instance should stay readable as discontinued: %+v %v", in, err)
	}
	if list, _ := c.Instances(ctx, ""); len(list) != 0 {
		t.Errorf("discontinued instance still listed: %+v", list)
	}
	// Deleting again: forbidden_action.
	_, err = c.InstanceAction(ctx, InstanceActionRequest{ID: []string{id}, Action: "delete"})
	wantKind(t, err, cloudprovider.ErrInvalid)
	if re, ok := asResponseError(err); !ok || re.Code != CodeForbiddenAction || !re.MessageHas(msgAlreadyDiscontinued) {
		t.Errorf("want forbidden_action, got %v", err)
	}
	// Unknown instance: Verda answers 400 invalid_request "Invalid instance id", which is not found,
	// for reads and actions.
	_, err = c.Instance(ctx, "00000000-0000-4000-8000-000000000000")
	wantKind(t, err, cloudprovider.ErrNotFound)
	_, err = c.InstanceAction(ctx, InstanceActionRequest{ID: []string{"00000000-0000-4000-8000-000000000000"}, Action: "delete"})
	wantKind(t, err, cloudprovider.ErrNotFound)
}

func TestDeleteProvisioningForbiddenAndPartial(t *testing.T) {
	ctx := context.Background()
	f := startEmulator(t, emu.Options{})
	c := f.client(t)
	a, err := c.CreateInstance(ctx, createReq("1H100.80S.30V", "FIN-01"))
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(bootTime / 2) // provisioning
	_, err = c.InstanceAction(ctx, InstanceActionRequest{ID: []string{a}, Action: "delete"})
	if re, ok := asResponseError(err); !ok || re.Code != CodeForbiddenAction || !re.MessageHas(msgProvisioning) {
		t.Fatalf("want forbidden_action for a provisioning instance, got %v", err)
	}
	f.clock.Advance(bootTime)
	// Two ids, one unknown: 207 with a per-instance error.
	res, err := c.InstanceAction(ctx, InstanceActionRequest{ID: []string{a, "00000000-0000-4000-8000-000000000000"}, Action: "delete"})
	if err != nil || len(res) != 2 {
		t.Fatalf("partial: %+v %v", res, err)
	}
	if res[0].Error != "" || res[1].Error != "Invalid instance id" || res[1].StatusCode != http.StatusBadRequest {
		t.Errorf("partial results: %+v", res)
	}
}

func TestCreateCapacity503(t *testing.T) {
	ctx := context.Background()
	f := startEmulator(t, emu.Options{})
	c := f.client(t)
	// FIN-03 holds one 8H100.
	if _, err := c.CreateInstance(ctx, createReq("8H100.80S.176V", "FIN-03")); err != nil {
		t.Fatal(err)
	}
	_, err := c.CreateInstance(ctx, createReq("8H100.80S.176V", "FIN-03"))
	wantKind(t, err, cloudprovider.ErrCapacity)
	if !strings.Contains(err.Error(), "Not enough resources to deploy a 8 GPU instance type 8H100.80S.176V in FIN-03") || !strings.Contains(err.Error(), "503") {
		t.Errorf("message: %v", err)
	}
	if got := f.srv.RequestCount("POST /instances"); got != 2 {
		t.Errorf("a 503 create was retried: %d requests", got)
	}
}

// TestTokenCallRetriedOn5xx: the OAuth token request is a read as far as retries go.
func TestTokenCallRetriedOn5xx(t *testing.T) {
	f := startEmulator(t, emu.Options{})
	f.setFaults(t, simulation.Faults{ServerErrors: 2}) // the fresh client's first requests are token requests
	if _, err := f.client(t).Locations(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := f.srv.RequestCount("POST /oauth2/token"); got != 3 {
		t.Errorf("token requests = %d, want 3", got)
	}
}

// TestCreateInstanceRetries: POST /instances (plain-text id) is retried on 429 only; a 5xx or a lost
// answer is the caller's to resolve.
func TestCreateInstanceRetries(t *testing.T) {
	ctx := context.Background()
	f := startEmulator(t, emu.Options{})
	c := f.client(t)
	if _, err := c.Locations(ctx); err != nil { // take the token first
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		faults      simulation.Faults
		wantReqs    int
		wantErr     bool
		wantCreated int
	}{
		{"retried on 429", simulation.Faults{RateLimited: 2}, 3, false, 1},
		{"not retried on 5xx", simulation.Faults{ServerErrors: 3}, 1, true, 1},
		{"a lost answer is not retried", simulation.Faults{LoseCreateResponses: 1}, 1, true, 2},
	}
	for _, tc := range tests {
		before := f.srv.RequestCount("POST /instances")
		f.setFaults(t, tc.faults)
		id, err := c.CreateInstance(ctx, createReq("1H100.80S.30V", "FIN-01"))
		if tc.wantErr {
			wantKind(t, err, cloudprovider.ErrOther)
		} else if err != nil || id == "" {
			t.Fatalf("%s: %q, %v", tc.name, id, err)
		}
		if got := f.srv.RequestCount("POST /instances") - before; got != tc.wantReqs {
			t.Errorf("%s: %d requests, want %d", tc.name, got, tc.wantReqs)
		}
		if got := f.srv.CreateCount(); got != tc.wantCreated {
			t.Errorf("%s: %d created, want %d", tc.name, got, tc.wantCreated)
		}
		f.setFaults(t, simulation.Faults{})
	}
}

// check fails the test on an emulator admin call's error.
func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestInstanceActionBodies: a 202 to PUT /instances is read in every form Verda and its SDKs show: an
// empty body (recorded), a result per instance (reference 1.6), one result object, and no content.
func TestInstanceActionBodies(t *testing.T) {
	const id = "deadc0de-a5d2-4972-ae4e-d429115d055b"
	tests := []struct {
		name   string
		status int
		body   string
		want   int // results
	}{
		{"empty body (recorded)", http.StatusAccepted, "", 0},
		{"null", http.StatusAccepted, "null", 0},
		{"array", http.StatusAccepted, `[{"action":"delete","instanceId":"` + id + `","status":"success"}]`, 1},
		{"one object", http.StatusAccepted, `{"action":"delete","instanceId":"` + id + `","status":"success"}`, 1},
		{"no content", http.StatusNoContent, "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var rec recorded
			rec.Response.Status = tc.status
			rec.Response.Body = json.RawMessage("null")
			if tc.body != "" {
				rec.Response.Body = json.RawMessage(tc.body)
			}
			res, err := replayClient(t, replay(t, rec)).InstanceAction(context.Background(), InstanceActionRequest{ID: []string{id}, Action: "delete"})
			if err != nil || len(res) != tc.want || (tc.want == 1 && (res[0].InstanceID != id || res[0].Error != "")) {
				t.Errorf("got %+v, %v; want %d results", res, err, tc.want)
			}
		})
	}
}
