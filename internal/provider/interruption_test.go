package provider

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox"
)

// spotConfig is one spot machine provisioned from playbookDir with an interruption hook that prints
// its arguments and when it ran.
func spotConfig(s *testSandbox, playbookDir, extra string) string {
	return s.provisionedConfig(playbookDir) + testAccGPUInstanceConfig_basic("spot", "l4", `  spot = true
  provisioning_vars = {
    interruption_hook = <<-EOT
      #!/bin/sh
      echo "hook $1 $2 $(date -u +%s.%N)"
    EOT
  }
`+extra)
}

// A spot machine preempted with notice: the sandbox writes its notice file on the machine, the
// watcher the playbooks installed runs the hook once with the seconds left and the end time (the test
// prints how long after the notice), the refresh shows interruption and, with replace_when_preempted
// false, the plan changes nothing; by default the next plan replaces the machine under the same name,
// and the new one has no interruption. The machine is a container without systemd, so the watcher
// runs as a process (a virtual machine's systemd units are recorded by the sandbox, not run). The
// machines run bare-vm.yml's interruption-watch, preflight and marker roles alone (slimPlaybooks).
func TestAccGPUInstance_preemption(t *testing.T) {
	requireProvisioningTools(t)
	s := newTestSandbox(t)
	dir := slimPlaybooks(t, "hydra_vars", "preflight", "marker", "interruption_watch")
	if err := s.sb.SetCatalog([]sandbox.CatalogEntry{{Region: "sbx-eu-1", InstanceType: "sbx.l4.1x.container", GPU: "L4", GPUCount: 1,
		PricePerHour: 0.22, Spot: true, Available: -1, Machine: "container",
		Hardware: sandbox.Hardware{FormFactor: "pcie", GPUMemoryGB: 24, VCPUs: 8, MemoryGB: 32}}}); err != nil {
		t.Fatal(err)
	}
	interruption := func(key string, want knownvalue.Check) statecheck.StateCheck {
		return statecheck.ExpectKnownValue(resourceName, tfjsonpath.New("interruption").AtMapKey(key), want)
	}
	var firstID string
	accTest(t, s.checkDestroyed, []resource.TestStep{{
		Config: spotConfig(s, dir, "  replace_when_preempted = false\n"),
		ConfigStateChecks: []statecheck.StateCheck{
			stateKnown("status", "ready"),
			stateKnown("is_spot", true),
			statecheck.ExpectKnownValue(resourceName, tfjsonpath.New("interruption"), knownvalue.Null()),
		},
	}, {
		PreConfig: func() {
			live := s.live()
			if len(live) != 1 {
				t.Fatalf("live machines: %+v", live)
			}
			firstID = live[0].ID
			root := filepath.Join(s.sb.MachineDir(firstID), "root")
			noticed := time.Now()
			if err := s.sb.Preempt(firstID, 10*time.Minute); err != nil {
				t.Fatal(err)
			}
			f := hookRan(root, time.Minute)
			if len(f) != 4 || f[0] != "hook" {
				b, _ := os.ReadFile(filepath.Join(root, "var/lib/hydra/interruption/log"))
				t.Fatalf("the hook did not run: %q; watcher log:\n%s", f, b)
			}
			left, _ := strconv.Atoi(f[1])
			ran, _ := strconv.ParseFloat(f[3], 64)
			if left <= 0 || left > 600 || !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`).MatchString(f[2]) {
				t.Errorf("the hook's arguments: %q", f)
			}
			t.Logf("notice to hook: %.2fs (the hook was told %ds left, ending %s)", ran-float64(noticed.UnixNano())/1e9, left, f[2])
		},
		Config:           spotConfig(s, dir, "  replace_when_preempted = false\n"),
		ConfigPlanChecks: preApply(plancheck.ExpectEmptyPlan()),
		ConfigStateChecks: []statecheck.StateCheck{
			interruption("reason", like(`preempted the spot machine`)),
			interruption("notice_at", like(`^\d{4}-\d\d-\d\dT`)),
			interruption("ends_at", like(`^\d{4}-\d\d-\d\dT`)),
		},
		Check: s.checkCreated(1),
	}, {
		// replace_when_preempted by default: replaced under the same name.
		Config: spotConfig(s, dir, ""),
		ConfigPlanChecks: preApply(
			plancheck.ExpectResourceAction(resourceName, plancheck.ResourceActionDestroyBeforeCreate),
			planKnown("name", "spot"),
		),
		ConfigStateChecks: []statecheck.StateCheck{
			stateKnown("status", "ready"),
			statecheck.ExpectKnownValue(resourceName, tfjsonpath.New("interruption"), knownvalue.Null()),
		},
		Check: resource.ComposeTestCheckFunc(s.checkLive(1), s.checkCreated(2)),
	}})
}

// hookRan waits up to wait for the hook's line on the machine under root and returns it split
// into its fields ("hook", seconds left, end time, when it ran); nil when it did not run.
func hookRan(root string, wait time.Duration) []string {
	hookLog := filepath.Join(root, "var/lib/hydra/interruption/hook.log")
	for deadline := time.Now().Add(wait); ; time.Sleep(50 * time.Millisecond) {
		b, _ := os.ReadFile(hookLog)
		if f := strings.Fields(string(b)); len(f) > 0 || time.Now().After(deadline) {
			return f
		}
	}
}

// TestAccGPUCluster_preemptFault rehearses a preemption as a user's CI does, without Go: after apply,
// faults.json names node 2 of the spot cluster under `preempt`; the next plan's refresh fires it and
// the plan replaces the whole cluster.
func TestAccGPUCluster_preemptFault(t *testing.T) {
	s := newTestSandbox(t)
	cfg := s.providerConfig("") + clusterConfig("rehearse", "h100", 1, 2, "  spot = true\n")
	accTest(t, s.checkDestroyed, []resource.TestStep{{
		Config:            cfg,
		ConfigStateChecks: []statecheck.StateCheck{clusterState("status", "ready"), clusterState("interruption", knownvalue.Null())},
	}, plannedOnly(func() {
		var node string
		for _, r := range s.live() {
			if strings.HasSuffix(r.Name, "-2") {
				node = r.Name
			}
		}
		faults := `{"preempt": [{"name": "` + node + `", "notice": "10m"}]}`
		if err := os.WriteFile(filepath.Join(s.sb.Dir(), sandbox.FaultsFile), []byte(faults), 0o644); err != nil {
			t.Fatal(err)
		}
	}, cfg, clusterResource, plancheck.ResourceActionDestroyBeforeCreate)})
}
