package conformance

import (
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/atlas"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/lambda"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/mithril"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/primeintellect"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/upcloud"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/verda"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	atlasemu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/atlas"
	lambdaemu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/lambda"
	mithrilemu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/mithril"
	primeemu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/primeintellect"
	upcloudemu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/upcloud"
	verdaemu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/verda"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// Harnesses are the harnesses of every cloud with one, by cloud name (Cloud set): each Start serves a
// fresh emulator over real HTTP on loopback (the sandbox: in process, over a directory of its own,
// without SSH machines), whose machines boot and terminate within a second, and builds the cloud's
// backend against it with the test inventory (backendtest.Inventory). Other packages' tests start
// their emulated clouds with them too.
func Harnesses() map[string]Harness {
	out := make(map[string]Harness, len(harnesses))
	for cloud, h := range harnesses {
		h.Cloud = cloud
		out[cloud] = h
	}
	return out
}

// Start starts cloud's emulator and backend with its harness; a cloud without one fails t.
func Start(t *testing.T, cloud string) (cloudprovider.InstanceManagerBackend, simulation.Admin) {
	t.Helper()
	h, ok := harnesses[cloud]
	if !ok {
		t.Fatalf("no conformance harness for cloud %q", cloud)
	}
	return h.Start(t)
}

// fast is a client tuning with quick retries: Retry-After (1 s in the suite) is honoured up to 2 s.
func fast() restclient.Tuning {
	tuning := backendtest.Tuning(10*time.Millisecond, 2*time.Second)
	tuning.Timeout = 10 * time.Second
	return tuning
}

// harnesses are the harnesses by cloud name (Harnesses sets their Cloud).
var harnesses = map[string]Harness{
	atlas.CloudName: {Start: func(t *testing.T) (cloudprovider.InstanceManagerBackend, simulation.Admin) {
		srv := atlasemu.New(atlasemu.Options{Options: simulation.Options{BootDuration: 300 * time.Millisecond}, DeleteDuration: 200 * time.Millisecond})
		cfg := atlas.Config{BaseURL: backendtest.Start(t, srv.Start), Token: atlasemu.DefaultToken, Tuning: fast()}
		return backendtest.Must(atlas.New(cfg, backendtest.Inventory(t), nil))(t), srv
	}},
	// Lambda has no labels, so ownership is carried by the name alone (the confirmation case is skipped).
	lambda.CloudName: {Start: func(t *testing.T) (cloudprovider.InstanceManagerBackend, simulation.Admin) {
		srv := lambdaemu.New(lambdaemu.Options{Options: simulation.Options{BootDuration: 400 * time.Millisecond}, TerminateDuration: 200 * time.Millisecond, LaunchInterval: -1})
		cfg := lambda.Config{APIKey: lambdaemu.DefaultAPIKey, BaseURL: backendtest.Serve(t, srv) + lambdaemu.BasePath,
			Tuning: backendtest.Tuning(time.Millisecond, 50*time.Millisecond), LaunchInterval: -1,
			// A failed boot is unhealthy, pending for the grace, then an error: a short grace on the real
			// clock (TestUnhealthyGrace tests the default one on a fake clock).
			UnhealthyGrace: 300 * time.Millisecond}
		return backendtest.Must(lambda.New(cfg, backendtest.Inventory(t), nil))(t), srv
	}},
	// Mithril's bids are allocated at once (the default catalog has free capacity), its machines boot
	// in 300 ms and its cancelled bids' machines terminate at once.
	mithril.CloudName: {
		Start: func(t *testing.T) (cloudprovider.InstanceManagerBackend, simulation.Admin) {
			srv := mithrilemu.New(mithrilemu.Options{Options: simulation.Options{BootDuration: 300 * time.Millisecond}, PreemptionWindow: time.Second})
			cfg := mithril.Config{APIKey: mithrilemu.DefaultAPIKey, Project: mithrilemu.DefaultProject,
				BaseURL: backendtest.Start(t, srv.Start), Tuning: fast()}
			return backendtest.Must(mithril.New(cfg, backendtest.Inventory(t), nil))(t), srv
		},
		Offer: winningBid,
	},
	// The default offer (the cheapest eligible on-demand one) fits Prime: its offers report no stock
	// count (Available -1).
	primeintellect.CloudName: {Start: func(t *testing.T) (cloudprovider.InstanceManagerBackend, simulation.Admin) {
		srv := primeemu.New(primeemu.Options{Options: simulation.Options{BootDuration: 800 * time.Millisecond}, DeleteDuration: 300 * time.Millisecond})
		cfg := primeintellect.Config{APIKey: primeemu.DefaultAPIKey, BaseURL: backendtest.Start(t, srv.Start),
			Tuning: backendtest.Tuning(10*time.Millisecond, 2*time.Second), EmptyAvailabilityWait: 10 * time.Millisecond}
		return backendtest.Must(primeintellect.New(cfg, backendtest.Inventory(t), nil))(t), srv
	}},
	// The sandbox is in process: the backend is its own emulator and admin, over a directory of its own,
	// without SSH machines.
	sandbox.CloudName: {Start: func(t *testing.T) (cloudprovider.InstanceManagerBackend, simulation.Admin) {
		cfg := sandbox.Config{Dir: t.TempDir(), BootTime: 300 * time.Millisecond, DeleteTime: 200 * time.Millisecond,
			Tuning: restclient.Tuning{RetryWaitMin: 10 * time.Millisecond, RetryWaitMax: 200 * time.Millisecond}}
		b := backendtest.Must(sandbox.New(cfg, backendtest.Inventory(t), nil))(t)
		return b, b
	}},
	// UpCloud's servers boot in 300 ms and stop in 200 ms; deletes are polled quickly. httptest listens
	// on loopback, and its Close also drops connections the client dialled but never used.
	upcloud.CloudName: {Start: func(t *testing.T) (cloudprovider.InstanceManagerBackend, simulation.Admin) {
		const user, pass = "hydra-sub", "s3cret-Pass!"
		srv := upcloudemu.New(upcloudemu.Options{
			Options:      simulation.Options{BootDuration: 300 * time.Millisecond},
			StopDuration: 200 * time.Millisecond,
			Username:     user,
			Password:     pass,
		})
		cfg := upcloud.Config{Username: user, Password: pass, BaseURL: backendtest.Serve(t, srv) + upcloudemu.APIPrefix,
			Tuning: fast(), PollInterval: 50 * time.Millisecond, DeleteTimeout: 20 * time.Second}
		return backendtest.Must(upcloud.New(cfg, backendtest.Inventory(t), nil))(t), srv
	}},
	// Verda's machines boot in 400 ms (ordered, provisioning, running); delete is immediate. Verda
	// accepts a create without SSH keys (ssh_key_ids may be empty).
	verda.CloudName: {Start: func(t *testing.T) (cloudprovider.InstanceManagerBackend, simulation.Admin) {
		srv := verdaemu.New(verdaemu.Options{Options: simulation.Options{BootDuration: 400 * time.Millisecond}})
		cfg := verda.Config{ClientID: verdaemu.DefaultClientID, ClientSecret: verdaemu.DefaultClientSecret,
			BaseURL: backendtest.Serve(t, srv) + verdaemu.BasePath, Tuning: backendtest.Tuning(time.Millisecond, 50*time.Millisecond),
			DeleteRetryWait: 50 * time.Millisecond}
		return backendtest.Must(verda.New(cfg, backendtest.Inventory(t), nil))(t), srv
	}},
}

// winningBid prices every Mithril auction through PriceBids with nothing comparable and no max price, so
// each bid is exactly what its auction needs to win now (the new bid rule), and picks the cheapest
// eligible bid. Auctions without capacity are listed ineligible by Offers and stay so.
func winningBid(t *testing.T, b cloudprovider.InstanceManagerBackend, offers []cloudprovider.Offer) cloudprovider.Offer {
	t.Helper()
	ab, ok := b.(cloudprovider.AuctionBackend)
	if !ok {
		t.Fatal("the Mithril backend is not an AuctionBackend")
	}
	var best cloudprovider.Offer
	found := false
	for _, o := range offers {
		p := ab.PriceBids([]cloudprovider.Offer{o}, nil, 0)[0]
		if p.Ineligible != "" {
			continue
		}
		if !found || p.PricePerHour < best.PricePerHour {
			best, found = p, true
		}
	}
	if !found {
		t.Fatalf("no auction among %d offers takes a winning bid", len(offers))
	}
	return best
}
