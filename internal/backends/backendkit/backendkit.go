// Package backendkit holds what every backend's code shares beyond HTTP (internal/backends/restclient):
// the checks of a backend's New, List's and ListClusters' filtering of a cloud's instances and clusters, the order offers are answered
// in, region filters, filling hardware facts a cloud leaves out, and listing and checking volumes.
package backendkit

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
)

// Live is the body of List for clouds that answer every instance at once: the cloud's instances whose
// name starts with prefix, mapped onto hydra's by convert, without the terminated ones (nil when none
// is left).
func Live[T any](all []T, prefix string, name func(T) string, convert func(T) cloudprovider.Instance) []cloudprovider.Instance {
	return live(all, prefix, name, convert, func(i cloudprovider.Instance) cloudprovider.Status { return i.Status })
}

// live keeps the items of all whose name starts with prefix, converted, without those whose status
// is terminated (nil when none is left).
func live[T, O any](all []T, prefix string, name func(T) string, convert func(T) O, status func(O) cloudprovider.Status) []O {
	var out []O
	for _, in := range all {
		if !strings.HasPrefix(name(in), prefix) {
			continue
		}
		if o := convert(in); status(o) != cloudprovider.StatusTerminated {
			out = append(out, o)
		}
	}
	return out
}

// Get is the body of Get for clouds whose answer for one machine maps straight onto hydra's: read asks
// the cloud for the machine id, convert maps it; read's error is returned as it is.
func Get[T any](ctx context.Context, id string, read func(context.Context, string) (T, error),
	convert func(T) cloudprovider.Instance) (cloudprovider.Instance, error) {
	in, err := read(ctx, id)
	if err != nil {
		return cloudprovider.Instance{}, err
	}
	return convert(in), nil
}

// List is the body of List for clouds that answer every instance at once: read asks the cloud for them
// (its error is returned as it is), and Live keeps those whose name starts with prefix and are not
// terminated.
func List[T any](ctx context.Context, prefix string, read func(context.Context) ([]T, error), name func(T) string,
	convert func(T) cloudprovider.Instance) ([]cloudprovider.Instance, error) {
	all, err := read(ctx)
	if err != nil {
		return nil, err
	}
	return Live(all, prefix, name, convert), nil
}

// ListClusters is List for clusters: the body of ListClusters for clouds that answer every cluster at
// once, without the terminated ones.
func ListClusters[T any](ctx context.Context, prefix string, read func(context.Context) ([]T, error), name func(T) string,
	convert func(T) cloudprovider.Cluster) ([]cloudprovider.Cluster, error) {
	all, err := read(ctx)
	if err != nil {
		return nil, err
	}
	return live(all, prefix, name, convert, func(c cloudprovider.Cluster) cloudprovider.Status { return c.Status }), nil
}

// SortOffers puts offers in the order backends answer them: by region, then instance type, on-demand
// before spot; the sort is stable.
func SortOffers(offers []cloudprovider.Offer) {
	sort.SliceStable(offers, func(i, j int) bool {
		a, c := offers[i], offers[j]
		if a.Region != c.Region {
			return a.Region < c.Region
		}
		if a.InstanceType != c.InstanceType {
			return a.InstanceType < c.InstanceType
		}
		return !a.Spot && c.Spot
	})
}

// Check makes the checks every backend's New makes: an inventory is required ("<cloud>: no
// inventory"), and a nil logger becomes a null one, which it returns.
func Check(cloud string, inv *inventory.Inventory, logger hclog.Logger) (hclog.Logger, error) {
	if inv == nil {
		return nil, fmt.Errorf("%s: no inventory", cloud)
	}
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return logger, nil
}

// Allowed reports whether a configured filter lets v through: an empty filter allows everything, else v
// must be one of its entries, ignoring case (region, location and zone lists of a backend's Config).
func Allowed(filter []string, v string) bool {
	if len(filter) == 0 {
		return true
	}
	for _, f := range filter {
		if strings.EqualFold(f, v) {
			return true
		}
	}
	return false
}

// FillHardware returns have with every field the cloud left zero taken from from (typically the offer a
// machine was created from, when the cloud's instance answer does not repeat the facts).
func FillHardware(have, from cloudprovider.Hardware) cloudprovider.Hardware {
	have.FormFactor = cmp.Or(have.FormFactor, from.FormFactor)
	have.GPUMemoryGB = cmp.Or(have.GPUMemoryGB, from.GPUMemoryGB)
	have.VCPUs = cmp.Or(have.VCPUs, from.VCPUs)
	have.MemoryGB = cmp.Or(have.MemoryGB, from.MemoryGB)
	return have
}
