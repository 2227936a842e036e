#!/usr/bin/env bash
# A CI job that tests the module in this directory against the sandbox three times: with the
# default catalog, with prices of your choosing, and with failures switched on. Needs terraform and
# the hydra provider (from the registry: run `terraform init` first; or a local build through
# dev_overrides) and python3.
set -euo pipefail
cd "$(dirname "$0")"
sandbox=.hydra-sandbox-test   # the dir of the sandbox block in tests/inference.tftest.hcl

# 1. The default catalog: a fresh sandbox directory is filled with it on first use.
rm -rf "$sandbox" .hydra-test-quotes
terraform test

# 2. Prices moved: the sandbox reads catalog.json on every call, so edit it between runs. Here every
#    L40S offer costs $1.60/h, above the module's default cap of $1.50/h: the plan must fail, naming
#    the sandbox's reason.
python3 - "$sandbox/catalog.json" <<'PY'
import json, sys
path = sys.argv[1]
catalog = json.load(open(path))
for offer in catalog:
    if offer["gpu"] == "L40S":
        offer["price_per_hour"] = 1.60
json.dump(catalog, open(path, "w"), indent=2)
PY
log=$(mktemp)
if terraform test -no-color -filter=tests/inference.tftest.hcl >"$log" 2>&1; then
  echo "expected the test to fail: every L40S offer is above the cap" >&2
  exit 1
fi
grep -q 'above max_price_per_hour' "$log"
rm -f "$log"

# 3. Failures: faults.json switches them on, for every process that shares the directory. Counters
#    (boot_failures, server_errors, ...) run down as the faults fire.
rm -rf "$sandbox" .hydra-test-quotes
mkdir -p "$sandbox"
cat > "$sandbox/faults.json" <<'JSON'
{
  "server_errors": 2,
  "latency": "200ms"
}
JSON
terraform test   # hydra retries the failed calls: the test still passes
