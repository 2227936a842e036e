// Package inventoryfiles embeds the repository's inventory files (supported_gpus.yml and pools.yml),
// which the provider uses when the configuration names no inventory directory of its own.
package inventoryfiles

import "embed"

// FS holds supported_gpus.yml and pools.yml as committed in this directory.
//
//go:embed supported_gpus.yml pools.yml
var FS embed.FS
