package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"
)

// get reads src, a request's config, plan or state, into a T; ok is false when it could not, with the
// reasons in diags.
func get[T any](ctx context.Context, src interface {
	Get(context.Context, any) diag.Diagnostics
}, diags *diag.Diagnostics) (v T, ok bool) {
	diags.Append(src.Get(ctx, &v)...)
	return v, !diags.HasError()
}
