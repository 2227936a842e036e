package provision

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox/simhost"
)

// TestNVLinkMachinesReachReady provisions the two kinds of NVLink 5 machine on sandbox machines: a B200
// HGX board (NVLink 5 switches of its own, found by their root-only VPD: Fabric Manager and the NVLink 5
// modules, no IMEX) and a GB200 compute tray (no switch of its own, "NVIDIA GB200" never taken for a
// B200: IMEX with its domain file and unit, no Fabric Manager), each judged on its fabric.
func TestNVLinkMachinesReachReady(t *testing.T) {
	tests := []struct {
		gpu, model   string
		count        int
		want, absent []string          // task names the run must report ok / must not run
		files        map[string]string // files the run writes under the machine's root: what they hold
		vars         map[string]any
	}{
		{gpu: "b200", model: "NVIDIA B200", count: 8,
			want:   []string{"Enable and start Fabric Manager"},
			absent: []string{"Enable and start IMEX"},
			files:  map[string]string{"etc/modules-load.d/hydra-nvlink5.conf": "ib_umad"}},
		{gpu: "gb200", model: "NVIDIA GB200", count: 4,
			want:   []string{"Enable and start IMEX"},
			absent: []string{"Enable and start Fabric Manager", "Load the NVLink 5 kernel modules at every boot"},
			// The domain's trays as the user lists them (by default the tray's private address).
			vars:  map[string]any{"hydra_imex_nodes": []any{"10.0.7.21", "10.0.7.22"}},
			files: map[string]string{"etc/nvidia-imex/nodes_config.cfg": "10.0.7.21\n10.0.7.22\n"}},
	}
	for _, tc := range tests {
		t.Run(tc.gpu, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, simhost.Spec{GPUModel: tc.model, GPUCount: tc.count}, Config{})
			rec := &logRecorder{}
			res, err := f.runner.Provision(context.Background(), f.request(inventory.KindVM, tc.gpu, tc.count, "", tc.vars, rec))
			if err != nil {
				t.Fatalf("Provision: %v\nlog:\n%s", err, rec)
			}
			if res.FailedTask != "" {
				t.Fatalf("failed: %+v\nlog:\n%s", res, rec)
			}
			log := rec.String()
			for _, name := range tc.want {
				if !regexp.MustCompile(`task ok .*` + regexp.QuoteMeta(name)).MatchString(log) {
					t.Errorf("%s: %q did not run:\n%s", tc.model, name, log)
				}
			}
			for _, name := range tc.absent {
				if regexp.MustCompile(`task ok .*` + regexp.QuoteMeta(name)).MatchString(log) {
					t.Errorf("%s: %q ran:\n%s", tc.model, name, log)
				}
			}
			for p, want := range tc.files {
				if b, err := os.ReadFile(filepath.Join(f.ep.Root, p)); err != nil || !strings.Contains(string(b), want) {
					t.Errorf("%s: %s holds %q (%v), want %q", tc.model, p, b, err, want)
				}
			}
			// The health check judged the fabric (and IMEX's unit on the tray).
			if !strings.Contains(log, "fabric ok") {
				t.Errorf("%s: the fabric was not judged:\n%s", tc.model, log)
			}
		})
	}
}
