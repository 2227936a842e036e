#!/usr/bin/env bash
# Runs the quickstart on the sandbox cloud the way a user installs any provider: `make install` into a
# local filesystem mirror, a CLI configuration that installs hydragpu/hydra from that mirror, the lock
# file, terraform init; then plan, apply (blocks until the machine is ready), show, destroy. No registry
# and no credentials are needed. Fails when Terraform warns about anything but the sandbox itself. Run
# through `make quickstart`. TERRAFORM=/path/to/tofu runs it with OpenTofu, whose CLI configuration then
# includes hydragpu/hydra from the mirror under OpenTofu's registry host; QUICKSTART_DIR moves the
# working directory (default .quickstart).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tf=${TERRAFORM:-$(command -v terraform || echo /usr/local/bin/terraform)}
work=${QUICKSTART_DIR:-$root/.quickstart}
# The CLI ("Terraform" or "OpenTofu") and the registry host it gives `source = "hydragpu/hydra"`.
cli=$("$tf" version 2>/dev/null | awk 'NR == 1 { print $1 }')
case $cli in
Terraform) host=registry.terraform.io ;;
OpenTofu) host=registry.opentofu.org ;;
*)
  echo "$tf is neither Terraform nor OpenTofu ($tf version says: $cli)" >&2
  exit 1
  ;;
esac
cmd=$(basename "$tf")
mirror="$work/mirror"
rm -rf "$work"
mkdir -p "$work"
cp "$root/examples/quickstart/main.tf" "$work/"

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

version=$(make -s --no-print-directory -C "$root" version)
platform=$(go env GOOS)_$(go env GOARCH)
# Terraform selects a prerelease (0.1.0-dev) only when required_providers names it exactly.
if ! grep -Eq "^[[:space:]]*version[[:space:]]*=[[:space:]]*\"$version\"" "$work/main.tf"; then
  echo "examples/quickstart/main.tf must require hydragpu/hydra version \"$version\" (make version), the one make install builds" >&2
  exit 1
fi

step "make install (hydra $version for $platform into the filesystem mirror $mirror)"
make -s --no-print-directory -C "$root" install MIRROR="$mirror" VERSION="$version"

cat >"$work/terraform.tfrc" <<TFRC
provider_installation {
  filesystem_mirror {
    path    = "$mirror"
    include = ["$host/hydragpu/hydra"]
  }
  direct {
    exclude = ["$host/hydragpu/hydra"]
  }
}
TFRC
export TF_CLI_CONFIG_FILE="$work/terraform.tfrc" CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1
# hydra's progress (offers asked, machine created, provisioning tasks) goes to this log.
export TF_LOG_PROVIDER=INFO TF_LOG_PATH="$work/provider.log"
cd "$work"

cleanup() {
  status=$?
  if [ $status -ne 0 ] && [ -f terraform.tfstate ]; then
    step "something failed; destroying what was created"
    "$tf" destroy -auto-approve -no-color || true
  fi
}
trap cleanup EXIT

# no_warnings fails when a command's output ($1) holds a warning other than the sandbox's own
# ("Simulated cloud: nothing real will be rented", which every command on the sandbox says on purpose).
no_warnings() {
  local other
  other=$(grep -E '^(│ )?Warning: ' "$1" | grep -v 'Simulated cloud: nothing real will be rented' || true)
  if [ -n "$other" ]; then
    echo "Terraform warned:" >&2
    echo "$other" >&2
    exit 1
  fi
}

step "$cmd providers lock and $cmd init (from the mirror, like any provider)"
# The lock file first: computed from the mirror for this platform, so that init has nothing to warn about
# (Terraform warns when init itself has to compute the checksums of a mirror's package).
"$tf" providers lock -no-color -fs-mirror="$mirror" -platform="$platform" >lock.out 2>&1 || { cat lock.out; exit 1; }
"$tf" init -no-color -input=false >init.out 2>&1 || { cat init.out; exit 1; }
grep -E 'Installed|Reusing|lock file' init.out || true
no_warnings lock.out
no_warnings init.out
grep -F "version     = \"$version\"" .terraform.lock.hcl

step "$cmd plan (hydra chooses the cheapest offer)"
"$tf" plan -no-color -out=quickstart.tfplan >plan.out 2>&1 || { cat plan.out; exit 1; }
sed -n '/Terraform will perform/,$p' plan.out
no_warnings plan.out

step "$cmd apply (creates the machine and waits until it is ready)"
SECONDS=0
"$tf" apply -no-color -auto-approve quickstart.tfplan >apply.out 2>&1 || { cat apply.out; exit 1; }
grep -v -e '^$' apply.out
no_warnings apply.out
echo "apply took ${SECONDS}s"

step "what hydra did (provider log, INFO)"
# The plugin's log lines are named after its executable: provider.terraform-provider-hydra_v<version>.
grep -E 'provider\.terraform-provider-hydra[^ ]*: ' provider.log \
  | grep -v -e 'mTLS' -e 'timeout configuration not found' -e 'task skipped' -e 'task started' \
  | sed -E -e 's/^[0-9T:.-]+Z?\s*//' -e 's/provider\.terraform-provider-hydra[^ ]*: //' -e 's/ (tf_[a-z_]+|@[a-z]+)=[^ ]+//g' -e 's/: *$//' \
  | sed -E 's/ timestamp=[^ ]+//' | cut -c1-200 | head -80 || true
if ! grep -q "hydra provider configured.*version=$version" provider.log; then
  echo "the provider log does not name version $version" >&2
  exit 1
fi

step "$cmd state show"
# Shown once; the status is read from the same output.
show=$("$tf" state show -no-color hydra_gpu_instance.trainer)
printf '%s\n' "$show"

ready=$(printf '%s\n' "$show" | awk -F'"' '/^ *status *=/{print $2}')
if [ "$ready" != "ready" ]; then
  echo "the machine is not ready (status: $ready)" >&2
  exit 1
fi

step "$cmd destroy"
"$tf" destroy -no-color -auto-approve >destroy.out 2>&1 || { cat destroy.out; exit 1; }
grep -E 'Destroy|destroyed|Destruction' destroy.out
no_warnings destroy.out
step "quickstart finished ($cli): hydra $version installed from a mirror; a ready machine was created, shown and destroyed"
