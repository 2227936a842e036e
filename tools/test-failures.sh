#!/usr/bin/env bash
# Prints, at the end of a failed `make test`, what failed and why, out of the go test log ($1): the
# "--- FAIL" lines with the test's own messages under them, panics and timeouts with their first
# lines, and the FAIL line of each package. The log itself interleaves the packages' output with
# whatever the tests wrote to stderr (with TF_LOG set, the provider's JSON log lines), so a CI page
# that shows only the tail would otherwise not name the failing test.
set -euo pipefail
log=${1:?usage: test-failures.sh GO_TEST_LOG}
echo
echo "== what failed (from $log; the whole output is above)"
awk '
	/^\{"@/ { next }                            # provider log lines (TF_LOG), not the test
	/^[[:space:]]*--- FAIL/ { keep = 1; print; next }
	/^(panic:|fatal error:)/ { keep = 40; print; next }
	/^FAIL[[:space:]]/ { keep = 0; print; next }
	keep == 1 && /^[[:space:]]+[^[:space:]]/ { print; next }
	keep == 1 { keep = 0; next }
	keep > 1 { print; keep--; next }
' "$log"
