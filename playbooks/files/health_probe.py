# hydra health probe: THE health criteria of a GPU machine, in one place. It only reads (safe on a
# machine in use, and in --check), runs every command with a timeout, and prints one JSON verdict:
#
#   {"verdict": "healthy" | "unhealthy" | "unknown", "failed": ["<check>", ...],
#    "reasons": ["<check>: <what is wrong>", ...], "unknown": ["<check>: <what could not be read>"],
#    "checks": {"<check>": "ok" | "failed" | "unknown: <why>" | "skipped: <why>"}, "gpus": [...]}
#
# "unhealthy" when a check failed; else "unknown" when a check could not read what it needs (the kernel
# log without privileges, say): never "healthy" then. Exits 0 when healthy, 1 when not, 2 on bad
# arguments. The provisioning playbooks run it twice (the GPU checks right after the driver layer,
# everything at the end); it also runs alone (health-probe.yml, and hydra's health refresh):
#
#   python3 health_probe.py '{"expect_count": 8, "expect_model": "\\bH100\\b", "checks": ["all"]}'
#
# Spec keys (all optional): checks (names below, or "all"), expect_count, expect_model (a regular
# expression, case-insensitive), gpu_type (for messages), nvswitch (bool: NVLink and fabric checks; NVSwitch
# and NVLink 5 machines), nvlink_domain (bool: a GB200/GB300 compute tray, judged on its GPUs' fabric
# state), units (systemd units that must be active), persistence (bool: persistence mode must be
# Enabled), dcgm_diag_level (0: no diagnostic), dcgm_diag_timeout (seconds), max_aggregate_ecc
# (persistent uncorrectable ECC errors allowed per GPU without row remapping), fatal_xids (Xid codes that
# make a machine unhealthy), fabric_wait (seconds to wait for a fabric still initialising), exporters
# ([{name, address, port, need}]: /metrics must answer holding need), exporters_wait (seconds for exporters
# just started), container (bool: checks that need the host are skipped when they cannot be measured),
# smi_timeout (seconds nvidia-smi may take before the GPUs count as not answering, default 12).
#
# Checks: nvidia_smi, gpu_lost, gpu_count, gpu_model, ecc_volatile, ecc_aggregate, remapped_rows,
# recovery_action, pcie, xid, fabric, nvlink, persistence, units, dcgm_diag, exporters. The criteria and
# their sources (NVIDIA's Xid catalog and memory-error guide): playbooks/README.md.
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time

ALL = ["nvidia_smi", "gpu_lost", "gpu_count", "gpu_model", "ecc_volatile", "ecc_aggregate", "remapped_rows",
       "recovery_action", "pcie", "xid", "fabric", "nvlink", "persistence", "units", "dcgm_diag", "exporters"]
# Xid codes whose immediate action in NVIDIA's Xid catalog is a GPU reset (RESET_GPU, WORKFLOW_XID_48,
# WORKFLOW_NVLINK_ERR), a reboot (RESTART_BM, RESTART_VM) or a repair (CHECK_MECHANICALS), not RESTART_APP
# or IGNORE: see playbooks/README.md. 144-150 (NVLink 5, WORKFLOW_NVLINK5_ERR) count only when logged
# Fatal; 154 (XID_154) only when the recovery action it announces is not None.
DEFAULT_FATAL_XIDS = [46, 48, 54, 62, 64, 74, 79, 95, 109, 110, 119, 120, 136, 140, 143, 144, 145, 146, 147, 148, 149,
                      150, 151, 154, 155, 156, 158]
NVLINK5_XIDS = set(range(144, 151))
# Lines of 144-150 logged Fatal whose immediate action in the catalog's "XID 144-150 Decode" is IGNORE:
# (code, line's subcode, sub-component code: intrInfo bits 25:20, as the catalog's masks place it).
NVLINK5_FATAL_IGNORED = {(149, "NETIR_LINK_EVT", 38), (149, "NETIR_LINK_EVT", 40)}
DIAG_TIMEOUT = {1: 300, 2: 900, 3: 3600, 4: 10800}
NA = ("", "N/A", "[N/A]", "Not Supported", "[Not Supported]")

try:
    spec = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    assert isinstance(spec, dict)
except (ValueError, AssertionError) as e:
    sys.stderr.write("health_probe.py: the argument must be a JSON object: %s\n" % e)
    sys.exit(2)
checks = spec.get("checks") or ["all"]
enabled = set(ALL if "all" in checks else checks)
reasons, unknowns, results, gpus = [], [], {}, []
SMI_TIMEOUT = int(spec.get("smi_timeout") or 12)


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
        return 124, "", "%s did not answer within %d s (hung)" % (" ".join(argv[:2]), timeout)


def scrape(host, port, timeout=5):
    """GET /metrics from an exporter: its HTTP status (0 without a status line), reason and body. Plain HTTP/1.0
    on a socket (the server closes after the body, never chunks it): importing urllib.request alone costs
    some 30 ms of CPU, more than the rest of a GPU check's Python."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(b"GET /metrics HTTP/1.0\r\nHost: %s\r\n\r\n" % (
            ("[%s]:%d" if ":" in host else "%s:%d") % (host, port)).encode())
        chunks = []
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    status = head.split(b"\r\n", 1)[0].decode("latin-1").split(None, 2) + ["", ""]
    return (int(status[1]) if status[1].isdigit() else 0), status[2].strip(), body.decode("utf-8", "replace")


def fail(check, msg):
    if check in enabled:
        reasons.append("%s: %s" % (check, msg))
        results[check] = "failed"


def unknown(check, why):
    if check in enabled and check not in results:
        unknowns.append("%s: %s" % (check, why))
        results[check] = "unknown: " + why


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


def yes(v):
    return str(v).strip().lower() in ("1", "yes", "true")


def short_bus(bus):
    """00000000:38:00.0 (nvidia-smi) and 0000:38:00 (the kernel log) as one key: 0000:38:00."""
    parts = bus.lower().split(":")
    if len(parts) < 3:
        return bus.lower()
    return "%s:%s:%s" % (parts[0][-4:].rjust(4, "0"), parts[1], parts[2].split(".")[0])


def query(fields):
    """{bus_id: [values]} of one nvidia-smi query of fields, None when this driver or GPU does not know a
    field ("is not a valid field to query") or nvidia-smi fails."""
    rc, out, err = run(["nvidia-smi", "--query-gpu=pci.bus_id," + ",".join(fields), "--format=csv,noheader,nounits"],
                       SMI_TIMEOUT)
    if "not a valid field" in out + err:
        return None
    rows = {r[0]: r[1:] for r in csv_rows(out) if len(r) == len(fields) + 1}
    return rows if rows else None


# The fields of the checks below that are read once: every nvidia-smi call starts NVML again (a fraction
# of a second on a machine with 8 GPUs), so they are asked in one query, and one by one only when this
# driver does not know one of them (each field's query then fails or answers as it would alone).
TOGETHER = ["remapped_rows.pending", "remapped_rows.failure", "remapped_rows.uncorrectable",
            "ecc.errors.uncorrected.aggregate.sram.thresholdExceeded", "retired_pages.pending",
            "gpu_recovery_action", "pcie.link.width.current", "pcie.link.width.max"]
together = []  # [the TOGETHER query's answer], once asked


def optional_query(fields):
    """{bus_id: [values]} of fields beyond the basic ones, None when this driver or GPU does not know a
    field or nvidia-smi fails: from the one query of TOGETHER when every field is in it and it answered."""
    names = fields.split(",")
    if all(n in TOGETHER for n in names):
        if not together:
            together.append(query(TOGETHER))
        if together[0] is not None:
            return {bus: [v[TOGETHER.index(n)] for n in names] for bus, v in together[0].items()}
    return query(names)


# nvidia-smi nvlink -s, for a GPU whose links are all down: "NVML: Unable to retrieve NVLink information as
# all links are inActive" (recorded on a B200: leptonai/gpud issue 1085).
ALL_LINKS_DOWN = re.compile(r"Unable to retrieve NVLink information as all links are inactive", re.I)
LOST = re.compile(r"Unable to determine the device handle for GPU ?([0-9A-Fa-f:.]+)|GPU is lost|fallen off the bus")
GPU_CHECKS = ["gpu_count", "gpu_model", "ecc_volatile", "ecc_aggregate", "remapped_rows", "recovery_action", "pcie",
              "fabric", "nvlink", "persistence"]

# --- nvidia-smi: the GPUs, and those that cannot be reached --------------------------------------
fields = "index,name,pci.bus_id,driver_version,ecc.errors.uncorrected.volatile.total,ecc.errors.uncorrected.aggregate.total,persistence_mode"
rc, out, err = run(["nvidia-smi", "--query-gpu=" + fields, "--format=csv,noheader"], SMI_TIMEOUT)
text = (out + "\n" + err).strip()
hung = rc == 124
lost = [line.strip() for line in text.splitlines() if LOST.search(line)]
for r in csv_rows(out):
    if len(r) >= 7 and r[0].isdigit():
        gpus.append({"index": r[0], "name": r[1], "bus_id": r[2], "driver": r[3], "ecc_volatile": r[4],
                     "ecc_aggregate": r[5], "persistence": r[6]})
smi_works = bool(gpus or lost)
if hung:
    # A GPU that no longer answers hangs NVML: unhealthy after a bounded wait, never "unknown".
    fail("nvidia_smi", "nvidia-smi did not answer within %d s: the GPUs or the driver hang" % SMI_TIMEOUT)
    for c in GPU_CHECKS + ["gpu_lost"]:
        skip(c, "nvidia-smi hangs")
elif not smi_works:
    fail("nvidia_smi", "nvidia-smi does not work (exit code %d): %s" % (rc, " ".join(text.split())[:400] or "no output"))
    skip("gpu_count", "nvidia-smi does not work")
    skip("gpu_model", "nvidia-smi does not work")
else:
    ok("nvidia_smi")
lost_buses = []
for line in lost:
    m = LOST.search(line)
    bus = m.group(1).rstrip(":.") if m and m.group(1) else "?"
    lost_buses.append(bus)
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

# --- Memory: NVIDIA's memory-error guide. On GPUs with row remapping (Ampere and newer) an uncorrectable
# error is repaired by remapping the row: the GPU is judged on remapped_rows (pending: it needs a reset;
# failure: it needs repair), not on the ECC counters. Older GPUs (or MIG, where remapping is not reported)
# are judged on the ECC counters and page retirement. ----------------------------------------------
remap = None
if gpus and (enabled & {"ecc_volatile", "ecc_aggregate", "remapped_rows"}):
    remap = optional_query("remapped_rows.pending,remapped_rows.failure,remapped_rows.uncorrectable")
    if remap is None:
        rc, out, err = run(["nvidia-smi", "--query-remapped-rows=gpu_bus_id,remapped_rows.pending,remapped_rows.failure,"
                            "remapped_rows.uncorrectable", "--format=csv,noheader"], SMI_TIMEOUT)
        rows = [r for r in csv_rows(out) if len(r) >= 4]
        remap = {r[0]: r[1:4] for r in rows} if rows else None
max_agg = int(spec.get("max_aggregate_ecc") or 0)
for g in gpus:
    r = (remap or {}).get(g["bus_id"])
    g["row_remapping"] = bool(r) and r[0] not in NA
    if g["row_remapping"]:
        if yes(r[1]):
            fail("remapped_rows", "%s: a row remapping failed, the GPU needs repair (NVIDIA: RMA)" % gpu_label(g))
        elif yes(r[0]):
            fail("remapped_rows", "%s: a row remapping is pending, the GPU needs a reset" % gpu_label(g))
        continue
    if number(g["ecc_volatile"]) > 0:
        fail("ecc_volatile", "%s: %s uncorrectable ECC error(s) since the driver loaded" % (gpu_label(g), g["ecc_volatile"]))
    elif number(g["ecc_aggregate"]) > max_agg:
        # The persistent counter includes this boot's errors: named once, above, when there are some.
        fail("ecc_aggregate", "%s: %s uncorrectable ECC error(s) over its life (at most %d allowed)"
             % (gpu_label(g), g["ecc_aggregate"], max_agg))
if gpus and (enabled & {"ecc_aggregate", "remapped_rows"}):
    sram = optional_query("ecc.errors.uncorrected.aggregate.sram.thresholdExceeded")
    for g in gpus:
        if sram and yes((sram.get(g["bus_id"]) or [""])[0]):
            fail("ecc_aggregate", "%s: its SRAM uncorrectable errors exceed NVIDIA's threshold (NVIDIA: RMA)" % gpu_label(g))
    retired = optional_query("retired_pages.pending")
    for g in gpus:
        if not g["row_remapping"] and retired and yes((retired.get(g["bus_id"]) or [""])[0]):
            fail("remapped_rows", "%s: a page retirement is pending, the GPU needs a reset" % gpu_label(g))
if gpus and all(g["ecc_volatile"] in NA for g in gpus):
    skip("ecc_volatile", "ECC is not supported or not enabled on these GPUs")
if gpus and all(g["row_remapping"] for g in gpus):
    skip("ecc_volatile", "judged on row remapping (these GPUs remap rows)")
    if "ecc_aggregate" not in results:
        skip("ecc_aggregate", "judged on row remapping (these GPUs remap rows)")
if gpus and not any(g["row_remapping"] for g in gpus):
    skip("remapped_rows", "not reported by these GPUs or this driver (no row remapping, or MIG)")
ok("ecc_volatile")
ok("ecc_aggregate")
ok("remapped_rows")

# --- NVML's recovery action (drivers from R570): what the driver says the GPU needs --------------------
if "recovery_action" in enabled and gpus:
    act = optional_query("gpu_recovery_action")
    if act is None:
        skip("recovery_action", "not reported by this driver")
    for g in gpus:
        a = ((act or {}).get(g["bus_id"]) or ["None"])[0]
        if a not in NA and a.lower() != "none":
            fail("recovery_action", "%s: the driver asks for a recovery action: %s" % (gpu_label(g), a))
    ok("recovery_action")

# --- PCIe: a link narrower than the GPU's (a downgraded link; link generation drops at idle by design) --
if "pcie" in enabled and gpus:
    link = optional_query("pcie.link.width.current,pcie.link.width.max")
    if link is None:
        skip("pcie", "the PCIe link is not reported here")
    for g in gpus:
        cur, mx = ((link or {}).get(g["bus_id"]) or ["", ""])[:2]
        g["pcie_width"] = cur
        if cur.isdigit() and mx.isdigit() and int(cur) < int(mx):
            fail("pcie", "%s: its PCIe link runs at x%s of x%s (downgraded: reseat or repair)" % (gpu_label(g), cur, mx))
    ok("pcie")

# --- Xid events in the kernel log since boot, of this machine's GPUs only -----------------------------
if "xid" in enabled:
    fatal = set(int(x) for x in (spec.get("fatal_xids") or DEFAULT_FATAL_XIDS))
    sudo = [shutil.which("sudo"), "-n"] if os.geteuid() != 0 and shutil.which("sudo") else []
    log, source, why = "", "", []
    for argv, name in ((["journalctl", "-k", "-b", "-q", "--no-pager"], "journalctl -k -b"), (["dmesg"], "dmesg")):
        exe = shutil.which(argv[0])
        if not exe:
            continue
        for prefix in ([sudo] if sudo else []) + [[]]:
            rc, out, err = run(prefix + [exe] + argv[1:], 60)
            real = [ln for ln in out.splitlines() if ln.strip() and ln.strip() != "-- No entries --"]
            if rc == 0 and real:
                log, source = out, name
                break
            why.append("%s%s: %s" % ("sudo " if prefix else "", name, (err.strip().splitlines() or ["no entries"])[0][:80]))
        if source:
            break
    if not source:
        if flag(spec.get("container")):
            skip("xid", "the kernel log cannot be read in this container (%s)" % "; ".join(why[:2]))
        else:
            unknown("xid", "the kernel log could not be read (%s)" % ("; ".join(why[:3]) or "no journalctl or dmesg"))
    own = set(short_bus(g["bus_id"]) for g in gpus) | set(short_bus(b) for b in lost_buses if b != "?")
    seen = {}
    for m in re.finditer(r"NVRM: Xid \(PCI:([0-9A-Fa-f:.]+)\): (\d+),([^\n]*)", log):
        code, bus, what = int(m.group(2)), short_bus(m.group(1)), m.group(3).strip()
        if own and bus not in own:
            continue  # another tenant's GPU (a pod reads its host's log)
        if code not in fatal:
            continue
        if code in NVLINK5_XIDS:
            if not re.search(r"\bFatal\b", what):
                continue
            m5 = re.match(r"(\w+)\b.*?\((0x[0-9A-Fa-f]+)", what)
            if m5 and (code, m5.group(1), (int(m5.group(2), 16) >> 20) & 0x3f) in NVLINK5_FATAL_IGNORED:
                continue
        if code == 154 and re.search(r"to 0x0\b", what):
            continue
        what = re.sub(r"^pid=[^,]*, name=[^,]*,\s*", "", what)
        seen.setdefault((bus, code), what[:120])
    for (bus, code), what in sorted(seen.items()):
        fail("xid", "Xid %d on %s since boot (%s)" % (code, bus, what[:60].rstrip(". ")))
    ok("xid")

# --- The fabric (NVSwitch and NVLink 5 machines, GB200/GB300 compute trays), then NVLink once it is up --
# The GPUs report it (NVML's fabric info: nvidia-smi -q's Fabric section, the query fields fabric.*): the
# state must be Completed, the status Success, and the health summary (drivers that report it) not
# Unhealthy. A GB200/GB300 tray (nvlink_domain) has no NVSwitch of its own: its GPUs' report is all there is.
nvlink_domain = flag(spec.get("nvlink_domain"))
nvswitch = flag(spec.get("nvswitch")) or nvlink_domain
if "fabric" in enabled:
    if not nvswitch:
        skip("fabric", "no NVSwitch on this machine")
    elif gpus:
        deadline = time.time() + int(spec.get("fabric_wait") or 0)
        while True:
            fab = optional_query("fabric.state,fabric.status,fabric.health.summary")
            if fab is None:
                fab = optional_query("fabric.state,fabric.status")
            waiting = [b for b, v in (fab or {}).items() if v[0] in ("In Progress", "Not Started")]
            if not waiting or time.time() >= deadline:
                break
            time.sleep(5)
        reported = {b: v for b, v in (fab or {}).items() if v[0] not in NA}
        if not reported:
            if nvlink_domain:
                fail("fabric", "the GPUs do not report their fabric state: this GB200/GB300 tray's NVLink domain cannot be judged")
            # Drivers and GPUs that do not report the fabric (A100): Fabric Manager must run.
            elif not flag(spec.get("container")) and shutil.which("systemctl"):
                rc2, _, _ = run(["systemctl", "is-active", "--quiet", "nvidia-fabricmanager"], 30)
                if rc2 != 0:
                    fail("fabric", "the GPUs do not report the fabric state and nvidia-fabricmanager is not active")
            else:
                skip("fabric", "the GPUs do not report the fabric state")
        by_bus = {g["bus_id"]: g for g in gpus}
        pending, broken, unhealthy = {}, {}, []
        for bus, v in sorted(reported.items(), key=lambda kv: int(by_bus.get(kv[0], {"index": "0"})["index"])):
            state, status = v[0], v[1]
            idx = by_bus[bus]["index"] if bus in by_bus else bus
            if state != "Completed":
                pending.setdefault(state, []).append(idx)
            elif status not in ("Success",) + NA:
                broken.setdefault(status, []).append(idx)
            elif len(v) > 2 and v[2].strip().lower() == "unhealthy":
                unhealthy.append(idx)
        what = "NVLink fabric" if nvlink_domain else "NVSwitch fabric"
        for state, idxs in sorted(pending.items()):
            fail("fabric", "the %s has not finished initialising on GPU(s) %s (state %s); is %s running?"
                 % (what, ", ".join(idxs), state, "the rack's Fabric Manager" if nvlink_domain else "Fabric Manager"))
        for status, idxs in sorted(broken.items()):
            fail("fabric", "the %s failed to initialise on GPU(s) %s (status %s)" % (what, ", ".join(idxs), status))
        if unhealthy:
            fail("fabric", "the %s reports GPU(s) %s unhealthy (fabric health summary Unhealthy)" % (what, ", ".join(unhealthy)))
        ok("fabric")
if "nvlink" in enabled:
    if not nvswitch:
        skip("nvlink", "no NVSwitch on this machine")
    elif gpus:
        rc, out, err = run(["nvidia-smi", "nvlink", "-s"], SMI_TIMEOUT)
        current, down, all_down = None, {}, []
        for line in out.splitlines():
            m = re.match(r"GPU (\d+):", line)
            if m:
                current = m.group(1)
            m = re.match(r"\s*Link (\d+): <inactive>", line)
            if m and current is not None:
                down.setdefault(current, []).append(m.group(1))
            # NVML's line for a GPU whose every link is down (no per-link lines follow it).
            if current is not None and ALL_LINKS_DOWN.search(line) and current not in all_down:
                all_down.append(current)
        if rc != 0 and not out.strip():
            fail("nvlink", "nvidia-smi nvlink -s failed: %s" % (err.strip()[:200]))
        for idx in all_down:
            fail("nvlink", "GPU %s has every NVLink down (NVML: all links are inActive)" % idx)
        for idx, links in sorted(down.items()):
            fail("nvlink", "GPU %s has NVLink(s) down: %s" % (idx, ", ".join(links)))
        ok("nvlink")

# --- Persistence and units (machines with systemd) ----------------------------------------------------
if "persistence" in enabled:
    if not flag(spec.get("persistence")):
        skip("persistence", "not required here (a container, or a machine without systemd)")
    else:
        off = [g["index"] for g in gpus if g["persistence"] not in ("Enabled",) + NA]
        if off:
            fail("persistence", "persistence mode is off on GPU(s) %s (nvidia-persistenced is not running with --persistence-mode)"
                 % ", ".join(off))
        ok("persistence")
if "units" in enabled:
    units = spec.get("units") or []
    if not units:
        skip("units", "none required")
    # One call for all: systemctl is-active prints each unit's state on a line of its own, in order.
    states = run(["systemctl", "is-active"] + list(units), 30)[1].split() if units else []
    for i, u in enumerate(units):
        state = states[i] if i < len(states) else ""
        if state != "active":
            fail("units", "%s is %s" % (u, state or "not active"))
    ok("units")

# --- DCGM's diagnostic (provisioning only: the refresh of a machine in use runs none) -----------------
if "dcgm_diag" in enabled:
    level = int(spec.get("dcgm_diag_level") or 0)
    if level <= 0:
        skip("dcgm_diag", "switched off (dcgm_diag_level 0; a health refresh never runs it)")
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

# --- Exporters, where the run set them up -------------------------------------------------------------
if "exporters" in enabled:
    exporters = spec.get("exporters") or []
    failed = {}
    if not exporters:
        skip("exporters", "none run here")
    deadline = time.time() + int(spec.get("exporters_wait", 60))
    while exporters:
        failed = {}
        for e in exporters:
            host = e.get("address") or "127.0.0.1"
            url = "http://%s:%s/metrics" % ("[%s]" % host if ":" in host else host, e.get("port"))
            try:
                status, reason, body = scrape(host, int(e.get("port")))
                if status != 200:
                    failed[e["name"]] = "%s does not answer: %s" % (
                        url, "HTTP Error %d: %s" % (status, reason) if status else "no HTTP status line")
                elif e.get("need") and e["need"] not in body:
                    failed[e["name"]] = "%s answers without %s" % (url, e["need"])
            except (OSError, ValueError, TypeError) as ex:
                failed[e["name"]] = "%s does not answer: %s" % (url, ex)
        if not failed or time.time() > deadline:
            break
        time.sleep(3)
    for name, msg in sorted(failed.items()):
        fail("exporters", "%s: %s" % (name, msg))
    ok("exporters")

for c in enabled:
    results.setdefault(c, "ok")
verdict = "unhealthy" if reasons else ("unknown" if unknowns else "healthy")
failed = [c for c in ALL if results.get(c) == "failed"]
print(json.dumps({"verdict": verdict, "failed": failed, "reasons": reasons, "unknown": unknowns, "checks": results,
                  "gpus": gpus}, sort_keys=True))
sys.exit(0 if verdict == "healthy" else 1)
