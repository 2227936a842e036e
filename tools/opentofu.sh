#!/usr/bin/env bash
# Prints the path of an OpenTofu CLI of the version hydra is tested with, building it first when it is
# not cached: from OpenTofu's Go module (github.com/opentofu/opentofu, fetched with `go mod download`
# through the module proxy, so no other download site is needed), once per version, into
#   ${XDG_CACHE_HOME:-~/.cache}/hydra/opentofu/<version>/tofu
# `go install ...@version` cannot build it (its go.mod has a replace directive), so the module's own
# directory is built as the main module. A lock (flock, where there is one) makes concurrent callers
# build it once; the binary appears atomically and only after `tofu version` names the version.
#
#   tools/opentofu.sh            the tested version (OPENTOFU_VERSION overrides; make opentofu)
#   tools/opentofu.sh 1.10.6     another version
#
# Building it takes minutes on two cores the first time; later calls print the cached path at once.
set -euo pipefail
# The tested version: the README and docs/index.md name it (TestOpenTofuVersionDocumented checks).
tested=1.10.10
version=${1:-${OPENTOFU_VERSION:-$tested}}
version=${version#v}
go=${GO:-go}
dir="${XDG_CACHE_HOME:-$HOME/.cache}/hydra/opentofu/$version"
bin="$dir/tofu"

# ok reports whether $1 is an OpenTofu binary of $version.
ok() { [ -x "$1" ] && "$1" version 2>/dev/null | head -1 | grep -qx "OpenTofu v$version"; }

if ok "$bin"; then
  echo "$bin"
  exit 0
fi
mkdir -p "$dir"
if command -v flock >/dev/null; then
  exec 9>"$dir.lock"
  flock 9
  if ok "$bin"; then
    echo "$bin"
    exit 0
  fi
fi

start=$(date +%s)
echo "opentofu.sh: building OpenTofu v$version from its Go module into $dir (minutes, once)" >&2
# The module's directory in the module cache, as the main module; GOWORK and GOFLAGS from a caller's
# workspace must not change what is built.
src=$(GOWORK=off GOFLAGS= "$go" mod download -json "github.com/opentofu/opentofu@v$version" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
if [ -z "$src" ] || [ ! -f "$src/cmd/tofu/main.go" ]; then
  echo "opentofu.sh: go mod download github.com/opentofu/opentofu@v$version gave no source directory" >&2
  exit 1
fi
tmp=$(mktemp "$dir/tofu.XXXXXX")
trap 'rm -f "$tmp"' EXIT
trap 'exit 130' INT TERM
# As OpenTofu's own release builds (its .goreleaser.yaml): no cgo, and version.dev=no, without which the
# binary calls itself v<version>-dev.
(cd "$src" && GOWORK=off GOFLAGS=-buildvcs=false CGO_ENABLED=0 "$go" build -mod=readonly -trimpath \
  -ldflags "-s -w -X 'github.com/opentofu/opentofu/version.dev=no'" -o "$tmp" ./cmd/tofu)
if ! ok "$tmp"; then
  echo "opentofu.sh: the built binary does not say OpenTofu v$version:" >&2
  "$tmp" version >&2 || true
  exit 1
fi
mv -f "$tmp" "$bin"
trap - EXIT
echo "opentofu.sh: OpenTofu v$version built in $(($(date +%s) - start))s: $bin" >&2
echo "$bin"
