package provider

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emulambda "github.com/hydragpu/terraform-provider-hydra/internal/emulator/lambda"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

const volumeResourceName = "hydra_volume.test"

// volumeConfig is one hydra_volume "test" (size 0: size_gb left out).
func testVolumeConfig(name, typ string, size int, cloud, region string) string {
	sizeLine := ""
	if size > 0 {
		sizeLine = fmt.Sprintf("  size_gb = %d\n", size)
	}
	return fmt.Sprintf(`
resource "hydra_volume" "test" {
  name   = %q
  type   = %q
%s  cloud  = %q
  region = %q
}
`, name, typ, sizeLine, cloud, region)
}

var (
	// volumeState checks the test volume's attr in the state.
	volumeState = stateKnownOf(volumeResourceName)
	// volumePlanKnown checks that the plan shows the test volume's attr as a known value.
	volumePlanKnown = planKnownOf(volumeResourceName)
)

// volumes lists every volume at the sandbox cloud.
func (s *testSandbox) volumes() []cloudprovider.Volume {
	s.t.Helper()
	vs, err := s.sb.ListVolumes(context.Background(), "")
	if err != nil {
		s.t.Fatal(err)
	}
	return vs
}

// checkNoVolumes asserts that no volume and no machine is left at the sandbox after the test.
func (s *testSandbox) checkNoVolumes(st *terraform.State) error {
	if vs := s.volumes(); len(vs) != 0 {
		return fmt.Errorf("%d volumes left at the sandbox after destroy: %+v", len(vs), vs)
	}
	return s.checkDestroyed(st)
}

// checkNewVolume checks, after what happened, that the state holds another volume than *first and that
// the sandbox has n volumes.
func (s *testSandbox) checkNewVolume(after string, first *string, n int) resource.TestCheckFunc {
	return func(st *terraform.State) error {
		if id := stateVolumeID(st); id == *first || len(s.volumes()) != n {
			return fmt.Errorf("after %s: volume %s in state (was %s), %d volumes at the sandbox; want a new one, %d in all", after, id, *first, len(s.volumes()), n)
		}
		return nil
	}
}

// importedAgain is the step that imports the test volume of config again by <cloud>/<its cloud id> and
// checks that every attribute reads back as the state has it.
func importedAgain(config, cloud string) resource.TestStep {
	return resource.TestStep{
		ResourceName: volumeResourceName, Config: config, ImportState: true,
		ImportStateIdFunc:       func(st *terraform.State) (string, error) { return cloud + "/" + stateVolumeID(st), nil },
		ImportStateVerify:       true,
		ImportStateVerifyIgnore: []string{"timeouts"},
	}
}

// stateVolumeID is the test volume's cloud_volume_id in st.
func stateVolumeID(st *terraform.State) string {
	return st.RootModule().Resources[volumeResourceName].Primary.Attributes["cloud_volume_id"]
}

// TestAccVolume_basic creates a priced block volume and an unpriced shared file system on the sandbox:
// the plan shows the id (<cloud>/<region>/<name>) as a known value; apply records the cloud's id, the
// cloud-side name, no machine using them, the exact monthly price (150 GB x $0.07) or null where the
// catalog states none; the plan after is empty; a changed size replaces the volume (hydra does not
// resize); destroy leaves no volume.
func TestAccVolume_basic(t *testing.T) {
	s := newTestSandbox(t)
	s.addEntry(sandbox.CatalogEntry{Region: "sbx-eu-1", VolumeType: "block", PricePerGBMonth: 0.07})
	shared := `
resource "hydra_volume" "shared" {
  name    = "scratch"
  type    = "shared_fs"
  size_gb = 10
  cloud   = "sandbox"
  region  = "sbx-us-1"
}
`
	cfg := s.providerConfig("") + testVolumeConfig("data", "block", 150, "sandbox", "sbx-eu-1") + shared
	var first string
	accTest(t, s.checkNoVolumes, []resource.TestStep{{
		Config: cfg,
		ConfigPlanChecks: preApply(
			plancheck.ExpectResourceAction(volumeResourceName, plancheck.ResourceActionCreate),
			volumePlanKnown("id", "sandbox/sbx-eu-1/data"),
			plancheck.ExpectKnownValue("hydra_volume.shared", tfjsonpath.New("id"), knownvalue.StringExact("sandbox/sbx-us-1/scratch")),
			plancheck.ExpectUnknownValue(volumeResourceName, tfjsonpath.New("cloud_volume_id")),
		),
		ConfigStateChecks: []statecheck.StateCheck{
			volumeState("id", "sandbox/sbx-eu-1/data"),
			volumeState("cloud_volume_id", like(`^sbxv-[0-9a-f]{12}$`)),
			volumeState("cloud_name", like(`^sbx-vm-data--[a-z2-7]{8}$`)),
			volumeState("attached_to", knownvalue.ListExact([]knownvalue.Check{})),
			volumeState("price_usd_per_month", 10.5),
			volumeState("size_gb", int64(150)),
			statecheck.ExpectKnownValue("hydra_volume.shared", tfjsonpath.New("price_usd_per_month"), knownvalue.Null()),
			statecheck.ExpectKnownValue("hydra_volume.shared", tfjsonpath.New("type"), knownvalue.StringExact("shared_fs")),
		},
		Check: func(st *terraform.State) error {
			first = stateVolumeID(st)
			vs := s.volumes()
			i := slices.IndexFunc(vs, func(v cloudprovider.Volume) bool { return v.ID == first })
			if len(vs) != 2 || i < 0 || vs[i].SizeGB != 150 || vs[i].Region != "sbx-eu-1" || vs[i].Type != cloudprovider.VolumeBlock {
				return fmt.Errorf("the sandbox has %+v; want the block volume %s (150 GB, sbx-eu-1) and the file system", vs, first)
			}
			return nil
		},
		// The plans after the apply are empty: the testing framework checks it after every apply.
	}, {
		Config:           s.providerConfig("") + testVolumeConfig("data", "block", 200, "sandbox", "sbx-eu-1") + shared,
		ConfigPlanChecks: preApply(plancheck.ExpectResourceAction(volumeResourceName, plancheck.ResourceActionDestroyBeforeCreate)),
		ConfigStateChecks: []statecheck.StateCheck{
			volumeState("size_gb", int64(200)),
			volumeState("price_usd_per_month", 14.0),
		},
		Check: s.checkNewVolume("the size change", &first, 2),
	}})
}

// TestAccVolume_import imports a volume by `<cloud>/<cloud volume id>`: its id, name, type, size,
// cloud and region read back as created. Malformed IDs are refused, saying what is accepted.
func TestAccVolume_import(t *testing.T) {
	s := newTestSandbox(t)
	cfg := s.providerConfig("") + testVolumeConfig("imp", "shared_fs", 20, "sandbox", "sbx-ap-1")
	accTest(t, s.checkNoVolumes, []resource.TestStep{{
		Config:            cfg,
		ConfigStateChecks: []statecheck.StateCheck{volumeState("id", "sandbox/sbx-ap-1/imp")},
	}, {
		ResourceName:  volumeResourceName,
		Config:        cfg,
		ImportState:   true,
		ImportStateId: "sandbox/sbx-ap-1/imp",
		ExpectError:   errorPattern(`"sandbox/sbx-ap-1/imp" has more than one "/"`, "a volume is imported as <cloud>/<cloud volume id>"),
	}, {
		ResourceName:  volumeResourceName,
		Config:        cfg,
		ImportState:   true,
		ImportStateId: "aws/vol-1",
		ExpectError:   errorPattern(`starts with "aws", which is not a cloud hydra knows`),
	}, importedAgain(cfg, "sandbox")})
}

// TestAccVolume_disappears deletes the volume behind Terraform's back: the refresh removes it from
// state, the plan creates it again (a new, empty volume), and apply does.
func TestAccVolume_disappears(t *testing.T) {
	s := newTestSandbox(t)
	cfg := s.providerConfig("") + testVolumeConfig("gone", "block", 5, "sandbox", "sbx-eu-1")
	var first string
	accTest(t, s.checkNoVolumes, []resource.TestStep{{
		Config: cfg,
		Check:  func(st *terraform.State) error { first = stateVolumeID(st); return nil },
	}, {
		PreConfig: func() {
			if err := s.sb.DeleteVolume(context.Background(), first); err != nil {
				t.Fatal(err)
			}
		},
		Config:           cfg,
		ConfigPlanChecks: preApply(plancheck.ExpectResourceAction(volumeResourceName, plancheck.ResourceActionCreate)),
		ConfigStateChecks: []statecheck.StateCheck{
			volumeState("id", "sandbox/sbx-eu-1/gone"),
			volumeState("cloud_volume_id", like(`^sbxv-`)),
		},
		Check: s.checkNewVolume("the volume disappeared", &first, 1),
	}})
}

// TestAccVolume_usedVolumeDestroy: a machine at the cloud uses the volume (created with it there, as
// a hydra_gpu_instance with volumes is): destroying the volume alone fails, naming the machine, and
// deletes nothing (the volume stays at the cloud and in state); once the machine is gone, it is
// deleted.
func TestAccVolume_usedVolumeDestroy(t *testing.T) {
	s := newTestSandbox(t)
	cfg := s.providerConfig("") + testVolumeConfig("kept", "block", 5, "sandbox", "sbx-eu-1")
	var vol string
	var machine cloudprovider.Instance
	accTest(t, s.checkNoVolumes, []resource.TestStep{{
		Config: cfg,
		Check:  func(st *terraform.State) error { vol = stateVolumeID(st); return nil },
	}, {
		PreConfig: func() { machine = s.createWithVolume(t, "user", "sbx-eu-1", vol, "/data") },
		Config:    s.providerConfig(""), // the volume left out of the configuration: destroyed
		ExpectError: errorPattern("deleting volume (kept)", "used by", "sbx-vm-user--",
			"destroy or change those first"),
	}, {
		PreConfig: func() {
			vs := s.volumes()
			if len(vs) != 1 || vs[0].ID != vol {
				t.Fatalf("after the refused destroy the sandbox has %+v; want volume %s kept", vs, vol)
			}
		},
		Config:            cfg,
		ConfigPlanChecks:  preApply(plancheck.ExpectEmptyPlan()),
		ConfigStateChecks: []statecheck.StateCheck{volumeState("attached_to", knownvalue.ListExact([]knownvalue.Check{like(`^sbx-vm-user--[a-z2-7]{8}$`)}))},
	}, {
		PreConfig: func() {
			if err := s.sb.Delete(context.Background(), machine.ID); err != nil {
				t.Fatal(err)
			}
		},
		Config:            cfg,
		ConfigStateChecks: []statecheck.StateCheck{volumeState("attached_to", knownvalue.ListExact([]knownvalue.Check{}))},
	}})
}

// TestAccVolume_usedByMachineDestroy is the same through Terraform: a hydra_gpu_instance with the
// volume in volumes is placed in its cloud and region; destroying the volume alone (left out of the
// configuration while the machine still names it) fails naming the machine and deletes nothing; with
// the machine depending on the volume, the test's final destroy deletes the machine first, then the
// volume.
func TestAccVolume_usedByMachineDestroy(t *testing.T) {
	s := newTestSandbox(t)
	volume := testVolumeConfig("kept", "block", 5, "sandbox", "sbx-us-1")
	machine := func(volumeID, extra string) string {
		return testAccGPUInstanceConfig_basic("user", "h100",
			fmt.Sprintf("  volumes = [{ volume_id = %s, mount_path = \"/data\" }]\n%s", volumeID, extra))
	}
	var vol string
	accTest(t, s.checkNoVolumes, []resource.TestStep{{
		Config: s.providerConfig("") + volume + machine(`"sandbox/sbx-us-1/kept"`, "  depends_on = [hydra_volume.test]"),
		ConfigPlanChecks: preApply(
			planKnown("cloud", "sandbox"),
			planKnown("region", "sbx-us-1"), // not the cheaper sbx-eu-1: the volume is in sbx-us-1
		),
		Check: func(st *terraform.State) error {
			vol = stateVolumeID(st)
			return nil
		},
	}, {
		Config:      s.providerConfig("") + machine(`"sandbox/sbx-us-1/kept"`, ""),
		ExpectError: errorPattern("deleting volume (kept)", "used by sbx-vm-user--", "destroy or change those first"),
	}, {
		PreConfig: func() {
			if vs := s.volumes(); len(vs) != 1 || vs[0].ID != vol || len(vs[0].AttachedTo) != 1 {
				t.Fatalf("after the refused destroy the sandbox has %+v; want volume %s kept, on the machine", vs, vol)
			}
		},
		Config:            s.providerConfig("") + volume + machine("hydra_volume.test.id", ""),
		ConfigPlanChecks:  preApply(plancheck.ExpectEmptyPlan()),
		ConfigStateChecks: []statecheck.StateCheck{volumeState("attached_to", knownvalue.ListExact([]knownvalue.Check{like(`^sbx-vm-user--[a-z2-7]{8}$`)}))},
	}})
}

// createWithVolume makes at the sandbox, in its vm pool, a machine of the resource named name in
// region with volume vol mounted at mountPath.
func (s *testSandbox) createWithVolume(t *testing.T, name, region, vol, mountPath string) cloudprovider.Instance {
	t.Helper()
	inv, err := inventory.Default()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(inv.Pools, func(p inventory.Pool) bool { return p.Cloud == "sandbox" && p.Kind == "vm" })
	if i < 0 {
		t.Fatal("no sandbox vm pool")
	}
	pool := inv.Pools[i]
	offers, err := s.sb.Offers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	j := slices.IndexFunc(offers, func(o cloudprovider.Offer) bool { return o.Region == region && !o.Spot })
	if j < 0 {
		t.Fatalf("no sandbox offer in %s", region)
	}
	offer := offers[j]
	offer.Pool = pool.Name
	owner := cloudprovider.Ownership{Resource: name, Token: cloudprovider.OwnerToken(name, 0)}
	inst, err := s.sb.CreateWithVolumes(context.Background(), cloudprovider.CreateRequest{Name: cloudprovider.CloudName(pool, name, owner.Token),
		Pool: pool, Offer: offer, Owner: owner}, []cloudprovider.VolumeMount{{VolumeID: vol, MountPath: mountPath}})
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// TestAccVolume_unsupportedType: a volume type the cloud lacks in the region fails at plan, naming
// what the region has, and nothing is created; so do two volumes of one id, a volume without a size (at
// validate), and a cloud the provider does not configure.
func TestAccVolume_unsupportedType(t *testing.T) {
	s := newTestSandbox(t)
	s.addEntry(sandbox.CatalogEntry{Region: "sbx-us-1", VolumeType: "block"})
	accTest(t, nil, []resource.TestStep{{
		Config:      s.providerConfig("") + testVolumeConfig("data", "shared_fs", 10, "sandbox", "sbx-us-1"),
		PlanOnly:    true,
		ExpectError: errorPattern("No shared_fs volumes for hydra_volume data", "sbx-us-1", "block", "volume_type"),
	}, {
		Config: s.providerConfig("") + testVolumeConfig("twice", "block", 1, "sandbox", "sbx-us-1") +
			strings.Replace(testVolumeConfig("twice", "block", 2, "sandbox", "sbx-us-1"), `"test"`, `"again"`, 1),
		PlanOnly:    true,
		ExpectError: errorPattern("Two volumes share one id", `named "twice" in sandbox/sbx-us-1`),
	}, {
		Config:      s.providerConfig("") + testVolumeConfig("data", "block", 0, "sandbox", "sbx-us-1"),
		PlanOnly:    true,
		ExpectError: errorPattern(`The argument "size_gb" is required`),
	}, {
		Config:      s.providerConfig("") + testVolumeConfig("data", "block", 10, "verda", "FIN-01"),
		PlanOnly:    true,
		ExpectError: errorPattern("Cloud not configured", `cloud is "verda", which this provider configuration does not set up`),
	}})
	if vs := s.volumes(); len(vs) != 0 {
		t.Errorf("plans that failed created volumes: %+v", vs)
	}
}

// hydra_gpu_offer's volume_type keeps only offers where that type of volume can be created: with
// sbx-eu-1 (the cheapest region) keeping only block volumes, the cheapest H100 next to a shared file
// system is in sbx-us-1 (a cluster of 2 too); next to a block volume it stays in sbx-eu-1.
func TestAccGPUOffer_volumeType(t *testing.T) {
	s := newTestSandbox(t)
	s.addEntry(sandbox.CatalogEntry{Region: "sbx-eu-1", VolumeType: "block"})
	offer := func(typ string) string {
		return fmt.Sprintf("data %q %q {\n  gpu_type = \"h100\"\n  volume_type = %q\n}\n", "hydra_gpu_offer", typ, typ)
	}
	cluster := `
data "hydra_gpu_offer" "cluster" {
  gpu_type     = "h100"
  nodes        = 2
  interconnect = "any"
  volume_type  = "shared_fs"
}
`
	accTest(t, nil, []resource.TestStep{{
		Config: s.providerConfig("") + offer("shared_fs") + offer("block") + cluster,
		ConfigStateChecks: []statecheck.StateCheck{
			statecheck.ExpectKnownValue("data.hydra_gpu_offer.cluster", tfjsonpath.New("region"), knownvalue.StringExact("sbx-us-1")),
			statecheck.ExpectKnownValue("data.hydra_gpu_offer.cluster", tfjsonpath.New("offers"), noOfferIn("sbx-eu-1")),
			statecheck.ExpectKnownValue("data.hydra_gpu_offer.shared_fs", tfjsonpath.New("region"), knownvalue.StringExact("sbx-us-1")),
			statecheck.ExpectKnownValue("data.hydra_gpu_offer.shared_fs", tfjsonpath.New("offers"), noOfferIn("sbx-eu-1")),
			statecheck.ExpectKnownValue("data.hydra_gpu_offer.block", tfjsonpath.New("region"), knownvalue.StringExact("sbx-eu-1")),
		},
	}})
}

// noOfferIn checks that no element of an offers list is in region.
func noOfferIn(region string) knownvalue.Check { return offersNotIn{region} }

type offersNotIn struct{ region string }

func (c offersNotIn) CheckValue(v any) error {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return fmt.Errorf("offers is %T %v; want a non-empty list", v, v)
	}
	for _, e := range list {
		if o, ok := e.(map[string]any); ok && o["region"] == c.region {
			return fmt.Errorf("offer %v is in %s", o["id"], c.region)
		}
	}
	return nil
}

func (c offersNotIn) String() string { return "no offer in " + c.region }

// TestAccVolume_emulators: on Verda's emulator a block volume (an NVMe volume, $0.20 per GB and
// month there) is created with its exact monthly price, imports as created, and is deleted by destroy
// (to Verda's trash); Atlas has no volume API, which the plan says.
func TestAccVolume_emulators(t *testing.T) {
	c := newTestClouds(t, nil)
	cfg := c.providerConfig(t.TempDir(), "verda", "atlas") + testVolumeConfig("emu", "block", 100, "verda", "FIN-01")
	accTest(t, func(*terraform.State) error {
		for _, v := range c.verda.Volumes() {
			if !v.Trashed {
				return fmt.Errorf("verda volume %s (%s) left after destroy", v.ID, v.Name)
			}
		}
		return nil
	}, []resource.TestStep{{
		Config:      c.providerConfig(t.TempDir(), "verda", "atlas") + testVolumeConfig("emu", "block", 100, "atlas", "us-east-1"),
		PlanOnly:    true,
		ExpectError: errorPattern("No block volumes for hydra_volume emu", "atlas has no volume API"),
	}, {
		Config:           cfg,
		ConfigPlanChecks: preApply(volumePlanKnown("id", "verda/FIN-01/emu")),
		ConfigStateChecks: []statecheck.StateCheck{
			volumeState("price_usd_per_month", 20.0),
			volumeState("cloud_name", like(`^verda-vm-emu--[a-z2-7]{8}$`)),
			volumeState("attached_to", knownvalue.ListExact([]knownvalue.Check{})),
		},
		Check: func(st *terraform.State) error {
			vs := c.verda.Volumes()
			if len(vs) != 1 || vs[0].ID != stateVolumeID(st) || vs[0].Type != "NVMe" || vs[0].Size != 100 || vs[0].Location != "FIN-01" ||
				vs[0].OnSpotDiscontinue != "keep_detached" {
				return fmt.Errorf("verda has %+v; want one NVMe volume of 100 GB in FIN-01, keep_detached", vs)
			}
			return nil
		},
	}, importedAgain(cfg, "verda")})
}

// TestAccVolume_lambdaEmulator: on Lambda's emulator a shared_fs volume (a file system) is created;
// Lambda states no size and no price, so size_gb stays as configured and the price is null. Removed
// from the state and imported, the volume has no size: the next plan records the configured one in
// place, never replacing (deleting) the file system for it. A block volume there fails at plan, naming
// what Lambda has. (30 s wall, 2 CPU-s: the Lambda client keeps Lambda's documented 1 request/s, which
// the provider gives tests no way to relax.)
func TestAccVolume_lambdaEmulator(t *testing.T) {
	emu := emulambda.New(emulambda.Options{Options: simulation.Options{BootDuration: time.Second}})
	srv := httptest.NewServer(emu)
	t.Cleanup(srv.Close)
	provider := fmt.Sprintf(`
provider "hydra" {
  plan_quote_dir = %q
  provisioning {
    enabled = false
  }
  lambda {
    endpoint = %q
    api_key  = %q
  }
}
`, t.TempDir(), srv.URL+emulambda.BasePath, emulambda.DefaultAPIKey)
	cfg := provider + testVolumeConfig("fs", "shared_fs", 100, "lambda", "us-east-1")
	var first string
	accTest(t, nil, []resource.TestStep{{
		Config:   provider + testVolumeConfig("blk", "block", 10, "lambda", "us-east-1"),
		PlanOnly: true,
		ExpectError: errorPattern("No block volumes for hydra_volume blk", "lambda has no block volumes in us-east-1; it has:",
			"shared_fs"),
	}, {
		Config: cfg,
		ConfigStateChecks: []statecheck.StateCheck{
			volumeState("cloud", "lambda"),
			volumeState("size_gb", int64(100)),
			volumeState("price_usd_per_month", knownvalue.Null()),
			volumeState("cloud_name", like(`^lambda-vm-fs--[a-z2-7]{8}$`)),
		},
		Check: func(st *terraform.State) error { first = stateVolumeID(st); return nil },
	}, {
		// Out of the state, kept at the cloud, so that it can be imported.
		Config: provider + "removed {\n  from = hydra_volume.test\n  lifecycle {\n    destroy = false\n  }\n}\n",
	}, {
		ResourceName:       volumeResourceName,
		Config:             cfg,
		ImportState:        true,
		ImportStateIdFunc:  func(*terraform.State) (string, error) { return "lambda/" + first, nil },
		ImportStatePersist: true,
		ImportStateCheck: func(states []*terraform.InstanceState) error {
			if len(states) != 1 || states[0].Attributes["size_gb"] != "" || states[0].Attributes["cloud_volume_id"] != first {
				return fmt.Errorf("imported %+v; want volume %s without a size", states, first)
			}
			return nil
		},
	}, {
		Config:            cfg,
		ConfigPlanChecks:  preApply(plancheck.ExpectResourceAction(volumeResourceName, plancheck.ResourceActionUpdate)),
		ConfigStateChecks: []statecheck.StateCheck{volumeState("size_gb", int64(100))},
		Check: func(st *terraform.State) error {
			if id := stateVolumeID(st); id != first {
				return fmt.Errorf("the file system is %s after the import's plan; want %s kept", id, first)
			}
			return nil
		},
	}})
}

// TestAccVolume_replacementWarned: through the real CLI, a plan that replaces a volume warns that its
// data goes with it: a changed size (hydra does not resize) and a changed name each say so; the new
// volume is checked as a create (a type the region lacks fails the plan).
func TestAccVolume_replacementWarned(t *testing.T) {
	s, d := cliTest(t, newCLIDirReattach)
	d.write(s.providerConfigIn(d.dir, "") + testVolumeConfig("warned", "block", 5, "sandbox", "sbx-eu-1"))
	d.mustRun("apply", "-auto-approve")
	d.write(s.providerConfigIn(d.dir, "") + testVolumeConfig("warned", "block", 6, "sandbox", "sbx-eu-1"))
	if out := d.mustRun("plan"); !errorPattern("Warning: Volume sandbox/sbx-eu-1/warned will be replaced, not resized",
		"size_gb changes from 5 to 6", "deletes the volume with its data").MatchString(out) {
		t.Errorf("a plan changing size_gb does not warn that the volume is replaced:\n%s", out)
	}
	d.write(s.providerConfigIn(d.dir, "") + testVolumeConfig("renamed", "block", 5, "sandbox", "sbx-eu-1"))
	if out := d.mustRun("plan"); !errorPattern("Warning: Volume sandbox/sbx-eu-1/warned will be replaced", "name changes",
		"deletes the volume with its data").MatchString(out) {
		t.Errorf("a plan changing the name does not warn that the volume is replaced:\n%s", out)
	}
	// The replacement is checked as a create: a type the region lacks fails the plan.
	s.addEntry(sandbox.CatalogEntry{Region: "sbx-eu-1", VolumeType: "block"})
	d.write(s.providerConfigIn(d.dir, "") + testVolumeConfig("warned", "shared_fs", 5, "sandbox", "sbx-eu-1"))
	if out, err := d.run("plan"); err == nil || !errorPattern("No shared_fs volumes for hydra_volume warned", "sandbox has no shared_fs volumes in sbx-eu-1").MatchString(out) {
		t.Errorf("a plan replacing the volume with a type the region lacks does not fail saying so (err %v):\n%s", err, out)
	}
	// (A destroy's first plan, where the command is unknown as under reattach, checks the configuration too.)
	d.write(s.providerConfigIn(d.dir, "") + testVolumeConfig("warned", "block", 5, "sandbox", "sbx-eu-1"))
	d.mustRun("destroy", "-auto-approve")
	if err := s.checkNoVolumes(nil); err != nil {
		t.Fatal(err)
	}
}

// TestAccVolume_blockEmulators: on UpCloud's and Prime Intellect's emulators a block volume goes where
// hydra_gpu_offer's volume_type finds one next to an H100, with the price the cloud states (neither
// has shared_fs volumes: the plan says so); on Mithril's, in its region, with no price (Mithril states
// none). Each imports as created and destroy deletes it.
func TestAccVolume_blockEmulators(t *testing.T) {
	for _, tc := range []struct {
		cloud, prefix string
		// region is the volume's region (HCL); price checks its price_usd_per_month; sharedFS says the
		// cloud has shared_fs volumes there too.
		region   string
		price    knownvalue.Check
		sharedFS bool
		left     func(*testClouds) []string
	}{
		{cloud: "upcloud", prefix: "upcloud-vm-", left: func(c *testClouds) []string {
			var out []string
			for _, st := range c.upcloud.Storages() {
				out = append(out, st.UUID+" "+st.Title)
			}
			return out
		}},
		// Mithril sells spot only (no on-demand offer for the data source) and states no volume price.
		{cloud: "mithril", prefix: "mithril-vm-", region: `"us-central1-a"`, price: knownvalue.Null(), sharedFS: true, left: func(c *testClouds) []string {
			var out []string
			for _, v := range c.mithril.Volumes() {
				if !v.Deleted {
					out = append(out, v.FID+" "+v.Name)
				}
			}
			return out
		}},
		{cloud: "primeintellect", prefix: "pi-vm-", left: func(c *testClouds) []string {
			var out []string
			for _, d := range c.prime.Disks() {
				if d.Status != "DELETING" { // deleted: Prime takes a moment to finish
					out = append(out, d.ID+" "+d.Name+" "+d.Status)
				}
			}
			return out
		}},
	} {
		t.Run(tc.cloud, func(t *testing.T) {
			region, price, offer := tc.region, tc.price, ""
			if region == "" {
				region, offer = "data.hydra_gpu_offer.here.region", "data \"hydra_gpu_offer\" \"here\" {\n  gpu_type    = \"h100\"\n  volume_type = \"block\"\n}\n"
			}
			if price == nil {
				price = knownvalue.NotNull()
			}
			c := newTestClouds(t, nil)
			cfg := c.providerConfig(t.TempDir(), tc.cloud) + offer + fmt.Sprintf(`
resource "hydra_volume" "test" {
  name    = "blk"
  type    = "block"
  size_gb = 50
  cloud   = %q
  region  = %s
}
`, tc.cloud, region)
			var steps []resource.TestStep
			if !tc.sharedFS {
				steps = append(steps, resource.TestStep{
					Config:      strings.Replace(cfg, `type    = "block"`, `type    = "shared_fs"`, 1),
					PlanOnly:    true,
					ExpectError: errorPattern("No shared_fs volumes for hydra_volume blk", tc.cloud+" has no shared_fs volumes in"),
				})
			}
			accTest(t, func(*terraform.State) error {
				if left := tc.left(c); len(left) != 0 {
					return fmt.Errorf("%s keeps %v after destroy", tc.cloud, left)
				}
				return nil
			}, append(steps, resource.TestStep{
				Config: cfg,
				ConfigStateChecks: []statecheck.StateCheck{
					volumeState("cloud_name", like(`^`+tc.prefix+`blk--[a-z2-7]{8}$`)),
					volumeState("size_gb", int64(50)),
					volumeState("price_usd_per_month", price),
					volumeState("attached_to", knownvalue.ListExact([]knownvalue.Check{})),
				},
				Check: func(*terraform.State) error {
					if left := tc.left(c); len(left) != 1 {
						return fmt.Errorf("%s has %v; want the one volume", tc.cloud, left)
					}
					return nil
				},
			}, resource.TestStep{
				ResourceName: volumeResourceName,
				Config:       cfg,
				ImportState:  true,
				ImportStateIdFunc: func(st *terraform.State) (string, error) {
					return tc.cloud + "/" + stateVolumeID(st), nil
				},
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts"},
			}))
		})
	}
}

// hydra_gpu_offer's volume_type with clouds naming an unconfigured cloud says that cloud is not
// configured (not that it has no volumes).
func TestAccGPUOffer_volumeTypeUnconfiguredCloud(t *testing.T) {
	s := newTestSandbox(t)
	accTest(t, nil, []resource.TestStep{{
		Config:      s.providerConfig("") + "data \"hydra_gpu_offer\" \"x\" {\n  gpu_type = \"h100\"\n  clouds = [\"verda\"]\n  volume_type = \"block\"\n}\n",
		ExpectError: errorPattern("Cloud not configured", `clouds names "verda"`),
	}})
}
