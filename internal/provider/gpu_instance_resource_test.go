package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox"
)

const resourceName = "hydra_gpu_instance.test"

func testAccGPUInstanceConfig_basic(name, gpuType string, extra string) string {
	return fmt.Sprintf(`
resource "hydra_gpu_instance" "test" {
  name     = %[1]q
  gpu_type = %[2]q
%[3]s
}
`, name, gpuType, extra)
}

func TestAccGPUInstance_basic(t *testing.T) {
	s := newTestSandbox(t)
	cfg := s.providerConfig("") + testAccGPUInstanceConfig_basic("basic", "h100", "")
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             s.checkDestroyed,
		Steps: []resource.TestStep{
			{
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(resourceName, plancheck.ResourceActionCreate),
						// The cheapest H100 in the default catalog: sbx-eu-1 at $2.49/h.
						plancheck.ExpectKnownValue(resourceName, tfjsonpath.New("cloud"), knownvalue.StringExact("sandbox")),
						plancheck.ExpectKnownValue(resourceName, tfjsonpath.New("pool"), knownvalue.StringExact("sandbox-vm-pool")),
						plancheck.ExpectKnownValue(resourceName, tfjsonpath.New("region"), knownvalue.StringExact("sbx-eu-1")),
						plancheck.ExpectKnownValue(resourceName, tfjsonpath.New("instance_type"), knownvalue.StringExact("sbx.h100.1x")),
						plancheck.ExpectKnownValue(resourceName, tfjsonpath.New("price_usd_per_hour"), knownvalue.Float64Exact(2.49)),
						plancheck.ExpectKnownValue(resourceName, tfjsonpath.New("offer_id"), knownvalue.StringExact("sandbox-vm-pool/sbx-eu-1/sbx.h100.1x/ondemand@2.49")),
						// The cloud-side name carries an ownership token chosen at create.
						plancheck.ExpectUnknownValue(resourceName, tfjsonpath.New("id")),
					},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(resourceName, tfjsonpath.New("status"), knownvalue.StringExact("ready")),
					statecheck.ExpectKnownValue(resourceName, tfjsonpath.New("id"), knownvalue.StringRegexp(regexp.MustCompile(`^sbx-vm-basic--[a-z2-7]{8}$`))),
					statecheck.ExpectKnownValue(resourceName, tfjsonpath.New("cloud_status"), knownvalue.StringExact("running")),
					statecheck.ExpectKnownValue(resourceName, tfjsonpath.New("cloud_instance_id"), knownvalue.StringRegexp(regexp.MustCompile(`^sbx-[0-9a-f]{12}$`))),
					statecheck.ExpectKnownValue(resourceName, tfjsonpath.New("ready_at"), knownvalue.NotNull()),
					statecheck.ExpectKnownValue(resourceName, tfjsonpath.New("price_usd_per_hour"), knownvalue.Float64Exact(2.49)),
					statecheck.ExpectKnownValue(resourceName, tfjsonpath.New("ssh_host"), knownvalue.StringExact("127.0.0.1")),
				},
				Check: resource.ComposeTestCheckFunc(s.checkLive(1), s.checkCreated(1)),
			},
			{
				// A cheaper offer appearing later never moves the machine.
				PreConfig: func() { s.setPrice("sbx-us-1", "sbx.h100.1x", 1.10) },
				Config:    cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
			},
			{
				ResourceName: resourceName,
				ImportState:  true,
				ImportStateIdFunc: func(st *terraform.State) (string, error) {
					return st.RootModule().Resources[resourceName].Primary.ID, nil
				},
				ImportStateVerify: true,
				// Provisioning facts are hydra's own record, not the cloud's: import cannot know them.
				ImportStateVerifyIgnore: []string{"status", "ready_at", "provisioning_attempts", "timeouts", "other_clouds", "offer_details"},
			},
		},
	})
}

func TestAccGPUInstance_disappears(t *testing.T) {
	s := newTestSandbox(t)
	cfg := s.providerConfig("") + testAccGPUInstanceConfig_basic("gone", "l4", "")
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             s.checkDestroyed,
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check: func(*terraform.State) error {
					// Deleted outside Terraform.
					for _, r := range s.live() {
						if err := s.sb.Vanish(r.ID); err != nil {
							return err
						}
					}
					return nil
				},
				ExpectNonEmptyPlan: true,
			},
			{
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(resourceName, plancheck.ResourceActionCreate)},
				},
				Check: resource.ComposeTestCheckFunc(s.checkLive(1), s.checkCreated(2)),
			},
		},
	})
}

func TestAccGPUInstance_impossibleRequests(t *testing.T) {
	s := newTestSandbox(t)
	onlyVM := t.TempDir()
	if err := os.WriteFile(filepath.Join(onlyVM, "pools.yml"), []byte("pools:\n  - name: sandbox-vm-pool\n    cloud: sandbox\n    kind: vm\n    prefix: sbx-vm-\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, provider, body string
		want                 *regexp.Regexp
	}{
		{"unknown type", "", `gpu_type = "h10"`, errorPattern(`unknown GPU type "h10"`, `did you mean "h100"`)},
		{"too many GPUs", "", "gpu_type = \"h100\"\n  gpu_count = 16", errorPattern("gpu_count 16 is more than any h100", "at most 8 h100 GPUs per instance")},
		{"no count offered", "", "gpu_type = \"h100\"\n  gpu_count = 3", errorPattern("sandbox: no h100 offer with 3 GPUs (offered counts: 1, 2, 4, 8)")},
		{"max price below every offer", "", "gpu_type = \"h100\"\n  max_price_per_hour = 1.5", errorPattern("No cloud can rent 1x h100", "cheapest matching offer costs $2.49/h", "above max_price_per_hour $1.50/h", "Nothing was created")},
		{"region not served", "", "gpu_type = \"h100\"\n  regions = [\"mars-1\"]", errorPattern(`no 1x h100 offer in regions "mars-1"`)},
		{"kind no pool serves", fmt.Sprintf("inventory_dir = %q", onlyVM), "gpu_type = \"h100\"\n  kind = \"execlet\"", errorPattern(`no configured pool serves kind "execlet"`)},
		{"cloud not configured", "", "gpu_type = \"h100\"\n  clouds = [\"verda\"]", errorPattern(`cloud "verda" is not configured in the provider`)},
		{"offer_id of another GPU", "", "gpu_type = \"h100\"\n  offer_id = \"sandbox-vm-pool/sbx-eu-1/sbx.l40s.1x/ondemand@0.99\"",
			errorPattern("does not fit this resource's `gpu_type`", "sbx.l40s.1x holds l40s GPUs, but the request's gpu_type is \"h100\"")},
		{"offer_id of another count", "", "gpu_type = \"l40s\"\n  gpu_count = 2\n  offer_id = \"sandbox-vm-pool/sbx-eu-1/sbx.l40s.1x/ondemand@0.99\"",
			errorPattern("does not fit this resource's `gpu_count`", "holds 1 GPUs, but the request's gpu_count is 2")},
		{"bad name", "", "gpu_type = \"h100\"\n  name = \"Bad_Name\"", errorPattern("Invalid name", `name: "Bad_Name" has upper case letters, "_"`, `for example "bad-name"`)},
		{"empty name", "", "gpu_type = \"h100\"\n  name = \"\"", errorPattern("Invalid name", "name: the name is empty", `for example "trainer-1"`)},
		{"unknown GPU type", "", `gpu_type = "tpu-v5"`, errorPattern(`unknown GPU type "tpu-v5" in gpu_type.`, `Known types (the inventory's supported_gpus.yml): "a100-80gb", "b200", "h100"`)},
		{"unknown cloud", "", "gpu_type = \"h100\"\n  clouds = [\"aws\"]", errorPattern("Unknown cloud", `clouds: "aws" is not a cloud hydra knows. Accepted values: "atlas", "lambda", "mithril", "primeintellect", "sandbox", "upcloud", "verda".`)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := tc.body
			if !regexp.MustCompile(`\bname\s*=`).MatchString(body) {
				body = "name = \"impossible\"\n  " + body
			}
			resource.ParallelTest(t, resource.TestCase{
				PreCheck:                 func() { testAccPreCheck(t) },
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      s.providerConfig(tc.provider) + fmt.Sprintf("resource \"hydra_gpu_instance\" \"test\" {\n  %s\n}\n", body),
					PlanOnly:    true,
					ExpectError: tc.want,
				}},
			})
		})
	}
	t.Cleanup(func() {
		if n := s.created(); n != 0 {
			t.Errorf("impossible requests created %d machines at the cloud", n)
		}
	})
}

func TestAccGPUInstance_savedPlanAfterPriceChange(t *testing.T) {
	s := newTestSandbox(t)
	cfg := s.providerConfig("") + testAccGPUInstanceConfig_basic("saved", "a100-80gb", "")
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             s.checkDestroyed,
		Steps: []resource.TestStep{{
			Config: cfg,
			ConfigPlanChecks: resource.ConfigPlanChecks{
				PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(resourceName, tfjsonpath.New("region"), knownvalue.StringExact("sbx-eu-1")),
					plancheck.ExpectKnownValue(resourceName, tfjsonpath.New("price_usd_per_hour"), knownvalue.Float64Exact(1.39)),
					// The plan is saved; now a cheaper offer appears elsewhere and the planned one gets cheaper
					// too. Terraform re-plans during apply and must get the same values back.
					beforeApply(func() {
						s.setPrice("sbx-us-1", "sbx.a100-80gb.1x", 0.99)
						s.setPrice("sbx-eu-1", "sbx.a100-80gb.1x", 1.29)
					}),
				},
			},
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(resourceName, tfjsonpath.New("region"), knownvalue.StringExact("sbx-eu-1")),
				statecheck.ExpectKnownValue(resourceName, tfjsonpath.New("price_usd_per_hour"), knownvalue.Float64Exact(1.39)),
				statecheck.ExpectKnownValue(resourceName, tfjsonpath.New("status"), knownvalue.StringExact("ready")),
			},
		}},
	})
}

func TestAccGPUInstance_priceRoseAfterPlan(t *testing.T) {
	s := newTestSandbox(t)
	cfg := s.providerConfig("") + testAccGPUInstanceConfig_basic("rose", "l40s", "")
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             s.checkDestroyed,
		Steps: []resource.TestStep{{
			Config: cfg,
			ConfigPlanChecks: resource.ConfigPlanChecks{
				PreApply: []plancheck.PlanCheck{beforeApply(func() { s.setPrice("sbx-eu-1", "sbx.l40s.1x", 1.50) })},
			},
			ExpectError: errorPattern("the price of offer sandbox-vm-pool/sbx-eu-1/sbx.l40s.1x/ondemand@0.99 rose from $0.99/h at plan time to $1.50/h"),
		}, {
			// The refused apply forgot its quote: the next plan quotes afresh (the cheapest L40S is now
			// another region's) and its apply succeeds, instead of failing on the stale quote for an hour.
			Config: cfg,
			ConfigPlanChecks: resource.ConfigPlanChecks{
				PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(resourceName, tfjsonpath.New("offer_id"), knownvalue.StringRegexp(regexp.MustCompile(`^sandbox-vm-pool/sbx-(us|ap)-\d/sbx\.l40s\.1x/ondemand@`))),
				},
			},
			Check: resource.ComposeTestCheckFunc(s.checkLive(1), s.checkCreated(1)),
		}},
	})
}

// A plan that reuses an earlier plan's quote says so when the market moved, with both figures and
// the way to re-quote at once.
func TestAccGPUInstance_staleQuoteWarns(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t)
	d := newCLIDirReattach(t, "")
	d.write(s.providerConfigIn(d.dir, "") + testAccGPUInstanceConfig_basic("stale", "l40s", ""))
	first := d.mustRun("plan")
	if strings.Contains(first, "reuses an earlier quote") {
		t.Fatalf("a first plan has no earlier quote:\n%s", first)
	}
	s.setPrice("sbx-eu-1", "sbx.l40s.1x", 1.50)
	s.setPrice("sbx-us-1", "sbx.l40s.1x", 0.50)
	second := d.mustRun("plan")
	if !errorPattern("This plan reuses an earlier quote", "now costs $1.50/h (quoted $0.99/h)",
		"a cheaper offer exists now: sandbox-vm-pool/sbx-us-1/sbx.l40s.1x/ondemand@0.50", "To re-quote now, delete").MatchString(second) {
		t.Fatalf("the second plan must warn with both figures:\n%s", second)
	}
}

func TestAccGPUInstance_plannedOfferGone(t *testing.T) {
	s := newTestSandbox(t)
	cfg := s.providerConfig("") + testAccGPUInstanceConfig_basic("gone-offer", "l40s", "")
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             s.checkDestroyed,
		Steps: []resource.TestStep{{
			Config: cfg,
			ConfigPlanChecks: resource.ConfigPlanChecks{
				PreApply: []plancheck.PlanCheck{beforeApply(func() { s.setFaults(sandbox.Faults{OutOfStock: []string{"sbx-eu-1/sbx.l40s.1x"}}) })},
			},
			ExpectError: errorPattern("has no capacity any more", "set allow_fallback = true"),
		}},
	})
	if n := s.created(); n != 0 {
		t.Errorf("a failed apply created %d machines", n)
	}
}

func TestAccGPUInstance_fallback(t *testing.T) {
	s := newTestSandbox(t)
	cfg := s.providerConfig("") + testAccGPUInstanceConfig_basic("elastic", "l40s", "  allow_fallback = true\n  max_price_per_hour = 1.2")
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             s.checkDestroyed,
		Steps: []resource.TestStep{{
			Config: cfg,
			ConfigPlanChecks: resource.ConfigPlanChecks{
				PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(resourceName, tfjsonpath.New("estimated_price_usd_per_hour"), knownvalue.Float64Exact(0.99)),
					plancheck.ExpectUnknownValue(resourceName, tfjsonpath.New("offer_id")),
					plancheck.ExpectUnknownValue(resourceName, tfjsonpath.New("price_usd_per_hour")),
					// The cheapest offer runs out between plan and apply.
					beforeApply(func() { s.setFaults(sandbox.Faults{OutOfStock: []string{"sbx-eu-1/sbx.l40s.1x"}}) }),
				},
			},
			ConfigStateChecks: []statecheck.StateCheck{
				// The next cheapest within the limits: sbx-us-1 at 0.99 * 1.06 = $1.05/h.
				statecheck.ExpectKnownValue(resourceName, tfjsonpath.New("region"), knownvalue.StringExact("sbx-us-1")),
				statecheck.ExpectKnownValue(resourceName, tfjsonpath.New("price_usd_per_hour"), knownvalue.Float64Exact(1.05)),
				statecheck.ExpectKnownValue(resourceName, tfjsonpath.New("estimated_price_usd_per_hour"), knownvalue.Float64Exact(0.99)),
				statecheck.ExpectKnownValue(resourceName, tfjsonpath.New("offer_id"), knownvalue.StringExact("sandbox-vm-pool/sbx-us-1/sbx.l40s.1x/ondemand@1.05")),
				statecheck.ExpectKnownValue(resourceName, tfjsonpath.New("status"), knownvalue.StringExact("ready")),
			},
			Check: s.checkCreated(1),
		}},
	})
}

func TestAccGPUInstance_interruptedCreate(t *testing.T) {
	s := newTestSandbox(t)
	slow := s.providerConfig("") + testAccGPUInstanceConfig_basic("interrupted", "l4", "  timeouts = { create = \"2s\" }")
	normal := s.providerConfig("") + testAccGPUInstanceConfig_basic("interrupted", "l4", "")
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             s.checkDestroyed,
		Steps: []resource.TestStep{
			{
				// The machine boots for a minute; the create is cut off after 2s (the same path as Ctrl-C:
				// the RPC's context ends).
				PreConfig:   func() { s.setFaults(sandbox.Faults{BootTime: "60s"}) },
				Config:      slow,
				ExpectError: errorPattern("waiting for instance sbx-vm-interrupted--", "to run (last status pending): context deadline exceeded", "kept in state (tainted)"),
			},
			{
				// The billed machine was not forgotten: it is in state, tainted, and the next apply replaces
				// it instead of creating a second one beside it.
				PreConfig: func() { s.setFaults(sandbox.Faults{}) },
				Config:    normal,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(resourceName, plancheck.ResourceActionDestroyBeforeCreate)},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(resourceName, tfjsonpath.New("status"), knownvalue.StringExact("ready")),
				},
				Check: resource.ComposeTestCheckFunc(s.checkLive(1), s.checkCreated(2)),
			},
		},
	})
}

func TestAccGPUInstance_lostCreateResponse(t *testing.T) {
	s := newTestSandbox(t)
	cfg := s.providerConfig("") + testAccGPUInstanceConfig_basic("lost", "l4", "")
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             s.checkDestroyed,
		Steps: []resource.TestStep{{
			// The cloud creates the machine but its answer is lost: hydra finds it by name and adopts it.
			PreConfig: func() { s.setFaults(sandbox.Faults{Faults: emukit.Faults{LoseCreateResponses: 1}}) },
			Config:    cfg,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(resourceName, tfjsonpath.New("status"), knownvalue.StringExact("ready")),
			},
			Check: resource.ComposeTestCheckFunc(s.checkLive(1), s.checkCreated(1)),
		}},
	})
}

func TestAccGPUInstance_bootFailure(t *testing.T) {
	s := newTestSandbox(t)
	cfg := s.providerConfig("") + testAccGPUInstanceConfig_basic("broken", "l4", "")
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             s.checkDestroyed,
		Steps: []resource.TestStep{
			{
				PreConfig:   func() { s.setFaults(sandbox.Faults{Faults: emukit.Faults{BootFailures: 1}}) },
				Config:      cfg,
				ExpectError: errorPattern("instance sbx-vm-broken--", "failed at the cloud: injected fault"),
			},
			{
				PreConfig: func() { s.setFaults(sandbox.Faults{}) },
				Config:    cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(resourceName, plancheck.ResourceActionDestroyBeforeCreate)},
				},
				Check: resource.ComposeTestCheckFunc(s.checkLive(1), s.checkCreated(2)),
			},
		},
	})
}

func TestAccGPUInstance_pinnedFromDataSource(t *testing.T) {
	s := newTestSandbox(t)
	cfg := s.providerConfig("") + `
data "hydra_gpu_offer" "cheapest" {
  gpu_type  = "rtx6000ada"
  gpu_count = 2
}
resource "hydra_gpu_instance" "test" {
  name      = "pinned"
  gpu_type  = "rtx6000ada"
  gpu_count = 2
  offer_id  = data.hydra_gpu_offer.cheapest.id

  # The data source answers anew on every plan; once the machine exists its offer must not move.
  lifecycle {
    ignore_changes = [offer_id]
  }
}
`
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             s.checkDestroyed,
		Steps: []resource.TestStep{{
			Config: cfg,
			ConfigPlanChecks: resource.ConfigPlanChecks{
				PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(resourceName, tfjsonpath.New("price_usd_per_hour"), knownvalue.Float64Exact(1.78)),
					plancheck.ExpectKnownValue(resourceName, tfjsonpath.New("cloud"), knownvalue.StringExact("sandbox")),
					// Prices move before apply: the data source's answer is frozen in the saved plan.
					beforeApply(func() { s.setPrice("sbx-us-1", "sbx.rtx6000ada.2x", 0.50) }),
				},
			},
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(resourceName, tfjsonpath.New("offer_id"), knownvalue.StringExact("sandbox-vm-pool/sbx-eu-1/sbx.rtx6000ada.2x/ondemand@1.78")),
				statecheck.ExpectKnownValue(resourceName, tfjsonpath.New("status"), knownvalue.StringExact("ready")),
			},
		}},
	})
}

func TestAccGPUInstance_slowCloudTimesOut(t *testing.T) {
	s := newTestSandbox(t)
	s.setFaults(sandbox.Faults{OffersDelay: "30s"})
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config:      s.providerConfig(`  offer_timeout = "1s"`) + testAccGPUInstanceConfig_basic("slow", "h100", ""),
			PlanOnly:    true,
			ExpectError: errorPattern("sandbox: timed out after 1s waiting for offers"),
		}},
	})
}

func TestAccGPUInstance_update(t *testing.T) {
	s := newTestSandbox(t)
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             s.checkDestroyed,
		Steps: []resource.TestStep{
			{Config: s.providerConfig("") + testAccGPUInstanceConfig_basic("upd", "l4", `  clouds = ["sandbox"]`)},
			{
				// Narrowing limits the machine still meets changes nothing at the cloud.
				Config: s.providerConfig("") + testAccGPUInstanceConfig_basic("upd", "l4", "  clouds = [\"sandbox\"]\n  max_price_per_hour = 5\n  regions = [\"sbx-eu-1\", \"sbx-us-1\"]"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(resourceName, plancheck.ResourceActionUpdate)},
				},
				Check: s.checkCreated(1),
			},
			{
				// A region that excludes the machine's own replaces it.
				Config: s.providerConfig("") + testAccGPUInstanceConfig_basic("upd", "l4", "  regions = [\"sbx-ap-1\"]"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(resourceName, plancheck.ResourceActionDestroyBeforeCreate)},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(resourceName, tfjsonpath.New("region"), knownvalue.StringExact("sbx-ap-1")),
				},
				Check: resource.ComposeTestCheckFunc(s.checkLive(1), s.checkCreated(2)),
			},
		},
	})
}

// The sandbox only on purpose: a provider block whose only cloud is disabled never lands on the
// simulated cloud, and a configuration that does use the sandbox is told, in every plan, that nothing
// real is rented.
func TestAccGPUInstance_sandboxOnlyOnPurpose(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t)
	d := newCLIDirReattach(t, "")
	d.write(fmt.Sprintf(`
provider "hydra" {
  plan_quote_dir = %q
  mithril {
    enabled = false
  }
  provisioning {
    enabled = false
  }
}
`, filepath.Join(d.dir, "hydra")) + testAccGPUInstanceConfig_basic("prod", "l4", ""))
	out, err := d.run("plan")
	if err == nil || !errorPattern("No cloud is enabled", "no configured pool serves kind").MatchString(out) || strings.Contains(out, "sandbox-vm-pool") {
		t.Fatalf("a provider block with only a disabled cloud must not plan on the sandbox (err %v):\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(d.dir, ".hydra-sandbox")); err == nil {
		t.Fatal("the sandbox was opened for a configuration that did not ask for it")
	}

	d.write(s.providerConfigIn(d.dir, "") + testAccGPUInstanceConfig_basic("trial", "l4", ""))
	if out := d.mustRun("plan"); !errorPattern("Simulated cloud: nothing real will be rented", "a `sandbox` block is configured").MatchString(out) {
		t.Fatalf("a plan on the sandbox must say that nothing real is rented:\n%s", out)
	}
}
