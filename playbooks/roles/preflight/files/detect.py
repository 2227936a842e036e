# hydra preflight: report, as one JSON object, what the machine already has, so every later role can
# skip what is present without probing again. Reads only (safe in --check); needs nothing beyond
# Python 3; every command it runs has a timeout.
#
#   detect.py EXECLET_BIN [MARKER_PATH [RUN_STARTED]]
#
# RUN_STARTED (the controller's clock when the run started, as the preflight passes it) is echoed back
# as "run_started", so that the preflight notes it without a task of its own.
#
# The preflight runs it right after its waits (files/waits.py), in the same command.
import hashlib
import ipaddress
import json
import os
import pwd
import re
import shutil
import socket
import stat
import subprocess
import sys

execlet_bin = sys.argv[1] if len(sys.argv) > 1 else "/usr/local/bin/hydra-execlet"
marker_path = sys.argv[2] if len(sys.argv) > 2 else "/var/lib/hydra/provisioned.json"
run_started = sys.argv[3] if len(sys.argv) > 3 else ""

# hydra's sandbox machines keep the files hydra manages under HYDRA_ROOT; real machines use "/".
root = os.environ.get("HYDRA_ROOT") or "/"
prefix = root.rstrip("/")
sandbox = os.environ.get("HYDRA_SANDBOX") == "1"

# The units hydra looks for (found, never assumed): name patterns of the units detect reports.
UNIT_PREFIXES = ("nvidia-", "dcgm", "docker", "containerd", "prometheus-node-exporter", "hydra-", "apt-daily",
                 "unattended-upgrades", "nvlsm", "nftables")
UNIT_PATTERN = re.compile("^(%s)" % "|".join(re.escape(p) for p in UNIT_PREFIXES))
# The Debian packages hydra looks for.
PACKAGES = ["nvidia-*", "libnvidia-*", "libnvsdm*", "nvlsm", "infiniband-diags", "datacenter-gpu-manager*",
            "prometheus-node-exporter", "cuda-keyring", "cuda-drivers*", "dkms", "linux-headers-*", "linux-image-*",
            "linux-modules-*", "linux-generic*", "linux-virtual*", "linux-aws", "linux-azure", "linux-gcp", "linux-oracle",
            "linux-kvm", "docker.io", "docker-ce", "containerd.io", "containerd", "moby-engine", "nftables",
            "unattended-upgrades"]
# Where a NVIDIA CUDA repository may be listed (a conflicting Signed-By breaks apt update).
CUDA_REPO = "developer.download.nvidia.com/compute/cuda/repos"


def run(argv, timeout=60):
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                           timeout=timeout)
        return p.returncode, p.stdout.strip(), p.stderr.strip()
    except OSError as e:
        return 127, "", "%s: %s" % (argv[0], e.strerror)
    except subprocess.TimeoutExpired:
        return 124, "", "%s: timed out after %d s" % (argv[0], timeout)


def read(path, default=""):
    try:
        with open(prefix + path) as f:
            return f.read()
    except OSError:
        return default


def os_release():
    info = {}
    try:
        with open("/etc/os-release") as f:
            for line in f:
                k, sep, v = line.strip().partition("=")
                if sep:
                    info[k] = v.strip('"')
    except OSError:
        pass
    return info


def answers(port):
    """Whether GET /metrics on the port answers 200. Plain HTTP/1.0 on a socket: importing urllib.request
    alone costs some 30 ms of CPU, more than the rest of this probe's Python."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1:%d\r\n\r\n" % port)
            status = s.makefile("rb").readline().split()
        return len(status) > 1 and status[1] == b"200"
    except (OSError, ValueError):
        return False


# What systemd-detect-virt prints for a container (systemd-detect-virt(1)); anything else is a VM.
CONTAINERS = ("openvz", "lxc", "lxc-libvirt", "systemd-nspawn", "docker", "podman", "rkt", "wsl", "proot", "pouch",
              "container-other")


def virtualization():
    """container or vm (or none: bare metal; unknown), and of which type."""
    container, vm = "", ""
    if shutil.which("systemd-detect-virt"):
        # One call: it names a container when in one (the innermost virtualization), else the VM.
        rc, so, _ = run(["systemd-detect-virt"], 10)
        if rc == 0 and so and so != "none":
            if so in CONTAINERS:
                container = so
            else:
                vm = so
    if not container:
        # Without systemd-detect-virt (most containers lack it): the marks container engines leave.
        if os.path.exists(prefix + "/.dockerenv"):
            container = "docker"
        elif os.path.exists(prefix + "/run/.containerenv"):
            container = "podman"
        elif not sandbox:
            env = read("/proc/1/environ").split("\0")
            for kv in env:
                if kv.startswith("container="):
                    container = kv.split("=", 1)[1] or "container"
                if kv.startswith("KUBERNETES_SERVICE_HOST=") and not container:
                    container = "kubernetes"
            # cgroup v1 names the engine in PID 1's cgroup; under cgroup v2 the root file system still
            # does (an overlay of the engine's layers).
            root_mount = [ln for ln in read("/proc/self/mountinfo").splitlines() if len(ln.split()) > 4 and ln.split()[4] == "/"]
            marks = read("/proc/1/cgroup") + "\n".join(root_mount[-1:])
            if not container and (re.search(r"/(docker|kubepods|lxc|containerd|libpod)", marks) or " - overlay " in marks):
                container = "container"
    if not vm and not container and not sandbox:
        if "hypervisor" in read("/proc/cpuinfo").split():
            vm = "vm"
    kind = "container" if container else ("vm" if vm else ("none" if shutil.which("systemd-detect-virt") else "unknown"))
    return {"kind": kind, "type": container or vm or "", "container": bool(container)}


def systemd_units():
    """The units hydra may touch: {name: {"active", "enabled"}}. Two systemctl calls, whatever the number
    of units; the first names the units' patterns, so that systemd works out the enabled state of those
    unit files only, not of every one the machine has."""
    rc, so, _ = run(["systemctl", "list-unit-files", "--no-legend", "--no-pager", "--plain", "--"]
                    + [p + "*" for p in UNIT_PREFIXES], 60)
    units = {}
    if rc not in (0, 1):
        return units
    for line in so.splitlines():
        words = line.split()
        if not words or not UNIT_PATTERN.match(words[0]):
            continue
        units[words[0]] = {"active": False, "enabled": len(words) > 1 and words[1] in ("enabled", "enabled-runtime", "static")}
    # Templates (name@.service) never run themselves, and systemctl show refuses them.
    names = sorted(u for u in units if "@." not in u)
    if names:
        rc, so, _ = run(["systemctl", "show", "--property=Id,ActiveState", "--"] + names, 60)
        # One block per unit, in the order asked, separated by a blank line (a block that begins with
        # Id= while the last one has it begins a new one too).
        blocks = [{}]
        for line in so.splitlines():
            k, _, v = line.partition("=")
            if not line.strip() or (k == "Id" and "Id" in blocks[-1]):
                if blocks[-1]:
                    blocks.append({})
                if not line.strip():
                    continue
            blocks[-1][k] = v
        blocks = [b for b in blocks if b]
        if len(blocks) == len(names):
            for name, b in zip(names, blocks):
                units[name]["active"] = b.get("ActiveState") in ("active", "reloading")
    return units


def packages():
    """The installed packages hydra looks for ({name: version}), and those of them held."""
    if not shutil.which("dpkg-query"):
        return {}, []
    rc, so, _ = run(["dpkg-query", "-W", "-f", "${binary:Package}\\t${Version}\\t${db:Status-Abbrev}\\n"] + PACKAGES, 60)
    out, held = {}, []
    for line in so.splitlines():
        parts = line.split("\t")
        # Installed: the status's second letter is "i" ("ii", or "hi" when held: hydra holds the GPU stack).
        if len(parts) >= 3 and parts[2][1:2] == "i":
            out[parts[0].split(":")[0]] = parts[1]
            if parts[2][:1] == "h":
                held.append(parts[0].split(":")[0])
    return out, sorted(held)


def secure_boot():
    """enabled, disabled or unknown (from the UEFI variable; no mokutil needed)."""
    d = prefix + "/sys/firmware/efi/efivars"
    try:
        names = [n for n in os.listdir(d) if n.startswith("SecureBoot-")]
    except OSError:
        return "disabled" if not os.path.isdir(prefix + "/sys/firmware/efi") and os.path.isdir(prefix + "/sys/firmware") else "unknown"
    for n in names:
        try:
            with open(os.path.join(d, n), "rb") as f:
                b = f.read()
            return "enabled" if b and b[-1] == 1 else "disabled"
        except OSError:
            pass
    return "unknown"


def private_ipv4():
    """The first private (RFC 1918) IPv4 address of the machine, "" when it has none. Carrier-grade NAT
    addresses (100.64.0.0/10) are shared with other customers of the provider: not private."""
    rc, so, _ = run(["hostname", "-I"], 10)
    for word in so.split():
        try:
            a = ipaddress.ip_address(word)
        except ValueError:
            continue
        if a.version == 4 and any(a in ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")):
            return str(a)
    return ""


def nvlink5():
    """NVLink 5 switches (B200, B300 boards) are InfiniBand devices whose VPD holds SW_MNG (NVIDIA's
    driver container: _assert_nvlink5_system): (found, error). The kernel makes a PCI device's vpd file
    readable by root only (drivers/pci/vpd.c, 0600): as another user the files are read with sudo -n, and
    a VPD that cannot be read is an error (never "no switches")."""
    d = prefix + "/sys/class/infiniband"
    try:
        devices = sorted(os.listdir(d))
    except OSError:
        return False, ""
    denied = []
    for dev in devices:
        path = os.path.join(d, dev, "device", "vpd")
        try:
            with open(path, "rb") as f:
                if b"SW_MNG" in f.read():
                    return True, ""
        except FileNotFoundError:
            continue  # a device without VPD
        except PermissionError:
            denied.append(path)
        except OSError as e:
            return False, "%s: %s" % (path, e.strerror)
    if not denied:
        return False, ""
    if os.geteuid() == 0 or not shutil.which("sudo"):
        return False, "%s: permission denied (root only) and no sudo to read it" % denied[0]
    # grep -l: exit 0 when a file holds SW_MNG, 1 when none does, 2 when one could not be read.
    rc, so, se = run(["sudo", "-n", "grep", "-l", "-a", "-F", "SW_MNG", "--"] + denied, 60)
    if so.strip():
        return True, ""
    if rc == 1 and not se:
        return False, ""
    return False, "sudo -n grep SW_MNG %s: %s" % (" ".join(denied), (se or "exit code %d" % rc)[:300])


def cuda_sources():
    """Every APT source entry of NVIDIA's CUDA repository: [{path, signed_by}] (signed_by "" when none)."""
    out = []
    files = [prefix + "/etc/apt/sources.list"]
    d = prefix + "/etc/apt/sources.list.d"
    try:
        files += sorted(os.path.join(d, n) for n in os.listdir(d) if n.endswith((".list", ".sources")))
    except OSError:
        pass
    for path in files:
        text = read(path[len(prefix):] if prefix else path)
        if CUDA_REPO not in text:
            continue
        if path.endswith(".sources"):
            m = re.search(r"^Signed-By:\s*(\S+)", text, re.M | re.I)
            out.append({"path": path, "signed_by": m.group(1) if m else ""})
            continue
        for line in text.splitlines():
            if line.strip().startswith("deb") and CUDA_REPO in line:
                m = re.search(r"signed-by=([^\s\]]+)", line)
                out.append({"path": path, "signed_by": m.group(1) if m else ""})
    return out


def marker():
    """The provisioning marker as the marker role reads it: None when there is none, else whether it is
    a well-formed one ("ok") with its digest and playbook."""
    try:
        with open(prefix + marker_path) as f:
            m = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {"ok": False, "digest": "", "playbook": ""}
    if not isinstance(m, dict):
        return {"ok": False, "digest": "", "playbook": ""}
    return {"ok": isinstance(m.get("provisioned_at"), str), "digest": m.get("digest"), "playbook": m.get("playbook")}


pw = pwd.getpwuid(os.getuid())
rel = os_release()
virt = virtualization()
out = {
    "user": pw.pw_name,
    "home": pw.pw_dir,
    "root": root,
    "sandbox": sandbox,
    "sandbox_bin": os.environ.get("HYDRA_SANDBOX_BIN", "") if sandbox else "",
    "hostname": socket.gethostname(),
    "distribution": rel.get("ID", ""),
    "distribution_version": rel.get("VERSION_ID", ""),
    "arch": os.uname().machine,
    "kernel": os.uname().release,
    "virtualization": virt,
    # systemd runs the machine when its runtime directory exists (sd_booted) and systemctl is there.
    "systemd": os.path.isdir(prefix + "/run/systemd/system") and shutil.which("systemctl") is not None,
    "cloud_init": os.access(prefix + "/usr/bin/cloud-init", os.X_OK),
    "dpkg": os.path.exists(prefix + "/var/lib/dpkg/lock-frontend"),
    # A switch-off of APT's periodic runs that earlier hydra versions wrote (the preflight removes it).
    "apt_no_auto_upgrades": os.path.exists(prefix + "/etc/apt/apt.conf.d/99hydra-no-auto-upgrades"),
    "marker": marker(),
    "run_started": run_started,
    "apt": os.path.isdir(prefix + "/etc/apt/apt.conf.d"),
    "nvswitch_count": 0,
    # A driver installed by a run that was interrupted before its reboot (roles/nvidia_driver).
    # (it names the boot it was written in: a machine rebooted since then has nothing pending).
    "boot_id": read("/proc/sys/kernel/random/boot_id").strip(),
    "reboot_pending": bool(read("/var/lib/hydra/reboot-pending").strip()) and
    read("/var/lib/hydra/reboot-pending").split()[0] == read("/proc/sys/kernel/random/boot_id").strip(),
    "cuda_sources": cuda_sources(),
    "execlet_present": os.path.exists(prefix + execlet_bin),
    "secure_boot": secure_boot(),
    "private_ipv4": private_ipv4(),
}
out["nvlink5"], out["nvlink5_error"] = nvlink5()
nvs = prefix + "/proc/driver/nvidia-nvswitch/devices"
if os.path.isdir(nvs):
    out["nvswitch_count"] = len(os.listdir(nvs))



def boot_kernel():
    """The kernel the machine boots into: the newest in /boot with its modules (the boot loader's default
    entry: grub-mkconfig lists kernels newest first), the running one when /boot has none (a container, a
    kernel booted otherwise). (release, why)."""
    found = []
    try:
        names = os.listdir(prefix + "/boot")
    except OSError:
        names = []
    for n in names:
        if n.startswith("vmlinuz-") and os.path.isdir(prefix + "/lib/modules/" + n[len("vmlinuz-"):]):
            found.append(n[len("vmlinuz-"):])
    if not found:
        return os.uname().release, "the running kernel (no kernel with its modules in /boot)"
    key = lambda r: [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"[.+~-]", r)]
    newest = max(found, key=key)
    return newest, "/boot/vmlinuz-%s, the newest installed kernel (the boot loader's default)" % newest


def gpu_pci():
    """NVIDIA GPUs on the PCI bus (display or 3D controllers of vendor 0x10de): their device ids, and
    whether each is older than Turing (a device id below 0x1e00: Pascal, Volta), which NVIDIA's open
    kernel modules cannot drive."""
    d = prefix + "/sys/bus/pci/devices"
    out = []
    try:
        addrs = sorted(os.listdir(d))
    except OSError:
        return out
    for a in addrs:
        vendor = read("/sys/bus/pci/devices/%s/vendor" % a).strip()
        cls = read("/sys/bus/pci/devices/%s/class" % a).strip()
        if vendor != "0x10de" or not (cls.startswith("0x0300") or cls.startswith("0x0302")):
            continue
        dev = read("/sys/bus/pci/devices/%s/device" % a).strip().lower()
        try:
            pre = int(dev, 16) < 0x1e00
        except ValueError:
            continue
        out.append({"address": a, "device": dev, "pre_turing": pre})
    return out


def smi_reason(rc, text):
    """What a failing nvidia-smi means, in words (its real messages)."""
    if rc == 127:
        return "no nvidia-smi on the machine"
    if rc == 124:
        return "nvidia-smi did not answer within 60 s (a hung GPU or driver)"
    if "version mismatch" in text:
        return "the NVIDIA kernel module and the driver's libraries are of different versions (%s)" % text.splitlines()[0]
    if "couldn't communicate with the NVIDIA driver" in text:
        return "no NVIDIA kernel module is loaded (nvidia-smi: %s)" % " ".join(text.split())[:300]
    if "No devices were found" in text:
        return "the driver finds no GPU (nvidia-smi: No devices were found)"
    if "GSP" in text:
        return "the GPU's GSP firmware failed (nvidia-smi: %s)" % " ".join(text.split())[:300]
    return "nvidia-smi failed (exit code %d): %s" % (rc, " ".join(text.split())[:300] or "no output")


out["boot_kernel"], out["boot_kernel_from"] = boot_kernel()
out["gpu_pci"] = gpu_pci()

# The driver: what nvidia-smi says, the loaded kernel module, and the installed one.
rc, so, se = run(["nvidia-smi", "--query-gpu=driver_version,persistence_mode,name", "--format=csv,noheader"], 60)
# A GPU fallen off the bus makes nvidia-smi fail while the driver works for the others: the driver is
# there (reinstalling it would not help); the health checks name the lost GPU.
rows = [[f.strip() for f in line.split(",")] for line in so.splitlines() if line.count(",") >= 2 and "Unable to" not in line]
text = (so + "\n" + se).strip()
lost = "GPU is lost" in text
first = rows[0] if rows else []
rc_s, summary, _ = run(["nvidia-smi"], 60) if rows or lost else (1, "", "")
m = re.search(r"CUDA Version:\s*([0-9]+)\.([0-9]+)", summary)
loaded = read("/sys/module/nvidia/version").strip()
rc_m, installed, _ = run(["modinfo", "-F", "version", "nvidia"], 30) if shutil.which("modinfo") else (1, "", "")
installed = installed.splitlines()[0].strip() if rc_m == 0 and installed else ""
out["driver"] = {
    "ok": bool(first) or lost,
    "version": first[0] if first else (loaded if lost else ""),
    "persistence": first[1] if len(first) > 1 else "",
    "gpu_names": [r[2] for r in rows],
    "error": "" if first or lost else (text or "nvidia-smi gave no output")[:500],
    "cuda_version": "%s.%s" % (m.group(1), m.group(2)) if m else "",
    "cuda_major": m.group(1) if m else "",
    "loaded_version": loaded,
    "installed_version": installed,
    "mismatch": "version mismatch" in text or bool(loaded and installed and loaded != installed),
    "reason": "" if first or lost else smi_reason(rc, text),
}
out["tools"] = {t: shutil.which(t) is not None for t in (
    "nvidia-ctk", "dcgmi", "nv-hostengine", "nv-fabricmanager", "docker", "nvidia-persistenced", "nft",
    "dcgm-exporter", "prometheus-node-exporter")}
out["binaries"] = {t: shutil.which(t) or "" for t in ("dcgm-exporter", "prometheus-node-exporter", "nvidia-persistenced", "nft")}

# Docker's socket usually needs root: the execlet role asks Docker again with privileges. What is
# installed decides whether Docker must be installed at all (docker-ce with containerd.io is kept).
rc, so, _ = run(["docker", "info", "--format", "{" + "{json .Runtimes}" + "}"], 60) if out["tools"]["docker"] else (127, "", "")
out["docker"] = {"ok": rc == 0, "nvidia_runtime": rc == 0 and '"nvidia"' in so}

out["units"] = systemd_units() if out["systemd"] else {}
# Kept for playbooks of your own that read it: the state of the units hydra knows by name.
out["services"] = {u[:-len(".service")]: v for u, v in out["units"].items() if u.endswith(".service")}
out["packages"], out["packages_held"] = packages()
# A driver the machine has, working or not: nvidia-smi, a driver package, an installed or loaded module.
# One that fails is never installed over (roles/nvidia_driver).
DRIVER_PACKAGES = ("nvidia-utils", "nvidia-driver", "nvidia-headless", "nvidia-dkms", "nvidia-kernel-source",
                   "libnvidia-compute", "cuda-drivers", "linux-modules-nvidia", "linux-objects-nvidia")
out["driver"]["present_as"] = sorted(
    [p for p in out["packages"] if p.startswith(DRIVER_PACKAGES)]
    + (["nvidia-smi (%s)" % shutil.which("nvidia-smi")] if shutil.which("nvidia-smi") else [])
    + (["kernel module %s" % (loaded or installed)] if loaded or installed else []))
out["driver"]["present"] = bool(out["driver"]["present_as"])
out["docker"]["installed"] = out["tools"]["docker"] or any(
    p in out["packages"] for p in ("docker-ce", "docker.io", "moby-engine"))

# The files, directories and links hydra writes whole (the roles' default paths, under the root): their
# mode and content's SHA-256 ("0644 <sha256>"), "0755 dir", or "link <target>", where readable. A role
# skips writing one that already is what it would write; a path not listed here, or not readable by the
# login user, is written as before. Never a file that may hold secrets (the execlet agent's arguments,
# the user's interruption hook): its hash would leave the machine.
FILES = [
    "/etc/systemd/system/nvidia-persistenced.service",
    "/etc/systemd/system/nvidia-persistenced.service.d",
    "/etc/systemd/system/nvidia-persistenced.service.d/hydra-persistence-mode.conf",
    "/etc/modules-load.d",
    "/etc/modules-load.d/hydra-nvlink5.conf",
    "/etc/nvidia-imex",
    "/etc/default/prometheus-node-exporter",
    "/etc/systemd/system/hydra-dcgm-exporter.service",
    "/etc/systemd/system/nvidia-dcgm-exporter.service",
    "/etc/systemd/system/dcgm-exporter.service",
    "/etc/hydra",
    "/etc/hydra/execlet.json",
    "/etc/systemd/system/hydra-execlet.service",
    "/etc/hydra/interruption-watch.conf",
    "/usr/local/lib/hydra",
    "/usr/local/lib/hydra/interruption-watch.sh",
    "/etc/systemd/system/hydra-interruption-watch.service",
]


def file_states():
    states = {}
    for path in FILES:
        try:
            st = os.lstat(prefix + path)
            mode = "%04o" % stat.S_IMODE(st.st_mode)
            if stat.S_ISLNK(st.st_mode):
                states[prefix + path] = "link " + os.readlink(prefix + path)
            elif stat.S_ISDIR(st.st_mode):
                states[prefix + path] = mode + " dir"
            elif stat.S_ISREG(st.st_mode):
                with open(prefix + path, "rb") as f:
                    states[prefix + path] = mode + " " + hashlib.sha256(f.read()).hexdigest()
        except OSError:
            pass
    return states


out["files"] = file_states()


# The marker lines of the managed block of the customer's keys in authorized_keys (roles/vm_access).
KEYS_MARKERS = (b"# BEGIN hydra: customer keys\n", b"# END hydra: customer keys\n")


def customer_keys():
    """What roles/vm_access would find in the login user's ~/.ssh, as it compares it: the directory
    ("0700 dir <owner>"), authorized_keys ("0600 <owner>", "" where there is none) and the managed block
    in it (the SHA-256 of the lines between its marker lines, "" where neither marker line is there). A
    file whose block blockinfile would rewrite whatever the keys (a marker line twice or alone, its last
    line unended) has no block entry; whatever could not be read, no entry: the role runs as before."""
    ssh = prefix + pw.pw_dir + "/.ssh"
    keys = {}
    for name, path, is_kind in (("dir", ssh, stat.S_ISDIR), ("file", ssh + "/authorized_keys", stat.S_ISREG)):
        try:
            st = os.lstat(path)
            owner = pwd.getpwuid(st.st_uid).pw_name
        except FileNotFoundError:
            keys[name] = ""
            continue
        except (OSError, KeyError):
            continue
        if is_kind(st.st_mode):
            keys[name] = "%04o %s%s" % (stat.S_IMODE(st.st_mode), "dir " if name == "dir" else "", owner)
    if keys.get("file"):
        try:
            with open(ssh + "/authorized_keys", "rb") as f:
                lines = f.read().splitlines(True)
        except OSError:
            return keys
        at = [[i for i, line in enumerate(lines) if line == m] for m in KEYS_MARKERS]
        if lines and not lines[-1].endswith(b"\n"):
            return keys
        if at == [[], []]:
            keys["block"] = ""
        elif len(at[0]) == 1 and len(at[1]) == 1 and at[0][0] < at[1][0]:
            keys["block"] = hashlib.sha256(b"".join(lines[at[0][0] + 1:at[1][0]])).hexdigest()
    return keys


out["customer_keys"] = customer_keys()


def imex_nodes_config():
    """The trays an IMEX domain file lists (its lines but comments and blank ones): [] where there is
    no such file, None where it could not be read (the role then reads it with privileges)."""
    try:
        with open(prefix + "/etc/nvidia-imex/nodes_config.cfg", encoding="utf-8", errors="replace") as f:
            return [s for s in (line.strip() for line in f.read().splitlines()) if s and not s.startswith("#")]
    except FileNotFoundError:
        return []
    except OSError:
        return None


out["imex_nodes_config"] = imex_nodes_config()

ports = {
    "node_exporter": int(os.environ.get("HYDRA_NODE_EXPORTER_PORT") or 9100),
    "dcgm_exporter": int(os.environ.get("HYDRA_DCGM_EXPORTER_PORT") or 9400),
}
out["exporters"] = {name: {"port": port, "answers": answers(port)} for name, port in ports.items()}
if virt["container"] and out["tools"]["dcgmi"]:
    out["dcgm_hostengine"] = run(["dcgmi", "discovery", "-l"], 30)[0] == 0
else:
    out["dcgm_hostengine"] = False
print(json.dumps(out, sort_keys=True))
