# hydra sandbox: what the volume stand-ins (blkid, mkfs.ext4, mount, umount, findmnt) share. The
# machine's volumes are listed in ../volumes.json (written by internal/sandbox/simhost: id, device or
# source, size_gb, store); a volume's store keeps its files in data/, a block volume's file system in
# fs.json (none until mkfs.ext4) and the file its device links to in device. The mounts are noted in
# ../run/mounts in /proc/mounts' format (SOURCE TARGET FSTYPE OPTIONS 0 0, spaces as \040), targets
# as the machine names them. Messages and exit statuses are util-linux 2.38.1's and e2fsprogs
# 1.47.0's as recorded in recordings/debian12-volume-tools.txt (see recordings/PROVENANCE.md).
import json
import os

import hydrasim

ROOT = hydrasim.root()
MOUNTS = os.path.join(hydrasim.DIR, "run", "mounts")
DMESG = "       dmesg(1) may have more information after failed mount system call."
E2FS_BANNER = "mke2fs 1.47.0 (5-Feb-2023)"


def volumes():
    """The machine's volumes (../volumes.json; [] without one)."""
    try:
        with open(os.path.join(hydrasim.DIR, "volumes.json")) as f:
            return json.load(f)
    except OSError:
        return []


def machine_path(p):
    """A path as the machine names it: one under the machine's root ($HYDRA_ROOT/data) is /data."""
    p = os.path.normpath(p) if p else p
    if p == ROOT:
        return "/"
    if p.startswith(ROOT + "/"):
        return p[len(ROOT):]
    return p


def host_path(p):
    """Where a machine's absolute path is on the host."""
    return ROOT + machine_path(p)


def by_device(dev):
    """The block volume whose device dev names (its path, under the root or not, or a link to it)."""
    want = machine_path(dev)
    real = os.path.realpath(host_path(dev)) if want.startswith("/") else None
    for v in volumes():
        d = v.get("device")
        if not d:
            continue
        if d == want or real == os.path.join(v["store"], "device"):
            return v
    return None


def by_source(src):
    """The shared volume whose network file system source is src."""
    for v in volumes():
        if v.get("source") and v["source"] == src:
            return v
    return None


def fs_of(v):
    """A block volume's file system ({type, uuid, block_size}), or None."""
    try:
        with open(os.path.join(v["store"], "fs.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def data_dir(v):
    return os.path.join(v["store"], "data")


def unescape(field):
    """An fstab or mounts field with its octal escapes (\\040) read."""
    out, i = "", 0
    while i < len(field):
        if field[i] == "\\" and i + 4 <= len(field) and field[i + 1:i + 4].isdigit():
            out += chr(int(field[i + 1:i + 4], 8))
            i += 4
        else:
            out += field[i]
            i += 1
    return out


def escape(s):
    return s.replace("\\", "\\134").replace(" ", "\\040").replace("\t", "\\011").replace("\n", "\\012")


def read_table(path):
    """The entries of an fstab-format file: dicts source, target, fstype, options (missing: [])."""
    out = []
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError:
        return out
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        w = line.split()
        if len(w) < 2:
            continue
        w += ["auto", "defaults"][max(0, len(w) - 2):]
        out.append({"source": unescape(w[0]), "target": machine_path(unescape(w[1])) if w[1].startswith("/") else unescape(w[1]),
                    "fstype": w[2], "options": w[3]})
    return out


def fstab():
    return read_table(os.path.join(ROOT, "etc", "fstab"))


def mounts():
    return read_table(MOUNTS)


def write_mounts(entries):
    os.makedirs(os.path.dirname(MOUNTS), exist_ok=True)
    tmp = "%s.%d" % (MOUNTS, os.getpid())
    with open(tmp, "w") as f:
        for e in entries:
            f.write("%s %s %s %s 0 0\n" % (escape(e["source"]), escape(e["target"]), e["fstype"], e["options"]))
    os.replace(tmp, MOUNTS)


def hidden_dir(target):
    """Where a non-empty mount point's files wait while a volume is mounted over it."""
    return os.path.join(hydrasim.DIR, "run", "hidden", target.strip("/").replace("/", "%2F") or "%2F")
