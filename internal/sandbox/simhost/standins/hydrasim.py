# hydra sandbox: what the stand-ins share. The machine is described by ../gpus.json (written by
# internal/sandbox/simhost) and broken by the fault files in ../faults/ (written by tests; read on every call,
# see the package documentation of internal/sandbox/simhost for their names and formats).
#
# Every stand-in starts Python with -S (no site-packages: they need only the standard library) and
# imports what a call needs when it needs it: a fleet's machines run them hundreds of times on the one
# computer that simulates them all. Most of a stand-in's start is Python's own; the json module (and the
# re module it imports) is the larger part of the rest, so what a stand-in parses on every call (gpus.json,
# the recording it replays) is read from a marshal copy (marshal is built into the interpreter; see
# cached), and json and re are imported only to make that copy.
import marshal
import os

HERE = os.path.dirname(os.path.realpath(__file__))
DIR = os.path.dirname(HERE)
FAULTS = os.path.join(DIR, "faults")


def cached(source, parse):
    """parse(source), a value of plain data, from its marshal copy in ../run (SOURCE_NAME.marshal) when
    that copy was made from this very file (its inode, size and modification time), else parsed and
    copied again."""
    st = os.stat(source)
    key = [st.st_ino, st.st_size, st.st_mtime_ns]
    copy = os.path.join(DIR, "run", os.path.basename(source) + ".marshal")
    try:
        with open(copy, "rb") as f:
            made_from, value = marshal.load(f)
        if made_from == key:
            return value
    except (OSError, EOFError, ValueError, TypeError):
        pass
    value = parse(source)
    tmp = "%s.%d" % (copy, os.getpid())
    try:
        with open(tmp, "wb") as f:
            marshal.dump([key, value], f)
        os.replace(tmp, copy)
    except OSError:
        pass  # a read-only machine directory: parsed on every call
    return value


def _json_file(path):
    import json
    with open(path) as f:
        return json.load(f)


def config():
    """The machine's description (../gpus.json)."""
    return cached(os.path.join(DIR, "gpus.json"), _json_file)


def recordings_dir():
    """Where the recordings of real GPUs are: next to the stand-ins (bin/recordings) or beside them."""
    for d in (os.path.join(HERE, "recordings"), os.path.join(DIR, "recordings")):
        if os.path.isdir(d):
            return d
    return os.path.join(HERE, "recordings")


def root():
    return os.path.join(DIR, "root")


def fault_lines(name):
    """The non-empty, non-comment lines of a fault file, split into words ([] when absent)."""
    try:
        with open(os.path.join(FAULTS, name)) as f:
            text = f.read()
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            out.append(line.replace(",", " ").split())
    return out


def per_gpu(name):
    """A fault file of "INDEX [VALUE]" lines as {index: value or ""}."""
    out = {}
    for words in fault_lines(name):
        try:
            i = int(words[0])
        except ValueError:
            continue
        out[i] = " ".join(words[1:])
    return out


def lost_gpus():
    return set(per_gpu("gpu_lost"))


def count(name, i):
    """The count a per-GPU fault file gives GPU i (1 when the line has no number, 0 without a line)."""
    faults = per_gpu(name)
    if i not in faults:
        return 0
    try:
        return int(faults[i] or "1")
    except ValueError:
        return 1


def loaded_module_version(cfg):
    """The loaded kernel module's version (root/sys/module/nvidia/version), the installed driver's
    when that file is missing."""
    try:
        with open(os.path.join(root(), "sys", "module", "nvidia", "version")) as f:
            return f.read().strip() or cfg["driver_version"]
    except OSError:
        return cfg["driver_version"]


# Xid codes without a public recorded line of their own: the catalog's description (NVIDIA's Xid
# catalog, "Analyzing Xid Errors with the Xid Catalog"), written into the format of a recorded line
# (recordings/PROVENANCE.md, "kernel log").
XID_CATALOG_TEXT = {
    "31": "MMU Fault",
    "46": "GPU stopped processing",
    "48": "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer",
    "54": "Auxiliary power is not connected to the GPU board",
    "64": "Row Remapper: Failed to record a remapped row",
    "74": "NVLink: fatal error detected on link 3",
    "92": "High single-bit ECC error rate",
    "94": "Contained: SM (0x1). RST: No, D-RST: No",
    "95": "Uncontained: FBHUB. RST: Yes, D-RST: No",
    "110": "Security Fault Error",
    "119": "Timeout after 6s of waiting for RPC response from GPU0 GSP!",
    "136": "Link Training Failed",
    "140": "An unrecovered ECC error has been detected",
    "143": "GPU Initialization Error",
    "151": "Key rotation Error",
    "154": "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)",
    "155": "NVLINK: SW Defined Error",
    "156": "Resource Retirement Event",
    "157": "Resource Retirement Failure",
    "158": "GPU Fatal Timeout",
}
# The driver's module-load line (recorded, NVIDIA/NVSentinel issue 155), its version made the machine's.
MODULE_LOAD = "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  %s  Release Build  (dvs-builder@U22-I3-B10-02-5)  Mon Jun  2 13:13:04 UTC 2025"


def recorded_xids():
    """{code: the first recorded line of the code, "code id": the line of that source id} from
    recordings/kernel-xid.log."""
    out = {}
    try:
        with open(os.path.join(recordings_dir(), "kernel-xid.log")) as f:
            for line in f:
                if line.startswith("#") or "\t" not in line:
                    continue
                code, source, text = line.rstrip("\n").split("\t", 2)
                out.setdefault(code, text)
                out.setdefault(code + " " + source, text)
    except OSError:
        pass
    return out


def xid_line(code, pci, source=""):
    """The kernel log line of Xid code on the GPU at pci (0000:38:00): a recorded line of that code (of
    that source id, when given) with its PCI address made this GPU's, or the catalog's text in the
    recorded format."""
    rec = recorded_xids().get(code + " " + source if source else code)
    if rec:
        import re
        return re.sub(r"\(PCI:[0-9A-Fa-f:]+\)", "(PCI:%s)" % pci, rec, count=1)
    return "NVRM: Xid (PCI:%s): %s, pid='<unknown>', name=<unknown>, %s" % (pci, code, XID_CATALOG_TEXT.get(code, "Xid event"))


def kernel_log():
    """The simulated kernel log of this boot: the driver loading, then the Xid of every injected Xid
    fault and lost GPU. Lines of other GPUs (xid_foreign: "BUS CODE", a bus id that is not this
    machine's, as a pod sees its host's other tenants) are there too."""
    cfg = config()
    lines = ["[    4.380000] " + MODULE_LOAD % loaded_module_version(cfg)]
    events = []
    for w in fault_lines("xid"):
        try:
            bus = cfg["gpus"][int(w[0])]["bus_id"]
        except (ValueError, IndexError):
            continue
        events.append((bus, w[1] if len(w) > 1 else "79", w[2] if len(w) > 2 else ""))
    events += [(cfg["gpus"][i]["bus_id"], "79", "") for i in sorted(lost_gpus()) if i < len(cfg["gpus"])]
    events += [(w[0], w[1], "") for w in fault_lines("xid_foreign") if len(w) > 1]
    t = 120.0
    for bus, code, source in events:
        parts = bus.split(":")  # 00000000:38:00.0 -> 0000:38:00, as the kernel log has it
        pci = "%s:%s:%s" % (parts[0][-4:], parts[1], parts[2].split(".")[0]) if len(parts) == 3 else bus
        t += 7.5
        lines.append("[%12.6f] %s" % (t, xid_line(code, pci.lower(), source)))
    return lines


def kernel_log_unreadable():
    """True while the fault kernel_log_unreadable exists: the kernel log cannot be read (dmesg_restrict,
    a user outside the journal's groups)."""
    return os.path.exists(os.path.join(FAULTS, "kernel_log_unreadable"))


def recording_lines(name):
    """The lines of a recording (recordings/NAME), without their line ends."""
    with open(os.path.join(recordings_dir(), name)) as f:
        return f.read().rstrip("\n").split("\n")


def ports_down():
    """The fault ib_port_down as a set of (device, port) pairs; a line without a port means port 1."""
    return {(w[0], w[1] if len(w) > 1 else "1") for w in fault_lines("ib_port_down")}


def ibstat_cas():
    """The recorded ibstat output as a list of adapters ({"name", "header": lines, "ports": {number:
    lines}}), the lines verbatim but for the ib_port_down fault (State Down, Physical state Polling)."""
    down = ports_down()
    cas = []
    port = None
    for line in recording_lines("gpud-h100-cx7-ibstat.txt"):
        text = line.strip()
        if line.startswith("CA '"):
            cas.append({"name": text[4:-1], "header": [line], "ports": {}})
            port = None
        elif text.startswith("Port ") and text.endswith(":"):
            port = text[5:-1]
            cas[-1]["ports"][port] = [line]
        elif port is not None:
            if (cas[-1]["name"], port) in down:
                line = line.replace("State: Active", "State: Down").replace("Physical state: LinkUp", "Physical state: Polling")
            cas[-1]["ports"][port].append(line)
        elif cas:
            cas[-1]["header"].append(line)
    return cas


def ibv_devinfo_blocks():
    """The recorded ibv_devinfo output as (hca_id, text) pairs, verbatim but for the ib_port_down fault
    (the port's state PORT_DOWN (1))."""
    down = ports_down()
    blocks = []
    port = None
    for line in recording_lines("deepep-397-h100-cx7-ibv_devinfo.txt"):
        if line.startswith("hca_id:"):
            blocks.append([line.split("\t", 1)[1], [line]])
            port = None
            continue
        if not blocks:
            continue
        if line.strip().startswith("port:"):
            port = line.split("\t")[-1].strip()
        elif port is not None and (blocks[-1][0], port) in down:
            line = line.replace("PORT_ACTIVE (4)", "PORT_DOWN (1)")
        blocks[-1][1].append(line)
    return [(name, "\n".join(lines).rstrip("\n") + "\n") for name, lines in blocks]


def _scaled(token, factor):
    """The number token times factor, with the token's decimals, right-aligned in its width."""
    decimals = len(token.split(".", 1)[1]) if "." in token else 0
    return ("%.*f" % (decimals, float(token) * factor)).rjust(len(token))


def scale_nccl_table(lines, busbw):
    """The recorded nccl-tests table with its average bus bandwidth made busbw (GB/s): each row's algbw
    and busbw (out-of-place and in-place) times busbw/recorded average, its times divided by it; the
    "# Avg bus bandwidth" line says busbw as nccl-tests prints it (%g)."""
    import re
    recorded = None
    for line in lines:
        m = re.match(r"# Avg bus bandwidth\s*: ([0-9.]+)", line)
        if m:
            recorded = float(m.group(1))
    if not recorded:
        return lines
    factor = busbw / recorded
    out = []
    for line in lines:
        if line.startswith("# Avg bus bandwidth"):
            head = line.split(":", 1)[0]
            out.append("%s: %s " % (head, ("%g" % busbw)))
            continue
        parts = re.split(r"(\s+)", line)
        words = [p for p in parts if p and not p.isspace()]
        if line.startswith("#") or len(words) != 13:
            out.append(line)
            continue
        # size count type redop root | time algbw busbw #wrong | time algbw busbw #wrong
        i = -1
        for k, p in enumerate(parts):
            if not p or p.isspace():
                continue
            i += 1
            if i in (5, 9):
                parts[k] = _scaled(p, 1 / factor)
            elif i in (6, 7, 10, 11):
                parts[k] = _scaled(p, factor)
        # A number that grew a digit takes it from the spaces before it.
        text = ""
        for k, p in enumerate(parts):
            if p.isspace() and k + 1 < len(parts):
                nxt = parts[k + 1]
                orig = re.split(r"(\s+)", line)[k + 1]
                p = p[: max(1, len(p) - (len(nxt) - len(orig)))]
            text += p
        out.append(text)
    return out
