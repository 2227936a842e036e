#!/usr/bin/env bash
# Prints numbers; asserts nothing (these machines are noisy). Run through `make bench`.
#  1. `terraform plan` wall time and peak memory: 100 hydra_gpu_instance on the sandbox beside
#     100 terraform_data in the same run, and 100 terraform_data alone (target: hydra at most 4x).
#  2. Offer requests per cloud per plan (target: 1, whatever the number of instances).
#  3. Plan time with the sandbox answering slowly (target: bounded by offer_timeout, cloud named).
#  4. The plan's share that is hydra's own work: the same plan against a build whose plan modifier
#     (gpuInstanceResource.ModifyPlan) returns at once.
#  5. Time to ready (issue 12): `terraform apply` of 20 hydra_gpu_instance on the sandbox with boots of
#     10s and 60s, provisioning off: wall time against the boot time, hydra's share per machine (target:
#     at most 2s, whatever the boot time) and sandbox API reads per machine.
#  6. The same with provisioning on, 3 machines (Ansible and sshd needed; BENCH_PROVISIONING=0 skips
#     it): cloud running -> first SSH attempt, and playbook end -> apply returns.
#  7. Fleet provisioning (issue 23): applies of 1, 20, 5 and 10 machines with provisioning on (boot 2s):
#     wall time, ratio to one machine, CPU, peak memory of the provisioning processes, ansible-playbook runs.
# BENCH_PLAN=0 skips 1 to 4; BENCH_READY=0 skips 5 and 6; BENCH_FLEET (20), BENCH_BOOTS ("10s 60s") and
# BENCH_PROVISIONED (3) size them; BENCH_FLEET_PROVISIONING=0 skips 7, BENCH_FLEETS ("1 20 5 10") sizes it.
# BENCH_ANSIBLE_PLAYBOOK runs another ansible-playbook (tools/ansible-core.sh fetches a distribution's;
# a wrapper that sets ANSIBLE_STRATEGY=free and execs it measures Ansible's own free strategy instead of hydra_free).
# Only the fleet table: BENCH_PLAN=0 BENCH_READY=0 make bench
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tf=${TERRAFORM:-$(command -v terraform || echo /usr/local/bin/terraform)}
work=$(mktemp -d)
# Applies leave machines (with provisioning on, real sshd processes): whatever a state still holds is
# destroyed before the directory goes.
cleanup() {
  for st in "$work"/*/terraform.tfstate; do
    [ -f "$st" ] || continue
    ( cd "$(dirname "$st")" && "$tf" destroy -auto-approve -no-color -parallelism=50 >/dev/null 2>&1 ) || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
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

if [ "${BENCH_PLAN:-1}" != 0 ]; then
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

# 4. The plan's share that is hydra's own work. A second provider binary is built whose
#    gpuInstanceResource.ModifyPlan returns at once; everything else (plugin start, schema, Configure
#    with its orphan scan, validation) is the same. It is built with `go build -overlay`, which swaps
#    gpu_instance_resource.go for a copy whose ModifyPlan starts with `return`: nothing in the tree
#    changes and no switch ships in the real binary. (An -ldflags -X variable would have to be read by
#    ModifyPlan itself, in internal/provider, which this benchmark does not touch; the terraform_data
#    peers of 1. price Terraform's own per-resource work, not the plugin around ModifyPlan.)
#    hydra's share = (full - noop) / full, best of $runs plans each, taken in turn.
plan_once() { # dir -> seconds of one plan
  rm -rf "$1/quotes"
  ( cd "$1" && /usr/bin/time -f '%e' -o "$1/time1.txt" "$tf" plan -no-color -refresh=false -lock=false >"$1/plan.log" 2>&1 ) || { tail -20 "$1/plan.log" >&2; return 1; }
  cat "$1/time1.txt"
}
res="$root/internal/provider/gpu_instance_resource.go"
mkdir -p "$work/noop/bin"
if awk '/^func \(r \*gpuInstanceResource\) ModifyPlan\(/ { print; print "\treturn // bench: the plan modifier returns at once"; n++; next } { print } END { exit n != 1 }' \
    "$res" > "$work/noop/gpu_instance_resource.go" &&
  printf '{"Replace": {"%s": "%s"}}\n' "$res" "$work/noop/gpu_instance_resource.go" > "$work/noop/overlay.json" &&
  ( cd "$root" && ${GO:-go} build -trimpath -overlay "$work/noop/overlay.json" -o "$work/noop/bin/terraform-provider-hydra" . ) >"$work/noop/build.log" 2>&1; then
  sed "s|$root/bin|$work/noop/bin|" "$work/dev.tfrc" > "$work/noop.tfrc"
  full_s="" noop_s=""
  for _ in $(seq "$runs"); do
    s=$(plan_once "$work/hydra")
    if [ -z "$full_s" ] || awk "BEGIN{exit !($s < $full_s)}"; then full_s=$s; fi
    s=$(TF_CLI_CONFIG_FILE="$work/noop.tfrc" plan_once "$work/hydra")
    if [ -z "$noop_s" ] || awk "BEGIN{exit !($s < $noop_s)}"; then noop_s=$s; fi
  done
  echo "== plan, $n hydra_gpu_instance + $n terraform_data: ${full_s}s wall; with ModifyPlan returning at once: ${noop_s}s"
  awk -v f="$full_s" -v o="$noop_s" -v n="$n" 'BEGIN{printf "   hydra'"'"'s own plan work (offers, quotes, fleet, checks): %.2fs, %.0f%% of the plan, %.1f ms per instance\n", f-o, (f-o)*100/f, (f-o)*1000/n}'
else
  echo "== plan share: could not build the build whose ModifyPlan returns at once (see below); skipped"
  tail -5 "$work/noop/build.log" | sed 's/^/   /'
fi

fi # BENCH_PLAN

# 5. and 6. Time to ready (issue 12). Applies of fleet machines on the sandbox, -parallelism=fleet so
#    that Terraform creates them all at once (its default of 10 would start the second ten only when
#    the first ten are done: two boots in a row). Provisioning is off in 5 (the provider block says
#    `provisioning { enabled = false }`: a machine is ready once the cloud says it runs), on in 6.
#
#    Where the numbers come from: the sandbox records when each machine runs (state.json running_at,
#    the cloud's "running"), the provider logs when hydra saw it ("machine running"), when it was ready
#    ("machine ready"), its first SSH attempt ("waiting for SSH") and the playbook's end ("playbook
#    succeeded"), at INFO in TF_LOG_PATH; stats.json counts the instance reads (Gets and Lists).
#
#    hydra's share per machine is measured two ways:
#     - directly, per machine: ready - running_at (provisioning off), the time hydra adds between the
#       cloud's "running" and the machine being ready; mean and max over the fleet;
#     - from wall times: wall(boot) - boot - fixed, where fixed = wall(1ms boot) - (the max share of
#       that 1ms apply): Terraform's and the provider's own work that does not depend on the boot (plugin
#       start, plan, offers, creates, state writes). The machines boot side by side, so what is left is
#       the share of the last machine hydra noticed, as the user waits for it (plus this machine's noise;
#       the sandbox refuses a 0s boot, so 1ms stands in for it).
#    Reads per machine are every Get and List the sandbox answered during the apply (plan and create
#    included: the 1ms apply shows that part) over the number of machines.
fleet=${BENCH_FLEET:-20}
boots=${BENCH_BOOTS:-10s 60s}

mkapply() { # dir, count, boot_time, provisioning (on|off)
  mkdir -p "$1"
  local prov='provisioning {
    enabled = false
  }'
  if [ "$4" = on ]; then prov='provisioning {
    retry_delay = "1s"'"${BENCH_ANSIBLE_PLAYBOOK:+
    ansible_playbook = \"$BENCH_ANSIBLE_PLAYBOOK\"}"'
  }'; fi
  cat > "$1/main.tf" <<TF
terraform {
  required_providers {
    hydra = { source = "hydragpu/hydra" }
  }
}
provider "hydra" {
  plan_quote_dir = "$1/quotes"
  sandbox {
    dir       = "$1/sandbox"
    boot_time = "$3"
  }
  $prov
}
resource "hydra_gpu_instance" "fleet" {
  count    = $2
  name     = "ready-\${count.index}"
  gpu_type = "l4"
}
TF
}

analyze() { # dir, boot seconds -> one line of numbers (see the end of the python for their order)
  python3 - "$1" "$2" <<'PY'
import datetime, json, re, sys
d, boot = sys.argv[1], float(sys.argv[2])
def ts(s):
    s = s.rstrip('Z')
    if '.' in s:
        a, b = s.split('.')
        s = a + '.' + b[:6].ljust(6, '0')
    return datetime.datetime.fromisoformat(s).replace(tzinfo=datetime.timezone.utc).timestamp()
start, end = (float(x) for x in open(d + '/times').read().split())
st = json.load(open(d + '/sandbox/state.json'))
running = {r['name']: ts(r['running_at']) for r in st['instances']}
created = [ts(r['created_at']) for r in st['instances']]
first, last = {}, {}  # event -> machine -> first / last time logged
for line in open(d + '/provider.log'):
    m = re.search(r'\] +provider\.terraform-provider-hydra: (machine running|machine ready|waiting for SSH|playbook succeeded|task [a-z ()]+):', line)
    if not m:
        continue
    who = re.search(r' (?:name|instance)=(\S+)', line)
    t = re.search(r' timestamp=(\S+)', line)
    if who and t and who.group(1) in running:
        ev = 'task' if m.group(1).startswith('task ') and m.group(1) != 'task started' else m.group(1)
        first.setdefault(ev, {}).setdefault(who.group(1), ts(t.group(1)))
        last.setdefault(ev, {})[who.group(1)] = ts(t.group(1))
stats = json.load(open(d + '/stats.apply.json'))
gets, lists = stats.get('instance_gets', 0), stats.get('instance_lists', 0)
def agg(pairs):
    xs = [b - a for a, b in pairs]
    return (sum(xs) / len(xs), max(xs)) if xs else (float('nan'), float('nan'))
def span(a, b):  # per machine, from event map a to event map b
    return [(a[m], b[m]) for m in b if m in a]
ready = first.get('machine ready', {})
share = agg(span(running, ready))
tail = end - max(ready.values()) if ready else float('nan')
out = [end - start, boot, share[0], share[1], (gets + lists) / len(running), gets, lists, tail, max(created) - start]
ssh = first.get('waiting for SSH', {})
if ssh:
    seen, played = first.get('machine running', {}), first.get('playbook succeeded', {})
    out += agg(span(running, seen)) + agg(span(seen, ssh)) + agg(span(running, ssh)) + \
        agg(span(last.get('task', {}), played)) + agg(span(played, ready))
# wall boot share(mean max) reads/machine gets lists tail last-create
#   [provisioning: running->seen(mean max) seen->ssh running->ssh last-task->ansible-exit ansible-exit->ready]
print(' '.join('%.2f' % x if isinstance(x, float) else str(x) for x in out))
PY
}

apply_run() { # dir, count, boot seconds -> applies, analyzes into dir/numbers, destroys
  local dir=$1 count=$2 start end
  start=$(date +%s.%N)
  ( cd "$dir" && TF_LOG_PROVIDER=INFO TF_LOG_PATH="$dir/provider.log" \
      "$tf" apply -auto-approve -no-color -parallelism="$count" >"$dir/apply.log" 2>&1 ) || { tail -30 "$dir/apply.log" >&2; return 1; }
  end=$(date +%s.%N)
  echo "$start $end" > "$dir/times"
  cp "$dir/sandbox/stats.json" "$dir/stats.apply.json"
  analyze "$dir" "$3" > "$dir/numbers"
  ( cd "$dir" && "$tf" destroy -auto-approve -no-color -parallelism="$count" >"$dir/destroy.log" 2>&1 ) || tail -20 "$dir/destroy.log" >&2
}

seconds() { # Go duration (1ms, 10s, 2m) -> seconds
  case "$1" in
    *ms) awk -v v="${1%ms}" 'BEGIN{print v/1000}' ;;
    *s) echo "${1%s}" ;;
    *m) awk -v v="${1%m}" 'BEGIN{print v*60}' ;;
    *) echo "$1" ;;
  esac
}

if [ "${BENCH_READY:-1}" != 0 ]; then
  echo "== time to ready: terraform apply of $fleet hydra_gpu_instance on the sandbox, -parallelism=$fleet, provisioning off"
  echo "   (target: hydra's share at most 2s per machine whatever the boot; the apply about as long as its slowest machine)"
  row='   %-5s %8s %13s %15s  %-26s %-26s %s\n'
  printf "$row" boot wall wall-boot-fix "creates done at" "hydra's share per machine" "reads per machine" "last ready->return"
  mkapply "$work/ready-0" "$fleet" 1ms off
  apply_run "$work/ready-0" "$fleet" 0.001
  read -r w0 _ s0mean s0max r0 g0 l0 t0 c0 < "$work/ready-0/numbers"
  fixed=$(awk -v w="$w0" -v m="$s0max" 'BEGIN{printf "%.2f", w-m}')
  printf "$row" 1ms "${w0}s" "fixed ${fixed}s" "${c0}s" "mean ${s0mean}s, max ${s0max}s" "$r0 ($g0 Gets, $l0 Lists)" "${t0}s"
  for boot in $boots; do
    b=$(seconds "$boot")
    mkapply "$work/ready-$boot" "$fleet" "$boot" off
    apply_run "$work/ready-$boot" "$fleet" "$b"
    read -r w _ smean smax r g l t c < "$work/ready-$boot/numbers"
    over=$(awk -v w="$w" -v b="$b" -v f="$fixed" 'BEGIN{printf "%+.2fs", w-b-f}')
    printf "$row" "$boot" "${w}s" "$over" "${c}s" "mean ${smean}s, max ${smax}s" "$r ($g Gets, $l Lists)" "${t}s"
  done
  echo "   wall-boot-fix = wall - boot - fixed: what the apply took beyond the boot and the fixed cost, i.e. the share of its last"
  echo "   machine, plus this machine's noise (see 'creates done at'); share per machine = ready - the cloud's running (direct)"

  if [ "${BENCH_PROVISIONING:-1}" != 0 ] && command -v ansible-playbook >/dev/null && { command -v sshd >/dev/null || [ -x /usr/sbin/sshd ]; }; then
    pn=${BENCH_PROVISIONED:-3}
    echo "== time to ready with provisioning on: $pn hydra_gpu_instance, boot 10s, the embedded playbooks on the sandbox's machines"
    mkapply "$work/ready-prov" "$pn" 10s on
    if apply_run "$work/ready-prov" "$pn" 10 && read -r w _ _ _ r g l t _ seenm seenx sshm sshx totm totx exitm exitx rdym rdyx < "$work/ready-prov/numbers"; then
      echo "   apply ${w}s wall; reads per machine $r ($g Gets, $l Lists)"
      echo "   cloud running -> hydra sees it running:  mean ${seenm}s, max ${seenx}s (the sandbox starts each machine's sshd inside the"
      echo "                                            read that first sees it running, one machine at a time: its simulated boot)"
      echo "   hydra sees it running -> first SSH try:  mean ${sshm}s, max ${sshx}s (hydra's share)"
      echo "   cloud running -> first SSH try:          mean ${totm}s, max ${totx}s"
      echo "   last task -> ansible-playbook exits:     mean ${exitm}s, max ${exitx}s (Ansible's own)"
      echo "   ansible-playbook exits -> machine ready: mean ${rdym}s, max ${rdyx}s (hydra's share)"
      echo "   last machine ready -> apply returns:     ${t}s (Terraform's)"
    else
      echo "   the provisioned apply failed; see above"
    fi
  else
    echo "== time to ready with provisioning on: skipped (BENCH_PROVISIONING=0, or ansible-playbook or sshd missing)"
  fi
fi

# 7. Fleet provisioning (issue 23): `terraform apply` of 1, 5, 10 and 20 hydra_gpu_instance on the
#    sandbox (boot 2s, provisioning on, the embedded playbooks), -parallelism = the fleet's size (so
#    Terraform creates them all at once). The 1-machine and 20-machine applies run back to back, first,
#    so that their ratio is measured under the same load. Peak memory: the provisioning processes
#    (ansible-playbook, its workers and their ssh clients: every process whose command line names a
#    run directory of this apply's provider, /hydra-<provider pid>-…), from /proc: RSS every 0.2 s, PSS
#    every second;
#    RSS counts the pages the forked workers share with their parent once per process, PSS shares them
#    out (what the processes really take). CPU: user+system seconds of the apply's process tree
#    (terraform, the provider, Ansible on the controller; not the sandbox machines' own sshd and
#    remote module runs, which run detached on this machine too). No TF_LOG (see fleet_apply); the
#    batches and their sizes are the inventories the sampler saw. BENCH_FLEETS ("1 20 5 10") picks the
#    sizes; BENCH_FLEET_PROVISIONING=0 skips it.
fleet_sampler() { # provider-binary, out-file, stop-file
  python3 - "$1" "$2" "$3" <<'PY'
import json, os, sys, time
binary, out, stop = sys.argv[1:4]
peak_rss = peak_pss = peak_n = 0
def cmdline(p):
    try:
        with open('/proc/%s/cmdline' % p, 'rb') as f:
            return f.read().replace(b'\0', b' ').decode('utf-8', 'replace')
    except OSError:
        return ''
def field(path, key):
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0
# A process's command line is read once (a fleet of 20 runs some 700 processes; reading every one's
# at every sample took a tenth of a core from the run it measures), and a sample is taken every 0.2 s.
# PSS is read every fifth sample (each second): the kernel walks a process's whole memory map for it
# (half a millisecond for one of Ansible's forked workers, some 50 of them at a fleet's peak), which
# took another tenth of a core from the run; RSS is read at every sample.
tick = 0
seen = {}
runs = {}  # each ansible-playbook run (its inventory) and how many machines it held
while not os.path.exists(stop):
    pids = [p for p in os.listdir('/proc') if p.isdigit()]
    seen = {p: seen[p] if p in seen and seen[p] else cmdline(p) for p in pids}
    providers = [p for p in pids if seen[p].startswith(binary)]
    marks = ['/hydra-%s-' % p for p in providers]
    rss = pss = n = 0
    if marks:
        for p in pids:
            c = seen[p]
            if any(m in c for m in marks) and 'hydra-run-guardian' not in c:
                args = c.split()
                if 'ansible-playbook' in c and '-i' in args[:-1]:
                    inventory = args[args.index('-i') + 1]
                    if inventory not in runs:
                        try:
                            runs[inventory] = len(json.load(open(inventory))['all']['hosts'])
                        except (OSError, ValueError, KeyError):
                            pass
                rss += field('/proc/%s/status' % p, 'VmRSS:')
                if tick % 5 == 0:
                    pss += field('/proc/%s/smaps_rollup' % p, 'Pss:')
                n += 1
    peak_rss, peak_pss, peak_n = max(peak_rss, rss), max(peak_pss, pss), max(peak_n, n)
    tick += 1
    time.sleep(0.2)
with open(out, 'w') as f:
    f.write('%d %d %d\n' % (peak_rss, peak_pss, peak_n))
with open(out + '-runs', 'w') as f:
    f.write('%d (%s)\n' % (len(runs), '+'.join(str(n) for n in runs.values())))
PY
}

fleet_apply() { # dir, count -> "wall cpu peak_rss_kb peak_pss_kb peak_procs runs" in dir/fleet
  local dir=$1 count=$2 start end
  mkapply "$dir" "$count" 2s on
  rm -f "$dir/stop"
  fleet_sampler "$root/bin/terraform-provider-hydra" "$dir/peak" "$dir/stop" &
  local sampler=$!
  start=$(date +%s.%N)
  # No TF_LOG: a provider logging every task of every machine at INFO costs a 20-machine apply 1 to 2
  # seconds (Terraform parses and writes each line), and a CI runner does not log.
  ( cd "$dir" && /usr/bin/time -f '%U %S' -o "$dir/cpu" \
      "$tf" apply -auto-approve -no-color -parallelism="$count" >"$dir/apply.log" 2>&1 ) || { tail -30 "$dir/apply.log" >&2; touch "$dir/stop"; wait "$sampler"; return 1; }
  end=$(date +%s.%N)
  touch "$dir/stop"
  wait "$sampler"
  # The sandbox machines' side: CPU of their sshd and everything it ran (sessions, remote modules),
  # of their stand-in server and the calls it ran, and of their exporters, read before destroy stops
  # them.
  python3 - "$dir/sandbox/machines" > "$dir/mcpu" <<'PY'
import glob, json, sys
t = 0
for f in glob.glob(sys.argv[1] + '/*/machine.json'):
    try:
        m = json.load(open(f))
    except (OSError, ValueError):
        continue
    for key in ('sshd_pid', 'standin_server_pid', 'node_exporter_pid', 'dcgm_exporter_pid'):
        try:
            st = open('/proc/%d/stat' % m[key]).read()
            v = st[st.rindex(')') + 2:].split()
            t += sum(int(x) for x in v[11:15])
        except (OSError, KeyError, ValueError, TypeError):
            pass
print('%.1f' % (t / 100))
PY
  read -r u s < "$dir/cpu"
  read -r prss ppss pn < "$dir/peak"
  # ansible-playbook runs (batches) and their sizes, as the sampler saw them.
  runs=$(cat "$dir/peak-runs")
  awk -v a="$start" -v b="$end" -v u="$u" -v s="$s" -v r="$prss" -v p="$ppss" -v n="$pn" -v k=- \
    'BEGIN{printf "%.1f %.1f %d %d %d %s\n", b-a, u+s, r, p, n, k}' > "$dir/fleet"
  echo "$runs" > "$dir/runs"
  cat "$dir/mcpu" >> "$dir/runs"
  ( cd "$dir" && "$tf" destroy -auto-approve -no-color -parallelism="$count" >"$dir/destroy.log" 2>&1 ) || tail -20 "$dir/destroy.log" >&2
}

if [ "${BENCH_FLEET_PROVISIONING:-1}" != 0 ] && command -v ansible-playbook >/dev/null && { command -v sshd >/dev/null || [ -x /usr/sbin/sshd ]; }; then
  echo "== fleet provisioning: terraform apply of N hydra_gpu_instance on the sandbox, boot 2s, provisioning on, -parallelism=N"
  echo "   (target: 20 machines within 2.5x the wall time of one; the provisioning processes' peak at most 1 GiB for 20)"
  echo "   this machine has $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) before the first apply (other work on it inflates the times)"
  frow='   %-8s %9s %7s %12s %13s %14s %14s %9s %-30s %s\n'
  printf "$frow" machines wall "vs one" "apply CPU-s" "machines CPU-s" "peak RSS (MiB)" "peak PSS (MiB)" processes "ansible-playbook runs (sizes)" "load after"
  one=""
  for n in ${BENCH_FLEETS:-1 20 5 10}; do
    if fleet_apply "$work/fleet-$n" "$n"; then
      read -r w c r p k _ < "$work/fleet-$n/fleet"
      runs=$(head -1 "$work/fleet-$n/runs")
      mc=$(sed -n 2p "$work/fleet-$n/runs")
      [ "$n" = 1 ] && one=$w
      ratio=$( [ -n "$one" ] && awk -v w="$w" -v o="$one" 'BEGIN{printf "%.1fx", w/o}' || echo "?")
      printf "$frow" "$n" "${w}s" "$ratio" "$c" "$mc" "$((r / 1024))" "$((p / 1024))" "$k" "$runs" "$(cut -d' ' -f1-3 /proc/loadavg)"
    else
      printf "$frow" "$n" failed - - - - - - - -
    fi
  done
  echo "   apply CPU-s: terraform, the provider and Ansible's controller; machines CPU-s: the sandbox machines' sshd and all"
  echo "   it ran, their stand-in servers and exporters (the remote side, on this machine too). RSS sums each process's resident pages (the forked workers'"
  echo "   shared pages once per worker); PSS shares them out: what the provisioning processes really take. Load after:"
  echo "   the load average (1, 5, 15 min) when the apply ended; on a shared machine, compare rows of similar load only."
else
  echo "== fleet provisioning: skipped (BENCH_FLEET_PROVISIONING=0, or ansible-playbook or sshd missing)"
fi
