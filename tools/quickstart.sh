#!/usr/bin/env bash
# Runs the quickstart on the sandbox cloud: terraform plan, apply (blocks until the machine is ready),
# show, destroy. Uses the provider built into ./bin through a dev_overrides CLI configuration, so no
# registry and no credentials are needed. Run through `make quickstart`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tf=${TERRAFORM:-$(command -v terraform || echo /usr/local/bin/terraform)}
work="$root/.quickstart"
rm -rf "$work"
mkdir -p "$work"
cp "$root/examples/quickstart/main.tf" "$work/"
cat > "$work/dev.tfrc" <<TFRC
provider_installation {
  dev_overrides {
    "hydragpu/hydra" = "$root/bin"
  }
  direct {}
}
TFRC
export TF_CLI_CONFIG_FILE="$work/dev.tfrc" CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1
# hydra's progress (offers asked, machine created, provisioning tasks) goes to this log.
export TF_LOG_PROVIDER=INFO TF_LOG_PATH="$work/provider.log"
cd "$work"

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
cleanup() {
  status=$?
  if [ $status -ne 0 ] && [ -f terraform.tfstate ]; then
    step "something failed; destroying what was created"
    "$tf" destroy -auto-approve -no-color || true
  fi
}
trap cleanup EXIT

step "terraform plan (hydra chooses the cheapest offer; no init is needed with dev_overrides)"
"$tf" plan -no-color -out=quickstart.tfplan 2>&1 | sed -n '/Terraform will perform/,$p'

step "terraform apply (creates the machine and waits until it is ready)"
SECONDS=0
"$tf" apply -no-color -auto-approve quickstart.tfplan 2>&1 | grep -v -e '^$' -e 'overrides' -e 'behavior may' -e 'applying changes may' -e 'releases.' -e '^ - hydragpu' -e 'The following provider' -e 'configuration:$'
echo "apply took ${SECONDS}s"

step "what hydra did (provider log, INFO)"
grep -F 'provider.terraform-provider-hydra: ' provider.log \
  | grep -v -e 'mTLS' -e 'timeout configuration not found' -e 'task skipped' -e 'task started' \
  | sed -E -e 's/^[0-9T:.-]+Z?\s*//' -e 's/provider\.terraform-provider-hydra: //' -e 's/ (tf_[a-z_]+|@[a-z]+)=[^ ]+//g' -e 's/: *$//' \
  | sed -E 's/ timestamp=[^ ]+//' | cut -c1-200 | head -80 || true

step "terraform state show"
"$tf" state show -no-color hydra_gpu_instance.trainer

status=$("$tf" output -raw -no-color machine 2>/dev/null || true)
ready=$("$tf" state show -no-color hydra_gpu_instance.trainer | awk -F'"' '/^ *status *=/{print $2}')
if [ "$ready" != "ready" ]; then
  echo "the machine is not ready (status: $ready)" >&2
  exit 1
fi

step "terraform destroy"
"$tf" destroy -no-color -auto-approve 2>&1 | grep -E 'Destroy|destroyed|Destruction'
step "quickstart finished: a ready machine was created, shown and destroyed"
