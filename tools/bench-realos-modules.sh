#!/usr/bin/env bash
# Time to ready on the real OS (internal/provision/onrealos: a booted Debian 12 system container, root
# only) of two revisions of the playbooks, run alternately: the files and units of the roles through
# files/converge.py (BASE, the last revision with it: 30594c5) against Ansible's own modules (NEW,
# default HEAD). Each round runs TestRealOS_BareVM and TestRealOS_Execlet side by side, twice each (at HEAD:
# TestRealOS_BareVMAndExeclet, bare-vm.yml then execlet.yml on one machine, twice each)
# (run 1 to ready, run 2 on the ready machine), and prints the seconds of each run, then the seconds
# each task took on the machine in run 2 summed by task name (from the events, HYDRA_TEST_ANSIBLE_LOG).
#
#   tools/bench-realos-modules.sh [ROUNDS] [BASE] [NEW]      (BENCH_OS: debian-12)
#
# The numbers move with what else the machine runs: compare rounds run back to back.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}
base=${2:-30594c5}
new=${3:-HEAD}
# Where the tests run on several operating systems (subtests), only this one: the base revision
# knows only Debian 12.
os=${BENCH_OS:-debian-12}
work=$(mktemp -d /tmp/hydra-bench-modules.XXXXXX)
trap 'rm -rf "$work"' EXIT
for rev in "$base" "$new"; do
  mkdir -p "$work/$rev"
  git archive "$rev" | tar -x -C "$work/$rev"
done
# seconds per task name in run 2 of each test, from hclog's event lines on stderr
per_task() {
  python3 - "$1" <<'EOF'
import re, sys, collections, datetime
runs = collections.defaultdict(list)   # test -> list of runs (each: list of (task, seconds))
start = {}
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r'(\d{4}-\d\d-\d\dT[\d:.]+)\S*\s+\[\w+\]\s+(TestRealOS_[\w/.-]+): (task started|task ok|task skipped|running playbook)(.*)', line)
    if not m:
        continue
    t = datetime.datetime.fromisoformat(m.group(1)).timestamp()
    test, ev, rest = m.group(2), m.group(3), m.group(4)
    task = re.search(r'task="?([^"]*)"?(?: |$)', rest)
    task = task.group(1) if task else ""
    if ev == "running playbook" or not runs[test]:
        runs[test].append([])
    if ev == "task started":
        start[test] = (task, t)
    elif ev in ("task ok", "task skipped") and test in start:
        runs[test][-1].append((start[test][0], t - start[test][1]))
for test, rs in sorted(runs.items()):
    rs = [r for r in rs if r]
    if len(rs) < 2:
        continue
    total = collections.Counter()
    for task, s in rs[-1]:
        total[task] += s
    print("  %s run 2, slowest tasks:" % test)
    for task, s in total.most_common(12):
        print("    %6.2f s  %s" % (s, task))
EOF
}
for i in $(seq 1 "$rounds"); do
  for rev in "$new" "$base"; do
    log="$work/$rev-$i.log"
    (cd "$work/$rev" && HYDRA_REALOS_REQUIRED=1 HYDRA_TEST_ANSIBLE_LOG=1 go test -trimpath -count=1 -timeout 40m -v \
      -run "TestRealOS_(BareVM|Execlet|BareVMAndExeclet)\$/^$os\$" ./internal/provision/onrealos/ >"$log" 2>&1) || echo "round $i $rev: FAILED (log $log)"
    echo "round $i $rev:"
    grep -Eo 'run [12] of [a-z-]+\.yml on the real OS: [0-9ms]+, [0-9]+ task\(s\) changed' "$log" | sed 's/^/  /'
    per_task "$log"
  done
done
