package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
)

// Every bad name gets exactly one error that names the attribute, quotes the value, says what is wrong
// and what is accepted, with an accepted name to copy where one can be made from it.
func TestNameValidator(t *testing.T) {
	for _, tc := range []struct {
		name string
		want []string // parts of the one error, in order; nil: valid
	}{
		{"trainer-1", nil},
		{"a", nil},
		{strings.Repeat("a", 48), nil},
		{"", []string{"name: the name is empty", "lower case letters and digits", "at most 48 characters", `"trainer-1"`}},
		{strings.Repeat("a", 49), []string{`is 49 characters, more than 48`, `for example "` + strings.Repeat("a", 48) + `"`}},
		{"Trainer-1", []string{`name: "Trainer-1" has upper case letters, which a name may not contain`, `for example "trainer-1"`}},
		{"Bad_Name", []string{`"Bad_Name" has upper case letters, "_", which`, `for example "bad-name"`}},
		{"trainer--1", []string{`"trainer--1" contains "--"`, "ownership token", `for example "trainer-1"`, "import its cloud-side name"}},
		{"-trainer", []string{`"-trainer" starts or ends with a dash`, `for example "trainer"`}},
		{"trainer-", []string{`starts or ends with a dash`, `for example "trainer"`}},
		{"my_trainer.1", []string{`"my_trainer.1" has "_", ".", which a name may not contain`, `for example "my-trainer-1"`}},
		{"gpu box", []string{`has " "`, `for example "gpu-box"`}},
		{"___", []string{`has "_"`, `for example "trainer-1"`}},
		{"träiner-ü", []string{`has "ä", "ü", which a name may not contain`, `for example "trainer-u"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var resp validator.StringResponse
			instanceName.ValidateString(context.Background(), validator.StringRequest{
				Path: path.Root("name"), ConfigValue: types.StringValue(tc.name),
			}, &resp)
			if tc.want == nil {
				if resp.Diagnostics.HasError() {
					t.Fatalf("%q refused: %v", tc.name, resp.Diagnostics)
				}
				return
			}
			if n := resp.Diagnostics.ErrorsCount(); n != 1 {
				t.Fatalf("%q: %d errors, want exactly one: %v", tc.name, n, resp.Diagnostics)
			}
			d := resp.Diagnostics.Errors()[0]
			if d.Summary() != "Invalid name" || !errorPattern(tc.want...).MatchString(d.Detail()) {
				t.Fatalf("%q: got %q: %s\nwant the parts %q", tc.name, d.Summary(), d.Detail(), tc.want)
			}
		})
	}
}

// A clouds value the registry does not know is named with every accepted value; an empty set says to
// leave the argument out.
func TestKnownCloudsValidator(t *testing.T) {
	all := `"atlas", "lambda", "mithril", "primeintellect", "sandbox", "upcloud", "verda"`
	for _, tc := range []struct {
		name   string
		values []string
		want   []string // one part list per expected error
	}{
		{"known", []string{"lambda", "sandbox"}, nil},
		{"aws", []string{"aws"}, []string{`clouds: "aws" is not a cloud hydra knows. Accepted values: ` + all + "."}},
		{"spelling", []string{"prime_intellect"}, []string{`"prime_intellect" is not a cloud hydra knows; did you mean "primeintellect"? Accepted values: ` + all}},
		{"case", []string{"Lambda"}, []string{`did you mean "lambda"?`}},
		{"two bad", []string{"aws", "gcp", "verda"}, []string{`"aws"`, `"gcp"`}},
		{"empty", []string{}, []string{"clouds is empty; leave it out to use every cloud the provider configures, or name at least one of them. A cloud is configured by its block in the provider (`atlas { ... }`, `lambda { ... }`, `mithril { ... }`, `primeintellect { ... }`, `upcloud { ... }`, `verda { ... }`); with none, hydra uses the sandbox."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			elems := make([]attr.Value, len(tc.values))
			for i, v := range tc.values {
				elems[i] = types.StringValue(v)
			}
			var resp validator.SetResponse
			knownClouds{}.ValidateSet(context.Background(), validator.SetRequest{
				Path: path.Root("clouds"), ConfigValue: types.SetValueMust(types.StringType, elems),
			}, &resp)
			errs := resp.Diagnostics.Errors()
			if len(errs) != len(tc.want) {
				t.Fatalf("%d errors, want %d: %v", len(errs), len(tc.want), resp.Diagnostics)
			}
			var details []string
			for _, d := range errs {
				details = append(details, d.Detail())
			}
			joined := strings.Join(details, "\n")
			for _, w := range tc.want {
				if !strings.Contains(joined, w) {
					t.Errorf("the errors lack %q:\n%s", w, joined)
				}
			}
			if strings.Contains(joined, "Value(") {
				t.Errorf("the errors show the framework's path syntax:\n%s", joined)
			}
		})
	}
}

// Numbers in messages read as the user wrote them, never in exponent form.
func TestAsWritten(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{1000000.000001, "1000000.000001"},
		{1e15, "1000000000000000"},
		{1e-07, "0.0000001"},
		{0.001, "0.001"},
		{2.5, "2.5"},
		{2.0000001, "2.0000001"},
		{1e300, "1e+300"},
	} {
		if got := controlplane.AsWritten(tc.f); got != tc.want {
			t.Errorf("AsWritten(%v) = %q, want %q", tc.f, got, tc.want)
		}
	}
}

// A number check refuses a known value with its summary and "<attribute> is <value>; <problem>", the
// value as written; null and unknown values are not checked.
func TestNumberChecks(t *testing.T) {
	bandwidthWhy := `it must be more than 0, in GB/s as all_reduce_perf reports "Avg bus bandwidth" (for example 100). ` +
		"To skip the NCCL check, leave nccl_check out."
	for _, tc := range []struct {
		check numberCheck
		value attr.Value // types.Int64 or types.Float64
		want  string     // "<summary>: <detail>" of the one error; "" when accepted
	}{
		{clusterNodes, types.Int64Value(2), ""},
		{clusterNodes, types.Int64Value(1), "Invalid number of nodes: n is 1; a cluster has at least 2 nodes. For one machine, use a hydra_gpu_instance."},
		{clusterNodes, types.Int64Unknown(), ""},
		{volumeSize, types.Int64Value(1), ""},
		{volumeSize, types.Int64Value(maxVolumeSizeGB), ""},
		{volumeSize, types.Int64Value(0), "Invalid volume size: n is 0; a volume's size is from 1 to 1048576 GB."},
		{volumeSize, types.Int64Value(maxVolumeSizeGB + 1), "Invalid volume size: n is 1048577; a volume's size is from 1 to 1048576 GB."},
		{volumeSize, types.Int64Null(), ""},
		{positiveBandwidth, types.Float64Value(0.5), ""},
		{positiveBandwidth, types.Float64Value(0), "Invalid bus bandwidth: n is 0; " + bandwidthWhy},
		{positiveBandwidth, types.Float64Value(-2.5), "Invalid bus bandwidth: n is -2.5; " + bandwidthWhy},
		{positiveBandwidth, types.Float64Null(), ""},
	} {
		var diags diag.Diagnostics
		switch v := tc.value.(type) {
		case types.Int64:
			var resp validator.Int64Response
			tc.check.ValidateInt64(context.Background(), validator.Int64Request{Path: path.Root("n"), ConfigValue: v}, &resp)
			diags = resp.Diagnostics
		case types.Float64:
			var resp validator.Float64Response
			tc.check.ValidateFloat64(context.Background(), validator.Float64Request{Path: path.Root("n"), ConfigValue: v}, &resp)
			diags = resp.Diagnostics
		}
		var got []string
		for _, d := range diags.Errors() {
			got = append(got, d.Summary()+": "+d.Detail())
		}
		if strings.Join(got, "\n") != tc.want || len(diags) != len(got) {
			t.Errorf("%s, %v: got %q, want %q", tc.check.summary, tc.value, got, tc.want)
		}
	}
}
