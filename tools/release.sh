#!/usr/bin/env bash
# hydra's release artifacts, built by goreleaser (.goreleaser.yml; pinned in tools/go.mod and run with
# `go tool`), then checked by tools/releasecheck: every zip's name and content, SHA256SUMS against the
# files, the manifest's protocol version 6.0.
#
#   tools/release.sh snapshot  every platform into dist/, offline and unsigned (make release-snapshot)
#   tools/release.sh check     `goreleaser check`, then a snapshot of three platforms only
#                              (RELEASE_CHECK_TARGETS) in a temporary directory, its SHA256SUMS signed
#                              with a throwaway key when gpg is installed (make release-check)
#   tools/release.sh release   a release from the v<version> tag at HEAD, published to GitHub
#                              (GITHUB_TOKEN); signed when GPG_FINGERPRINT names a key, else unsigned
#
# After snapshot and check, this machine's zip (when built) is installed from a packed filesystem mirror
# under both registry hosts, as a user or the OpenTofu registry's mirror would serve it:
# <mirror>/registry.terraform.io/hydragpu/hydra/<zip> with `terraform init`, and
# <mirror>/registry.opentofu.org/hydragpu/hydra/<zip> with `tofu init` when TOFU names OpenTofu's CLI
# (make release-check and make release-snapshot build it: tools/opentofu.sh).
#
# Snapshots are built from a copy of the working tree without .git: goreleaser then neither writes into
# the tree nor runs git on it, and builds one consistent state of files that others may be editing.
# Their version is VERSION (default: the VERSION file's with -dev), as for make build and make install.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-snapshot}
go=${GO:-go}
version=${VERSION:-$(tr -d '[:space:]' <"$root/VERSION")-dev}
# The platforms the Terraform Registry's users need most; .goreleaser.yml builds more.
required="linux_amd64 linux_arm64 darwin_amd64 darwin_arm64 windows_amd64 windows_arm64 freebsd_amd64 freebsd_arm64"
export CHECKPOINT_DISABLE=1

goreleaser=$(cd "$root/tools" && "$go" tool -n goreleaser)
releasecheck() { (cd "$root/tools" && "$go" run ./releasecheck "$@"); }

# copy_tree puts the files of the working tree (no .git, builds, state) into $1.
copy_tree() {
  mkdir -p "$1"
  (cd "$root" && tar --exclude=./.git --exclude=./bin --exclude=./dist --exclude=./.quickstart \
    --exclude=./terraform-provider-hydra --exclude=.terraform --exclude=.hydra-sandbox -cf - .) | (cd "$1" && tar -xf -)
}

# mirror_init installs the zip of this machine's platform in dist $1 (version $2) from a packed filesystem
# mirror with each CLI: Terraform under registry.terraform.io, OpenTofu (TOFU) under registry.opentofu.org.
mirror_init() {
  local dist=$1 version=$2 platform zip tmp cli host out
  platform=$("$go" env GOOS)_$("$go" env GOARCH)
  zip="terraform-provider-hydra_${version}_${platform}.zip"
  if [ ! -f "$dist/$zip" ]; then
    echo "release.sh: no $zip in this build: the mirror install is not checked" >&2
    return 0
  fi
  tmp=$(mktemp -d)
  for cli in "${TERRAFORM:-$(command -v terraform || echo /usr/local/bin/terraform)}" ${TOFU:+"$TOFU"}; do
    case $("$cli" version 2>/dev/null | awk 'NR == 1 { print $1 }') in
    Terraform) host=registry.terraform.io ;;
    OpenTofu) host=registry.opentofu.org ;;
    *) echo "release.sh: $cli is neither Terraform nor OpenTofu" >&2; rm -rf "$tmp"; return 1 ;;
    esac
    rm -rf "$tmp/work" && mkdir -p "$tmp/mirror/$host/hydragpu/hydra" "$tmp/work"
    cp "$dist/$zip" "$tmp/mirror/$host/hydragpu/hydra/"
    printf 'provider_installation {\n  filesystem_mirror {\n    path    = "%s"\n    include = ["%s/hydragpu/hydra"]\n  }\n}\n' \
      "$tmp/mirror" "$host" >"$tmp/cli.tfrc"
    printf 'terraform {\n  required_providers {\n    hydra = { source = "hydragpu/hydra", version = "%s" }\n  }\n}\n' \
      "$version" >"$tmp/work/main.tf"
    if ! out=$(cd "$tmp/work" && TF_CLI_CONFIG_FILE="$tmp/cli.tfrc" "$cli" init -no-color -input=false 2>&1) ||
      ! grep -q "^provider \"$host/hydragpu/hydra\"" "$tmp/work/.terraform.lock.hcl"; then
      echo "$out" >&2
      echo "release.sh: $(basename "$cli") init did not install $zip from a mirror under $host" >&2
      rm -rf "$tmp"
      return 1
    fi
    echo "release.sh: $(basename "$cli") init installs $zip from a filesystem mirror under $host"
  done
  rm -rf "$tmp"
}

# manifest copies the registry manifest into dist under the name a release uploads it with.
manifest() { cp "$root/terraform-registry-manifest.json" "$1/terraform-provider-hydra_$2_manifest.json"; }

# verify_signature checks the detached signature of dist $1's SHA256SUMS for version $2.
verify_signature() {
  local sums="$1/terraform-provider-hydra_$2_SHA256SUMS" out
  if ! out=$(gpg --batch --verify "$sums.sig" "$sums" 2>&1); then
    echo "$out" >&2
    echo "release.sh: the signature of $(basename "$sums") does not verify" >&2
    exit 1
  fi
  echo "release.sh: $(basename "$sums").sig verifies"
}

case $mode in
snapshot)
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  copy_tree "$tmp/src"
  (cd "$tmp/src" && HYDRA_VERSION=$version "$goreleaser" release --snapshot --clean --skip=publish,sign)
  rm -rf "$root/dist"
  mv "$tmp/src/dist" "$root/dist"
  manifest "$root/dist" "$version"
  releasecheck -dist "$root/dist" -version "$version" -targets "$required"
  mirror_init "$root/dist" "$version"
  ;;
check)
  targets=${RELEASE_CHECK_TARGETS:-linux_amd64 darwin_arm64 windows_amd64}
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  copy_tree "$tmp/src"
  cd "$tmp/src"
  "$goreleaser" check
  # The same configuration with its platforms (goos, goarch, ignore) replaced by $targets.
  awk -v targets="$(echo $targets | sed 's/ /, /g')" '
    skip && /^      / { next }
    { skip = 0 }
    /^    goos:/ { print "    targets: [" targets "]"; next }
    /^    goarch:/ { next }
    /^    ignore:/ { skip = 1; next }
    { print }' .goreleaser.yml >"$tmp/check.yml"
  if ! grep -q '^    targets: \[' "$tmp/check.yml" || grep -q -e '^    goos:' -e '^    ignore:' "$tmp/check.yml"; then
    echo "release.sh: could not narrow the platforms of .goreleaser.yml (goos, goarch, ignore at four spaces)" >&2
    exit 1
  fi
  # Signing, too, when gpg is here: with a throwaway key, so that a signature that does not verify
  # (goreleaser 2.15 once listed it in the SHA256SUMS it signs) fails the check.
  skip=publish,sign
  signed=()
  if command -v gpg >/dev/null; then
    export GNUPGHOME="$tmp/gnupg"
    mkdir -m 700 "$GNUPGHOME"
    trap 'gpgconf --kill gpg-agent 2>/dev/null || true; rm -rf "$tmp"' EXIT
    gpg --batch --quiet --passphrase '' --quick-gen-key "hydra release check <release-check@hydra.invalid>" ed25519 sign 1d
    GPG_FINGERPRINT=$(gpg --batch --list-secret-keys --with-colons 2>/dev/null | awk -F: '/^fpr/ { print $10; exit }')
    export GPG_FINGERPRINT
    skip=publish
    signed=(-signed)
  else
    echo "release.sh: gpg is not installed: the check does not sign" >&2
  fi
  HYDRA_VERSION=$version "$goreleaser" release --config "$tmp/check.yml" --snapshot --clean --skip="$skip"
  manifest dist "$version"
  releasecheck -dist "$tmp/src/dist" -version "$version" -targets "$targets" "${signed[@]}"
  if [ ${#signed[@]} -gt 0 ]; then
    verify_signature "$tmp/src/dist" "$version"
  fi
  mirror_init "$tmp/src/dist" "$version"
  ;;
release)
  cd "$root"
  skip=()
  signed=()
  if [ -n "${GPG_FINGERPRINT:-}" ]; then
    signed=(-signed)
  else
    echo "release.sh: GPG_FINGERPRINT is not set: the release is not signed" >&2
    skip=(--skip=sign)
  fi
  "$goreleaser" release --clean "${skip[@]}"
  version=$(sed -n 's/.*"version": *"\([^"]*\)".*/\1/p' dist/metadata.json | head -1)
  manifest dist "$version"
  releasecheck -dist "$root/dist" -version "$version" -targets "$required" "${signed[@]}"
  if [ ${#signed[@]} -gt 0 ]; then
    verify_signature "$root/dist" "$version"
  fi
  ;;
*)
  echo "usage: $0 snapshot|check|release" >&2
  exit 2
  ;;
esac
