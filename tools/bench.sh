#!/usr/bin/env bash
# Prints numbers; asserts nothing (these machines are noisy). Run through `make bench`.
#  1. `terraform plan` wall time and peak memory: 100 hydra_gpu_instance on the sandbox beside
#     100 terraform_data in the same run, and 100 terraform_data alone (target: hydra at most 4x).
#  2. Offer requests per cloud per plan (target: 1, whatever the number of instances).
#  3. Plan time with the sandbox answering slowly (target: bounded by offer_timeout, cloud named).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tf=${TERRAFORM:-$(command -v terraform || echo /usr/local/bin/terraform)}
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
n=${BENCH_N:-100}
runs=${BENCH_RUNS:-3}

mk() { # dir, with_hydra, offer_timeout
  mkdir -p "$1"
  cat > "$1/main.tf" <<TF
terraform {
  required_providers {
    hydra = { source = "hydragpu/hydra" }
  }
}
resource "terraform_data" "peer" {
  count = $n
  input = "peer-\${count.index}"
}
TF
  if [ "$2" = yes ]; then
    cat >> "$1/main.tf" <<TF
provider "hydra" {
  offer_timeout   = "$3"
  plan_quote_dir  = "$1/quotes"
  sandbox {
    dir = "$1/sandbox"
  }
}
resource "hydra_gpu_instance" "fleet" {
  count    = $n
  name     = "bench-\${count.index}"
  gpu_type = element(["h100", "l40s", "l4", "a100-80gb"], count.index)
}
TF
  fi
}

measure() { # dir -> prints "seconds maxrss_kb" of the best of $runs plans
  local best_s="" best_kb=""
  for _ in $(seq "$runs"); do
    rm -rf "$1/quotes"
    ( cd "$1" && /usr/bin/time -f '%e %M' -o "$1/time.txt" "$tf" plan -no-color -refresh=false -lock=false >"$1/plan.log" 2>&1 ) || { tail -20 "$1/plan.log"; return 1; }
    read -r s kb < "$1/time.txt"
    if [ -z "$best_s" ] || awk "BEGIN{exit !($s < $best_s)}"; then best_s=$s; fi
    if [ -z "$best_kb" ] || [ "$kb" -gt "$best_kb" ]; then best_kb=$kb; fi
  done
  echo "$best_s $best_kb"
}

mk "$work/peers" no
mk "$work/hydra" yes 20s
# The provider's own peak memory: the plugin is a separate process; sample it while planning.
read -r peer_s peer_kb < <(measure "$work/peers")
read -r hydra_s hydra_kb < <(measure "$work/hydra")
requests=$(python3 -c "import json;print(json.load(open('$work/hydra/sandbox/stats.json'))['offer_requests'])")
echo "== plan, $n terraform_data alone:                           ${peer_s}s wall, terraform peak RSS ${peer_kb} KiB"
echo "== plan, $n hydra_gpu_instance + $n terraform_data:         ${hydra_s}s wall, terraform peak RSS ${hydra_kb} KiB"
awk -v a="$hydra_s" -v b="$peer_s" -v n="$n" 'BEGIN{printf "   ratio: %.2fx the peers-only plan (target: at most 4x); %.1f ms per hydra_gpu_instance (plugin start-up and per-resource RPC alone cost about 9 ms)\n", a/b, (a-b)*1000/n}'
echo "== offer requests to the sandbox over $runs plans of $n instances: $requests (target: $runs, i.e. 1 per cloud per plan)"

# Peak memory of the provider process itself during one plan.
rm -rf "$work/hydra/quotes"
( cd "$work/hydra" && "$tf" plan -no-color -refresh=false -lock=false >/dev/null 2>&1 & echo $! > "$work/tfpid"; wait ) &
peak=0
for _ in $(seq 600); do
  pid=$(pgrep -f "$root/bin/terraform-provider-hydra" | head -1 || true)
  if [ -n "$pid" ]; then
    kb=$(awk '/VmHWM/{print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
    [ -n "$kb" ] && [ "$kb" -gt "$peak" ] && peak=$kb
  fi
  if ! kill -0 "$(cat "$work/tfpid" 2>/dev/null || echo 0)" 2>/dev/null && [ -z "$pid" ]; then break; fi
  sleep 0.05
done
wait
echo "== hydra provider process peak RSS during one plan: ${peak} KiB"

# One slow cloud.
mk "$work/slow" yes 2s
mkdir -p "$work/slow/sandbox"
echo '{"offers_delay": "60s"}' > "$work/slow/sandbox/faults.json"
SECONDS=0
( cd "$work/slow" && "$tf" plan -no-color -refresh=false -lock=false >"$work/slow/plan.log" 2>&1 ) || true
echo "== plan with the sandbox answering after 60s, offer_timeout 2s: ${SECONDS}s wall (target: about 2s plus the plan itself)"
grep -m1 -o 'sandbox: timed out after [0-9a-z]* waiting for offers' "$work/slow/plan.log" | sed 's/^/   named: /' || echo "   (the timeout was not named; plan log: $work/slow/plan.log)"
