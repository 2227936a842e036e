#!/usr/bin/env bash
# Captures what `terraform plan` really prints for the quickstart, so the docs show hydra's output as
# it is today and never a hand-written copy that went stale:
#
#   examples/quickstart/plan-output.txt  the planned hydra_gpu_instance of examples/quickstart/main.tf
#   examples/quickstart/plan-error.txt   the error of the same plan with a max_price_per_hour that no
#                                        offer can meet
#
# The templates include them with {{ codefile "text" "examples/quickstart/plan-output.txt" }}; run this
# script, then `make generate`, whenever the schema, the plan logic, the sandbox's default catalog or
# the quickstart changes. It builds the provider into ./bin and plans on the sandbox cloud (a fresh
# sandbox directory, so the default catalog's prices) through a dev_overrides CLI configuration, as
# tools/quickstart.sh does: no registry, no credentials, nothing is created.
#
# Needs Go, the Terraform CLI (TERRAFORM=/path overrides) and ansible-playbook (the quickstart
# provisions, and hydra checks for Ansible when it is configured; `make deps` installs it).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tf=${TERRAFORM:-$(command -v terraform || echo /usr/local/bin/terraform)}
out_plan="$root/examples/quickstart/plan-output.txt"
out_error="$root/examples/quickstart/plan-error.txt"
# The price ceiling of the failing plan: below every sandbox offer of the quickstart's GPU.
too_low=1.5

if [ ! -x "$tf" ]; then
  echo "capture-plan: the Terraform CLI is missing; install Terraform 1.11 or later or set TERRAFORM=/path/to/terraform" >&2
  exit 1
fi
if ! command -v ansible-playbook >/dev/null; then
  echo "capture-plan: ansible-playbook is missing (the quickstart provisions its machine); run 'make deps'" >&2
  exit 1
fi

cd "$root"
go build -o bin/terraform-provider-hydra .

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/dev.tfrc" <<TFRC
provider_installation {
  dev_overrides {
    "hydragpu/hydra" = "$root/bin"
  }
  direct {}
}
TFRC
export TF_CLI_CONFIG_FILE="$work/dev.tfrc" CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1
unset TF_LOG TF_LOG_PROVIDER TF_LOG_PATH TF_DATA_DIR

# strip_overrides drops Terraform's "Provider development overrides are in effect" warning (it names
# this machine's paths and says nothing about hydra): from its title to the line ending in
# "releases.", at most 12 lines.
strip_overrides() {
  awk '
    /^Warning: Provider development overrides are in effect/ { skip = 1; n = 0; next }
    skip { n++; if ($0 ~ /releases\.$/ || n >= 12) { skip = 0 } ; next }
    { print }
  '
}

# plan <dir>: runs `terraform plan -no-color` in dir; stdout and stderr go to dir/stdout and
# dir/stderr, without the dev_overrides warning; returns terraform's exit code.
plan() {
  local rc=0
  (cd "$1" && "$tf" plan -no-color -input=false >raw.stdout 2>raw.stderr) || rc=$?
  strip_overrides <"$1/raw.stdout" >"$1/stdout"
  strip_overrides <"$1/raw.stderr" >"$1/stderr"
  return $rc
}

# 1. The quickstart as it is: the planned machine.
mkdir -p "$work/ok"
cp examples/quickstart/main.tf "$work/ok/"
if ! plan "$work/ok"; then
  echo "capture-plan: the quickstart's plan failed:" >&2
  cat "$work/ok/stdout" "$work/ok/stderr" >&2
  exit 1
fi
# The resource block, from its "# ... will be created" line to its closing brace, less the two spaces
# Terraform indents it by (codefile trims the file, which would misalign its first line), and the
# summary.
awk '
  /^  # hydra_gpu_instance\.[a-z0-9_-]+ will be created$/ { p = 1 }
  p { print substr($0, 3) }
  p && /^    }$/ { exit }
' "$work/ok/stdout" >"$work/plan-output.txt"
summary=$(grep -m1 '^Plan: ' "$work/ok/stdout" || true)
if [ ! -s "$work/plan-output.txt" ] || ! tail -1 "$work/plan-output.txt" | grep -q '^  }$' || [ -z "$summary" ]; then
  echo "capture-plan: no hydra_gpu_instance block found in the plan:" >&2
  cat "$work/ok/stdout" >&2
  exit 1
fi
printf '\n%s\n' "$summary" >>"$work/plan-output.txt"

# 2. The same request with a price ceiling nothing meets: the plan fails, saying why.
mkdir -p "$work/fail"
sed -E "s/^([[:space:]]*max_price_per_hour[[:space:]]*=[[:space:]]*)[0-9.]+/\\1$too_low/" examples/quickstart/main.tf >"$work/fail/main.tf"
if cmp -s examples/quickstart/main.tf "$work/fail/main.tf"; then
  echo "capture-plan: examples/quickstart/main.tf sets no max_price_per_hour to lower; update this script" >&2
  exit 1
fi
if plan "$work/fail"; then
  echo "capture-plan: the plan with max_price_per_hour = $too_low succeeded; lower too_low in this script" >&2
  exit 1
fi
# Every error block, from its "Error: " title to the end, without trailing blank lines.
awk '/^Error: /{ p = 1 } p' "$work/fail/stderr" | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' >"$work/plan-error.txt"
if ! grep -q '^Error: ' "$work/plan-error.txt"; then
  echo "capture-plan: the failing plan printed no error:" >&2
  cat "$work/fail/stdout" "$work/fail/stderr" >&2
  exit 1
fi
if grep -q 'development overrides' "$work/plan-output.txt" "$work/plan-error.txt"; then
  echo "capture-plan: the dev_overrides warning was not stripped" >&2
  exit 1
fi

for f in plan-output.txt plan-error.txt; do
  dest="$root/examples/quickstart/$f"
  if cmp -s "$work/$f" "$dest"; then
    echo "unchanged: examples/quickstart/$f"
  else
    cp "$work/$f" "$dest"
    echo "wrote: examples/quickstart/$f"
  fi
done
echo "Now run 'make generate' so docs/ shows them."
