# One probe of every volume (argv[1]: hydra_volumes as JSON; argv[2]: hydra_prefix, the directory that
# stands for "/"; argv[3]: the seconds to wait for a block device to appear, as a cloud's may a little
# after boot), so a run asks the machine once: for a block volume, `blkid -o value -s TYPE <device>`
# (rc 0 and the type of the file system it holds, rc 2 when it holds none); for each,
# `findmnt --mountpoint <path>` (rc 0 mounted, rc 1 not). blkid also answers 2 for a device it cannot
# open, so a device that is missing or unreadable is reported (blkid_rc -1) instead of asked about: it
# must never look empty and be formatted. A volume's fstab line of another mount path (the path
# changed) that findmnt finds mounted is listed in old_mounts. fstab_line is the last fstab line the
# role's lineinfile task would replace (its regexp: this device or source, or this mount path), as it is
# (newline included; null when none, or not UTF-8), and fstab_attrs fstab's "<mode> <uid> <gid>": the task
# is skipped when that line is already the one it would write. Prints a JSON list, one {blkid_rc, fstype,
# findmnt_rc, stderr, old_mounts, fstab_line, fstab_attrs} per volume, in order. Standard library only.
import json
import os
import re
import stat
import subprocess
import sys
import time


def run(argv):
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return 127, "", "%s: %s" % (argv[0], e)
    return p.returncode, p.stdout.strip(), p.stderr.strip()


prefix = sys.argv[2] if len(sys.argv) > 2 else ""
deadline = time.monotonic() + (float(sys.argv[3]) if len(sys.argv) > 3 else 0)
fstab = []
fstab_lines = []
fstab_attrs = None
try:
    with open(prefix + "/etc/fstab", "rb") as f:
        fstab_lines = f.readlines()
        st = os.fstat(f.fileno())
        fstab_attrs = "%04o %d %d" % (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)
    for line in fstab_lines:
        fields = line.decode("utf-8", "replace").split()
        if len(fields) >= 2 and not fields[0].startswith("#"):
            fstab.append(fields)
except OSError:
    pass


def fstab_line(spec, mount_path):
    """The last line lineinfile's regexp (tasks/volume.yml) matches, as bytes are matched there."""
    pattern = re.compile(b"^\\s*(" + re.escape(spec.encode()) + b"|\\S+\\s+" + re.escape(mount_path.encode()) + b")\\s")
    last = None
    for line in fstab_lines:
        if pattern.search(line):
            last = line
    try:
        return last.decode("utf-8") if last is not None else None
    except UnicodeDecodeError:
        return None


out = []
for v in json.loads(sys.argv[1]):
    r = {"blkid_rc": None, "fstype": "", "findmnt_rc": None, "stderr": "", "old_mounts": [], "fstab_line": None,
         "fstab_attrs": fstab_attrs}
    errs = []
    if v.get("type") == "block" and not v.get("mounted_by_cloud"):
        dev = prefix + v["device"]
        while not os.path.exists(dev) and time.monotonic() < deadline:
            time.sleep(1)
        if not os.path.exists(dev):
            r["blkid_rc"] = -1
            errs.append("no such device: %s (waited %d s for it)" % (v["device"], float(sys.argv[3]) if len(sys.argv) > 3 else 0))
        elif not os.access(dev, os.R_OK):
            r["blkid_rc"] = -1
            errs.append("cannot read device %s (not root?)" % v["device"])
        else:
            r["blkid_rc"], r["fstype"], err = run(["blkid", "-o", "value", "-s", "TYPE", v["device"]])
            errs.append(err)
    r["findmnt_rc"], _, err = run(["findmnt", "--mountpoint", v["mount_path"]])
    errs.append(err)
    # Where fstab mounted this device or source before (a mount path since changed), and whether it
    # still is mounted there: the run lets go of it once the new path is mounted.
    spec = v.get("device") if v.get("type") == "block" else v.get("source")
    if spec and not v.get("mounted_by_cloud"):
        r["fstab_line"] = fstab_line(spec, v["mount_path"])
        for old in fstab:
            if old[0] == spec and old[1] != v["mount_path"]:
                rc, _, _ = run(["findmnt", "--mountpoint", old[1]])
                if rc == 0:
                    r["old_mounts"].append(old[1])
    r["stderr"] = "; ".join(e for e in errs if e)
    out.append(r)
print(json.dumps(out))
