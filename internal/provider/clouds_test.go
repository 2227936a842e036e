package provider

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	pschema "github.com/hashicorp/terraform-plugin-framework/provider/schema"
	fwresource "github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/hydragpu/terraform-provider-hydra/internal/clouds"
	emuatlas "github.com/hydragpu/terraform-provider-hydra/internal/emulator/atlas"
	emumithril "github.com/hydragpu/terraform-provider-hydra/internal/emulator/mithril"
	emuprime "github.com/hydragpu/terraform-provider-hydra/internal/emulator/primeintellect"
	emuupcloud "github.com/hydragpu/terraform-provider-hydra/internal/emulator/upcloud"
	emuverda "github.com/hydragpu/terraform-provider-hydra/internal/emulator/verda"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// testClouds runs each cloud's emulator over real HTTP on loopback for one test. The provider (served
// in the test binary) talks to them with its real clients, credentials and all.
type testClouds struct {
	t       *testing.T
	verda   *emuverda.Server
	upcloud *emuupcloud.Server
	prime   *emuprime.Server
	atlas   *emuatlas.Server
	mithril *emumithril.Server
	urls    map[string]string
	// mithrilAhead is how far the Mithril emulator's clock runs ahead of the real one (see skipAhead).
	mithrilAhead atomic.Int64
}

// skipAhead moves the Mithril emulator's clock forward by d: what it would do in d (a preemption
// window ending) happens at its next request, without the test waiting for it.
func (c *testClouds) skipAhead(d time.Duration) { c.mithrilAhead.Add(int64(d)) }

func newTestClouds(t *testing.T, verdaCatalog []emuverda.CatalogEntry) *testClouds {
	t.Helper()
	c := &testClouds{t: t, urls: map[string]string{}}
	serve := func(name string, h http.Handler, base string) {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		c.urls[name] = srv.URL + base
	}
	c.verda = emuverda.New(emuverda.Options{Options: simulation.Options{BootDuration: time.Second}, Catalog: verdaCatalog})
	c.upcloud = emuupcloud.New(emuupcloud.Options{Options: simulation.Options{BootDuration: time.Second}, StopDuration: 500 * time.Millisecond})
	c.prime = emuprime.New(emuprime.Options{Options: simulation.Options{BootDuration: time.Second}, DeleteDuration: 500 * time.Millisecond})
	c.atlas = emuatlas.New(emuatlas.Options{Options: simulation.Options{BootDuration: time.Second}, DeleteDuration: 500 * time.Millisecond})
	mithrilNow := func() time.Time { return time.Now().Add(time.Duration(c.mithrilAhead.Load())) }
	c.mithril = emumithril.New(emumithril.Options{Options: simulation.Options{BootDuration: time.Second, Now: mithrilNow}, PreemptionWindow: time.Second})
	serve("verda", c.verda, emuverda.BasePath)
	serve("upcloud", c.upcloud, "/1.3")
	serve("primeintellect", c.prime, "")
	serve("atlas", c.atlas, "")
	serve("mithril", c.mithril, "")
	return c
}

// providerConfig configures the named clouds (by cloud name, as in pools.yml) against their emulators,
// with each cloud's credentials written out in its provider block as a user would (provisioning off:
// emulated machines have no sshd).
func (c *testClouds) providerConfig(dir string, names ...string) string {
	credentials := map[string]string{
		"verda":          fmt.Sprintf("    client_id     = %q\n    client_secret = %q\n", emuverda.DefaultClientID, emuverda.DefaultClientSecret),
		"upcloud":        "    username = \"hydra-sub\"\n    password = \"s3cret\"\n",
		"primeintellect": "    api_key  = \"pi-test-key\"\n",
		"atlas":          "    token    = \"atlas-test-token\"\n",
		"mithril":        fmt.Sprintf("    api_key  = %q\n    project  = \"hydra\"\n", emumithril.DefaultAPIKey),
	}
	var b strings.Builder
	fmt.Fprintf(&b, "provider \"hydra\" {\n  plan_quote_dir = %q\n  provisioning {\n    enabled = false\n  }\n", dir+"/quotes")
	for _, name := range names {
		d := clouds.ByName(name)
		if d == nil || credentials[name] == "" {
			c.t.Fatalf("providerConfig: no test credentials for cloud %q", name)
		}
		fmt.Fprintf(&b, "  %s {\n", d.Block)
		if d.OffByDefault {
			b.WriteString("    enabled  = true\n")
		}
		fmt.Fprintf(&b, "    endpoint = %q\n%s  }\n", c.urls[name], credentials[name])
	}
	b.WriteString("}\n")
	return b.String()
}

// checkEmpty asserts that no cloud has a machine left.
func (c *testClouds) checkEmpty(*terraform.State) error {
	var left []string
	for _, i := range c.verda.LiveInstances() {
		left = append(left, "verda "+i.ID)
	}
	for _, s := range c.upcloud.Servers() {
		left = append(left, "upcloud "+s.UUID+" "+s.State)
	}
	for _, p := range c.prime.Pods() {
		if p.Status != "TERMINATED" {
			left = append(left, "primeintellect "+p.ID+" "+p.Status)
		}
	}
	for _, i := range c.atlas.Instances() {
		if i.Status != "terminated" {
			left = append(left, "atlas "+i.ID+" "+i.Status)
		}
	}
	for _, b := range c.mithril.LiveBids() {
		left = append(left, "mithril bid "+b.FID+" "+b.Status)
	}
	if len(left) > 0 {
		return fmt.Errorf("machines left at the clouds after destroy: %v", left)
	}
	return nil
}

func (c *testClouds) checkCreates(want map[string]int) resource.TestCheckFunc {
	return func(*terraform.State) error {
		got := map[string]int{
			"verda": c.verda.CreateCount(), "upcloud": c.upcloud.CreateCount(), "primeintellect": c.prime.CreateCount(),
			"atlas": c.atlas.CreateCount(), "mithril": c.mithril.CreateCount(),
		}
		for cloud, n := range want {
			if got[cloud] != n {
				return fmt.Errorf("%s created %d machines, want %d (all: %v)", cloud, got[cloud], n, got)
			}
		}
		return nil
	}
}

// testSSHKey is a customer key for machines on clouds that insist on one.
const testSSHKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGd9ZlDd2YbqH0h0C1Ipn8t8wP0hxB9oZt0bHqkDqJ6x tf-acc-test"

// cloudInstanceConfig is a hydra_gpu_instance for the emulated clouds.
func cloudInstanceConfig(name, gpuType, extra string) string {
	return testAccGPUInstanceConfig_basic(name, gpuType, fmt.Sprintf("  ssh_public_keys = [%q]\n%s", testSSHKey, extra))
}

func TestAccGPUInstance_verdaVersusUpCloud(t *testing.T) {
	// Default catalogs: H100 costs $2.65/h at Verda and €2.53 (= $2.74, converted and rounded up to the cent) at UpCloud.
	c := newTestClouds(t, nil)
	dir := t.TempDir()
	accTest(t, c.checkEmpty, []resource.TestStep{{
		Config: c.providerConfig(dir, "verda", "upcloud") + cloudInstanceConfig("cheaper", "h100", ""),
		ConfigPlanChecks: preApply(
			planKnown("cloud", "verda"),
			planKnown("price_usd_per_hour", 2.65),
			planUnknown("id"),
			// The plan says why the other cloud, and the winner's other region, lost, in prices a
			// person can compare.
			planKnown("other_clouds", knownvalue.MapExact(map[string]knownvalue.Check{
				"upcloud":              knownvalue.StringExact("cheapest offer GPU-12xCPU-240GB-1xH100 in fi-hel2 costs $2.74/h, $0.09/h more than verda"),
				"verda-vm-pool/FIN-03": like(`^cheapest offer 1H100\.80S\.30V costs \$2\.65/h, \$0\.00/h more$`),
			})),
		),
		ConfigStateChecks: []statecheck.StateCheck{
			stateKnown("status", "ready"),
			stateKnown("cloud_status", "running"),
		},
		Check: c.checkCreates(map[string]int{"verda": 1, "upcloud": 0}),
	}})
}

// verdaH100sAt is Verda's default catalog with every H100 type at price (US dollars per hour), so that
// UpCloud's H100 at $2.74/h is the cheaper one.
func verdaH100sAt(price float64) []emuverda.CatalogEntry {
	catalog := emuverda.DefaultCatalog()
	for i := range catalog {
		if strings.Contains(catalog[i].InstanceType, "H100") {
			catalog[i].PricePerHour = price
		}
	}
	return catalog
}

func TestAccGPUInstance_upcloudWinsWhenCheaper(t *testing.T) {
	c := newTestClouds(t, verdaH100sAt(3.90))
	dir := t.TempDir()
	accTest(t, c.checkEmpty, []resource.TestStep{{
		Config: c.providerConfig(dir, "verda", "upcloud") + cloudInstanceConfig("cheaper", "h100", ""),
		ConfigPlanChecks: preApply(
			planKnown("cloud", "upcloud"),
			planKnown("pool", "upcloud-vm-pool"),
			planKnown("instance_type", "GPU-12xCPU-240GB-1xH100"),
			planUnknown("id"),
		),
		ConfigStateChecks: []statecheck.StateCheck{
			stateKnown("status", "ready"),
		},
		Check: c.checkCreates(map[string]int{"verda": 0, "upcloud": 1}),
	}})
}

// Unknown stock never beats known stock silently: with UpCloud's availability call failing, its
// cheaper H100 ranks behind Verda's in-stock one, and the data source marks it.
func TestAccGPUInstance_unknownStockRanksBehind(t *testing.T) {
	c := newTestClouds(t, verdaH100sAt(3.90))
	if err := c.upcloud.SetCloudFaults(emuupcloud.Faults{Faults: simulation.Faults{ServerErrors: 1000}, Match: "GET /device/availability"}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	accTest(t, c.checkEmpty, []resource.TestStep{{
		Config: c.providerConfig(dir, "verda", "upcloud") + cloudInstanceConfig("known", "h100", "") + `
data "hydra_gpu_offer" "h100" {
  gpu_type = "h100"
}
`,
		ConfigPlanChecks: preApply(
			planKnown("cloud", "verda"),
		),
		Check: resource.ComposeTestCheckFunc(
			c.checkCreates(map[string]int{"verda": 1, "upcloud": 0}),
			resource.TestCheckResourceAttr("data.hydra_gpu_offer.h100", "cloud", "verda"),
			resource.TestCheckTypeSetElemNestedAttrs("data.hydra_gpu_offer.h100", "offers.*", map[string]string{
				"cloud": "upcloud", "stock_unknown": "true",
			}),
		),
	}})
}

func TestAccGPUInstance_apiStormDuringApply(t *testing.T) {
	c := newTestClouds(t, nil)
	dir := t.TempDir()
	accTest(t, c.checkEmpty, []resource.TestStep{{
		Config: c.providerConfig(dir, "verda", "upcloud") + cloudInstanceConfig("storm", "h100", ""),
		ConfigPlanChecks: preApply(beforeApply(func() {
			// Between plan and apply Verda starts answering 429s, then 5xx, then loses the create's answer.
			if err := c.verda.SetFaults(simulation.Faults{RateLimited: 4, RetryAfterSeconds: 1, ServerErrors: 3, LoseCreateResponses: 1}); err != nil {
				t.Error(err)
			}
		})),
		ConfigStateChecks: []statecheck.StateCheck{
			stateKnown("status", "ready"),
			stateKnown("cloud", "verda"),
		},
		Check: c.checkCreates(map[string]int{"verda": 1, "upcloud": 0}),
	}})
}

func TestAccGPUInstance_atlasWinsWhileItHasCapacity(t *testing.T) {
	c := newTestClouds(t, nil)
	dir := t.TempDir()
	all := c.providerConfig(dir, "verda", "upcloud", "primeintellect", "atlas", "mithril")
	accTest(t, c.checkEmpty, []resource.TestStep{
		{
			// Atlas lists L40S at $1.60/h; its price factor (0.5) ranks it at $0.80/h, below every other
			// cloud. The plan shows the price Atlas bills, $1.60/h, and the ranking figure beside it.
			Config: all + cloudInstanceConfig("first", "l40s", ""),
			ConfigPlanChecks: preApply(
				planKnown("cloud", "atlas"),
				planKnown("price_usd_per_hour", 1.60),
				plancheck.ExpectKnownValue(resourceName, tfjsonpath.New("offer_details").AtMapKey("ranking_price_per_hour"), knownvalue.StringExact("0.80")),
			),
			ConfigStateChecks: []statecheck.StateCheck{
				stateKnown("status", "ready"),
				// Atlas reports the host key, so it is pinned from the cloud, not trusted on first use.
				stateKnown("host_key", emuatlas.DefaultHostKey),
			},
			Check: c.checkCreates(map[string]int{"atlas": 1}),
		},
		{
			// Atlas runs out of L40S: a second machine goes to the cheapest other cloud.
			PreConfig: func() {
				if err := c.atlas.SetAvailable("l40s.1x", "ams1", 0); err != nil {
					t.Fatal(err)
				}
			},
			Config: all + cloudInstanceConfig("first", "l40s", "") + `
resource "hydra_gpu_instance" "second" {
  name            = "second"
  gpu_type        = "l40s"
  ssh_public_keys = ["` + testSSHKey + `"]
}
`,
			ConfigPlanChecks: preApply(
				plancheck.ExpectResourceAction(resourceName, plancheck.ResourceActionNoop),
				// Prime Intellect's cheapest L40S ($0.8768/h) beats Verda's ($0.91/h).
				plancheck.ExpectKnownValue("hydra_gpu_instance.second", tfjsonpath.New("cloud"), knownvalue.StringExact("primeintellect")),
				plancheck.ExpectKnownValue("hydra_gpu_instance.second", tfjsonpath.New("price_usd_per_hour"), knownvalue.Float64Exact(0.8768)),
			),
			Check: c.checkCreates(map[string]int{"atlas": 1, "primeintellect": 1, "verda": 0}),
		},
	})
}

// mithrilBids returns hydra's own bids (other customers' market bids excluded).
func (c *testClouds) mithrilBids() []emumithril.BidInfo {
	var out []emumithril.BidInfo
	for _, b := range c.mithril.Bids() {
		if strings.HasPrefix(b.Name, "mithril-vm-") {
			out = append(out, b)
		}
	}
	return out
}

func TestAccGPUInstance_mithrilBidsUnderCheapestSpot(t *testing.T) {
	c := newTestClouds(t, nil)
	dir := t.TempDir()
	cfg := c.providerConfig(dir, "verda", "upcloud", "mithril") + cloudInstanceConfig("bidder", "h100", "  spot = true")
	var bid emumithril.BidInfo
	accTest(t, c.checkEmpty, []resource.TestStep{
		{
			// The cheapest comparable spot offer elsewhere is Verda's H100 at $1.15/h: Mithril bids $1.14/h.
			Config: cfg,
			ConfigPlanChecks: preApply(
				planKnown("cloud", "mithril"),
				planKnown("price_usd_per_hour", 1.14),
				planKnown("is_spot", true),
				// The plan shows the bid and the auction's last clearing price.
				plancheck.ExpectKnownValue(resourceName, tfjsonpath.New("offer_details").AtMapKey("bid_price"), knownvalue.NotNull()),
				plancheck.ExpectKnownValue(resourceName, tfjsonpath.New("offer_details").AtMapKey("last_clearing_price"), knownvalue.NotNull()),
			),
			ConfigStateChecks: []statecheck.StateCheck{
				stateKnown("status", "ready"),
			},
			Check: func(*terraform.State) error {
				bids := c.mithrilBids()
				if len(bids) != 1 || bids[0].LimitCents != 114 {
					return fmt.Errorf("want one bid with a $1.14 limit, got %+v", bids)
				}
				bid = bids[0]
				return nil
			},
		},
		{
			// Mithril's 5-minute notice: the refresh reads it into interruption, ending at the
			// instance's end_time.
			PreConfig: func() {
				if err := c.mithril.Preempt(bid.FID, 5*time.Minute); err != nil {
					t.Fatal(err)
				}
			},
			RefreshState:       true,
			ExpectNonEmptyPlan: true,
			Check: func(st *terraform.State) error {
				a := st.RootModule().Resources[resourceName].Primary.Attributes
				notice, _ := time.Parse(time.RFC3339, a["interruption.notice_at"])
				ends, _ := time.Parse(time.RFC3339, a["interruption.ends_at"])
				if !strings.Contains(a["interruption.reason"], "STATUS_PREEMPTING") || ends.Sub(notice) < 4*time.Minute || ends.Sub(notice) > 6*time.Minute {
					return fmt.Errorf("interruption during the notice: %q, notice %q, ends %q", a["interruption.reason"], a["interruption.notice_at"], a["interruption.ends_at"])
				}
				return nil
			},
		},
		{
			// The bid wins its capacity back within the window: the next refresh reads no interruption.
			PreConfig: func() {
				if err := c.mithril.WinBack(bid.FID); err != nil {
					t.Fatal(err)
				}
			},
			RefreshState:       true,
			ExpectNonEmptyPlan: true, // the refresh during the notice left it in error: provisioned again in place
			Check: func(st *terraform.State) error {
				if a := st.RootModule().Resources[resourceName].Primary.Attributes; a["interruption.reason"] != "" {
					return fmt.Errorf("interruption after the bid won back: %q", a["interruption.reason"])
				}
				return nil
			},
		},
		{
			// Another customer outbids us: the machine is preempted. A refresh changes nothing at the
			// cloud (reads have no side effects): the bid stays open, the machine shows as error, and
			// the plan replaces it; the replacement's delete cancels the bid.
			PreConfig: func() {
				if err := c.mithril.SetCapacity(bid.Region, bid.InstanceType, 1); err != nil {
					t.Fatal(err)
				}
				if _, err := c.mithril.AddMarketBid(bid.Region, bid.InstanceType, 900); err != nil {
					t.Fatal(err)
				}
				c.skipAhead(2 * time.Second) // the preemption window (1s in this test) passes
			},
			RefreshState:       true,
			ExpectNonEmptyPlan: true,
			Check: func(st *terraform.State) error {
				for _, b := range c.mithrilBids() {
					if b.FID == bid.FID && (strings.EqualFold(b.Status, "cancelled") || strings.EqualFold(b.Status, "canceled")) {
						return fmt.Errorf("a refresh cancelled the preempted bid %s", b.FID)
					}
				}
				a := st.RootModule().Resources[resourceName].Primary.Attributes
				if got := a["status"]; got != "error" {
					return fmt.Errorf("a preempted machine reads as %q, want error", got)
				}
				if !strings.Contains(a["interruption.reason"], "STATUS_PREEMPTED") || a["interruption.ends_at"] == "" {
					return fmt.Errorf("a preempted machine's interruption: %q, ends %q", a["interruption.reason"], a["interruption.ends_at"])
				}
				return nil
			},
			ConfigStateChecks: []statecheck.StateCheck{},
		},
	})
}

func TestAccGPUOfferDataSource_mithrilMarginNotMet(t *testing.T) {
	c := newTestClouds(t, nil)
	dir := t.TempDir()
	cfg := strings.Replace(c.providerConfig(dir, "verda", "mithril"), "    project  = \"hydra\"\n", "    project  = \"hydra\"\n    win_margin_percent = 400\n", 1) + `
data "hydra_gpu_offer" "test" {
  gpu_type = "h100"
  spot     = true
}
`
	accTest(t, nil, []resource.TestStep{{
		Config: cfg,
		ConfigStateChecks: []statecheck.StateCheck{
			// The bid would not clear, so Verda's spot offer wins and Mithril says why it lost.
			statecheck.ExpectKnownValue(dataSourceName, tfjsonpath.New("cloud"), knownvalue.StringExact("verda")),
			statecheck.ExpectKnownValue(dataSourceName, tfjsonpath.New("rejections").AtMapKey("mithril"), knownvalue.StringRegexp(errorPattern("bid $1.14/h does not clear", "400% margin"))),
		},
		Check: func(s *terraform.State) error {
			ds := s.RootModule().Resources[dataSourceName].Primary.Attributes
			for i := 0; ; i++ {
				cloud, ok := ds[fmt.Sprintf("offers.%d.cloud", i)]
				if !ok {
					return fmt.Errorf("no mithril offer listed with its reason: %v", ds)
				}
				if cloud == "mithril" {
					if ds[fmt.Sprintf("offers.%d.eligible", i)] != "false" || !strings.Contains(ds[fmt.Sprintf("offers.%d.ineligible_why", i)], "does not clear") {
						return fmt.Errorf("mithril offer %d: eligible=%s why=%q", i, ds[fmt.Sprintf("offers.%d.eligible", i)], ds[fmt.Sprintf("offers.%d.ineligible_why", i)])
					}
					return nil
				}
			}
		},
	}})
}

func TestAccGPUOfferDataSource_emulatorDir(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	fmt.Fprintf(&b, "provider \"hydra\" {\n  plan_quote_dir = %q\n  provisioning {\n    enabled = false\n  }\n", dir+"/quotes")
	for _, d := range clouds.All() {
		fmt.Fprintf(&b, "  %s {\n", d.Block)
		if d.OffByDefault {
			b.WriteString("    enabled      = true\n")
		}
		fmt.Fprintf(&b, "    emulator_dir = %q\n  }\n", dir+"/"+d.Block)
	}
	b.WriteString("}\n")
	accTest(t, nil, []resource.TestStep{{
		// Every cloud's emulator runs inside the provider with its state in a directory: the
		// cheapest L40S of all five (Atlas, at half its list price) comes back through the real clients.
		Config: b.String() + "data \"hydra_gpu_offer\" \"test\" {\n  gpu_type = \"l40s\"\n}\n",
		ConfigStateChecks: []statecheck.StateCheck{
			statecheck.ExpectKnownValue(dataSourceName, tfjsonpath.New("cloud"), knownvalue.StringExact("atlas")),
			statecheck.ExpectKnownValue(dataSourceName, tfjsonpath.New("rejections"), knownvalue.MapSizeExact(0)),
		},
	}})
}

// The unit tests below run without TF_ACC: they call the provider's Schema and Configure directly.

// providerSchema is the provider's schema.
func providerSchema(t *testing.T) pschema.Schema {
	t.Helper()
	var resp provider.SchemaResponse
	New("test")().Schema(context.Background(), provider.SchemaRequest{}, &resp)
	if resp.Diagnostics.HasError() {
		t.Fatal(resp.Diagnostics)
	}
	return resp.Schema
}

// unitProviderConfig builds a provider configuration: attrs are top-level attributes, blocks the nested
// blocks present with the attributes they set; everything else is null.
func unitProviderConfig(t *testing.T, attrs map[string]tftypes.Value, blocks map[string]map[string]tftypes.Value) tfsdk.Config {
	t.Helper()
	s := providerSchema(t)
	typ := s.Type().TerraformType(context.Background()).(tftypes.Object)
	vals := map[string]tftypes.Value{}
	for name, at := range typ.AttributeTypes {
		switch set, isBlock := blocks[name]; {
		case isBlock:
			bt := at.(tftypes.Object)
			inner := map[string]tftypes.Value{}
			for k, it := range bt.AttributeTypes {
				inner[k] = tftypes.NewValue(it, nil)
				if v, ok := set[k]; ok {
					inner[k] = v
				}
			}
			for k := range set {
				if _, ok := bt.AttributeTypes[k]; !ok {
					t.Fatalf("block %s has no attribute %s", name, k)
				}
			}
			vals[name] = tftypes.NewValue(bt, inner)
		case attrs[name].Type() != nil:
			vals[name] = attrs[name]
		default:
			vals[name] = tftypes.NewValue(at, nil)
		}
	}
	return tfsdk.Config{Schema: s, Raw: tftypes.NewValue(typ, vals)}
}

func configureUnit(t *testing.T, cfg tfsdk.Config) provider.ConfigureResponse {
	t.Helper()
	var resp provider.ConfigureResponse
	New("test")().Configure(context.Background(), provider.ConfigureRequest{Config: cfg}, &resp)
	return resp
}

func str(s string) tftypes.Value { return tftypes.NewValue(tftypes.String, s) }

// clearCloudEnv unsets every environment variable the cloud registry reads, for this test.
func clearCloudEnv(t *testing.T) {
	for _, d := range clouds.All() {
		for _, s := range d.AllSettings() {
			if s.Env != "" {
				t.Setenv(s.Env, "")
			}
		}
	}
}

// Every registry driver is a provider block, every setting an attribute documented as declared.
func TestProviderSchema_cloudBlocksFromRegistry(t *testing.T) {
	s := providerSchema(t)
	if diags := s.ValidateImplementation(context.Background()); diags.HasError() {
		t.Fatal(diags)
	}
	for _, d := range clouds.All() {
		b, ok := s.Blocks[d.Block].(pschema.SingleNestedBlock)
		if !ok {
			t.Errorf("no %s block", d.Block)
			continue
		}
		if b.MarkdownDescription != d.BlockMarkdown() || !strings.Contains(b.MarkdownDescription, "Serves `") {
			t.Errorf("%s: block description %q", d.Block, b.MarkdownDescription)
		}
		if len(b.Attributes) != len(d.AllSettings()) {
			t.Errorf("%s: %d attributes, %d settings", d.Block, len(b.Attributes), len(d.AllSettings()))
		}
		for _, st := range d.AllSettings() {
			a, ok := b.Attributes[st.Key]
			if !ok {
				t.Errorf("%s.%s missing", d.Block, st.Key)
				continue
			}
			if a.GetMarkdownDescription() != st.Markdown() || a.GetMarkdownDescription() == "" || a.IsSensitive() != st.Sensitive || !a.IsOptional() {
				t.Errorf("%s.%s: %q sensitive=%v", d.Block, st.Key, a.GetMarkdownDescription(), a.IsSensitive())
			}
		}
	}
	// The HCL every example, test and user configuration already writes keeps working.
	want := map[string][]string{
		"atlas":          {"emulator_dir", "endpoint", "price_factor", "token"},
		"mithril":        {"api_key", "emulator_dir", "enabled", "endpoint", "project", "win_margin_percent"},
		"primeintellect": {"api_key", "emulator_dir", "endpoint"},
		"upcloud":        {"emulator_dir", "endpoint", "eur_to_usd", "password", "template", "token", "username"},
		"verda":          {"client_id", "client_secret", "emulator_dir", "endpoint", "eur_to_usd"},
	}
	for block, keys := range want {
		b, _ := s.Blocks[block].(pschema.SingleNestedBlock)
		var got []string
		for k := range b.Attributes {
			got = append(got, k)
		}
		slices.Sort(got)
		if !slices.Equal(got, keys) {
			t.Errorf("%s block: attributes %v, want %v", block, got, keys)
		}
	}
	for _, block := range []string{"sandbox", "provisioning"} {
		if _, ok := s.Blocks[block]; !ok {
			t.Errorf("no %s block", block)
		}
	}
}

// The `clouds` arguments list, and accept, exactly the registry's clouds.
func TestClouds_argumentsFromRegistry(t *testing.T) {
	var resp fwresource.SchemaResponse
	NewGPUInstanceResource().Schema(context.Background(), fwresource.SchemaRequest{}, &resp)
	a, ok := resp.Schema.Attributes["clouds"]
	if !ok || !strings.Contains(a.GetMarkdownDescription(), clouds.NamesMarkdown()) {
		t.Errorf("hydra_gpu_instance.clouds: %v", a)
	}
	for _, tc := range []struct {
		names []string
		ok    bool
	}{{[]string{"primeintellect", "sandbox"}, true}, {[]string{"prime_intellect"}, false}, {[]string{"aws"}, false}} {
		var elems []attr.Value
		for _, n := range tc.names {
			elems = append(elems, types.StringValue(n))
		}
		req := validator.SetRequest{Path: path.Root("clouds"), ConfigValue: types.SetValueMust(types.StringType, elems)}
		var diags diag.Diagnostics
		for _, v := range knownCloudsValidators() {
			var r validator.SetResponse
			v.ValidateSet(context.Background(), req, &r)
			diags.Append(r.Diagnostics...)
		}
		if diags.HasError() == tc.ok {
			t.Errorf("clouds = %v: %v", tc.names, diags)
		}
	}
}

// Every cloud configured on its emulator (emulator_dir, no credentials) comes up through Configure.
func TestProviderConfigure_everyCloudEmulated(t *testing.T) {
	clearCloudEnv(t)
	dir := t.TempDir()
	blocks := map[string]map[string]tftypes.Value{"provisioning": {"enabled": tftypes.NewValue(tftypes.Bool, false)}}
	var want []string
	for _, d := range clouds.All() {
		blocks[d.Block] = map[string]tftypes.Value{clouds.EmulatorDirKey: str(dir + "/" + d.Block)}
		if d.OffByDefault {
			blocks[d.Block][clouds.EnabledKey] = tftypes.NewValue(tftypes.Bool, true)
		}
		want = append(want, d.Name)
	}
	attrs := map[string]tftypes.Value{"plan_quote_dir": str(dir + "/quotes")}
	for range 2 { // a second Configure (the next Terraform command) reuses the running emulators
		resp := configureUnit(t, unitProviderConfig(t, attrs, blocks))
		if resp.Diagnostics.HasError() {
			t.Fatal(resp.Diagnostics)
		}
		data := resp.ResourceData.(*providerData)
		slices.Sort(want)
		if got := data.cp.Clouds(); !slices.Equal(got, want) || data.sandbox != nil {
			t.Errorf("configured clouds %v, want %v and no sandbox", got, want)
		}
	}

	// Mithril's block alone does not turn it on.
	delete(blocks["mithril"], clouds.EnabledKey)
	resp := configureUnit(t, unitProviderConfig(t, attrs, blocks))
	if resp.Diagnostics.HasError() || slices.Contains(resp.ResourceData.(*providerData).cp.Clouds(), "mithril") {
		t.Errorf("mithril without enabled = true: %v", resp.Diagnostics)
	}

	// Emulated machines cannot be provisioned.
	delete(blocks, "provisioning")
	resp = configureUnit(t, unitProviderConfig(t, attrs, blocks))
	if !hasError(resp.Diagnostics, "Emulated clouds cannot be provisioned", "provisioning { enabled = false }") {
		t.Errorf("emulated clouds with provisioning on: %v", resp.Diagnostics)
	}
}

func TestProviderConfigure_missingCredentialsNamed(t *testing.T) {
	clearCloudEnv(t)
	dir := t.TempDir()
	blocks := map[string]map[string]tftypes.Value{
		"provisioning": {"enabled": tftypes.NewValue(tftypes.Bool, false)},
		"verda":        {},
		"upcloud":      {"username": str("sub")},
		"mithril":      {}, // off: not asked, so no error
	}
	resp := configureUnit(t, unitProviderConfig(t, map[string]tftypes.Value{"plan_quote_dir": str(dir)}, blocks))
	if !hasError(resp.Diagnostics, "Missing Verda credentials", "client_id and client_secret", "VERDA_CLIENT_ID and VERDA_CLIENT_SECRET", "emulator_dir") {
		t.Errorf("verda: %v", resp.Diagnostics)
	}
	if !hasError(resp.Diagnostics, "Missing UpCloud credentials", "username and password, or token", "UPCLOUD_USERNAME and UPCLOUD_PASSWORD, or UPCLOUD_TOKEN") {
		t.Errorf("upcloud: %v", resp.Diagnostics)
	}
	if n := resp.Diagnostics.ErrorsCount(); n != 2 {
		t.Errorf("%d errors, want 2: %v", n, resp.Diagnostics)
	}

	// The vendors' environment variables are credentials too: these reach the emulators.
	c := newTestClouds(t, nil)
	t.Setenv("VERDA_CLIENT_ID", emuverda.DefaultClientID)
	t.Setenv("VERDA_CLIENT_SECRET", emuverda.DefaultClientSecret)
	t.Setenv("UPCLOUD_PASSWORD", "pw")
	resp = configureUnit(t, unitProviderConfig(t, map[string]tftypes.Value{"plan_quote_dir": str(dir)}, map[string]map[string]tftypes.Value{
		"provisioning": {"enabled": tftypes.NewValue(tftypes.Bool, false)},
		"verda":        {"endpoint": str(c.urls["verda"])},
		"upcloud":      {"username": str("sub"), "endpoint": str(c.urls["upcloud"])},
	}))
	if resp.Diagnostics.HasError() {
		t.Errorf("credentials from the environment: %v", resp.Diagnostics)
	}
	if got := resp.ResourceData.(*providerData).cp.Clouds(); !slices.Equal(got, []string{"upcloud", "verda"}) {
		t.Errorf("configured clouds %v", got)
	}
}

func hasError(diags diag.Diagnostics, summary string, detail ...string) bool {
	for _, d := range diags.Errors() {
		if d.Summary() != summary {
			continue
		}
		ok := true
		for _, w := range detail {
			ok = ok && strings.Contains(d.Detail(), w)
		}
		if ok {
			return true
		}
	}
	return false
}

// A bid that does not win within bid_timeout is cancelled (nothing is billed for it) and, with
// allow_fallback, apply moves on to the next cheapest offer instead of waiting on a lost auction.
func TestAccGPUInstance_mithrilBidTimeoutFallsBack(t *testing.T) {
	c := newTestClouds(t, nil)
	dir := t.TempDir()
	if err := c.mithril.SetOwnFaults(emumithril.OutbidOnArrival1()); err != nil {
		t.Fatal(err)
	}
	cfg := c.providerConfig(dir, "verda", "mithril") + cloudInstanceConfig("outbid", "h100",
		"  spot = true\n  allow_fallback = true\n  bid_timeout = \"3s\"")
	accTest(t, c.checkEmpty, []resource.TestStep{{
		Config: cfg,
		ConfigStateChecks: []statecheck.StateCheck{
			stateKnown("cloud", "verda"),
			stateKnown("status", "ready"),
		},
		Check: func(*terraform.State) error {
			bids := c.mithrilBids()
			if len(bids) != 1 || !strings.EqualFold(bids[0].Status, "Terminated") {
				return fmt.Errorf("want the one lost bid cancelled, got %+v", bids)
			}
			return c.checkCreates(map[string]int{"mithril": 1, "verda": 1})(nil)
		},
	}})
}

// Without allow_fallback, a lost bid fails the apply with the reason, and nothing is left billing.
func TestAccGPUInstance_mithrilBidTimeout(t *testing.T) {
	c := newTestClouds(t, nil)
	dir := t.TempDir()
	if err := c.mithril.SetOwnFaults(emumithril.OutbidOnArrival1()); err != nil {
		t.Fatal(err)
	}
	cfg := c.providerConfig(dir, "verda", "mithril") + cloudInstanceConfig("lost", "h100", "  spot = true\n  bid_timeout = \"2s\"")
	accTest(t, c.checkEmpty, []resource.TestStep{{
		Config:           cfg,
		ConfigPlanChecks: preApply(planKnown("cloud", "mithril")),
		ExpectError:      errorPattern("the bid did not win within bid_timeout 2s and was cancelled; nothing is billed"),
	}})
	if live := c.mithril.LiveBids(); len(live) != 0 {
		t.Errorf("a lost bid is still live: %+v", live)
	}
}

// clouds says where to buy, not what to compare with: with clouds = ["mithril"], the bid is still
// priced under the cheapest comparable offer of every configured cloud (Verda's $1.15 H100 spot), not
// at the user's maximum.
func TestAccGPUInstance_mithrilBidComparesAllClouds(t *testing.T) {
	c := newTestClouds(t, nil)
	dir := t.TempDir()
	cfg := c.providerConfig(dir, "verda", "mithril") + cloudInstanceConfig("only-mithril", "h100",
		"  spot = true\n  clouds = [\"mithril\"]\n  max_price_per_hour = 9")
	accTest(t, nil, []resource.TestStep{{
		Config:   cfg,
		PlanOnly: true,
		ConfigPlanChecks: resource.ConfigPlanChecks{
			PostApplyPostRefresh: []plancheck.PlanCheck{
				planKnown("cloud", "mithril"),
				planKnown("price_usd_per_hour", 1.14),
			},
		},
		ExpectNonEmptyPlan: true,
	}})
	if n := c.mithril.CreateCount(); n != 0 {
		t.Errorf("a plan placed %d bids", n)
	}
}

// A cloud that creates machines only with an SSH key is refused at plan when the machine would have
// none (no ssh_public_keys, provisioning off), naming the settings, instead of failing at apply.
func TestAccGPUInstance_sshKeyRequiredAtPlan(t *testing.T) {
	c := newTestClouds(t, nil)
	dir := t.TempDir()
	accTest(t, nil, []resource.TestStep{{
		Config:      c.providerConfig(dir, "atlas", "upcloud") + testAccGPUInstanceConfig_basic("keyless", "l40s", ""),
		PlanOnly:    true,
		ExpectError: errorPattern("atlas: creates machines only with an SSH public key", "set ssh_public_keys on the resource", "upcloud: creates machines only with an SSH public key"),
	}})
	if n := c.atlas.CreateCount() + c.upcloud.CreateCount(); n != 0 {
		t.Errorf("a keyless request created %d machines", n)
	}
}
