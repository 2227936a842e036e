// Package clouds is the registry of cloud drivers: the one list of the clouds hydra rents from.
//
// A Driver declares everything the rest of hydra needs to know about one cloud: its name (as in
// pools.yml, api_names and the `clouds` argument), its provider block and that block's settings, how to
// build its backend from those settings, and how to start its local emulator. The provider schema and
// Configure (internal/provider), the inventory's known clouds and the docs are derived from this list.
//
// Adding a cloud: its backend and emulator packages, a file here declaring its Driver (see verda.go),
// one line in registry below, and its names in inventory/supported_gpus.yml (api_names) and
// inventory/pools.yml (its pools). The tests here then check its settings, credentials and emulator.
//
// This package describes settings with plain Go values; it knows nothing about Terraform. It must not
// import internal/provider.
package clouds

import (
	"sort"
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox"
)

// registry is the one list of clouds, in alphabetical order of their names.
var registry = []*Driver{
	Atlas,
	Lambda,
	Mithril,
	PrimeIntellect,
	UpCloud,
	Verda,
}

// All returns every driver, in the registry's order. The slice is a copy; the drivers are shared and
// must not be changed.
func All() []*Driver {
	return append([]*Driver(nil), registry...)
}

// ByName returns the driver of a cloud name ("primeintellect"), or nil.
func ByName(name string) *Driver {
	for _, d := range registry {
		if d.Name == name {
			return d
		}
	}
	return nil
}

// ByBlock returns the driver of a provider block name ("primeintellect"), or nil.
func ByBlock(block string) *Driver {
	for _, d := range registry {
		if d.Block == block {
			return d
		}
	}
	return nil
}

// Sandbox is the name of the simulated cloud. It is not a Driver: the provider configures it through
// its own `sandbox` block, and uses it when no cloud block is present. Its name is a known cloud all
// the same.
const Sandbox = sandbox.CloudName

// Names returns every known cloud name, the registry's and the sandbox's, sorted.
func Names() []string {
	names := []string{Sandbox}
	for _, d := range registry {
		names = append(names, d.Name)
	}
	sort.Strings(names)
	return names
}

// NamesMarkdown lists Names as markdown code spans: "`atlas`, `mithril`, ...".
func NamesMarkdown() string {
	names := Names()
	for i, n := range names {
		names[i] = "`" + n + "`"
	}
	return strings.Join(names, ", ")
}
