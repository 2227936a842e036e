#!/usr/bin/env bash
# Fails when the committed docs/ differ from what tfplugindocs generates from the schema, examples and
# templates: run `make generate` and commit docs/ after changing any of them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tf=${TERRAFORM:-$(command -v terraform || echo /usr/local/bin/terraform)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Generate into a copy so the check never touches the working tree.
mkdir -p "$tmp/repo"
(cd "$root" && tar --exclude=./.git --exclude=./bin --exclude=./dist --exclude=./.quickstart -cf - .) | (cd "$tmp/repo" && tar -xf -)
cd "$tmp/repo/tools"
PATH="$(dirname "$tf"):$PATH" CHECKPOINT_DISABLE=1 go tool tfplugindocs generate --provider-dir .. --provider-name hydra >/dev/null
if ! diff -ru "$root/docs" "$tmp/repo/docs"; then
  echo "docs/ is stale: run 'make generate' and commit docs/" >&2
  exit 1
fi
echo "docs/ is up to date"
