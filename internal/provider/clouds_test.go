package provider

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	emuatlas "github.com/hydragpu/terraform-provider-hydra/internal/emulator/atlas"
	emumithril "github.com/hydragpu/terraform-provider-hydra/internal/emulator/mithril"
	emuprime "github.com/hydragpu/terraform-provider-hydra/internal/emulator/primeintellect"
	emuupcloud "github.com/hydragpu/terraform-provider-hydra/internal/emulator/upcloud"
	emuverda "github.com/hydragpu/terraform-provider-hydra/internal/emulator/verda"
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
}

func newTestClouds(t *testing.T, verdaCatalog []emuverda.CatalogEntry) *testClouds {
	t.Helper()
	c := &testClouds{t: t, urls: map[string]string{}}
	serve := func(name string, h http.Handler, base string) {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		c.urls[name] = srv.URL + base
	}
	c.verda = emuverda.New(emuverda.Options{BootDuration: time.Second, Catalog: verdaCatalog})
	c.upcloud = emuupcloud.New(emuupcloud.Options{BootDuration: time.Second, StopDuration: 500 * time.Millisecond})
	c.prime = emuprime.New(emuprime.Options{BootDuration: time.Second, DeleteDuration: 500 * time.Millisecond})
	c.atlas = emuatlas.New(emuatlas.Options{BootDuration: time.Second, DeleteDuration: 500 * time.Millisecond})
	c.mithril = emumithril.New(emumithril.Options{BootDuration: time.Second, PreemptionWindow: time.Second})
	serve("verda", c.verda, emuverda.BasePath)
	serve("upcloud", c.upcloud, "/1.3")
	serve("primeintellect", c.prime, "")
	serve("atlas", c.atlas, "")
	serve("mithril", c.mithril, "")
	return c
}

// providerConfig configures the named clouds against their emulators (provisioning off: emulated
// machines have no sshd).
func (c *testClouds) providerConfig(dir string, clouds ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "provider \"hydra\" {\n  plan_quote_dir = %q\n  provisioning {\n    enabled = false\n  }\n", dir+"/quotes")
	for _, cl := range clouds {
		switch cl {
		case "verda":
			fmt.Fprintf(&b, "  verda {\n    endpoint      = %q\n    client_id     = %q\n    client_secret = %q\n  }\n", c.urls["verda"], emuverda.DefaultClientID, emuverda.DefaultClientSecret)
		case "upcloud":
			fmt.Fprintf(&b, "  upcloud {\n    endpoint = %q\n    username = \"hydra-sub\"\n    password = \"s3cret\"\n  }\n", c.urls["upcloud"])
		case "primeintellect":
			fmt.Fprintf(&b, "  prime_intellect {\n    endpoint = %q\n    api_key  = \"pi-test-key\"\n  }\n", c.urls["primeintellect"])
		case "atlas":
			fmt.Fprintf(&b, "  atlas {\n    endpoint = %q\n    token    = \"atlas-test-token\"\n  }\n", c.urls["atlas"])
		case "mithril":
			fmt.Fprintf(&b, "  mithril {\n    enabled  = true\n    endpoint = %q\n    api_key  = %q\n    project  = \"hydra\"\n  }\n", c.urls["mithril"], emumithril.DefaultAPIKey)
		}
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
	// Default catalogs: H100 costs $2.65/h at Verda and €2.53 (= $2.73) at UpCloud.
	c := newTestClouds(t, nil)
	dir := t.TempDir()
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkEmpty,
		Steps: []resource.TestStep{{
			Config: c.providerConfig(dir, "verda", "upcloud") + cloudInstanceConfig("cheaper", "h100", ""),
			ConfigPlanChecks: resource.ConfigPlanChecks{
				PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(resourceName, tfjsonpath.New("cloud"), knownvalue.StringExact("verda")),
					plancheck.ExpectKnownValue(resourceName, tfjsonpath.New("price_per_hour"), knownvalue.Float64Exact(2.65)),
					plancheck.ExpectKnownValue(resourceName, tfjsonpath.New("id"), knownvalue.StringExact("verda-vm-cheaper")),
					// The plan says why the other cloud lost, in prices a person can compare.
					plancheck.ExpectKnownValue(resourceName, tfjsonpath.New("other_clouds"), knownvalue.MapExact(map[string]knownvalue.Check{
						"upcloud": knownvalue.StringExact("cheapest offer GPU-12xCPU-240GB-1xH100 in fi-hel2 costs $2.7321/h, $0.0821/h more than verda"),
					})),
				},
			},
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(resourceName, tfjsonpath.New("status"), knownvalue.StringExact("ready")),
				statecheck.ExpectKnownValue(resourceName, tfjsonpath.New("cloud_status"), knownvalue.StringExact("running")),
			},
			Check: c.checkCreates(map[string]int{"verda": 1, "upcloud": 0}),
		}},
	})
}

func TestAccGPUInstance_upcloudWinsWhenCheaper(t *testing.T) {
	catalog := emuverda.DefaultCatalog()
	for i := range catalog {
		if strings.Contains(catalog[i].InstanceType, "H100") {
			catalog[i].PricePerHour = 3.90
		}
	}
	c := newTestClouds(t, catalog)
	dir := t.TempDir()
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkEmpty,
		Steps: []resource.TestStep{{
			Config: c.providerConfig(dir, "verda", "upcloud") + cloudInstanceConfig("cheaper", "h100", ""),
			ConfigPlanChecks: resource.ConfigPlanChecks{
				PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(resourceName, tfjsonpath.New("cloud"), knownvalue.StringExact("upcloud")),
					plancheck.ExpectKnownValue(resourceName, tfjsonpath.New("pool"), knownvalue.StringExact("upcloud-vm-pool")),
					plancheck.ExpectKnownValue(resourceName, tfjsonpath.New("instance_type"), knownvalue.StringExact("GPU-12xCPU-240GB-1xH100")),
					plancheck.ExpectKnownValue(resourceName, tfjsonpath.New("id"), knownvalue.StringExact("upcloud-vm-cheaper")),
				},
			},
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(resourceName, tfjsonpath.New("status"), knownvalue.StringExact("ready")),
			},
			Check: c.checkCreates(map[string]int{"verda": 0, "upcloud": 1}),
		}},
	})
}

func TestAccGPUInstance_apiStormDuringApply(t *testing.T) {
	c := newTestClouds(t, nil)
	dir := t.TempDir()
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkEmpty,
		Steps: []resource.TestStep{{
			Config: c.providerConfig(dir, "verda", "upcloud") + cloudInstanceConfig("storm", "h100", ""),
			ConfigPlanChecks: resource.ConfigPlanChecks{
				PreApply: []plancheck.PlanCheck{beforeApply(func() {
					// Between plan and apply Verda starts answering 429s, then 5xx, then loses the create's answer.
					if err := c.verda.SetFaults(emuverda.Faults{RateLimitStorm: 4, RetryAfterSeconds: 1, ServerErrors: 3, LoseCreateResponses: 1}); err != nil {
						t.Error(err)
					}
				})},
			},
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(resourceName, tfjsonpath.New("status"), knownvalue.StringExact("ready")),
				statecheck.ExpectKnownValue(resourceName, tfjsonpath.New("cloud"), knownvalue.StringExact("verda")),
			},
			Check: c.checkCreates(map[string]int{"verda": 1, "upcloud": 0}),
		}},
	})
}

func TestAccGPUInstance_atlasWinsWhileItHasCapacity(t *testing.T) {
	c := newTestClouds(t, nil)
	dir := t.TempDir()
	all := c.providerConfig(dir, "verda", "upcloud", "primeintellect", "atlas", "mithril")
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkEmpty,
		Steps: []resource.TestStep{
			{
				// Atlas lists L40S at $1.60/h; its price factor (0.5) makes it $0.80/h, below every other cloud.
				Config: all + cloudInstanceConfig("first", "l40s", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectKnownValue(resourceName, tfjsonpath.New("cloud"), knownvalue.StringExact("atlas")),
						plancheck.ExpectKnownValue(resourceName, tfjsonpath.New("price_per_hour"), knownvalue.Float64Exact(0.80)),
					},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(resourceName, tfjsonpath.New("status"), knownvalue.StringExact("ready")),
					// Atlas reports the host key, so it is pinned from the cloud, not trusted on first use.
					statecheck.ExpectKnownValue(resourceName, tfjsonpath.New("host_key"), knownvalue.StringExact(emuatlas.DefaultHostKey)),
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
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(resourceName, plancheck.ResourceActionNoop),
						// Prime Intellect's cheapest L40S ($0.8768/h) beats Verda's ($0.91/h).
						plancheck.ExpectKnownValue("hydra_gpu_instance.second", tfjsonpath.New("cloud"), knownvalue.StringExact("primeintellect")),
						plancheck.ExpectKnownValue("hydra_gpu_instance.second", tfjsonpath.New("price_per_hour"), knownvalue.Float64Exact(0.8768)),
					},
				},
				Check: c.checkCreates(map[string]int{"atlas": 1, "primeintellect": 1, "verda": 0}),
			},
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
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkEmpty,
		Steps: []resource.TestStep{
			{
				// The cheapest comparable spot offer elsewhere is Verda's H100 at $1.15/h: Mithril bids $1.14/h.
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectKnownValue(resourceName, tfjsonpath.New("cloud"), knownvalue.StringExact("mithril")),
						plancheck.ExpectKnownValue(resourceName, tfjsonpath.New("price_per_hour"), knownvalue.Float64Exact(1.14)),
						plancheck.ExpectKnownValue(resourceName, tfjsonpath.New("is_spot"), knownvalue.Bool(true)),
						// The plan shows the bid and the auction's last clearing price.
						plancheck.ExpectKnownValue(resourceName, tfjsonpath.New("offer_details").AtMapKey("bid_price"), knownvalue.NotNull()),
						plancheck.ExpectKnownValue(resourceName, tfjsonpath.New("offer_details").AtMapKey("last_clearing_price"), knownvalue.NotNull()),
					},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(resourceName, tfjsonpath.New("status"), knownvalue.StringExact("ready")),
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
				// Another customer outbids us: the machine is preempted. hydra cancels the bid (no
				// replacement is wanted) and the machine leaves state, so the next plan recreates it.
				PreConfig: func() {
					if err := c.mithril.SetCapacity(bid.Region, bid.InstanceType, 1); err != nil {
						t.Fatal(err)
					}
					if _, err := c.mithril.AddMarketBid(bid.Region, bid.InstanceType, 900); err != nil {
						t.Fatal(err)
					}
					time.Sleep(2500 * time.Millisecond) // the preemption window (1s in this test) passes
				},
				RefreshState:       true,
				ExpectNonEmptyPlan: true,
				Check: func(*terraform.State) error {
					for _, b := range c.mithrilBids() {
						if b.FID == bid.FID && !strings.EqualFold(b.Status, "cancelled") && !strings.EqualFold(b.Status, "canceled") && !strings.EqualFold(b.Status, "terminated") {
							return fmt.Errorf("the preempted bid is still %s", b.Status)
						}
					}
					return nil
				},
				ConfigStateChecks: []statecheck.StateCheck{},
			},
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
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
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
		}},
	})
}

func TestAccGPUOfferDataSource_emulatorDir(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	fmt.Fprintf(&b, "provider \"hydra\" {\n  plan_quote_dir = %q\n  provisioning {\n    enabled = false\n  }\n", dir+"/quotes")
	for _, block := range []string{"verda", "upcloud", "prime_intellect", "atlas"} {
		fmt.Fprintf(&b, "  %s {\n    emulator_dir = %q\n  }\n", block, dir+"/"+block)
	}
	fmt.Fprintf(&b, "  mithril {\n    enabled      = true\n    emulator_dir = %q\n  }\n}\n", dir+"/mithril")
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			// Every cloud's emulator runs inside the provider with its state in a directory: the
			// cheapest L40S of all five (Atlas, at half its list price) comes back through the real clients.
			Config: b.String() + "data \"hydra_gpu_offer\" \"test\" {\n  gpu_type = \"l40s\"\n}\n",
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(dataSourceName, tfjsonpath.New("cloud"), knownvalue.StringExact("atlas")),
				statecheck.ExpectKnownValue(dataSourceName, tfjsonpath.New("rejections"), knownvalue.MapSizeExact(0)),
			},
		}},
	})
}
