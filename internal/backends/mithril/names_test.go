package mithril

import (
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
)

// Every name form the reference documents (section 4.7 and the naming table), the forms Mithril's
// tools show, gpu_type values, and names the parser must refuse.
func TestParseTypeName(t *testing.T) {
	tests := []struct {
		name string
		want TypeName
		key  string
	}{
		// Model, memory, form factor and count.
		{"h100-80gb.sxm.8x", TypeName{"h100", 80, "sxm", 8}, "h100-80gb.sxm"},
		{"h100-80gb.pcie.8x", TypeName{"h100", 80, "pcie", 8}, "h100-80gb.pcie"},
		{"a100-80gb.sxm.1x", TypeName{"a100", 80, "sxm", 1}, "a100-80gb.sxm"},
		{"a100-80gb.sxm.2x", TypeName{"a100", 80, "sxm", 2}, "a100-80gb.sxm"},
		{"a100-80gb.sxm.4x", TypeName{"a100", 80, "sxm", 4}, "a100-80gb.sxm"},
		{"a100-80gb.sxm.8x", TypeName{"a100", 80, "sxm", 8}, "a100-80gb.sxm"},
		{"h200-141gb.sxm.8x", TypeName{"h200", 141, "sxm", 8}, "h200-141gb.sxm"},
		{"a10-24gb.pcie.1x", TypeName{"a10", 24, "pcie", 1}, "a10-24gb.pcie"},
		// Model and count only; memory without a form factor; dots without a count.
		{"b200.8x", TypeName{"b200", 0, "", 8}, "b200"},
		{"b200-192gb.8x", TypeName{"b200", 192, "", 8}, "b200-192gb"},
		{"h100.80gb.sxm", TypeName{"h100", 80, "sxm", 0}, "h100-80gb.sxm"},
		// Separators and case do not matter; SXM generations are sxm.
		{"H100-80GB.SXM5.8X", TypeName{"h100", 80, "sxm", 8}, "h100-80gb.sxm"},
		{"h100_80gb_sxm_8x", TypeName{"h100", 80, "sxm", 8}, "h100-80gb.sxm"},
		{"h100-80gb-sxm-8x", TypeName{"h100", 80, "sxm", 8}, "h100-80gb.sxm"},
		{" h100.80gb.pcie.4x ", TypeName{"h100", 80, "pcie", 4}, "h100-80gb.pcie"},
		{"h100.8x.80gb", TypeName{"h100", 80, "", 8}, "h100-80gb"},
		// Words of a model are joined.
		{"rtx-pro-6000-96gb.1x", TypeName{"rtxpro6000", 96, "", 1}, "rtxpro6000-96gb"},
		{"h100-nvl-94gb.2x", TypeName{"h100nvl", 94, "", 2}, "h100nvl-94gb"},
		// api_names entries (name prefixes without the count).
		{"h100-80gb.sxm", TypeName{"h100", 80, "sxm", 0}, "h100-80gb.sxm"},
		{"b200", TypeName{"b200", 0, "", 0}, "b200"},
		{"b200-192gb", TypeName{"b200", 192, "", 0}, "b200-192gb"},
		// gpu_type values.
		{"H100", TypeName{"h100", 0, "", 0}, "h100"},
		{"A100-PCIe-80G", TypeName{"a100", 80, "pcie", 0}, "a100-80gb.pcie"},
		{"H100_80GB", TypeName{"h100", 80, "", 0}, "h100-80gb"},
		{"NVIDIA H100", TypeName{"h100", 0, "", 0}, "h100"},
	}
	for _, tc := range tests {
		got, ok := ParseTypeName(tc.name)
		if !ok || got != tc.want || got.Key() != tc.key {
			t.Errorf("ParseTypeName(%q) = %+v, %v, key %q; want %+v, key %q", tc.name, got, ok, got.Key(), tc.want, tc.key)
		}
	}
	// Refused: no model, a model starting with a digit, an unknown word after the model, a
	// repeated or zero attribute.
	for _, name := range []string{"", "8x", "80gb.sxm.8x", "8xh100", "h100-80gb.sxm.8x.ib", "h100-80gb.nvl.8x", "h100-80gb-80gb.8x", "h100.sxm.pcie.8x", "h100.8x.4x", "h100-80gb.sxm.0x", "h100-0gb.sxm"} {
		if got, ok := ParseTypeName(name); ok || got != (TypeName{}) {
			t.Errorf("ParseTypeName(%q) = %+v, %v; want it refused", name, got, ok)
		}
	}
}

func opt(n int64) OptInt { return OptInt{Value: n, Valid: true} }

// catalogType is an instance type as /v2/instance-types writes it, all fields given.
func catalogType(name, gpu string, count, memGB int64, socket string, cpus, ramGB int64) InstanceType {
	return InstanceType{FID: "it_test", Name: name, GPUType: gpu, NumGPUs: opt(count), GPUMemoryGB: opt(memGB), GPUSocket: socket, NumCPUs: opt(cpus), RAMGB: opt(ramGB)}
}

// The shipped inventory maps every documented name, with the catalog's fields or without them.
func TestMapType(t *testing.T) {
	b := backendtest.Must(New(Config{APIKey: "fkey_test"}, backendtest.Inventory(t), nil))(t)
	tests := []struct {
		desc  string
		it    InstanceType
		gpu   string
		count int
	}{
		{"full fields", catalogType("h100-80gb.sxm.8x", "H100", 8, 80, "SXM5", 208, 1800), "h100", 8},
		{"name alone", InstanceType{Name: "h100-80gb.sxm.8x"}, "h100", 8},
		{"PCIe", catalogType("h100-80gb.pcie.8x", "H100", 8, 80, "PCIe", 192, 1500), "h100", 8},
		{"PCIe, name alone", InstanceType{Name: "h100-80gb.pcie.8x"}, "h100", 8},
		{"dots, count from num_gpus", catalogType("h100.80gb.sxm", "H100", 8, 80, "SXM5", 208, 1800), "h100", 8},
		{"dots, no num_gpus", InstanceType{Name: "h100.80gb.sxm"}, "h100", 0},
		{"a100 1x", catalogType("a100-80gb.sxm.1x", "A100", 1, 80, "SXM4", 30, 240), "a100-80gb", 1},
		{"a100 2x", InstanceType{Name: "a100-80gb.sxm.2x"}, "a100-80gb", 2},
		{"a100 4x", InstanceType{Name: "a100-80gb.sxm.4x"}, "a100-80gb", 4},
		{"a100 8x", InstanceType{Name: "a100-80gb.sxm.8x"}, "a100-80gb", 8},
		{"h200", catalogType("h200-141gb.sxm.8x", "H200", 8, 141, "SXM5", 208, 2000), "h200", 8},
		{"b200, model and count", catalogType("b200.8x", "B200", 8, 180, "SXM6", 224, 2900), "b200", 8},
		{"b200, name alone", InstanceType{Name: "b200.8x"}, "b200", 8},
		{"b200 with memory", catalogType("b200-192gb.8x", "B200", 8, 192, "SXM6", 224, 2900), "b200", 8},
		{"b200, name says 192, field 180", catalogType("b200-192gb.8x", "B200", 8, 180, "SXM6", 224, 2900), "b200", 8},
		{"num_gpus wins over the name", catalogType("h100-80gb.sxm.8x", "H100", 4, 80, "SXM5", 104, 900), "h100", 4},
		{"fields name an unreadable type", catalogType("custom shape!", "H100", 8, 80, "SXM5", 208, 1800), "h100", 8},
		{"field 81 GB, name 80gb", catalogType("h100-80gb.sxm.8x", "H100", 8, 81, "SXM5", 208, 1800), "h100", 8},
		{"name 80gb, socket unknown", catalogType("h100-80gb.sxm.8x", "H100", 8, 80, "", 208, 1800), "h100", 8},
		// Not in the inventory.
		{"A10", catalogType("a10-24gb.pcie.1x", "A10", 1, 24, "PCIe", 30, 200), "", 1},
		{"A100 40GB", InstanceType{Name: "a100-40gb.sxm.1x"}, "", 1},
		{"A100 80GB PCIe", InstanceType{Name: "a100-80gb.pcie.1x"}, "", 1},
		{"H100 without memory or form factor", InstanceType{Name: "h100.8x"}, "", 8},
		{"GH200", catalogType("gh200-96gb.1x", "GH200", 1, 96, "", 72, 480), "", 1},
		{"unknown word, no num_gpus", InstanceType{Name: "h100-80gb.sxm.8x.ib"}, "", 0},
		{"unknown word", catalogType("h100-80gb.sxm.8x.ib", "", 8, 0, "", 208, 1800), "", 8},
	}
	for _, tc := range tests {
		gpu, count := b.mapType(tc.it)
		if gpu != tc.gpu || count != tc.count {
			t.Errorf("%s: mapType(%q) = %q x%d, want %q x%d", tc.desc, tc.it.Name, gpu, count, tc.gpu, tc.count)
		}
	}
}

// The most specific api_names pattern wins; a name api_names lists verbatim maps even when it is not
// of Mithril's pattern.
func TestMapTypeSpecificity(t *testing.T) {
	gpus := []byte(`gpus:
  h100:
    max_count: 8
    api_names:
      mithril: h100-80gb.sxm
  any-h100:
    max_count: 8
    api_names:
      mithril: h100
  odd:
    max_count: 8
    api_names:
      mithril: odd-80gb-80gb
`)
	pools := []byte("pools:\n  - name: mithril-vm-pool\n    cloud: mithril\n    kind: vm\n    prefix: mithril-vm-\n")
	inv, err := inventory.Parse("g.yml", gpus, "p.yml", pools)
	if err != nil {
		t.Fatal(err)
	}
	b := backendtest.Must(New(Config{APIKey: "fkey_test"}, inv, nil))(t)
	tests := []struct {
		name  string
		gpu   string
		count int
	}{
		{"h100-80gb.sxm.8x", "h100", 8},
		{"h100.80gb.sxm", "h100", 0},
		{"h100-80gb.pcie.8x", "any-h100", 8},
		{"h100.8x", "any-h100", 8},
		{"odd-80gb-80gb.2x", "odd", 2},
		{"odd-80gb-80gb", "odd", 0},
	}
	for _, tc := range tests {
		if gpu, count := b.mapType(InstanceType{Name: tc.name}); gpu != tc.gpu || count != tc.count {
			t.Errorf("mapType(%q) = %q x%d, want %q x%d", tc.name, gpu, count, tc.gpu, tc.count)
		}
	}
}

// Hardware comes from the catalog's fields, and from the name where they are missing.
func TestHardwareOf(t *testing.T) {
	tests := []struct {
		desc string
		it   InstanceType
		want cloudprovider.Hardware
	}{
		{"SXM5", catalogType("h100-80gb.sxm.8x", "H100", 8, 80, "SXM5", 208, 1800), cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 208, MemoryGB: 1800}},
		{"SXM4", catalogType("a100-80gb.sxm.1x", "A100", 1, 80, "SXM4", 30, 240), cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 30, MemoryGB: 240}},
		{"PCIe", catalogType("h100-80gb.pcie.8x", "H100", 8, 80, "PCIe", 192, 1500), cloudprovider.Hardware{FormFactor: "pcie", GPUMemoryGB: 80, VCPUs: 192, MemoryGB: 1500}},
		{"socket over name", catalogType("h100-80gb.sxm.8x", "H100", 8, 80, "PCIe", 192, 1500), cloudprovider.Hardware{FormFactor: "pcie", GPUMemoryGB: 80, VCPUs: 192, MemoryGB: 1500}},
		{"gpu_memory_gb over name", catalogType("b200-192gb.8x", "B200", 8, 180, "SXM6", 224, 2900), cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 180, VCPUs: 224, MemoryGB: 2900}},
		{"no socket: the name says", catalogType("b200-192gb.8x", "B200", 8, 192, "", 224, 2900), cloudprovider.Hardware{FormFactor: "", GPUMemoryGB: 192, VCPUs: 224, MemoryGB: 2900}},
		{"name alone", InstanceType{Name: "h100-80gb.pcie.8x"}, cloudprovider.Hardware{FormFactor: "pcie", GPUMemoryGB: 80}},
		{"name without memory", InstanceType{Name: "b200.8x"}, cloudprovider.Hardware{}},
		{"gpu_type that only exists as PCIe", InstanceType{Name: "l40s.1x", GPUType: "L40S", NumCPUs: opt(16)}, cloudprovider.Hardware{FormFactor: "pcie", VCPUs: 16}},
		{"nulls", InstanceType{Name: "x.1x", GPUMemoryGB: OptInt{}, NumCPUs: OptInt{}, RAMGB: OptInt{}}, cloudprovider.Hardware{}},
	}
	for _, tc := range tests {
		if got := hardwareOf(tc.it); got != tc.want {
			t.Errorf("%s: hardwareOf(%q) = %+v, want %+v", tc.desc, tc.it.Name, got, tc.want)
		}
	}
}
