package provider

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
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
	"golang.org/x/crypto/ssh"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emulambda "github.com/hydragpu/terraform-provider-hydra/internal/emulator/lambda"
	emumithril "github.com/hydragpu/terraform-provider-hydra/internal/emulator/mithril"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
	"github.com/hydragpu/terraform-provider-hydra/internal/testsupport/sshtest"
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
	},
		refreshedOnly(func() {
			vs := s.volumes()
			if len(vs) != 1 || vs[0].ID != vol {
				t.Fatalf("after the refused destroy the sandbox has %+v; want volume %s kept", vs, vol)
			}
		}, cfg, volumePlanKnown("attached_to", knownvalue.ListExact([]knownvalue.Check{like(`^sbx-vm-user--[a-z2-7]{8}$`)}))),
		refreshedOnly(func() {
			if err := s.sb.Delete(context.Background(), machine.ID); err != nil {
				t.Fatal(err)
			}
		}, cfg, volumePlanKnown("attached_to", knownvalue.ListExact([]knownvalue.Check{}))),
	})
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

const testVolumeResource = "hydra_volume.v"

// volumeConfig is one hydra_volume "v".
func volumeConfig(name, typ, cloud, region string) string {
	return fmt.Sprintf(`
resource "hydra_volume" "v" {
  name    = %q
  type    = %q
  size_gb = 10
  cloud   = %q
  region  = %q
}
`, name, typ, cloud, region)
}

// volumesAt is a volumes attribute giving hydra_volume.v at mountPath.
func volumesAt(mountPath string) string {
	return fmt.Sprintf("  volumes = [{ volume_id = hydra_volume.v.id, mount_path = %q }]\n", mountPath)
}

// customerKey is a key pair the test logs in to its machines with (installed as ssh_public_keys).
type customerKey struct {
	signer ssh.Signer
	line   string // authorized_keys line
}

func newCustomerKey(t *testing.T) customerKey {
	t.Helper()
	signer, line := sshtest.NewKey(t)
	return customerKey{signer: signer, line: line + " volume-test"}
}

// sshRun runs cmd over SSH on the machine whose state attributes are a (ssh_host, ssh_port, ssh_user,
// and host_key, which is pinned), as the customer key, and returns its standard output.
func (k customerKey) sshRun(a map[string]string, cmd string) (string, error) {
	out, err := sshtest.Login{Addr: net.JoinHostPort(a["ssh_host"], a["ssh_port"]), User: a["ssh_user"], Signer: k.signer,
		HostKey: a["host_key"], Timeout: 30 * time.Second}.Run(cmd)
	if err != nil {
		return out, fmt.Errorf("%s: %w", cmd, err)
	}
	return out, nil
}

// attrs are the primary attributes of a resource in the state.
func attrs(st *terraform.State, name string) (map[string]string, error) {
	r, ok := st.RootModule().Resources[name]
	if !ok || r.Primary == nil {
		return nil, fmt.Errorf("%s is not in the state", name)
	}
	return r.Primary.Attributes, nil
}

// randomText is a line no earlier run wrote.
func randomText(t *testing.T) string {
	t.Helper()
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "kept " + hex.EncodeToString(b)
}

// volumeMachine tracks the test machine across steps: the machines it has been and what the volume holds.
type volumeMachine struct {
	t        *testing.T
	key      customerKey
	res      string
	machines []string          // cloud_instance_id of each machine, in order
	files    map[string]string // relative path under the mount -> content
}

// onMachine is a check that calls fn with the current machine's attributes in the state.
func (v *volumeMachine) onMachine(fn func(a map[string]string) error) resource.TestCheckFunc {
	return func(st *terraform.State) error {
		a, err := attrs(st, v.res)
		if err != nil {
			return err
		}
		return fn(a)
	}
}

// write writes a new file with random content at $HYDRA_ROOT<mount>/<file> on the current machine.
func (v *volumeMachine) write(mount, file string) resource.TestCheckFunc {
	return v.onMachine(func(a map[string]string) error {
		text := randomText(v.t)
		cmd := fmt.Sprintf(`printf '%%s\n' %q > "$HYDRA_ROOT"%s/%s && sync`, text, mount, file)
		if _, err := v.key.sshRun(a, cmd); err != nil {
			return fmt.Errorf("writing on the volume of %s: %w", a["id"], err)
		}
		v.files[file] = text
		return nil
	})
}

// readBack reads every file written so far at $HYDRA_ROOT<mount>/ over SSH on the current machine.
func (v *volumeMachine) readBack(mount string) resource.TestCheckFunc {
	return v.onMachine(func(a map[string]string) error {
		if len(v.files) == 0 {
			return fmt.Errorf("nothing was written to read back")
		}
		for file, want := range v.files {
			got, err := v.key.sshRun(a, fmt.Sprintf(`cat "$HYDRA_ROOT"%s/%s`, mount, file))
			if err != nil {
				return fmt.Errorf("reading %s back on %s: %w", file, a["id"], err)
			}
			if strings.TrimSpace(got) != want {
				return fmt.Errorf("%s on %s holds %q, want %q", file, a["id"], got, want)
			}
		}
		return nil
	})
}

// newMachine records the current machine and checks it is another one than before (replaced is false
// for the first).
func (v *volumeMachine) newMachine(replaced bool) resource.TestCheckFunc {
	return v.onMachine(func(a map[string]string) error {
		id := a["cloud_instance_id"]
		if replaced && (len(v.machines) == 0 || slices.Contains(v.machines, id)) {
			return fmt.Errorf("machine %s is not a replacement of %v", id, v.machines)
		}
		if !replaced && len(v.machines) > 0 && v.machines[len(v.machines)-1] != id {
			return fmt.Errorf("machine %s replaced %s; want it kept", id, v.machines[len(v.machines)-1])
		}
		if replaced || len(v.machines) == 0 {
			v.machines = append(v.machines, id)
		}
		return nil
	})
}

// TestAccGPUInstance_volumeKeepsData is the volume's promise on the sandbox, with bare-vm.yml's own
// volume, access and marker roles (volumeRoles; the whole playbook mounting a volume is provision's
// TestAnsibleCoreMatrix): a file written over SSH on the volume of a spot machine is read back over
// SSH on the machine that replaces it after a preemption (a short notice, then taken back: the next
// plan replaces it, replace_when_preempted); a changed mount path is provisioned again in place; the
// volume's attached_to follows the machine; removed from the state and imported, the machine keeps
// its volume (its marker's digest covers the volumes: recorded in place, no machine created, the data
// read at its path). The machine is placed in the volume's region (sbx-us-1), not the cheapest
// (sbx-eu-1). A replacement for a changed configuration gets the volume as this one does:
// TestAccGPUInstance_volumeEmulators applies a -replace at each cloud, the same volume kept.
func TestAccGPUInstance_volumeKeepsData(t *testing.T) {
	requireProvisioningTools(t)
	s := newTestSandbox(t)
	dir := slimPlaybooks(t, volumeRoles...)
	v := &volumeMachine{t: t, key: newCustomerKey(t), res: resourceName, files: map[string]string{}}
	config := func(mount string) string {
		return s.provisionedConfig(dir) + volumeConfig("data", "block", "sandbox", "sbx-us-1") +
			testAccGPUInstanceConfig_basic("keep", "h100", fmt.Sprintf("  spot = true\n  ssh_public_keys = [%q]\n%s", v.key.line, volumesAt(mount)))
	}
	var machineID string
	volumesState := statecheck.ExpectKnownValue(resourceName, tfjsonpath.New("volumes"), knownvalue.ListExact([]knownvalue.Check{
		knownvalue.ObjectExact(map[string]knownvalue.Check{"volume_id": knownvalue.StringExact("sandbox/sbx-us-1/data"), "mount_path": knownvalue.StringExact("/data")}),
	}))
	accTest(t, s.checkDestroyed, append([]resource.TestStep{
		{
			Config: config("/data"),
			ConfigPlanChecks: preApply(
				plancheck.ExpectResourceAction(resourceName, plancheck.ResourceActionCreate),
				planKnown("region", "sbx-us-1"),
				planKnown("is_spot", true),
				planKnown("volumes", knownvalue.ListSizeExact(1)),
			),
			ConfigStateChecks: []statecheck.StateCheck{stateKnown("status", "ready"), volumesState},
			Check:             resource.ComposeTestCheckFunc(v.newMachine(false), v.write("/data", "before-preemption")),
		},
		{
			// Preempted: the next plan replaces the machine; the new one mounts the same volume with its data.
			PreConfig: func() {
				live := s.live()
				if len(live) != 1 {
					t.Fatalf("live machines: %+v", live)
				}
				// One second's notice; the sandbox takes the machine back once it has passed.
				if err := s.sb.Preempt(live[0].ID, time.Second); err != nil {
					t.Fatal(err)
				}
				time.Sleep(1500 * time.Millisecond)
			},
			Config:            config("/data"),
			ConfigPlanChecks:  preApply(plancheck.ExpectResourceAction(resourceName, plancheck.ResourceActionDestroyBeforeCreate), planKnown("region", "sbx-us-1")),
			ConfigStateChecks: []statecheck.StateCheck{stateKnown("status", "ready"), volumesState},
			Check:             resource.ComposeTestCheckFunc(v.newMachine(true), v.readBack("/data"), v.write("/data", "after-preemption")),
		},
		{
			// A refresh reads which machine uses the volume: the last one alone.
			RefreshState: true,
			Check: func(st *terraform.State) error {
				m, err := attrs(st, resourceName)
				if err != nil {
					return err
				}
				vol, err := attrs(st, testVolumeResource)
				if err != nil {
					return err
				}
				if vol["attached_to.#"] != "1" || vol["attached_to.0"] != m["id"] {
					return fmt.Errorf("the volume's attached_to is %s:%q, want [%q]", vol["attached_to.#"], vol["attached_to.0"], m["id"])
				}
				return nil
			},
		},
		{
			// Only the mount path changes: provisioned again in place, the data at the new path.
			Config: config("/mnt/ckpt"),
			ConfigPlanChecks: preApply(
				plancheck.ExpectResourceAction(resourceName, plancheck.ResourceActionUpdate),
				planUnknown("status"),
			),
			ConfigStateChecks: []statecheck.StateCheck{stateKnown("status", "ready")},
			Check: resource.ComposeTestCheckFunc(v.newMachine(false), v.readBack("/mnt/ckpt"), func(st *terraform.State) error {
				a, err := attrs(st, resourceName)
				machineID = a["id"]
				return err
			}),
		},
	}, reimported(resourceName, s.provisionedConfig(dir)+volumeConfig("data", "block", "sandbox", "sbx-us-1"), config("/mnt/ckpt"),
		func() string { return machineID },
		resource.ComposeTestCheckFunc(v.newMachine(false), v.readBack("/mnt/ckpt"), s.checkCreated(2), s.checkLive(1)))...))
}

// reimported are the steps that take res out of the state, kept at the cloud (a removed block beside
// kept, the configuration without res), import it again by the id importID returns, and apply config
// with check: the imported machine or cluster has no volumes in its state, but the provisioning
// digest its markers record (which covers them) says it was provisioned with these, so it is kept and
// the volumes are recorded in place (an update).
func reimported(res, kept, config string, importID func() string, check resource.TestCheckFunc) []resource.TestStep {
	return []resource.TestStep{
		{Config: kept + "removed {\n  from = " + res + "\n  lifecycle {\n    destroy = false\n  }\n}\n"},
		{
			ResourceName: res, Config: config, ImportState: true, ImportStatePersist: true,
			ImportStateIdFunc: func(*terraform.State) (string, error) { return importID(), nil },
		},
		{Config: config, ConfigPlanChecks: preApply(plancheck.ExpectResourceAction(res, plancheck.ResourceActionUpdate)), Check: check},
	}
}

// TestAccGPUInstance_volumesInvalid: what validation refuses, through the real CLI, before any
// cloud is asked: a relative or system mount path, a volume twice, two paths one inside the other,
// volumes in two regions, a volume outside clouds.
func TestAccGPUInstance_volumesInvalid(t *testing.T) {
	s := newTestSandbox(t)
	cfg := func(extra string) string { return s.instanceConfig("badvol", "h100", extra) }
	vol := func(id, path string) string { return fmt.Sprintf("{ volume_id = %q, mount_path = %q }", id, path) }
	refusedPlans(t, []refusedPlan{
		{"relative path", cfg("  volumes = [" + vol("sandbox/sbx-eu-1/a", "data") + "]"), errorPattern("Invalid mount_path", `"data" is not an absolute path`)},
		{"system path", cfg("  volumes = [" + vol("sandbox/sbx-eu-1/a", "/etc") + "]"), errorPattern("Invalid mount_path", "system directory")},
		{"bad volume_id", cfg("  volumes = [" + vol("sbx-vm-a--ab12cd34", "/data") + "]"), errorPattern("Invalid volume_id", "is not <cloud>/<region>/<name>")},
		{"twice", cfg("  volumes = [" + vol("sandbox/sbx-eu-1/a", "/a") + ", " + vol("sandbox/sbx-eu-1/a", "/b") + "]"), errorPattern("Volume listed twice")},
		{"nested paths", cfg("  volumes = [" + vol("sandbox/sbx-eu-1/a", "/data") + ", " + vol("sandbox/sbx-eu-1/b", "/data/b") + "]"), errorPattern("Mount path inside another")},
		{"two regions", cfg("  volumes = [" + vol("sandbox/sbx-eu-1/a", "/a") + ", " + vol("sandbox/sbx-us-1/b", "/b") + "]"),
			errorPattern("Volumes in different places", "is in sandbox/sbx-us-1", "is in sandbox/sbx-eu-1")},
		{"outside clouds", cfg("  clouds = [\"verda\"]\n  volumes = [" + vol("sandbox/sbx-eu-1/a", "/a") + "]"), errorPattern("Volume outside the allowed clouds")},
		{"outside regions", cfg("  regions = [\"sbx-us-1\"]\n  volumes = [" + vol("sandbox/sbx-eu-1/a", "/a") + "]"), errorPattern("Volume outside the allowed regions")},
		{"empty", cfg("  volumes = []"), errorPattern("volumes", "at least 1")},
	})
	s.noneCreated(t, "an invalid volumes plan")
}

// emulatedVolume is the volume the test made at an emulated cloud, as that cloud lists it: its id and
// the machines (or bids) using it.
type emulatedVolume struct {
	id    string
	users []string
}

// verdaVolumes lists the Verda emulator's volumes whose name contains part, not in the trash, with the
// instances using them.
func verdaVolumes(c *testClouds, part string) []emulatedVolume {
	var out []emulatedVolume
	for _, v := range c.verda.Volumes() {
		if !v.Trashed && strings.Contains(v.Name, part) {
			out = append(out, emulatedVolume{v.ID, v.InstanceIDs})
		}
	}
	return out
}

// mithrilVolumes lists the Mithril emulator's volumes whose name contains part, not deleted, with the
// live bids using them.
func mithrilVolumes(c *testClouds, part string) []emulatedVolume {
	live := map[string]bool{}
	for _, b := range c.mithril.LiveBids() {
		live[b.FID] = true
	}
	var out []emulatedVolume
	for _, v := range c.mithril.Volumes() {
		if v.Deleted || !strings.Contains(v.Name, part) {
			continue
		}
		var users []string
		for _, b := range v.Bids {
			if live[b] {
				users = append(users, b)
			}
		}
		out = append(out, emulatedVolume{v.FID, users})
	}
	return out
}

// TestAccGPUInstance_volumeEmulators: on each emulated cloud with volumes (Verda, Mithril, Lambda), a
// machine with a hydra_volume is placed in the volume's region (the other configured cloud loses,
// saying where the volume is), gets the volume at launch, and its replacement (-replace) gets the same
// volume at the cloud, the old machine no longer holding it (provisioning off: emulated machines have
// no sshd).
func TestAccGPUInstance_volumeEmulators(t *testing.T) {
	for _, tc := range []struct {
		cloud, region, typ, other, extra string
		// volumes lists the cloud's volumes named for the test, not deleted, with the machines (or
		// bids) using them.
		volumes func(c *testClouds, lambda *emulambda.Server, lambdaURL string) []emulatedVolume
	}{
		{cloud: "verda", region: "FIN-03", typ: "block", other: "mithril", volumes: func(c *testClouds, _ *emulambda.Server, _ string) []emulatedVolume {
			return verdaVolumes(c, "keep")
		}},
		{cloud: "mithril", region: "us-central5-a", typ: "block", other: "verda", extra: "  spot = true\n", volumes: func(c *testClouds, _ *emulambda.Server, _ string) []emulatedVolume {
			return mithrilVolumes(c, "keep")
		}},
		// Lambda keeps file systems only, mounted by Lambda at launch.
		{cloud: "lambda", region: "us-east-1", typ: "shared_fs", other: "verda", volumes: func(c *testClouds, lambda *emulambda.Server, url string) []emulatedVolume {
			var out []emulatedVolume
			for _, f := range lambda.FileSystems() {
				if !strings.Contains(f.Name, "keep") {
					continue
				}
				v := emulatedVolume{id: f.ID}
				for _, in := range lambda.Instances() {
					// A terminating instance is on its way out (hydra's delete has returned).
					if in.Status != "terminated" && in.Status != "terminating" && slices.Contains(lambdaFileSystems(c.t, url, in.ID), f.Name) {
						v.users = append(v.users, in.ID)
					}
				}
				out = append(out, v)
			}
			return out
		}},
	} {
		t.Run(tc.cloud, func(t *testing.T) {
			c := newTestClouds(t, nil)
			// Lambda's launch pacing and slow termination shortened: the test waits for neither.
			lambda := emulambda.New(emulambda.Options{Options: simulation.Options{BootDuration: time.Second},
				TerminateDuration: 500 * time.Millisecond, LaunchInterval: -1})
			srv := httptest.NewServer(lambda)
			t.Cleanup(srv.Close)
			lambdaURL := srv.URL + emulambda.BasePath
			provider := strings.TrimSuffix(c.providerConfig(t.TempDir(), "verda", "mithril"), "}\n") +
				fmt.Sprintf("  lambda {\n    endpoint = %q\n    api_key  = %q\n  }\n}\n", lambdaURL, emulambda.DefaultAPIKey)
			cfg := provider + volumeConfig("keep", tc.typ, tc.cloud, tc.region) + cloudInstanceConfig("keep", "h100", tc.extra+volumesAt("/data"))
			sameVolume := keepsOneVolume(tc.cloud, resourceName, func() []emulatedVolume { return tc.volumes(c, lambda, lambdaURL) },
				func(a map[string]string) []string { return []string{a["cloud_instance_id"]} })
			accTest(t, func(st *terraform.State) error {
				for _, in := range lambda.Instances() {
					if in.Status != "terminated" && in.Status != "terminating" {
						return fmt.Errorf("lambda instance %s is %s after destroy", in.ID, in.Status)
					}
				}
				return c.checkEmpty(st)
			}, []resource.TestStep{
				{
					Config: cfg,
					ConfigPlanChecks: preApply(
						planKnown("cloud", tc.cloud),
						planKnown("region", tc.region),
						plancheck.ExpectKnownValue(resourceName, tfjsonpath.New("other_clouds").AtMapKey(tc.other),
							knownvalue.StringRegexp(errorPattern("volume", "is in "+tc.cloud+"/"+tc.region))),
					),
					Check: sameVolume,
				},
				{
					Config:           cfg,
					Taint:            []string{resourceName},
					ConfigPlanChecks: preApply(plancheck.ExpectResourceAction(resourceName, plancheck.ResourceActionDestroyBeforeCreate)),
					Check:            sameVolume,
				},
			})
		})
	}
}

// keepsOneVolume is a check, at each replacement of res, that its cloud lists one volume named for the
// test (volumes), the same one every time, used by the state's new machines alone: users are their
// ids at the cloud, from res's attributes.
func keepsOneVolume(cloud, res string, volumes func() []emulatedVolume, users func(a map[string]string) []string) resource.TestCheckFunc {
	var volumeID string
	var seen []string
	return func(st *terraform.State) error {
		a, err := attrs(st, res)
		if err != nil {
			return err
		}
		vols := volumes()
		if len(vols) != 1 {
			return fmt.Errorf("%s has %d volumes named for the test, want 1: %+v", cloud, len(vols), vols)
		}
		if volumeID != "" && vols[0].id != volumeID {
			return fmt.Errorf("the replacement got volume %s, not %s", vols[0].id, volumeID)
		}
		volumeID = vols[0].id
		want := users(a)
		for _, u := range want {
			if u == "" || slices.Contains(seen, u) {
				return fmt.Errorf("the ids %v of %s are not all new (seen %v)", want, res, seen)
			}
		}
		seen = append(seen, want...)
		got := slices.Sorted(slices.Values(vols[0].users))
		if !slices.Equal(got, slices.Sorted(slices.Values(want))) {
			return fmt.Errorf("volume %s is used by %v at %s, want %v alone", volumeID, got, cloud, want)
		}
		return nil
	}
}

// lambdaFileSystems are the file_system_names Lambda's API (its emulator at url) answers for an instance.
func lambdaFileSystems(t *testing.T, url, id string) []string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url+"/instances/"+id, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+emulambda.DefaultAPIKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var body struct {
		Data struct {
			FileSystemNames []string `json:"file_system_names"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET instance %s: %d %v", id, resp.StatusCode, err)
	}
	return body.Data.FileSystemNames
}

// TestAccGPUInstance_volumeAdded: volumes given to a machine created without them replace it (clouds
// give volumes at launch), and taking them away replaces it again (provisioning off).
func TestAccGPUInstance_volumeAdded(t *testing.T) {
	s := newTestSandbox(t)
	without := s.instanceConfig("added", "h100", "  regions = [\"sbx-us-1\"]\n")
	with := s.providerConfig("") + volumeConfig("addeddata", "block", "sandbox", "sbx-us-1") +
		testAccGPUInstanceConfig_basic("added", "h100", "  regions = [\"sbx-us-1\"]\n"+volumesAt("/data"))
	accTest(t, s.checkDestroyed, []resource.TestStep{
		{Config: without, Check: s.checkCreated(1)},
		{
			Config:           with,
			ConfigPlanChecks: preApply(plancheck.ExpectResourceAction(resourceName, plancheck.ResourceActionDestroyBeforeCreate)),
			Check:            s.checkCreated(2),
		},
		{
			Config:           s.providerConfig("") + volumeConfig("addeddata", "block", "sandbox", "sbx-us-1") + testAccGPUInstanceConfig_basic("added", "h100", "  regions = [\"sbx-us-1\"]\n"),
			ConfigPlanChecks: preApply(plancheck.ExpectResourceAction(resourceName, plancheck.ResourceActionDestroyBeforeCreate)),
			Check:            s.checkCreated(3),
		},
	})
}

// TestAccGPUInstance_volumeCreateBeforeDestroy: a block volume is on one machine at a time, so a
// create_before_destroy replacement cannot launch its new machine while the old one holds the volume:
// the apply fails saying so, nothing new is created and the old machine keeps the volume
// (provisioning off).
func TestAccGPUInstance_volumeCreateBeforeDestroy(t *testing.T) {
	s := newTestSandbox(t)
	cfg := s.providerConfig("") + volumeConfig("cbd-data", "block", "sandbox", "sbx-us-1") +
		testAccGPUInstanceConfig_basic("cbd", "h100", volumesAt("/data")+"  lifecycle {\n    create_before_destroy = true\n  }\n")
	accTest(t, s.checkDestroyed, []resource.TestStep{
		{Config: cfg, Check: s.checkCreated(1)},
		{
			Config:      cfg,
			Taint:       []string{resourceName},
			ExpectError: errorPattern("creating GPU instance (cbd)", "block volume sbx-vm-cbd-data--", "is attached to sbx-vm-cbd--", "one machine at a time"),
		},
	})
	if n := s.created(); n != 1 {
		t.Errorf("%d machines created; the refused replacement must create none", n)
	}
}

// TestAccGPUInstance_volumeKnownAtApply: a volume whose region is known only at apply (another
// resource's output) has its id unknown at plan (apply checks its type there and records the id), and
// leaves the machine's offer to apply, which places it in the volume's region; the plan after is
// empty (provisioning off).
func TestAccGPUInstance_volumeKnownAtApply(t *testing.T) {
	s := newTestSandbox(t)
	cfg := s.providerConfig("") + `
resource "terraform_data" "region" {
  input = "sbx-us-1"
}

resource "hydra_volume" "v" {
  name    = "later"
  type    = "block"
  size_gb = 10
  cloud   = "sandbox"
  region  = terraform_data.region.output
}
` + testAccGPUInstanceConfig_basic("later", "h100", volumesAt("/data"))
	accTest(t, s.checkNoVolumes, []resource.TestStep{{
		Config:           cfg,
		ConfigPlanChecks: preApply(planUnknown("region"), planUnknown("offer_id"), plancheck.ExpectUnknownValue(testVolumeResource, tfjsonpath.New("id"))),
		ConfigStateChecks: []statecheck.StateCheck{
			stateKnown("region", "sbx-us-1"), stateKnown("status", "ready"),
			statecheck.ExpectKnownValue(testVolumeResource, tfjsonpath.New("id"), knownvalue.StringExact("sandbox/sbx-us-1/later")),
		},
		Check: func(*terraform.State) error {
			if live := s.live(); len(live) != 1 || live[0].Region != "sbx-us-1" {
				return fmt.Errorf("live machines %+v; want one in sbx-us-1", live)
			}
			return nil
		},
		// The plans after the apply are empty: the testing framework checks it after every apply.
	}})
}

// volumeRoles are the roles of bare-vm.yml a volume test's machines run (slimPlaybooks): the volumes
// mounted, the customer's key installed, the marker whose digest covers the volumes.
var volumeRoles = []string{"hydra_vars", "preflight", "marker", "volume_mount", "vm_access"}

// nodeAttrs are node i's connection attributes of the cluster in the state, named as a machine's.
func nodeAttrs(st *terraform.State, i int) (map[string]string, error) {
	a, err := attrs(st, clusterResource)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, k := range []string{"id", "name", "ssh_host", "ssh_port", "ssh_user", "host_key"} {
		out[k] = a[fmt.Sprintf("node.%d.%s", i, k)]
	}
	if out["ssh_host"] == "" {
		return nil, fmt.Errorf("node %d has no address: %v", i, out)
	}
	return out, nil
}

// TestAccGPUCluster_sharedVolumeKeepsData: a 2-node spot cluster of sandbox containers with a
// shared_fs hydra_volume and an interruption hook, provisioned with bare-vm.yml's volume, access,
// interruption and marker roles (slimPlaybooks), then the real cluster check: a file written over
// SSH on node 1 is read on node 2 (one file system). The sandbox preempts node 2 with a 10-minute
// notice: the watcher the playbooks installed on every node runs the hook on node 2, with the seconds
// left and the end time (the test prints how long after the notice), and not on node 1; the refresh
// shows `interruption` on node 2 and on the cluster (node 1 has none) and, with
// replace_when_preempted false, the plan changes nothing; by default the plan replaces the whole
// cluster under the same name, and both new nodes read the file back. A refresh shows the volume
// attached to both; imported by another state, the cluster keeps its volume (recorded in place). The
// cluster is placed in the volume's region (sbx-us-1), not the cheapest (sbx-eu-1). The nodes are
// containers without systemd, so the watcher runs as a process. A changed mount path provisioned
// again in place is TestAccGPUInstance_volumeKeepsData's (the same digest) and TestVolumeMount's (the
// role).
func TestAccGPUCluster_sharedVolumeKeepsData(t *testing.T) {
	requireProvisioningTools(t)
	s := newTestSandbox(t)
	dir := slimPlaybooks(t, append(volumeRoles, "interruption_watch")...)
	var catalog []sandbox.CatalogEntry
	for region, price := range map[string]float64{"sbx-eu-1": 0.22, "sbx-us-1": 0.24} {
		catalog = append(catalog, sandbox.CatalogEntry{Region: region, InstanceType: "sbx.l4.1x.container", GPU: "L4", GPUCount: 1,
			PricePerHour: price, Spot: true, Available: -1, Machine: "container",
			Hardware: sandbox.Hardware{FormFactor: "pcie", GPUMemoryGB: 24, VCPUs: 8, MemoryGB: 32}})
	}
	if err := s.sb.SetCatalog(catalog); err != nil {
		t.Fatal(err)
	}
	key := newCustomerKey(t)
	config := func(extra string) string {
		return s.provisionedConfig(dir) + volumeConfig("shared", "shared_fs", "sandbox", "sbx-us-1") + clusterConfig("vols", "l4", 1, 2, fmt.Sprintf(`  spot         = true
  interconnect = "any"
  ssh_public_keys = [%q]
  provisioning_vars = {
    interruption_hook = <<-EOT
      #!/bin/sh
      echo "hook $1 $2 $(date -u +%%s.%%N)"
    EOT
  }
%s%s`, key.line, volumesAt("/shared"), extra))
	}
	kept := config("  replace_when_preempted = false\n")
	cfg := config("")
	text := randomText(t)
	var nodes []string
	var clusterID string
	readOnEvery := func(st *terraform.State) error {
		for i := range 2 {
			a, err := nodeAttrs(st, i)
			if err != nil {
				return err
			}
			got, err := key.sshRun(a, `cat "$HYDRA_ROOT"/shared/proof`)
			if err != nil {
				return fmt.Errorf("node %d (%s): %w", i+1, a["name"], err)
			}
			if strings.TrimSpace(got) != text {
				return fmt.Errorf("node %d (%s) reads %q, want %q", i+1, a["name"], got, text)
			}
		}
		return nil
	}
	newNodes := func(st *terraform.State) error {
		for i := range 2 {
			a, err := nodeAttrs(st, i)
			if err != nil {
				return err
			}
			if slices.Contains(nodes, a["id"]) {
				return fmt.Errorf("node %s is not new (was %v)", a["id"], nodes)
			}
			nodes = append(nodes, a["id"])
		}
		return nil
	}
	nodeInterruption := func(i int, key string) tfjsonpath.Path {
		return tfjsonpath.New("node").AtSliceIndex(i).AtMapKey("interruption").AtMapKey(key)
	}
	var firstClusterID string
	sameClusterID := knownvalue.StringFunc(func(id string) error {
		if id != firstClusterID {
			return fmt.Errorf("cloud_cluster_id %q, was %q", id, firstClusterID)
		}
		return nil
	})
	accTest(t, s.checkDestroyed, append([]resource.TestStep{
		{
			Config: kept,
			ConfigPlanChecks: preApply(
				plancheck.ExpectResourceAction(clusterResource, plancheck.ResourceActionCreate),
				clusterPlanKnown("region", "sbx-us-1"),
			),
			ConfigStateChecks: []statecheck.StateCheck{
				clusterState("status", "ready"),
				clusterState("volumes", knownvalue.ListSizeExact(1)),
				clusterState("offer_id", like(`/spot@`)),
				clusterState("replace_when_preempted", false),
				clusterState("interruption", knownvalue.Null()),
				statecheck.ExpectKnownValue(clusterResource, tfjsonpath.New("node").AtSliceIndex(1).AtMapKey("interruption"), knownvalue.Null()),
			},
			Check: resource.ComposeTestCheckFunc(newNodes, func(st *terraform.State) error {
				a, err := attrs(st, clusterResource)
				firstClusterID = a["cloud_cluster_id"]
				return err
			}, func(st *terraform.State) error {
				a, err := nodeAttrs(st, 0)
				if err != nil {
					return err
				}
				_, err = key.sshRun(a, fmt.Sprintf(`printf '%%s\n' %q > "$HYDRA_ROOT"/shared/proof && sync`, text))
				return err
			}, readOnEvery),
		},
		refreshedOnly(func() {
			id := s.nodeID(t, "-2")
			noticed := time.Now()
			if err := s.sb.Preempt(id, 10*time.Minute); err != nil {
				t.Fatal(err)
			}
			s.checkHook(t, id, noticed)
			if f := hookRan(filepath.Join(s.sb.MachineDir(s.nodeID(t, "-1")), "root"), 0); len(f) != 0 {
				t.Errorf("the hook ran on node 1, which got no notice: %q", f)
			}
		}, kept,
			plancheck.ExpectKnownValue(clusterResource, tfjsonpath.New("interruption").AtMapKey("reason"), like(`preempted the spot machine`)),
			plancheck.ExpectKnownValue(clusterResource, tfjsonpath.New("interruption").AtMapKey("notice_at"), like(`^\d{4}-\d\d-\d\dT`)),
			plancheck.ExpectKnownValue(clusterResource, tfjsonpath.New("interruption").AtMapKey("ends_at"), like(`^\d{4}-\d\d-\d\dT`)),
			plancheck.ExpectKnownValue(clusterResource, nodeInterruption(1, "notice_at"), like(`^\d{4}-\d\d-\d\dT`)),
			plancheck.ExpectKnownValue(clusterResource, tfjsonpath.New("node").AtSliceIndex(0).AtMapKey("interruption"), knownvalue.Null()),
			plancheck.ExpectKnownValue(clusterResource, tfjsonpath.New("cloud_cluster_id"), sameClusterID),
			worldCheck(s.checkCreated(2)),
		),
		{
			// replace_when_preempted by default: the plan replaces the whole cluster under the same name;
			// both new nodes read the file back.
			Config: cfg,
			ConfigPlanChecks: preApply(
				plancheck.ExpectResourceAction(clusterResource, plancheck.ResourceActionDestroyBeforeCreate),
				plancheck.ExpectKnownValue(clusterResource, tfjsonpath.New("name"), knownvalue.StringExact("vols")),
				plancheck.ExpectUnknownValue(clusterResource, tfjsonpath.New("interruption")),
				clusterPlanKnown("region", "sbx-us-1"),
			),
			ConfigStateChecks: []statecheck.StateCheck{clusterState("status", "ready"), clusterState("interruption", knownvalue.Null())},
			Check:             resource.ComposeTestCheckFunc(newNodes, readOnEvery, s.checkLive(2), s.checkCreated(4)),
		},
		{
			// A refresh reads which machines use the volume: the new nodes, both.
			RefreshState: true,
			Check: func(st *terraform.State) error {
				vol, err := attrs(st, testVolumeResource)
				if err != nil {
					return err
				}
				var want, got []string
				for i := range 2 {
					a, err := nodeAttrs(st, i)
					if err != nil {
						return err
					}
					want = append(want, a["name"])
					got = append(got, vol[fmt.Sprintf("attached_to.%d", i)])
				}
				slices.Sort(want)
				slices.Sort(got)
				if vol["attached_to.#"] != "2" || !slices.Equal(got, want) {
					return fmt.Errorf("the volume's attached_to is %s:%v, want %v", vol["attached_to.#"], got, want)
				}
				a, err := attrs(st, clusterResource)
				clusterID = a["cloud_cluster_id"]
				return err
			},
		},
	}, reimported(clusterResource, s.provisionedConfig(dir)+volumeConfig("shared", "shared_fs", "sandbox", "sbx-us-1"), cfg,
		func() string { return "sandbox/" + clusterID },
		resource.ComposeTestCheckFunc(readOnEvery, s.checkCreated(4), s.checkLive(2)))...))
}

// TestAccGPUCluster_volumesInvalid: a cluster's volumes are validated as a machine's, through the real
// CLI, before any cloud is asked.
func TestAccGPUCluster_volumesInvalid(t *testing.T) {
	s := newTestSandbox(t)
	cfg := func(extra string) string { return s.providerConfig("") + clusterConfig("badvol", "h100", 1, 2, extra) }
	refusedPlans(t, []refusedPlan{
		{"two regions", cfg(`  volumes = [{ volume_id = "sandbox/sbx-eu-1/a", mount_path = "/a" }, { volume_id = "sandbox/sbx-us-1/b", mount_path = "/b" }]`),
			errorPattern("Volumes in different places", "is in sandbox/sbx-us-1")},
		{"outside clouds", cfg("  clouds = [\"verda\"]\n" + `  volumes = [{ volume_id = "sandbox/sbx-eu-1/a", mount_path = "/a" }]`),
			errorPattern("Volume outside the allowed clouds", `clouds allows only "verda"`)},
		{"system path", cfg(`  volumes = [{ volume_id = "sandbox/sbx-eu-1/a", mount_path = "/proc/a" }]`), errorPattern("Invalid mount_path", "in /proc")},
	})
	s.noneCreated(t, "an invalid volumes plan")
}

// TestAccGPUCluster_volumeEmulators: on each emulated cloud whose clusters take volumes, a cluster with
// a shared_fs hydra_volume is placed in the volume's region, every node gets the volume at the cloud
// (Verda lists each node as the volume's instance; Mithril the cluster's one bid), and its
// replacement (-replace) gets the same volume (provisioning off).
func TestAccGPUCluster_volumeEmulators(t *testing.T) {
	for _, tc := range []struct {
		cloud, region, gpuType, extra string
		prepare                       func(*testClouds)
		// volumes lists the cloud's volumes named for the test, not deleted, with their users.
		volumes func(*testClouds) []emulatedVolume
		// users are the cloud's ids that should use the volume: the nodes' or the cluster's.
		users func(a map[string]string) []string
	}{
		{cloud: "verda", region: "FIN-03", gpuType: "h200",
			volumes: func(c *testClouds) []emulatedVolume { return verdaVolumes(c, "ckpt") },
			users:   func(a map[string]string) []string { return []string{a["node.0.id"], a["node.1.id"]} }},
		{cloud: "mithril", region: "us-central1-a", gpuType: "h100", extra: "  spot = true\n",
			prepare: func(c *testClouds) {
				if _, err := c.mithril.SetAuction(emumithril.AuctionChange{Region: "us-central1-a", InstanceType: "h100-80gb.sxm.8x", Capacity: new(4)}); err != nil {
					c.t.Fatal(err)
				}
			},
			volumes: func(c *testClouds) []emulatedVolume { return mithrilVolumes(c, "ckpt") },
			users:   func(a map[string]string) []string { return []string{a["cloud_cluster_id"]} }},
	} {
		t.Run(tc.cloud, func(t *testing.T) {
			c := newTestClouds(t, nil)
			if tc.prepare != nil {
				tc.prepare(c)
			}
			cfg := c.providerConfig(t.TempDir(), tc.cloud) + volumeConfig("ckpt", "shared_fs", tc.cloud, tc.region) +
				clusterConfig("emuvol", tc.gpuType, 8, 2, fmt.Sprintf("  ssh_public_keys = [%q]\n  interconnect = \"any\"\n%s%s", testSSHKey, tc.extra, volumesAt("/ckpt")))
			sameVolume := keepsOneVolume(tc.cloud, clusterResource, func() []emulatedVolume { return tc.volumes(c) }, tc.users)
			accTest(t, c.checkEmpty, []resource.TestStep{
				{
					Config: cfg,
					ConfigPlanChecks: preApply(
						clusterPlanKnown("cloud", tc.cloud),
						clusterPlanKnown("region", tc.region),
					),
					ConfigStateChecks: []statecheck.StateCheck{clusterState("status", "ready")},
					Check:             sameVolume,
				},
				{
					Config:           cfg,
					Taint:            []string{clusterResource},
					ConfigPlanChecks: preApply(plancheck.ExpectResourceAction(clusterResource, plancheck.ResourceActionDestroyBeforeCreate)),
					Check:            sameVolume,
				},
			})
		})
	}
}

// TestAccGPUCluster_blockVolume: every node would mount a block volume, which is on one machine at a
// time: the create fails saying so and leaves nothing (provisioning off).
func TestAccGPUCluster_blockVolume(t *testing.T) {
	s := newTestSandbox(t)
	cfg := s.providerConfig("") + volumeConfig("blk", "block", "sandbox", "sbx-us-1") +
		clusterConfig("blockvol", "h100", 1, 2, "  interconnect = \"any\"\n"+volumesAt("/data"))
	accTest(t, s.checkDestroyed, []resource.TestStep{{
		Config:      cfg,
		ExpectError: errorPattern("creating GPU cluster (blockvol)", "block volume sbx-vm-blk--", "not 2 nodes", "shared_fs"),
	}})
	s.noneCreated(t, "a cluster with a block volume")
}
