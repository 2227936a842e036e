package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/hydragpu/terraform-provider-hydra/internal/clouds"
)

// cloudImportID is the import ID form `<cloud>/<the cloud's own id>` of a resource that Read imports.
type cloudImportID struct {
	thing     string // the resource in the diagnostic: "importing <thing> (<id>)"
	own       string // the cloud's own id in the form: "cloud volume id"
	slashHint string // said after "has more than one /", or ""
	accepted  string // what is accepted, with an example
}

// problem says what is wrong with id and what is accepted, or "" when it is `<cloud>/<own id>` with a
// cloud hydra knows.
func (f cloudImportID) problem(id string) string {
	cloud, own, ok := strings.Cut(id, "/")
	switch {
	case !ok || own == "" || cloud == "":
		return fmt.Sprintf("%q is not <cloud>/<%s>; %s.", id, f.own, f.accepted)
	case strings.Contains(own, "/"):
		return fmt.Sprintf("%q has more than one \"/\"%s; %s.", id, f.slashHint, f.accepted)
	case !slices.Contains(clouds.Names(), cloud):
		return fmt.Sprintf("%q starts with %q, which is not a cloud hydra knows (%s); %s.", id, cloud, quotedCloudNames(), f.accepted)
	}
	return ""
}

// importState refuses an ID of another form, saying what is accepted; else it puts the ID in `id`
// for Read to import.
func (f cloudImportID) importState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if msg := f.problem(req.ID); msg != "" {
		resp.Diagnostics.AddError(fmt.Sprintf("importing %s (%s)", f.thing, req.ID), msg)
		return
	}
	resource.ImportStatePassthroughID(ctx, path.Root("id"), req, resp)
}

// importedRecord is Read's half of an import: the record read (with read) for the ID importState put in
// `id`; ok is false when it could not be read, with the diagnostic "importing <thing> (<id>)".
func importedRecord[R any](ctx context.Context, f cloudImportID, id string, read func(context.Context, string) (R, error), diags *diag.Diagnostics) (R, bool) {
	rec, err := read(ctx, id)
	if err != nil {
		diags.AddError(fmt.Sprintf("importing %s (%s)", f.thing, id), err.Error())
		return rec, false
	}
	return rec, true
}
