#!/usr/bin/env bash
# Fails when the committed docs/ differ from what tfplugindocs generates from the schema, examples and
# templates: run `make generate` and commit docs/ after changing any of them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tf=${TERRAFORM:-$(command -v terraform || echo /usr/local/bin/terraform)}
go=${GO:-go}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The schema, as tfplugindocs would read it (its provider built into a plugin directory under
# hashicorp/hydra, then terraform init and providers schema -json), but built with -trimpath: its
# packages then come from the build cache that test-go and vet fill, wherever the checkout is
# (tfplugindocs' own `go build` in a copy of the tree compiled the whole module again each time).
# Built by `go run`, which keeps the executable it links in the build cache (keyed by its inputs, as
# compiled packages are) and hands it to -exec, here cp: the same source is linked once, not on every
# check (2.0 CPU-s), and without DWARF and symbol table (go run's default: 1.3 CPU-s instead of 2.0
# when it is linked), which the schema does not need.
plugin="$tmp/tf/plugins/registry.terraform.io/hashicorp/hydra/0.0.1/$("$go" env GOOS)_$("$go" env GOARCH)"
mkdir -p "$plugin"
(cd "$root" && "$go" run -trimpath -exec cp . "$plugin/terraform-provider-hydra")
printf 'provider "hydra" {\n}\n' >"$tmp/tf/provider.tf"
: >"$tmp/tf/cli.tfrc" # no CLI configuration of the caller's (dev_overrides, mirrors) applies
(cd "$tmp/tf" && export CHECKPOINT_DISABLE=1 TF_CLI_CONFIG_FILE="$tmp/tf/cli.tfrc" &&
  "$tf" init -no-color -input=false -get=false -plugin-dir=./plugins >/dev/null && "$tf" providers schema -json >"$tmp/schema.json")
# Generate into a copy of what tfplugindocs reads and writes, so the check never touches the working tree.
mkdir -p "$tmp/repo"
cp -R "$root/templates" "$root/examples" "$root/docs" "$tmp/repo/"
cd "$root/tools"
"$go" tool tfplugindocs generate --provider-dir "$tmp/repo" --provider-name hydra --providers-schema "$tmp/schema.json" >/dev/null
if ! diff -ru "$root/docs" "$tmp/repo/docs"; then
  echo "docs/ is stale: run 'make generate' and commit docs/" >&2
  exit 1
fi
echo "docs/ is up to date"
