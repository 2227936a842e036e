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

	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

const resourceName = "hydra_gpu_instance.test"

func testAccGPUInstanceConfig_basic(name, gpuType string, extra string) string {
	return instanceResource("test", name, gpuType, extra)
}

// instanceResource is a hydra_gpu_instance named label in the configuration, with name, gpu_type and
// the extra lines.
func instanceResource(label, name, gpuType, extra string) string {
	return fmt.Sprintf(`
resource "hydra_gpu_instance" %[1]q {
  name     = %[2]q
  gpu_type = %[3]q
%[4]s
}
`, label, name, gpuType, extra)
}

func TestAccGPUInstance_basic(t *testing.T) {
	s := newTestSandbox(t)
	cfg := s.instanceConfig("basic", "h100", "")
	accTest(t, s.checkDestroyed, []resource.TestStep{
		{
			Config: cfg,
			ConfigPlanChecks: preApply(
				plancheck.ExpectResourceAction(resourceName, plancheck.ResourceActionCreate),
				// The cheapest H100 in the default catalog: sbx-eu-1 at $2.49/h.
				planKnown("cloud", "sandbox"),
				planKnown("pool", "sandbox-vm-pool"),
				planKnown("region", "sbx-eu-1"),
				planKnown("instance_type", "sbx.h100.1x"),
				planKnown("price_usd_per_hour", 2.49),
				planKnown("offer_id", "sandbox-vm-pool/sbx-eu-1/sbx.h100.1x/ondemand@2.49"),
				// The cloud-side name carries an ownership token chosen at create.
				planUnknown("id"),
			),
			ConfigStateChecks: []statecheck.StateCheck{
				stateKnown("status", "ready"),
				stateKnown("id", like(`^sbx-vm-basic--[a-z2-7]{8}$`)),
				stateKnown("cloud_status", "running"),
				stateKnown("cloud_instance_id", like(`^sbx-[0-9a-f]{12}$`)),
				stateKnown("ready_at", knownvalue.NotNull()),
				stateKnown("price_usd_per_hour", 2.49),
				stateKnown("ssh_host", "127.0.0.1"),
			},
			Check: resource.ComposeTestCheckFunc(s.checkLive(1), s.checkCreated(1)),
		},
		// A cheaper offer appearing later never moves the machine.
		refreshedOnly(func() { s.setPrice("sbx-us-1", "sbx.h100.1x", 1.10) }, cfg),
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
	})
}

func TestAccGPUInstance_disappears(t *testing.T) {
	s := newTestSandbox(t)
	cfg := s.instanceConfig("gone", "l4", "")
	accTest(t, s.checkDestroyed, []resource.TestStep{
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
			Config:           cfg,
			ConfigPlanChecks: preApply(plancheck.ExpectResourceAction(resourceName, plancheck.ResourceActionCreate)),
			Check:            resource.ComposeTestCheckFunc(s.checkLive(1), s.checkCreated(2)),
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
		{"region not served", "", "gpu_type = \"h100\"\n  regions = [\"mars-1\"]", errorPattern(`no 1x h100 offer in regions "mars-1" (it offers 1x h100 in "sbx-ap-1", "sbx-eu-1", "sbx-us-1")`,
			`regions names "mars-1", which no configured cloud has`, `Regions of the configured clouds: "sbx-ap-1", "sbx-eu-1", "sbx-us-1".`)},
		{"kind no pool serves", fmt.Sprintf("inventory_dir = %q", onlyVM), "gpu_type = \"h100\"\n  kind = \"execlet\"", errorPattern(`no configured pool serves kind "execlet"`)},
		{"cloud not configured", "", "gpu_type = \"h100\"\n  clouds = [\"verda\"]", errorPattern("Cloud not configured", `clouds names "verda", which this provider configuration does not set up`,
			"To rent from Verda, add a `verda { ... }` block to the provider (settings: `client_id` (or VERDA_CLIENT_ID)", `Configured now: "sandbox"`)},
		{"no clouds", "", "gpu_type = \"h100\"\n  clouds = []", errorPattern("No clouds named", "clouds is empty; leave it out to use every cloud the provider configures",
			"A cloud is configured by its block in the provider (`atlas { ... }`", "with none, hydra uses the sandbox")},
		{"offer_id of another GPU", "", "gpu_type = \"h100\"\n  offer_id = \"sandbox-vm-pool/sbx-eu-1/sbx.l40s.1x/ondemand@0.99\"",
			errorPattern("does not fit this resource's `gpu_type`", "sbx.l40s.1x holds l40s GPUs, but the request's gpu_type is \"h100\"")},
		{"offer_id of another count", "", "gpu_type = \"l40s\"\n  gpu_count = 2\n  offer_id = \"sandbox-vm-pool/sbx-eu-1/sbx.l40s.1x/ondemand@0.99\"",
			errorPattern("does not fit this resource's `gpu_count`", "holds 1 GPUs, but the request's gpu_count is 2")},
		{"offer_id with a made-up price", "", "gpu_type = \"h100\"\n  offer_id = \"sandbox-vm-pool/sbx-eu-1/sbx.h100.1x/ondemand@0.01\"",
			errorPattern("does not match the cloud's current offer", `its price, $0.01/h, does not match the cloud's: the cloud asks $2.49/h`, "sandbox-vm-pool/sbx-eu-1/sbx.h100.1x/ondemand@2.49")},
		{"offer_id in a region the cloud does not offer it in", "", "gpu_type = \"h100\"\n  offer_id = \"sandbox-vm-pool/sbx-mars-1/sbx.h100.1x/ondemand@2.49\"",
			errorPattern("does not match the cloud's current offer", `the cloud does not offer sbx.h100.1x in region "sbx-mars-1" now`, "sandbox-vm-pool/sbx-eu-1/sbx.h100.1x/ondemand@2.49")},
		{"bad name", "", "gpu_type = \"h100\"\n  name = \"Bad_Name\"", errorPattern("Invalid name", `name: "Bad_Name" has upper case letters, "_"`, `for example "bad-name"`)},
		{"empty name", "", "gpu_type = \"h100\"\n  name = \"\"", errorPattern("Invalid name", "name: the name is empty", `for example "trainer-1"`)},
		{"unknown GPU type", "", `gpu_type = "tpu-v5"`, errorPattern(`unknown GPU type "tpu-v5" in gpu_type.`, `Known types (the inventory's supported_gpus.yml): "a100-80gb", "b200", "h100"`)},
		{"unknown cloud", "", "gpu_type = \"h100\"\n  clouds = [\"aws\"]", errorPattern("Unknown cloud", `clouds: "aws" is not a cloud hydra knows. Accepted values: "atlas", "lambda", "mithril", "primeintellect", "sandbox", "upcloud", "verda".`)},
	}
	var plans []refusedPlan
	for _, tc := range cases {
		body := tc.body
		if !regexp.MustCompile(`\bname\s*=`).MatchString(body) {
			body = "name = \"impossible\"\n  " + body
		}
		plans = append(plans, refusedPlan{tc.name, s.providerConfig(tc.provider) + fmt.Sprintf("resource \"hydra_gpu_instance\" \"test\" {\n  %s\n}\n", body), tc.want})
	}
	refusedPlans(t, plans)
	s.noneCreated(t, "impossible requests")
}

// refusedPlan is a configuration whose plan must fail with an error matching want; name says what is
// wrong with it.
type refusedPlan struct {
	name, config string
	want         *regexp.Regexp
}

// refusedPlans plans each configuration through the real CLI as one step of a single test case (one
// working directory, one terraform init), each case's name logged before its plan.
func refusedPlans(t *testing.T, plans []refusedPlan) {
	t.Helper()
	var steps []resource.TestStep
	for _, p := range plans {
		steps = append(steps, resource.TestStep{
			PreConfig: func() { t.Log("case: " + p.name) },
			Config:    p.config, PlanOnly: true, ExpectError: p.want,
		})
	}
	accTest(t, nil, steps)
}

// plannedOnly is a step that plans config without applying it, after pre (when not nil): the plan
// (with its refresh) must change something, res's action being want, and pass checks.
func plannedOnly(pre func(), config, res string, want plancheck.ResourceActionType, checks ...plancheck.PlanCheck) resource.TestStep {
	return resource.TestStep{
		PreConfig: pre, Config: config, PlanOnly: true, ExpectNonEmptyPlan: true,
		ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: append([]plancheck.PlanCheck{plancheck.ExpectResourceAction(res, want)}, checks...)},
	}
}

func TestAccGPUInstance_savedPlanAfterPriceChange(t *testing.T) {
	s := newTestSandbox(t)
	cfg := s.instanceConfig("saved", "a100-80gb", "")
	accTest(t, s.checkDestroyed, []resource.TestStep{{
		Config: cfg,
		ConfigPlanChecks: preApply(
			planKnown("region", "sbx-eu-1"),
			planKnown("price_usd_per_hour", 1.39),
			// The plan is saved; now a cheaper offer appears elsewhere and the planned one gets cheaper
			// too. Terraform re-plans during apply and must get the same values back.
			beforeApply(func() {
				s.setPrice("sbx-us-1", "sbx.a100-80gb.1x", 0.99)
				s.setPrice("sbx-eu-1", "sbx.a100-80gb.1x", 1.29)
			}),
		),
		ConfigStateChecks: []statecheck.StateCheck{
			stateKnown("region", "sbx-eu-1"),
			stateKnown("price_usd_per_hour", 1.39), // Terraform keeps the planned value at apply (apply warns)
			stateKnown("status", "ready"),
		},
	},
		// The cloud bills $1.29/h (its price at create): the next refresh reads it, without a diff.
		refreshedOnly(nil, cfg, planKnown("price_usd_per_hour", 1.29)),
	})
}

func TestAccGPUInstance_priceRoseAfterPlan(t *testing.T) {
	s := newTestSandbox(t)
	cfg := s.instanceConfig("rose", "l40s", "")
	accTest(t, s.checkDestroyed, []resource.TestStep{{
		Config:           cfg,
		ConfigPlanChecks: preApply(beforeApply(func() { s.setPrice("sbx-eu-1", "sbx.l40s.1x", 1.50) })),
		ExpectError:      errorPattern("offer_id sandbox-vm-pool/sbx-eu-1/sbx.l40s.1x/ondemand@0.99 says $0.99/h, but the cloud asks $1.50/h for that offer now"),
	}, {
		// The refused apply forgot its quote: the next plan quotes afresh (the cheapest L40S is now
		// another region's) and its apply succeeds, instead of failing on the stale quote for an hour.
		Config: cfg,
		ConfigPlanChecks: preApply(
			planKnown("offer_id", like(`^sandbox-vm-pool/sbx-(us|ap)-\d/sbx\.l40s\.1x/ondemand@`)),
		),
		Check: resource.ComposeTestCheckFunc(s.checkLive(1), s.checkCreated(1)),
	}})
}

// A plan that reuses an earlier plan's quote says so when the market moved, with both figures and
// the way to re-quote at once.
func TestAccGPUInstance_staleQuoteWarns(t *testing.T) {
	s, d := cliTest(t, newCLIDirReattach)
	d.writeInstance(s, "stale", "l40s", "")
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
	cfg := s.instanceConfig("gone-offer", "l40s", "")
	accTest(t, s.checkDestroyed, []resource.TestStep{{
		Config:           cfg,
		ConfigPlanChecks: preApply(beforeApply(func() { s.setFaults(sandbox.Faults{OutOfStock: []string{"sbx-eu-1/sbx.l40s.1x"}}) })),
		ExpectError:      errorPattern("has no capacity any more", "set allow_fallback = true"),
	}})
	s.noneCreated(t, "a failed apply")
}

func TestAccGPUInstance_fallback(t *testing.T) {
	s := newTestSandbox(t)
	cfg := s.instanceConfig("elastic", "l40s", "  allow_fallback = true\n  max_price_per_hour = 1.2")
	accTest(t, s.checkDestroyed, []resource.TestStep{{
		Config: cfg,
		ConfigPlanChecks: preApply(
			planKnown("estimated_price_usd_per_hour", 0.99),
			planUnknown("offer_id"),
			planUnknown("price_usd_per_hour"),
			// The cheapest offer runs out between plan and apply.
			beforeApply(func() { s.setFaults(sandbox.Faults{OutOfStock: []string{"sbx-eu-1/sbx.l40s.1x"}}) }),
		),
		ConfigStateChecks: []statecheck.StateCheck{
			// The next cheapest within the limits: sbx-us-1 at 0.99 * 1.06 = $1.05/h.
			stateKnown("region", "sbx-us-1"),
			stateKnown("price_usd_per_hour", 1.05),
			stateKnown("estimated_price_usd_per_hour", 0.99),
			stateKnown("offer_id", "sandbox-vm-pool/sbx-us-1/sbx.l40s.1x/ondemand@1.05"),
			stateKnown("status", "ready"),
		},
		Check: s.checkCreated(1),
	}})
}

func TestAccGPUInstance_interruptedCreate(t *testing.T) {
	s := newTestSandbox(t)
	slow := s.instanceConfig("interrupted", "l4", "  timeouts = { create = \"2s\" }")
	normal := s.instanceConfig("interrupted", "l4", "")
	accTest(t, s.checkDestroyed, []resource.TestStep{
		{
			// The machine boots for a minute; the create is cut off after 2s (the same path as Ctrl-C:
			// the RPC's context ends).
			PreConfig: func() { s.setFaults(sandbox.Faults{BootTime: "60s"}) },
			Config:    slow,
			ExpectError: errorPattern("waiting for instance sbx-vm-interrupted--", "to run (last status pending): stopped when timeouts.create ran out",
				`did not finish within timeouts.create = "2s"`, `timeouts = { create = "1h" }`, "kept in state (tainted)"),
		},
		// The billed machine was not forgotten: it is in state, tainted, and the next apply replaces
		// it instead of creating a second one beside it.
		s.replacedReady(normal),
	})
}

func TestAccGPUInstance_lostCreateResponse(t *testing.T) {
	s := newTestSandbox(t)
	cfg := s.instanceConfig("lost", "l4", "")
	accTest(t, s.checkDestroyed, []resource.TestStep{{
		// The cloud creates the machine but its answer is lost: hydra finds it by name and adopts it.
		PreConfig: func() { s.setFaults(sandbox.Faults{Faults: simulation.Faults{LoseCreateResponses: 1}}) },
		Config:    cfg,
		ConfigStateChecks: []statecheck.StateCheck{
			stateKnown("status", "ready"),
		},
		Check: resource.ComposeTestCheckFunc(s.checkLive(1), s.checkCreated(1)),
	}})
}

func TestAccGPUInstance_bootFailure(t *testing.T) {
	s := newTestSandbox(t)
	cfg := s.instanceConfig("broken", "l4", "")
	accTest(t, s.checkDestroyed, []resource.TestStep{
		{
			PreConfig:   func() { s.setFaults(sandbox.Faults{Faults: simulation.Faults{BootFailures: 1}}) },
			Config:      cfg,
			ExpectError: errorPattern("instance sbx-vm-broken--", "failed at the cloud: injected fault"),
		},
		s.replacedReady(cfg),
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
	accTest(t, s.checkDestroyed, []resource.TestStep{{
		Config: cfg,
		ConfigPlanChecks: preApply(
			planKnown("price_usd_per_hour", 1.78),
			planKnown("cloud", "sandbox"),
			// Prices move before apply: the data source's answer is frozen in the saved plan.
			beforeApply(func() { s.setPrice("sbx-us-1", "sbx.rtx6000ada.2x", 0.50) }),
		),
		ConfigStateChecks: []statecheck.StateCheck{
			stateKnown("offer_id", "sandbox-vm-pool/sbx-eu-1/sbx.rtx6000ada.2x/ondemand@1.78"),
			stateKnown("status", "ready"),
		},
	}})
}

func TestAccGPUInstance_slowCloudTimesOut(t *testing.T) {
	s := newTestSandbox(t)
	s.setFaults(sandbox.Faults{OffersDelay: "30s"})
	accTest(t, nil, []resource.TestStep{{
		Config:      s.providerConfig(`  offer_timeout = "1s"`) + testAccGPUInstanceConfig_basic("slow", "h100", ""),
		PlanOnly:    true,
		ExpectError: errorPattern("sandbox: timed out after 1s waiting for offers"),
	}})
}

func TestAccGPUInstance_update(t *testing.T) {
	s := newTestSandbox(t)
	accTest(t, s.checkDestroyed, []resource.TestStep{
		{Config: s.instanceConfig("upd", "l4", `  clouds = ["sandbox"]`)},
		{
			// Narrowing limits the machine still meets changes nothing at the cloud.
			Config:           s.instanceConfig("upd", "l4", "  clouds = [\"sandbox\"]\n  max_price_per_hour = 5\n  regions = [\"sbx-eu-1\", \"sbx-us-1\"]"),
			ConfigPlanChecks: preApply(plancheck.ExpectResourceAction(resourceName, plancheck.ResourceActionUpdate)),
			Check:            s.checkCreated(1),
		},
		{
			// A region that excludes the machine's own replaces it.
			Config:           s.instanceConfig("upd", "l4", "  regions = [\"sbx-ap-1\"]"),
			ConfigPlanChecks: preApply(plancheck.ExpectResourceAction(resourceName, plancheck.ResourceActionDestroyBeforeCreate)),
			ConfigStateChecks: []statecheck.StateCheck{
				stateKnown("region", "sbx-ap-1"),
			},
			Check: resource.ComposeTestCheckFunc(s.checkLive(1), s.checkCreated(2)),
		},
	})
}

// The sandbox only on purpose: a provider block whose only cloud is disabled never lands on the
// simulated cloud, and a configuration that does use the sandbox is told, in every plan, that nothing
// real is rented.
func TestAccGPUInstance_sandboxOnlyOnPurpose(t *testing.T) {
	s, d := cliTest(t, newCLIDirReattach)
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

	d.writeInstance(s, "trial", "l4", "")
	if out := d.mustRun("plan"); !errorPattern("Simulated cloud: nothing real will be rented", "a `sandbox` block is configured").MatchString(out) {
		t.Fatalf("a plan on the sandbox must say that nothing real is rented:\n%s", out)
	}
}
