package controlplane

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
)

// CheckImportID checks an import ID before the import reads it: it must route to a configured pool
// by its prefix, and an ID without its "--<token>" suffix (the resource's name, or the pool's prefix
// and the name) names no machine hydra made, where Terraform would only say "Cannot import
// non-existent remote object": the error then says what is wrong and lists the machines it probably
// means. nil goes on with the import (a full cloud-side name, or a machine that really has that name,
// made before ownership tokens).
func (cp *ControlPlane) CheckImportID(ctx context.Context, id string) error {
	var pools []inventory.Pool
	for _, pm := range cp.manager.Pools() {
		pools = append(pools, pm.Pool)
	}
	if needsCandidates(pools, id) {
		res := cp.Machines(ctx, nil)
		if problem := importHint(id, pools, res.Machines, res.Unreachable); problem != "" {
			return errors.New(problem)
		}
	}
	_, err := cp.manager.Route(id)
	return err
}

// needsCandidates says whether an import ID might lack its token: it carries none in the pool its
// prefix routes it to, or it routes to no pool at all.
func needsCandidates(pools []inventory.Pool, id string) bool {
	for _, p := range pools {
		if _, token, ok := cloudprovider.ParseCloudName(p, id); ok {
			return token == ""
		}
	}
	return true
}

// importHint is importIDProblem's answer from a listing of the clouds' machines: "" when a machine has
// exactly that name; otherwise what a cloud-side name is and the machines whose names the ID begins
// (with or without the pool's prefix).
func importHint(id string, pools []inventory.Pool, machines []Machine, unreachable map[string]string) string {
	var candidates []Machine
	for _, m := range machines {
		if m.Instance.Name == id {
			return ""
		}
		if strings.HasPrefix(m.Instance.Name, id) || strings.HasPrefix(m.Instance.Name, m.Pool.Prefix+id+cloudprovider.TokenSeparator) {
			candidates = append(candidates, m)
		}
	}
	routed := false
	for _, p := range pools {
		if strings.HasPrefix(id, p.Prefix) {
			routed = true
		}
	}
	if !routed && len(candidates) == 0 {
		return "" // not a name hydra made: the pool routing error says which prefixes are configured
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%q has no %q suffix. hydra names every machine it creates <pool prefix><name>%s<ownership token> "+
		"(for example sbx-vm-trainer-1--k3j5x7qa), and import takes that whole cloud-side name.", id, cloudprovider.TokenSeparator+"<token>", cloudprovider.TokenSeparator)
	if len(candidates) == 0 {
		fmt.Fprintf(&b, "\n\nNo machine at the configured clouds has a name that starts with %q. "+
			"The hydra_gpu_instances data source lists every machine with its cloud-side name (its id).", id)
	} else {
		sort.Slice(candidates, func(i, j int) bool { return candidates[i].Instance.Name < candidates[j].Instance.Name })
		fmt.Fprintf(&b, "\n\nMachines whose names start with it:\n")
		for _, m := range candidates {
			fmt.Fprintf(&b, "  %s (%s", m.Instance.Name, m.Pool.Cloud)
			if m.Instance.Region != "" {
				fmt.Fprintf(&b, " %s", m.Instance.Region)
			}
			fmt.Fprintf(&b, ", %s, id %s, ownership %s)\n", m.Instance.Status, m.Instance.ID, m.Ownership)
		}
		fmt.Fprintf(&b, "\nImport one by its whole name: terraform import <resource address> %s (or id = %q in an import block).",
			candidates[0].Instance.Name, candidates[0].Instance.Name)
	}
	if len(unreachable) > 0 {
		clouds := make([]string, 0, len(unreachable))
		for c := range unreachable {
			clouds = append(clouds, c)
		}
		sort.Strings(clouds)
		fmt.Fprintf(&b, "\n\nNot listed (could not be reached): %s.", strings.Join(clouds, ", "))
	}
	return b.String()
}
