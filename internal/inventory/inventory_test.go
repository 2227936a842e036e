package inventory

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const goodGPUs = "gpus:\n  h100:\n    max_count: 8\n    api_names: {sandbox: H100}\n"

const goodPools = "pools:\n  - name: sandbox-vm-pool\n    cloud: sandbox\n    kind: vm\n    prefix: sbx-vm-\n"

func TestDefaultInventory(t *testing.T) {
	inv, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{"h100", "h200", "a100-80gb", "l40s", "l4", "b200", "rtx6000ada", "rtxpro6000"} {
		g, ok := inv.GPUs[typ]
		if !ok {
			t.Errorf("GPU type %q missing from the embedded inventory", typ)
			continue
		}
		if g.MaxCount < 1 || len(g.APINames) == 0 {
			t.Errorf("%s: max_count %d, %d api names", typ, g.MaxCount, len(g.APINames))
		}
	}
	for _, pool := range []string{"verda-vm-pool", "upcloud-vm-pool", "primeintellect-vm-pool", "primeintellect-execlet-pool", "sandbox-vm-pool"} {
		if _, ok := inv.PoolByName(pool); !ok {
			t.Errorf("pool %q missing", pool)
		}
	}
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{[]string{"l40s_48gb"}, "l40s"},             // case-insensitive
		{[]string{"  L40S_48GB "}, "l40s"},          // trimmed
		{[]string{"", "nope", "L40S_48GB"}, "l40s"}, // the first name that maps
		{[]string{"nope"}, ""},
		{nil, ""},
	} {
		if got := inv.GPUType("primeintellect", tc.names...); got != tc.want {
			t.Errorf("GPUType(primeintellect, %q) = %q, want %q", tc.names, got, tc.want)
		}
	}
	if got := inv.GPUType("upcloud", "NVIDIA  H100\t80GB HBM3"); got != "h100" {
		t.Errorf("inner white space: got %q", got)
	}
	if p, ok := inv.PoolForInstance("sbx-ex-worker"); !ok || p.Name != "sandbox-execlet-pool" || p.Playbook != "execlet.yml" {
		t.Errorf("PoolForInstance(sbx-ex-worker) = %+v, %v", p, ok)
	}
}

// TestParseErrors: an error in gpus.yml (read with good pools) or in pools.yml (read with good GPUs)
// names its file and line.
func TestParseErrors(t *testing.T) {
	wantError := func(t *testing.T, gpus, pools, want string) {
		t.Helper()
		_, err := Parse("g.yml", []byte(gpus), "p.yml", []byte(pools))
		if err == nil {
			t.Fatalf("no error; want %q", want)
		}
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q\ndoes not contain %q", err, want)
		}
	}
	for _, tc := range []struct{ name, gpus, want string }{
		{"unknown key", "gpus:\n  h100:\n    max_count: 8\n    maxcount: 2\n    api_names: {sandbox: H100}\n", `g.yml:4: unknown key "maxcount" in GPU type h100`},
		{"duplicate type", "gpus:\n  h100:\n    max_count: 8\n    api_names: {sandbox: H100}\n  h100:\n    max_count: 4\n    api_names: {sandbox: H100}\n", `g.yml:5: duplicate GPU type "h100"`},
		{"max below 1", "gpus:\n  h100:\n    max_count: 0\n    api_names: {sandbox: H100}\n", `g.yml:3: max_count of "h100" is 0; it must be at least 1`},
		{"max not a number", "gpus:\n  h100:\n    max_count: eight\n    api_names: {sandbox: H100}\n", `g.yml:3: max_count of "h100" must be a whole number`},
		{"no api names", "gpus:\n  h100:\n    max_count: 8\n", `g.yml:2: GPU type "h100" has no api_names`},
		{"empty api names", "gpus:\n  h100:\n    max_count: 8\n    api_names: {}\n", `g.yml:2: GPU type "h100" has no api_names`},
		{"unknown cloud in api names", "gpus:\n  h100:\n    max_count: 8\n    api_names: {aws: p5}\n", `g.yml:4: unknown key "aws" in api_names of h100`},
		{"bad type name", "gpus:\n  H100:\n    max_count: 8\n    api_names: {sandbox: H100}\n", `g.yml:2: GPU type "H100" must be lower case`},
		{"yaml syntax", "gpus:\n  h100: [\n", `g.yml: yaml: line`},
		{"no max", "gpus:\n  h100:\n    api_names: {sandbox: H100}\n", `g.yml:2: GPU type "h100" has no max_count`},
		{"spot of a cloud without api names", "gpus:\n  h100:\n    max_count: 8\n    spot: [verda]\n    api_names: {sandbox: H100}\n", `g.yml:4: spot of "h100" names cloud "verda", which its api_names do not list`},
		{"spot not a list", "gpus:\n  h100:\n    max_count: 8\n    spot: {upcloud: yes}\n    api_names: {sandbox: H100}\n", `g.yml:4: spot of "h100" must be a list of clouds`},
	} {
		t.Run(tc.name, func(t *testing.T) { wantError(t, tc.gpus, goodPools, tc.want) })
	}
	for _, tc := range []struct{ name, pools, want string }{
		{"pool unknown kind", "pools:\n  - name: p\n    cloud: sandbox\n    kind: bare\n    prefix: p-\n", `p.yml:4: unknown kind "bare"`},
		{"pool unknown cloud", "pools:\n  - name: p\n    cloud: aws\n    kind: vm\n    prefix: p-\n", `p.yml:3: unknown cloud "aws"`},
		{"pool missing prefix", "pools:\n  - name: p\n    cloud: sandbox\n    kind: vm\n", `p.yml:2: pool "p" has no prefix`},
		{"overlapping prefixes", goodPools + "  - name: other\n    cloud: sandbox\n    kind: execlet\n    prefix: sbx-\n", `p.yml:6: prefix "sbx-" of pool "other" overlaps prefix "sbx-vm-"`},
		{"duplicate pool", goodPools + "  - name: sandbox-vm-pool\n    cloud: sandbox\n    kind: execlet\n    prefix: sbx-ex-\n", `p.yml:6: duplicate pool name "sandbox-vm-pool"`},
	} {
		t.Run(tc.name, func(t *testing.T) { wantError(t, goodGPUs, tc.pools, tc.want) })
	}
}

func TestLoadDirFallsBackToEmbedded(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, PoolsFile), []byte(goodPools), 0o644); err != nil {
		t.Fatal(err)
	}
	inv, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.Pools) != 1 || inv.Pools[0].Name != "sandbox-vm-pool" {
		t.Errorf("pools from the directory: %+v", inv.Pools)
	}
	if _, ok := inv.GPUs["h100"]; !ok {
		t.Error("GPUs should come from the embedded file when the directory has none")
	}
	if err := os.WriteFile(filepath.Join(dir, GPUsFile), []byte("gpus:\n  h100:\n    max_count: -1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(dir)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, GPUsFile)+":3:") {
		t.Errorf("error should name the user's file and line: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing directory must be an error")
	}
}

func TestSuggest(t *testing.T) {
	inv, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{"h10": "h100", "H100": "h100", "l40": "l40s", "a100": "a100-80gb", "rtx6000": "rtx6000ada"}
	for in, want := range cases {
		got := inv.Suggest(in)
		if !slices.Contains(got, want) {
			t.Errorf("Suggest(%q) = %v, want it to include %q", in, got, want)
		}
	}
	if got := inv.Suggest("zzzzzzzz"); len(got) != 0 {
		t.Errorf("Suggest of nonsense = %v, want nothing", got)
	}
}

// Without a list of known clouds, an inventory may name the clouds of the embedded pools.yml (the
// registry's tests check that they are the registry's); with one, only those.
func TestKnownClouds(t *testing.T) {
	inv, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, p := range inv.Pools {
		if !slices.Contains(want, p.Cloud) {
			want = append(want, p.Cloud)
		}
	}
	slices.Sort(want)
	if !slices.Equal(EmbeddedClouds(), want) || !slices.Equal(inv.Clouds, want) {
		t.Errorf("EmbeddedClouds() = %v, Default().Clouds = %v, want the embedded pools' %v", EmbeddedClouds(), inv.Clouds, want)
	}
	EmbeddedClouds()[0] = "changed"
	if EmbeddedClouds()[0] == "changed" {
		t.Error("EmbeddedClouds hands out its own slice")
	}

	known := []string{"verda", "sandbox", "verda"}
	inv, err = Parse("g.yml", []byte(goodGPUs), "p.yml", []byte(goodPools), known...)
	if err != nil || !slices.Equal(inv.Clouds, []string{"sandbox", "verda"}) {
		t.Errorf("Parse with known clouds: %v, %v", inv, err)
	}
	gpus := "gpus:\n  h100:\n    max_count: 8\n    api_names: {sandbox: H100, atlas: NVIDIA H100}\n"
	_, err = Parse("g.yml", []byte(gpus), "p.yml", []byte(goodPools), known...)
	if err == nil || !strings.Contains(err.Error(), `g.yml:4: unknown key "atlas" in api_names of h100 (allowed: sandbox, verda)`) {
		t.Errorf("a cloud the registry does not know, in api_names: %v", err)
	}
	pools := goodPools + "  - name: atlas-vm-pool\n    cloud: atlas\n    kind: vm\n    prefix: atlas-vm-\n"
	_, err = Parse("g.yml", []byte(goodGPUs), "p.yml", []byte(pools), known...)
	if err == nil || !strings.Contains(err.Error(), `p.yml:7: unknown cloud "atlas" (known: sandbox, verda)`) {
		t.Errorf("a cloud the registry does not know, in pools.yml: %v", err)
	}
}
