package provider

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
)

func TestMountPathProblem(t *testing.T) {
	checkProblems(t, "mountPathProblem", mountPathProblem, map[string]string{
		"/data":            "",
		"/mnt/data":        "",
		"/home/ubuntu/ckp": "",
		"/var/lib/models":  "",
		"":                 "empty",
		"data":             `not an absolute path; it must start with "/" (for example "/data")`,
		"./data":           `(for example "/data")`,
		"/data/":           `write it as "/data"`,
		"/a//b":            `write it as "/a/b"`,
		"/a/../b":          `write it as "/b"`,
		"/my data":         "space",
		"/x\ty":            "space",
		`/a\b`:             "backslash",
		"/":                "root file system",
		"/etc":             "system directory",
		"/usr":             "system directory",
		"/var/lib/hydra":   "system directory",
		"/proc/x":          "in /proc",
		"/dev":             "in /dev",
		"/run/user/data":   "in /run",
	})
}

// checkProblems checks a validator that says what is wrong with its input ("" when nothing is):
// for each input, problem's answer is "" when want is "", and contains want otherwise.
func checkProblems(t *testing.T, name string, problem func(string) string, cases map[string]string) {
	t.Helper()
	for in, want := range cases {
		got := problem(in)
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("%s(%q) = %q; want it to contain %q", name, in, got, want)
		}
	}
}

func TestVolumeIDProblem(t *testing.T) {
	checkProblems(t, "volumeIDProblem", volumeIDProblem, map[string]string{
		"sandbox/sbx-eu-1/data": "",
		"verda/FIN-01/ckpt":     "",
		"sandbox/sbx-eu-1":      "is not <cloud>/<region>/<name>",
		"sandbox//data":         "is not <cloud>/<region>/<name>",
		"a/b/c/d":               "is not <cloud>/<region>/<name>",
		"sbx-vm-data--ab12cd34": "hydra_volume.<name>.id",
		"aws/us-east-1/data":    `names "aws", which is not a cloud hydra knows`,
	})
}

func TestVolumesProblems(t *testing.T) {
	for _, tc := range []struct {
		name string
		uses []volumeUse
		want []string // "<index>.<attr>: <summary>"
	}{
		{"one", []volumeUse{{"sandbox/sbx-eu-1/a", "/data"}}, nil},
		{"two side by side", []volumeUse{{"sandbox/sbx-eu-1/a", "/data"}, {"sandbox/sbx-eu-1/b", "/models"}}, nil},
		{"prefix that is not a parent", []volumeUse{{"sandbox/sbx-eu-1/a", "/data"}, {"sandbox/sbx-eu-1/b", "/data2"}}, nil},
		{"unknown fields skipped", []volumeUse{{"", "/data"}, {"sandbox/sbx-eu-1/b", ""}, {"", ""}}, nil},
		{"volume twice", []volumeUse{{"sandbox/sbx-eu-1/a", "/data"}, {"sandbox/sbx-eu-1/a", "/other"}},
			[]string{"1.volume_id: Volume listed twice"}},
		{"path twice", []volumeUse{{"sandbox/sbx-eu-1/a", "/data"}, {"sandbox/sbx-eu-1/b", "/data"}},
			[]string{"1.mount_path: Mount path used twice"}},
		{"path inside another", []volumeUse{{"sandbox/sbx-eu-1/a", "/data"}, {"sandbox/sbx-eu-1/b", "/data/models"}},
			[]string{"1.mount_path: Mount path inside another"}},
		{"path outside a later one", []volumeUse{{"sandbox/sbx-eu-1/a", "/data/models"}, {"sandbox/sbx-eu-1/b", "/data"}},
			[]string{"1.mount_path: Mount path inside another"}},
		{"other region", []volumeUse{{"sandbox/sbx-eu-1/a", "/a"}, {"sandbox/sbx-us-1/b", "/b"}},
			[]string{"1.volume_id: Volumes in different places"}},
		{"other cloud", []volumeUse{{"sandbox/r1/a", "/a"}, {"verda/r1/b", "/b"}, {"sandbox/r1/c", "/c"}},
			[]string{"1.volume_id: Volumes in different places"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range volumesProblems(tc.uses) {
				got = append(got, fmt.Sprintf("%d.%s: %s", p.index, p.attr, p.summary))
				if p.detail == "" {
					t.Errorf("%s: no detail", p.summary)
				}
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("volumesProblems = %q; want %q", got, tc.want)
			}
		})
	}
}

// volumesList is a volumes value of (volume_id, mount_path) pairs; "?" is unknown.
func volumesList(t *testing.T, pairs ...[2]string) types.List {
	t.Helper()
	str := func(s string) types.String {
		if s == "?" {
			return types.StringUnknown()
		}
		return types.StringValue(s)
	}
	var elems []attr.Value
	for _, p := range pairs {
		o, d := types.ObjectValue(volumeUseAttrTypes, map[string]attr.Value{"volume_id": str(p[0]), "mount_path": str(p[1])})
		if d.HasError() {
			t.Fatal(d)
		}
		elems = append(elems, o)
	}
	l, d := types.ListValue(types.ObjectType{AttrTypes: volumeUseAttrTypes}, elems)
	if d.HasError() {
		t.Fatal(d)
	}
	return l
}

func TestControlPlaneVolumes(t *testing.T) {
	got, ok := controlPlaneVolumes(volumesList(t, [2]string{"sandbox/sbx-eu-1/a", "/data"}, [2]string{"sandbox/sbx-eu-1/b", "/models"}))
	want := []controlplane.VolumeUse{{ID: "sandbox/sbx-eu-1/a", MountPath: "/data"}, {ID: "sandbox/sbx-eu-1/b", MountPath: "/models"}}
	if !ok || len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("controlPlaneVolumes = %+v, %v; want %+v", got, ok, want)
	}
	if got, ok := controlPlaneVolumes(types.ListNull(types.ObjectType{AttrTypes: volumeUseAttrTypes})); !ok || got != nil {
		t.Errorf("null volumes: %+v, %v; want none, known", got, ok)
	}
	if _, ok := controlPlaneVolumes(volumesList(t, [2]string{"?", "/data"})); ok {
		t.Error("an unknown volume_id must leave the volumes unknown")
	}
	if _, ok := controlPlaneVolumes(types.ListUnknown(types.ObjectType{AttrTypes: volumeUseAttrTypes})); ok {
		t.Error("an unknown list must be unknown")
	}
	// And back: a record's volumes as state.
	var diags diag.Diagnostics
	back := volumesValue(want, &diags)
	again, ok := controlPlaneVolumes(back)
	if diags.HasError() || !ok || len(again) != 2 || again[1] != want[1] {
		t.Errorf("volumesValue round trip: %+v (%v)", again, diags)
	}
	if v := volumesValue(nil, &diags); !v.IsNull() {
		t.Errorf("no volumes as state: %v, want null", v)
	}
}

func TestVolumesPlacementProblems(t *testing.T) {
	ctx := context.Background()
	set := func(vals ...string) types.Set {
		if vals == nil {
			return types.SetNull(types.StringType)
		}
		var e []attr.Value
		for _, v := range vals {
			e = append(e, types.StringValue(v))
		}
		return types.SetValueMust(types.StringType, e)
	}
	vols := volumesList(t, [2]string{"sandbox/sbx-eu-1/a", "/data"})
	for _, tc := range []struct {
		name            string
		clouds, regions types.Set
		want            string
	}{
		{"unrestricted", set(), set(), ""},
		{"allowed", set("sandbox", "verda"), set("sbx-eu-1"), ""},
		{"cloud not allowed", set("verda"), set(), `is in sandbox, but clouds allows only "verda"`},
		{"region not allowed", set(), set("sbx-us-1"), `is in region sbx-eu-1, but regions allows only "sbx-us-1"`},
		{"unknown clouds", types.SetUnknown(types.StringType), set(), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := volumesPlacementProblems(ctx, vols, tc.clouds, tc.regions, "machine")
			got := ""
			for _, e := range d.Errors() {
				got += e.Detail()
			}
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("volumesPlacementProblems = %q; want %q", got, tc.want)
			}
		})
	}
}

func TestSameVolumes(t *testing.T) {
	a, b := volumeUse{"sandbox/r/a", "/a"}, volumeUse{"sandbox/r/b", "/b"}
	for _, tc := range []struct {
		name string
		x, y []volumeUse
		same bool
	}{
		{"none", nil, nil, true},
		{"equal", []volumeUse{a, b}, []volumeUse{a, b}, true},
		{"reordered", []volumeUse{a, b}, []volumeUse{b, a}, true},
		{"mount path only", []volumeUse{a}, []volumeUse{{a.ID, "/elsewhere"}}, true},
		{"added", []volumeUse{a}, []volumeUse{a, b}, false},
		{"removed", []volumeUse{a, b}, []volumeUse{a}, false},
		{"all removed", []volumeUse{a}, nil, false},
		{"other", []volumeUse{a}, []volumeUse{b}, false},
		{"unknown id", []volumeUse{a}, []volumeUse{{"", "/a"}}, false},
	} {
		if got := sameVolumes(tc.x, tc.y); got != tc.same {
			t.Errorf("%s: sameVolumes = %v, want %v", tc.name, got, tc.same)
		}
	}
}

func TestVolumesAdopted(t *testing.T) {
	none := types.ListNull(types.ObjectType{AttrTypes: volumeUseAttrTypes})
	some := volumesList(t, [2]string{"sandbox/r/a", "/data"})
	keep := controlplane.ChangePlan{Change: controlplane.Keep, Digest: "sha256:1", DigestKnown: true}
	for _, tc := range []struct {
		name        string
		state, plan types.List
		digest      string
		change      controlplane.ChangePlan
		adopted     bool
	}{
		{"both have volumes: the attribute's modifier decides", some, some, "sha256:1", keep, true},
		{"neither", none, none, "sha256:1", keep, true},
		{"removed: the attribute's modifier decides", some, none, "sha256:1", keep, true},
		{"imported, provisioned with them", none, some, "sha256:1", keep, true},
		{"provisioned without them", none, some, "sha256:0", controlplane.ChangePlan{Change: controlplane.Reprovision, Digest: "sha256:1", DigestKnown: true}, false},
		{"provisioning off", none, some, "", controlplane.ChangePlan{Change: controlplane.Keep, DigestKnown: true}, false},
		{"digest unknown", none, some, "sha256:1", controlplane.ChangePlan{Change: controlplane.Reprovision}, false},
		{"kept for another reason, another digest", none, some, "sha256:0", keep, false},
	} {
		if got := volumesAdopted(tc.state, tc.plan, types.StringValue(tc.digest), tc.change); got != tc.adopted {
			t.Errorf("%s: volumesAdopted = %v, want %v", tc.name, got, tc.adopted)
		}
	}
}
