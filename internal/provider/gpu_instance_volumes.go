package provider

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	tfpath "github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/hydragpu/terraform-provider-hydra/internal/clouds"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
)

// volumes on hydra_gpu_instance and hydra_gpu_cluster: the hydra_volume ids a machine (every node of a
// cluster) gets at launch and where they are mounted. The control plane places the machine in the
// volumes' cloud and region, launches it with them and provisions the mounts.

// volumeUseAttrTypes is one element of volumes.
var volumeUseAttrTypes = map[string]attr.Type{"volume_id": types.StringType, "mount_path": types.StringType}

// volumesAttribute is the volumes attribute of a machine or a cluster (s).
func volumesAttribute(s subject) schema.ListNestedAttribute {
	the := "the " + s.thing
	each := the
	// A block volume is on one machine at a time.
	block := "A `block` volume is on one machine at a time: a `create_before_destroy` replacement cannot get it while the " +
		"old machine holds it (the apply fails and creates nothing); use the default replacement (destroy first) or a " +
		"`shared_fs` volume."
	if s == clusterSubject {
		each = "every node"
		block = "Every node mounts every volume, so a cluster takes `shared_fs` volumes: a cluster's create with a `block` " +
			"volume (on one machine at a time) fails and creates nothing."
	}
	return schema.ListNestedAttribute{
		MarkdownDescription: "Volumes (`hydra_volume`) " + each + " gets at launch, each mounted at its `mount_path` by " +
			"provisioning (a block volume gets a file system only when it has none). Their data outlives " + the + ": a " +
			"replacement (a changed shape, `terraform apply -replace`, `replace_when_unhealthy`, a preemption) gets the same " +
			"volumes, and destroying " + the + " never deletes a volume. All volumes must be in one cloud and region, and " +
			the + " is planned only on offers there (`other_clouds` says why the others lost). Adding or removing a volume " +
			"replaces " + the + " (clouds give volumes at launch), except right after `terraform import` when " + the + "'s " +
			"provisioning record shows it was provisioned with exactly these volumes (then they are recorded in place); " +
			"changing only a `mount_path` provisions " + the + " again in place, mounting the volume at its new path. " + block,
		Optional:      true,
		Validators:    []validator.List{listvalidator.SizeAtLeast(1), volumesValid{}},
		PlanModifiers: []planmodifier.List{listplanmodifier.RequiresReplaceIf(replaceIfOtherVolumes, replaceVolumesWhy, replaceVolumesWhy)},
		NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"volume_id": schema.StringAttribute{
				MarkdownDescription: "The volume: a `hydra_volume`'s `id`, `<cloud>/<region>/<name>` (known at plan, so the " +
					"volume may be created in the same apply).",
				Required:   true,
				Validators: []validator.String{volumeIDValid},
			},
			"mount_path": schema.StringAttribute{
				MarkdownDescription: "Where the volume is mounted inside " + the + ": an absolute, clean path without spaces " +
					"(`/data`), not `/` and not a system directory (`/etc`, `/usr`, `/proc`, ...). Each volume has its own path, " +
					"and no path lies inside another.",
				Required:   true,
				Validators: []validator.String{mountPathValid},
			},
		}},
	}
}

const replaceVolumesWhy = "Replaces the machine when it gets other volumes; a changed mount path alone provisions it again in place."

// replaceIfOtherVolumes replaces when the planned volumes are not the state's (in any order): clouds
// attach volumes at launch. Mount paths alone are the provisioning digest's (re-provisioned in place).
// A state without volumes given some is left to the resource's ModifyPlan (volumesAdopted): an
// imported machine has none in its state yet.
func replaceIfOtherVolumes(ctx context.Context, req planmodifier.ListRequest, resp *listplanmodifier.RequiresReplaceIfFuncResponse) {
	if req.State.Raw.IsNull() || req.PlanValue.IsUnknown() || req.StateValue.IsUnknown() || req.StateValue.IsNull() {
		return
	}
	resp.RequiresReplace = !sameVolumes(volumeUsesOf(req.StateValue), volumeUsesOf(req.PlanValue))
}

// sameVolumes says whether a and b name the same volumes, in any order (an unknown id is another volume).
func sameVolumes(a, b []volumeUse) bool {
	ids := func(uses []volumeUse) []string {
		out := make([]string, 0, len(uses))
		for _, u := range uses {
			out = append(out, u.ID)
		}
		slices.Sort(out)
		return out
	}
	x, y := ids(a), ids(b)
	return slices.Equal(x, y) && !slices.Contains(y, "")
}

// volumesAdopted says whether a machine (or cluster) whose state has no volumes while the plan gives
// some already has them: it was provisioned with exactly these volumes and variables, as its
// provisioning digest (which covers the volumes' ids and mount paths, read from the machine's marker
// at import) equals the planned one. Then the plan records them in place; otherwise the machine is
// replaced, since clouds give volumes at launch. With provisioning off nothing proves it: replaced.
func volumesAdopted(stateVolumes, planVolumes types.List, stateDigest types.String, change controlplane.ChangePlan) bool {
	if !stateVolumes.IsNull() || planVolumes.IsNull() {
		return true // not this case: replaceIfOtherVolumes decided
	}
	return change.Change == controlplane.Keep && change.DigestKnown && change.Digest != "" && change.Digest == stateDigest.ValueString()
}

// systemDirs are directories a volume may not be mounted at; under the first group (virtual and
// runtime file systems) not even below them.
var (
	systemTrees = []string{"/proc", "/sys", "/dev", "/run", "/boot"}
	systemDirs  = []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/usr", "/etc", "/var", "/var/lib", "/var/lib/hydra",
		"/tmp", "/root", "/home", "/opt", "/srv", "/mnt", "/media"}
)

// mountPathProblem says what is wrong with a mount path, or "" when it is fine.
func mountPathProblem(p string) string {
	switch {
	case p == "":
		return "it is empty; give an absolute path such as \"/data\""
	case !strings.HasPrefix(p, "/"):
		return fmt.Sprintf("%q is not an absolute path; it must start with \"/\" (for example \"/%s\")", p, strings.TrimLeft(p, "./"))
	case strings.IndexFunc(p, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r == '\\' }) >= 0:
		return fmt.Sprintf("%q holds a space, a control character or a backslash, which the mount table cannot hold", p)
	case path.Clean(p) != p:
		return fmt.Sprintf("%q is not a clean path; write it as %q (no trailing \"/\", \"//\", \".\" or \"..\")", p, path.Clean(p))
	case p == "/":
		return "\"/\" is the machine's root file system; mount the volume at a directory such as \"/data\""
	case slices.Contains(systemDirs, p):
		return fmt.Sprintf("%q is a system directory the machine needs; mount the volume at a directory of its own such as \"/data\"", p)
	}
	for _, tree := range systemTrees {
		if p == tree || strings.HasPrefix(p, tree+"/") {
			return fmt.Sprintf("%q is in %s, which the system owns; mount the volume at a directory of its own such as \"/data\"", p, tree)
		}
	}
	return ""
}

// mountPathValid accepts a mount path mountPathProblem finds nothing wrong with.
var mountPathValid = problemCheck{
	description: "an absolute, clean path without spaces, not / and not a system directory",
	summary:     "Invalid mount_path",
	problem:     mountPathProblem,
}

// volumeIDProblem says what is wrong with a volume id, or "" when it is <cloud>/<region>/<name> with a
// cloud hydra knows.
func volumeIDProblem(id string) string {
	cloud, _, _, err := controlplane.ParseVolumeID(id)
	switch {
	case err != nil:
		return err.Error() + "; set it from the volume's resource: volume_id = hydra_volume.<name>.id"
	case !slices.Contains(clouds.Names(), cloud):
		return fmt.Sprintf("volume id %q names %q, which is not a cloud hydra knows (%s)", id, cloud, quotedCloudNames())
	}
	return ""
}

// volumeIDValid accepts a hydra_volume id (volumeIDProblem).
var volumeIDValid = problemCheck{
	description: "a hydra_volume id, <cloud>/<region>/<name>",
	summary:     "Invalid volume_id",
	problem:     volumeIDProblem,
}

// volumesValid checks the list as a whole: no volume twice, no mount path twice or inside another,
// every volume in one cloud and region. Elements still unknown are skipped.
type volumesValid struct{}

func (volumesValid) Description(context.Context) string {
	return "each volume once, each at its own mount path, all in one cloud and region"
}

func (v volumesValid) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (volumesValid) ValidateList(ctx context.Context, req validator.ListRequest, resp *validator.ListResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	for _, p := range volumesProblems(volumeUsesOf(req.ConfigValue)) {
		resp.Diagnostics.AddAttributeError(req.Path.AtListIndex(p.index).AtName(p.attr), p.summary, p.detail)
	}
}

// volumeUse is one element of volumes as read from a configuration or plan; a field is "" while
// unknown.
type volumeUse struct {
	ID, MountPath string
}

// volumeUsesOf reads volumes' elements (null: none).
func volumeUsesOf(list types.List) []volumeUse {
	if list.IsNull() || list.IsUnknown() {
		return nil
	}
	var out []volumeUse
	for _, e := range list.Elements() {
		o, ok := e.(types.Object)
		if !ok || o.IsNull() || o.IsUnknown() {
			out = append(out, volumeUse{})
			continue
		}
		a := o.Attributes()
		id, _ := a["volume_id"].(types.String)
		mp, _ := a["mount_path"].(types.String)
		out = append(out, volumeUse{ID: id.ValueString(), MountPath: mp.ValueString()})
	}
	return out
}

// volumesProblem is one problem of a volumes list, on one element's attribute.
type volumesProblem struct {
	index                 int
	attr, summary, detail string
}

// volumesProblems finds what is wrong with the list as a whole (each element's own form is its
// attribute's validator's). Unknown ("") fields are skipped.
func volumesProblems(uses []volumeUse) []volumesProblem {
	var out []volumesProblem
	firstID, firstPath := map[string]int{}, map[string]int{}
	var where string
	whereAt := -1
	for i, u := range uses {
		if u.ID != "" {
			if j, dup := firstID[u.ID]; dup {
				out = append(out, volumesProblem{i, "volume_id", "Volume listed twice",
					fmt.Sprintf("volumes[%d] and volumes[%d] are both %q; a volume is mounted at one path. Remove one of them.", j, i, u.ID)})
			} else {
				firstID[u.ID] = i
			}
			if cloud, region, _, err := controlplane.ParseVolumeID(u.ID); err == nil {
				here := cloud + "/" + region
				switch {
				case whereAt < 0:
					where, whereAt = here, i
				case here != where:
					out = append(out, volumesProblem{i, "volume_id", "Volumes in different places",
						fmt.Sprintf("volumes[%d] (%q) is in %s but volumes[%d] (%q) is in %s: a machine runs in one cloud and region "+
							"and gets only volumes there. Use volumes of one cloud and region.", i, u.ID, here, whereAt, uses[whereAt].ID, where)})
				}
			}
		}
		if u.MountPath == "" {
			continue
		}
		if j, dup := firstPath[u.MountPath]; dup {
			out = append(out, volumesProblem{i, "mount_path", "Mount path used twice",
				fmt.Sprintf("volumes[%d] and volumes[%d] are both mounted at %q; give each volume its own path.", j, i, u.MountPath)})
			continue
		}
		for j, o := range uses[:i] {
			if o.MountPath == "" || o.MountPath == u.MountPath {
				continue
			}
			inner, outer := u.MountPath, o.MountPath
			if strings.HasPrefix(outer, inner+"/") {
				inner, outer = outer, inner
			}
			if strings.HasPrefix(inner, outer+"/") {
				out = append(out, volumesProblem{i, "mount_path", "Mount path inside another",
					fmt.Sprintf("volumes[%d] is mounted at %q and volumes[%d] at %q, one inside the other: the inner mount "+
						"would hide the outer volume's files there, or vanish under it. Use paths side by side, such as "+
						"\"/data\" and \"/models\".", j, o.MountPath, i, u.MountPath)})
			}
		}
		firstPath[u.MountPath] = i
	}
	return out
}

// controlPlaneVolumes is volumes as the control plane takes them; ok is false while any is unknown.
func controlPlaneVolumes(list types.List) ([]controlplane.VolumeUse, bool) {
	if list.IsUnknown() {
		return nil, false
	}
	var out []controlplane.VolumeUse
	for _, e := range list.Elements() {
		o, ok := e.(types.Object)
		if !ok || o.IsUnknown() {
			return nil, false
		}
		a := o.Attributes()
		id, _ := a["volume_id"].(types.String)
		mp, _ := a["mount_path"].(types.String)
		if id.IsUnknown() || mp.IsUnknown() {
			return nil, false
		}
		out = append(out, controlplane.VolumeUse{ID: id.ValueString(), MountPath: mp.ValueString()})
	}
	return out, true
}

// volumesPlacementProblems checks volumes against clouds and regions when all are known: a volume
// outside the allowed clouds or regions can never be given to the machine.
func volumesPlacementProblems(ctx context.Context, volumes types.List, cloudsSet, regionsSet types.Set, thing string) diag.Diagnostics {
	var diags diag.Diagnostics
	uses := volumeUsesOf(volumes)
	allowedClouds, okC, d := stringsOf(ctx, cloudsSet)
	diags.Append(d...)
	allowedRegions, okR, d := stringsOf(ctx, regionsSet)
	diags.Append(d...)
	for i, u := range uses {
		cloud, region, _, err := controlplane.ParseVolumeID(u.ID)
		if err != nil {
			continue
		}
		at := tfpath.Root("volumes").AtListIndex(i).AtName("volume_id")
		if okC && len(allowedClouds) > 0 && !slices.Contains(allowedClouds, cloud) {
			diags.AddAttributeError(at, "Volume outside the allowed clouds",
				fmt.Sprintf("volumes[%d] (%q) is in %s, but clouds allows only %s: the %s must run where its volumes are. Add %q to "+
					"clouds, or use a volume of an allowed cloud.", i, u.ID, cloud, quoteAll(allowedClouds), thing, cloud))
		}
		if okR && len(allowedRegions) > 0 && !slices.Contains(allowedRegions, region) {
			diags.AddAttributeError(at, "Volume outside the allowed regions",
				fmt.Sprintf("volumes[%d] (%q) is in region %s, but regions allows only %s: the %s must run where its volumes are. "+
					"Add %q to regions, or use a volume of an allowed region.", i, u.ID, region, quoteAll(allowedRegions), thing, region))
		}
	}
	return diags
}

// volumesValue is volumes for a state built from a control-plane record (none: null).
func volumesValue(uses []controlplane.VolumeUse, diags *diag.Diagnostics) types.List {
	elemType := types.ObjectType{AttrTypes: volumeUseAttrTypes}
	if len(uses) == 0 {
		return types.ListNull(elemType)
	}
	elems := make([]attr.Value, 0, len(uses))
	for _, u := range uses {
		o, d := types.ObjectValue(volumeUseAttrTypes, map[string]attr.Value{
			"volume_id": types.StringValue(u.ID), "mount_path": types.StringValue(u.MountPath)})
		diags.Append(d...)
		elems = append(elems, o)
	}
	l, d := types.ListValue(elemType, elems)
	diags.Append(d...)
	return l
}
