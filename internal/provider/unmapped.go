package provider

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// warnUnmapped adds one warning per cloud and plan (provider process) naming the GPUs the cloud offers
// that the inventory does not map, so the fix is one line of YAML.
func (d *providerData) warnUnmapped(unmapped map[string][]string, diags *diag.Diagnostics) {
	clouds := make([]string, 0, len(unmapped))
	for c := range unmapped {
		clouds = append(clouds, c)
	}
	sort.Strings(clouds)
	for _, c := range clouds {
		if _, seen := d.unmappedWarned.LoadOrStore(c, true); seen {
			continue
		}
		names := unmapped[c]
		quoted := make([]string, len(names))
		for i, n := range names {
			quoted[i] = fmt.Sprintf("%q", n)
		}
		diags.AddWarning(fmt.Sprintf("%s offers GPUs hydra's inventory does not name", c),
			fmt.Sprintf("%s offers %s, which no GPU type in supported_gpus.yml maps for %s, so hydra cannot rent %s. "+
				"If one of them is a GPU type you want, add its exact name under api_names.%s of that type in your own "+
				"supported_gpus.yml (provider argument inventory_dir), for example:\n\n  api_names:\n    %s: [%s]",
				c, strings.Join(quoted, ", "), c, plural(len(names), "it", "them"), c, c, quoted[0]))
	}
}

// unmappedValue is the data source's unmapped attribute: cloud -> names (empty map, never null).
func unmappedValue(ctx context.Context, unmapped map[string][]string, diags *diag.Diagnostics) types.Map {
	if unmapped == nil {
		unmapped = map[string][]string{}
	}
	v, d := types.MapValueFrom(ctx, types.ListType{ElemType: types.StringType}, unmapped)
	diags.Append(d...)
	return v
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
