# hydra health probe: THE health criteria of a GPU machine, in one place. It only reads (safe on a
# machine in use, and in --check), runs every command with a timeout, and prints one JSON verdict:
#
#   {"verdict": "healthy" | "unhealthy", "failed": ["<check>", ...],
#    "reasons": ["<check>: <what is wrong>", ...],
#    "checks": {"<check>": "ok" | "failed" | "skipped: <why>"}, "gpus": [...]}
#
# and exits 0 when healthy, 1 when not, 2 on bad arguments. The provisioning playbooks run it twice
# (the GPU checks right after the driver layer, everything at the end); it can also run alone:
#
#   python3 health_probe.py '{"expect_count": 8, "expect_model": "\\bH100\\b", "checks": ["all"]}'
#
# Spec keys (all optional): checks (names below, or "all"), expect_count, expect_model (a regular
# expression, case-insensitive), gpu_type (for messages), nvswitch (bool: NVLink and fabric checks),
# units (systemd units that must be active), persistence (bool: persistence mode must be Enabled),
# dcgm_diag_level (0: no diagnostic), dcgm_diag_timeout (seconds), max_aggregate_ecc (persistent
# uncorrectable ECC errors allowed per GPU), fatal_xids (Xid codes that make a machine unhealthy),
# fabric_wait (seconds to wait for a fabric still initialising), exporters ([{name, address, port,
# need}]: /metrics must answer holding need), exporters_wait (seconds for exporters just started),
# container (bool: checks that need the host are skipped when they cannot be measured).
#
# Checks: nvidia_smi, gpu_lost, gpu_count, gpu_model, ecc_volatile, ecc_aggregate, remapped_rows, xid,
# nvlink, fabric, persistence, units, dcgm_diag, exporters.
import json
import re
import shutil
import subprocess
import sys
import time
import urllib.request

ALL = ["nvidia_smi", "gpu_lost", "gpu_count", "gpu_model", "ecc_volatile", "ecc_aggregate", "remapped_rows", "xid",
       "nvlink", "fabric", "persistence", "units", "dcgm_diag", "exporters"]
# Xid codes that say the hardware (not an application) failed; see playbooks/README.md for sources.
DEFAULT_FATAL_XIDS = [48, 61, 62, 64, 74, 79, 92, 94, 95, 119, 120, 140]
DIAG_TIMEOUT = {1: 300, 2: 900, 3: 3600, 4: 10800}

try:
    spec = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    assert isinstance(spec, dict)
except (ValueError, AssertionError) as e:
    sys.stderr.write("health_probe.py: the argument must be a JSON object: %s\n" % e)
    sys.exit(2)
checks = spec.get("checks") or ["all"]
enabled = set(ALL if "all" in checks else checks)
reasons, results, gpus = [], {}, []


def flag(v):
    """A boolean from the spec (JSON true, or the strings Ansible may render)."""
    return v is True or str(v).strip().lower() in ("true", "yes", "1")


def run(argv, timeout=120):
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                           timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except OSError as e:
        return 127, "", "%s: %s" % (argv[0], e.strerror)
    except subprocess.TimeoutExpired:
        return 124, "", "%s timed out after %d s (hung)" % (" ".join(argv[:3]), timeout)


def fail(check, msg):
    if check in enabled:
        reasons.append("%s: %s" % (check, msg))
        results[check] = "failed"


def ok(check):
    if check in enabled and check not in results:
        results[check] = "ok"


def skip(check, why):
    if check in enabled and check not in results:
        results[check] = "skipped: " + why


def csv_rows(text):
    return [[f.strip() for f in line.split(",")] for line in text.splitlines() if "," in line]


def gpu_label(g):
    return "GPU %s (%s)" % (g["index"], g["bus_id"])


def names_of(gs):
    """"3x NVIDIA L40S, 1x NVIDIA L4": the GPUs' names, counted."""
    counts = {}
    for g in gs:
        counts[g["name"]] = counts.get(g["name"], 0) + 1
    return ", ".join("%dx %s" % (n, name) for name, n in counts.items()) or "none"


def number(v):
    try:
        return int(v)
    except ValueError:
        return 0  # "[N/A]", "[Not Supported]"


LOST = re.compile(r"Unable to determine the device handle for GPU ?([0-9A-Fa-f:.]+)|GPU is lost|fallen off the bus")

# --- nvidia-smi: the GPUs, and those that cannot be reached --------------------------------------
fields = "index,name,pci.bus_id,driver_version,ecc.errors.uncorrected.volatile.total,ecc.errors.uncorrected.aggregate.total,persistence_mode"
rc, out, err = run(["nvidia-smi", "--query-gpu=" + fields, "--format=csv,noheader"])
text = (out + "\n" + err).strip()
lost = [line.strip() for line in text.splitlines() if LOST.search(line)]
for r in csv_rows(out):
    if len(r) >= 7 and r[0].isdigit():
        gpus.append({"index": r[0], "name": r[1], "bus_id": r[2], "driver": r[3], "ecc_volatile": r[4],
                     "ecc_aggregate": r[5], "persistence": r[6]})
smi_works = bool(gpus or lost)
if not smi_works:
    fail("nvidia_smi", "nvidia-smi does not work (exit code %d): %s" % (rc, " ".join(text.split())[:400] or "no output"))
    skip("gpu_count", "nvidia-smi does not work")
    skip("gpu_model", "nvidia-smi does not work")
else:
    ok("nvidia_smi")
for line in lost:
    m = LOST.search(line)
    bus = m.group(1).rstrip(":.") if m and m.group(1) else "?"
    fail("gpu_lost", "GPU %s fell off the bus (nvidia-smi: GPU is lost)" % bus)
ok("gpu_lost")

names = [g["name"] for g in gpus]
expect = int(spec.get("expect_count") or 0)
gtype = spec.get("gpu_type") or "the promised type"
if expect > 0 and len(gpus) != expect and smi_works:
    fail("gpu_count", "expected %d GPU(s) of type %s as the offer promised, but nvidia-smi lists %d: %s" % (
        expect, gtype, len(gpus), names_of(gpus)))
ok("gpu_count")
pattern = spec.get("expect_model") or ""
if pattern and gpus and any(not re.search(pattern, n, re.I) for n in names):
    fail("gpu_model", "expected every GPU to be a %s (name matching /%s/), but nvidia-smi reports %s" % (
        gtype, pattern, names_of(gpus)))
ok("gpu_model")

# --- ECC: volatile (since the driver loaded) and aggregate (persistent, the GPU's life) -----------
max_agg = int(spec.get("max_aggregate_ecc") or 0)
for g in gpus:
    if number(g["ecc_volatile"]) > 0:
        fail("ecc_volatile", "%s: %s uncorrectable ECC error(s) since the driver loaded" % (gpu_label(g), g["ecc_volatile"]))
    elif number(g["ecc_aggregate"]) > max_agg:
        # The persistent counter includes this boot's errors: named once, above, when there are some.
        fail("ecc_aggregate", "%s: %s uncorrectable ECC error(s) over its life (at most %d allowed)"
             % (gpu_label(g), g["ecc_aggregate"], max_agg))
if gpus and all(g["ecc_volatile"].startswith("[") for g in gpus):
    skip("ecc_volatile", "ECC is not supported or not enabled on these GPUs")
ok("ecc_volatile")
ok("ecc_aggregate")

# --- Row remapping (Ampere and newer): pending needs a GPU reset, failure needs repair ------------
if "remapped_rows" in enabled and gpus:
    rc, out, err = run(["nvidia-smi", "--query-remapped-rows=gpu_bus_id,remapped_rows.uncorrectable,remapped_rows.pending,remapped_rows.failure",
                        "--format=csv,noheader"])
    rows = [r for r in csv_rows(out) if len(r) >= 4]
    if rc != 0 and not rows:
        skip("remapped_rows", "not reported by this GPU or driver (%s)" % (err.strip() or out.strip())[:200])
    by_bus = {g["bus_id"]: g for g in gpus}
    for bus, unc, pending, failure in (r[:4] for r in rows):
        label = gpu_label(by_bus[bus]) if bus in by_bus else "GPU " + bus
        if failure.lower() in ("1", "yes", "true"):
            fail("remapped_rows", "%s: a row remapping failed, the GPU needs repair" % label)
        elif pending.lower() in ("1", "yes", "true"):
            fail("remapped_rows", "%s: a row remapping is pending, the GPU needs a reset" % label)
    ok("remapped_rows")

# --- Xid events in the kernel log since boot ------------------------------------------------------
if "xid" in enabled:
    fatal = set(int(x) for x in (spec.get("fatal_xids") or DEFAULT_FATAL_XIDS))
    log, source = "", ""
    if shutil.which("journalctl") and not flag(spec.get("container")):
        rc, out, err = run(["journalctl", "-k", "-b", "-q", "--no-pager"], 60)
        if rc == 0:
            log, source = out, "journalctl -k -b"
    if not source:
        rc, out, err = run(["dmesg"], 60)
        if rc == 0:
            log, source = out, "dmesg"
    if not source:
        skip("xid", "the kernel log cannot be read here (%s)" % ((err or "").strip()[:120] or "no journalctl or dmesg"))
    seen = {}
    for m in re.finditer(r"NVRM: Xid \(PCI:([0-9A-Fa-f:.]+)\): (\d+),([^\n]*)", log):
        code = int(m.group(2))
        if code in fatal:
            what = re.sub(r"^pid=[^,]*, name=[^,]*,\s*", "", m.group(3).strip())
            seen.setdefault((m.group(1), code), what[:120])
    for (bus, code), what in sorted(seen.items()):
        fail("xid", "Xid %d on %s since boot (%s)" % (code, bus, what[:40].rstrip(". ")))
    ok("xid")

# --- NVLink and the NVSwitch fabric (SXM boards with NVSwitches) --------------------------------
nvswitch = flag(spec.get("nvswitch"))
if "nvlink" in enabled:
    if not nvswitch:
        skip("nvlink", "no NVSwitch on this machine")
    elif gpus:
        rc, out, err = run(["nvidia-smi", "nvlink", "-s"])
        current, down = None, {}
        for line in out.splitlines():
            m = re.match(r"GPU (\d+):", line)
            if m:
                current = m.group(1)
            m = re.match(r"\s*Link (\d+): <inactive>", line)
            if m and current is not None:
                down.setdefault(current, []).append(m.group(1))
        if rc != 0 and not out.strip():
            fail("nvlink", "nvidia-smi nvlink -s failed: %s" % (err.strip()[:200]))
        for idx, links in sorted(down.items()):
            fail("nvlink", "GPU %s has NVLink(s) down: %s" % (idx, ", ".join(links)))
        ok("nvlink")
if "fabric" in enabled:
    if not nvswitch:
        skip("fabric", "no NVSwitch on this machine")
    elif gpus:
        deadline = time.time() + int(spec.get("fabric_wait") or 0)
        while True:
            rc, out, err = run(["nvidia-smi", "--query-gpu=index,fabric.state,fabric.status", "--format=csv,noheader"])
            rows = [r for r in csv_rows(out) if len(r) >= 3]
            waiting = [r for r in rows if r[1] in ("In Progress", "Not Started")]
            if not waiting or time.time() >= deadline:
                break
            time.sleep(5)
        if rc != 0 and not rows:
            # Drivers and GPUs that do not report the fabric (A100): Fabric Manager must run.
            if not flag(spec.get("container")) and shutil.which("systemctl"):
                rc2, _, _ = run(["systemctl", "is-active", "--quiet", "nvidia-fabricmanager"], 30)
                if rc2 != 0:
                    fail("fabric", "the GPUs do not report the fabric state and nvidia-fabricmanager is not active")
            else:
                skip("fabric", "the GPUs do not report the fabric state")
        pending, broken = {}, {}
        for idx, state, status in (r[:3] for r in rows):
            if state in ("N/A", "[N/A]", "Not Supported", "[Not Supported]"):
                continue
            if state != "Completed":
                pending.setdefault(state, []).append(idx)
            elif status not in ("Success", "N/A", "[N/A]"):
                broken.setdefault(status, []).append(idx)
        for state, idxs in sorted(pending.items()):
            fail("fabric", "the NVSwitch fabric has not finished initialising on GPU(s) %s (state %s); is Fabric Manager running?"
                 % (", ".join(idxs), state))
        for status, idxs in sorted(broken.items()):
            fail("fabric", "the NVSwitch fabric failed to initialise on GPU(s) %s (status %s)" % (", ".join(idxs), status))
        ok("fabric")

# --- Persistence and units (machines of their own, with systemd) ----------------------------------
if "persistence" in enabled:
    if not flag(spec.get("persistence")):
        skip("persistence", "not required here (a container, or a machine without systemd)")
    else:
        off = [g["index"] for g in gpus if g["persistence"] not in ("Enabled", "[N/A]", "N/A")]
        if off:
            fail("persistence", "persistence mode is off on GPU(s) %s (nvidia-persistenced is not running)" % ", ".join(off))
        ok("persistence")
if "units" in enabled:
    units = spec.get("units") or []
    if not units:
        skip("units", "none required")
    for u in units:
        rc, out, _ = run(["systemctl", "is-active", u], 30)
        if rc != 0:
            fail("units", "%s is %s" % (u, out.strip() or "not active"))
    ok("units")

# --- DCGM's diagnostic -----------------------------------------------------------------------------
if "dcgm_diag" in enabled:
    level = int(spec.get("dcgm_diag_level") or 0)
    if level <= 0:
        skip("dcgm_diag", "switched off (dcgm_diag_level 0)")
    elif not shutil.which("dcgmi"):
        if flag(spec.get("container")):
            skip("dcgm_diag", "DCGM is not in this container")
        else:
            fail("dcgm_diag", "dcgmi is missing (DCGM is not installed)")
    else:
        timeout = int(spec.get("dcgm_diag_timeout") or DIAG_TIMEOUT.get(level, 3600))
        rc, out, err = run(["dcgmi", "diag", "-r", str(level)], timeout)
        if rc != 0:
            bad = [line.strip(" |") for line in out.splitlines() if re.search(r"\bFail|Error|Warn", line)]
            fail("dcgm_diag", "dcgmi diag -r %d failed (exit code %d): %s" % (
                level, rc, "; ".join(bad)[:500] or (err.strip() or out.strip())[-400:]))
        ok("dcgm_diag")

# --- Exporters ------------------------------------------------------------------------------------
if "exporters" in enabled:
    exporters = spec.get("exporters") or []
    if not exporters:
        skip("exporters", "none run here")
    deadline = time.time() + int(spec.get("exporters_wait", 60))
    while exporters:
        failed = {}
        for e in exporters:
            host = e.get("address") or "127.0.0.1"
            url = e.get("url") or "http://%s:%s/metrics" % ("[%s]" % host if ":" in host else host, e.get("port"))
            try:
                with urllib.request.urlopen(url, timeout=5) as r:
                    body = r.read().decode("utf-8", "replace")
                if e.get("need") and e["need"] not in body:
                    failed[e["name"]] = "%s answers without %s" % (url, e["need"])
            except Exception as ex:
                failed[e["name"]] = "%s does not answer: %s" % (url, ex)
        if not failed or time.time() > deadline:
            break
        time.sleep(3)
    for name, msg in sorted((failed if exporters else {}).items()):
        fail("exporters", "%s: %s" % (name, msg))
    ok("exporters")

for c in enabled:
    results.setdefault(c, "ok")
verdict = "unhealthy" if reasons else "healthy"
failed = [c for c in ALL if results.get(c) == "failed"]
print(json.dumps({"verdict": verdict, "failed": failed, "reasons": reasons, "checks": results, "gpus": gpus}, sort_keys=True))
sys.exit(1 if reasons else 0)
