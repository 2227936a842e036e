# hydra sandbox: what the stand-ins share. The machine is described by ../gpus.json (written by
# internal/sshhost) and broken by the fault files in ../faults/ (written by tests; read on every call,
# see the package documentation of internal/sshhost for their names and formats).
import json
import os

HERE = os.path.dirname(os.path.realpath(__file__))
DIR = os.path.dirname(HERE)
FAULTS = os.path.join(DIR, "faults")


def config():
    with open(os.path.join(DIR, "gpus.json")) as f:
        return json.load(f)


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


XID_TEXT = {
    "13": "Graphics Engine Exception",
    "31": "MMU Fault",
    "48": "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer",
    "63": "Row Remapper: New row marked for remapping, reset gpu to activate.",
    "64": "Row Remapper: Failed to record a remapped row",
    "74": "NVLink: fatal error detected on link 3",
    "79": "GPU has fallen off the bus.",
    "94": "Contained: SM (0x1). RST: No, D-RST: No",
    "95": "Uncontained: FBHUB. RST: Yes, D-RST: No",
}


def kernel_log():
    """The simulated kernel log: a boot line, then an Xid for every injected Xid and lost GPU."""
    cfg = config()
    lines = ["[    0.000000] Linux version 6.8.0-hydra-sandbox (hydra sandbox stand-in)",
             "[    4.210000] nvidia: loading out-of-tree module taints kernel.",
             "[    4.380000] NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  %s" % loaded_module_version(cfg)]
    events = [(w[0], w[1] if len(w) > 1 else "79") for w in fault_lines("xid")]
    events += [(str(i), "79") for i in sorted(lost_gpus())]
    t = 120.0
    for idx, code in events:
        try:
            bus = cfg["gpus"][int(idx)]["bus_id"]
        except (ValueError, IndexError):
            continue
        parts = bus.split(":")  # 00000000:38:00.0 -> 0000:38:00, as the kernel log has it
        pci = "%s:%s:%s" % (parts[0][-4:], parts[1], parts[2].split(".")[0]) if len(parts) == 3 else bus
        t += 7.5
        lines.append("[%12.6f] NVRM: Xid (PCI:%s): %s, pid=1234, name=python3, %s" % (
            t, pci, code, XID_TEXT.get(code, "Xid event")))
    return lines
