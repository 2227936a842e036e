// Package clouds is the registry of cloud drivers: the one list of the clouds hydra rents from.
//
// A Driver declares everything the rest of hydra needs to know about one cloud: its name (as in
// pools.yml, api_names and the `clouds` argument), its provider block and that block's settings, how to
// build its backend from those settings, and how to start its local emulator. The provider schema and
// Configure (internal/provider), the inventory's known clouds and the docs are derived from this list.
//
// Adding a cloud: its backend and emulator packages, a file here declaring its Driver (see verda.go),
// one line in registry below, and its names in inventory/supported_gpus.yml (api_names) and
// inventory/pools.yml (its pools). The tests here then check its settings, credentials and emulator;
// the backend contract's suite (internal/backends/conformance) and the differential test of offer
// ranking (internal/differential) fail until they have its harness and its catalog adapter.
//
// This package describes settings with plain Go values; it knows nothing about Terraform. It must not
// import internal/provider.
package clouds

import (
	"sort"
	"strings"
)

// registry is the one list of real clouds, in alphabetical order of their names; simulated are the
// simulated ones (the sandbox).
var simulated = []*Driver{Sandbox}

var registry = []*Driver{Atlas, Lambda, Mithril, PrimeIntellect, UpCloud, Verda}

// All returns every real cloud's driver, in the registry's order (the simulated sandbox is not among
// them: Registered has it too). The slice is a copy; the drivers are shared and must not be changed.
func All() []*Driver {
	return append([]*Driver(nil), registry...)
}

// Registered returns every driver, real and simulated, in the order of their names.
func Registered() []*Driver {
	out := append(All(), simulated...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ByName returns the driver of a cloud name ("primeintellect", "sandbox"), or nil.
func ByName(name string) *Driver {
	for _, d := range Registered() {
		if d.Name == name {
			return d
		}
	}
	return nil
}

// ByBlock returns the driver of a real cloud's provider block name ("primeintellect"), or nil.
func ByBlock(block string) *Driver {
	for _, d := range registry {
		if d.Block == block {
			return d
		}
	}
	return nil
}

// Names returns every known cloud name, real and simulated, sorted.
func Names() []string {
	var names []string
	for _, d := range Registered() {
		names = append(names, d.Name)
	}
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

// BillingMarkdown says how the registered clouds bill, from what each states (Driver.Facts): the
// clouds with a documented billing unit in their own words, then the others, which accrue to the second.
func BillingMarkdown() string {
	var stated, silent []string
	for _, d := range Registered() {
		switch {
		case d.Facts.BillingUnit > 0:
			stated = append(stated, d.Facts.Billing)
		case d.Simulated:
			silent = append(silent, "the "+strings.ToLower(d.Title))
		default:
			silent = append(silent, d.Title)
		}
	}
	note := ""
	if len(stated) > 0 {
		note = strings.Join(stated, "; ") + "; "
	}
	return note + joinAnd(silent) + " document none hydra found, so their machines accrue to the second."
}
