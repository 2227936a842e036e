# hydra: bring a set of files and systemd units to the state a role wants, in one run on the machine,
# changing only what differs: files written (atomically, with their mode and owner), directories,
# links (a unit masked: a link to /dev/null), files removed, a managed block in a file (as
# ansible.builtin.blockinfile keeps one), then systemd told of changed unit files (daemon-reload) and
# the units enabled, started, restarted (when a file they read changed) or stopped. One Python run
# and a few systemctl calls instead of one Ansible module per file and per unit. Prints JSON:
# {"changed": [what changed, or would change in check mode]}. Never prints a file's content (an
# environment file may hold secrets).
#
#   converge.py SPEC        or        converge.py - < SPEC
#
# SPEC (JSON):
#   {"check": BOOL,
#    "files": [{"path": P, "content": S, "mode": "0644", "owner": USER},   a file
#              {"path": P, "state": "directory", "mode": "0755", "owner": USER},
#              {"path": P, "state": "link", "src": "/dev/null"},    (or "paths": [P...]: one each)
#              {"path": P, "state": "absent"},
#              {"path": P, "block": S, "marker": "# {mark} ...", "mode": "0600", "owner": USER}],  a managed
#                                       block (removed when S is empty; the file is created for one)
#    "units": [{"name": U, "enabled": BOOL, "state": "started" | "stopped", "restart_if": [P...],
#               "restart": BOOL}]}                                           (or "names": [U...]: one each)
# A unit in state started is restarted when a file of its restart_if changed (or restart is true),
# started when it is not running; units are handled in the order given, one systemctl call each, so a
# unit listed first (a firewall) is up before the next starts. In check mode nothing changes, and a unit
# whose unit file would be written is not looked at (it does not exist yet).
import json
import os
import pwd
import stat
import subprocess
import sys
import tempfile

spec = json.load(sys.stdin) if sys.argv[1:] == ["-"] else json.loads(sys.argv[1])
check = bool(spec.get("check"))
changed = []
changed_paths = set()
# systemctl's unit file states for which `systemctl is-enabled` succeeds (what Ansible's systemd
# module counts as enabled; indirect and alias units are enabled explicitly).
ENABLED = ("enabled", "enabled-runtime", "static", "generated", "transient")
ACTIVE = ("active", "activating", "reloading")


def fail(msg):
    sys.stderr.write("converge.py: %s\n" % msg)
    sys.exit(1)


def uid_of(owner):
    if not owner:
        return -1
    try:
        return pwd.getpwnam(owner).pw_uid
    except KeyError:
        fail("no user %s" % owner)


def fix_attrs(path, mode, owner):
    """Mode and owner of an existing path; True when one changed."""
    st = os.lstat(path)
    did = False
    uid = uid_of(owner)
    if uid != -1 and st.st_uid != uid:
        if not check:
            os.chown(path, uid, -1)
        did = True
    if mode and stat.S_IMODE(st.st_mode) != int(mode, 8):
        if not check:
            os.chmod(path, int(mode, 8))
        did = True
    return did


def write(path, data, mode, owner):
    """Write data (bytes) at path unless it already holds it; True when it changed."""
    try:
        with open(path, "rb") as f:
            same = f.read() == data
    except FileNotFoundError:
        same = False
    except OSError as e:
        fail("%s: %s" % (path, e.strerror))
    if same:
        return fix_attrs(path, mode, owner)
    if check:
        return True
    d = os.path.dirname(path)
    os.makedirs(d, mode=0o755, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix="." + os.path.basename(path) + ".")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        try:
            st = os.stat(path)
            if os.getuid() == 0:
                os.chown(tmp, st.st_uid, st.st_gid)
        except FileNotFoundError:
            pass
        os.chmod(tmp, int(mode or "0644", 8))
        if owner:
            os.chown(tmp, uid_of(owner), -1)
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        fail("writing %s: %s" % (path, e.strerror))
    return True


def block(path, text, marker, mode, owner):
    """A managed block between marker lines, as ansible.builtin.blockinfile keeps it (appended at the end
    of the file the first time); removed when text is empty."""
    try:
        with open(path, "rb") as f:
            original = f.read().decode()
    except FileNotFoundError:
        if not text:
            return False
        original = None
    lines = (original or "").splitlines(True)
    begin, end = marker.replace("{mark}", "BEGIN"), marker.replace("{mark}", "END")
    n0 = n1 = None
    for i, line in enumerate(lines):
        if line.rstrip("\r\n") == begin:
            n0 = i
        elif line.rstrip("\r\n") == end:
            n1 = i
    if n0 is not None and n1 is not None and n0 <= n1:
        del lines[n0:n1 + 1]
        at = n0
    else:
        at = len(lines)
    if text:
        if at > 0 and not lines[at - 1].endswith(("\n", "\r")):
            lines[at - 1] += "\n"
        new = [begin + "\n"] + [ln + "\n" for ln in text.splitlines()] + [end + "\n"]
        lines[at:at] = new
    result = "".join(lines)
    if original is not None and result == original:
        return fix_attrs(path, mode, owner)
    return write(path, result.encode(), mode, owner)


files = []
for f in spec.get("files") or []:
    files += [dict(f, path=p) for p in f["paths"]] if "paths" in f else [f]
for f in files:
    path, state = f["path"], f.get("state", "file")
    if state == "directory":
        if os.path.isdir(path):
            did = fix_attrs(path, f.get("mode"), f.get("owner"))
        else:
            did = True
            if not check:
                os.makedirs(path, exist_ok=True)
                fix_attrs(path, f.get("mode"), f.get("owner"))
    elif state == "link":
        did = not (os.path.islink(path) and os.readlink(path) == f["src"])
        if did and not check:
            if os.path.lexists(path):
                os.unlink(path)
            os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
            os.symlink(f["src"], path)
    elif state == "absent":
        did = os.path.lexists(path)
        if did and not check:
            os.unlink(path)
    elif "block" in f:
        did = block(path, f["block"], f["marker"], f.get("mode"), f.get("owner"))
    else:
        did = write(path, f["content"].encode(), f.get("mode"), f.get("owner"))
    if did:
        changed.append("%s %s" % ({"absent": "removed", "link": "linked", "directory": "made"}.get(state, "wrote"), path))
        changed_paths.add(path)


def systemctl(*args):
    try:
        p = subprocess.run(["systemctl"] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=120)
    except subprocess.TimeoutExpired:
        fail("systemctl %s: no answer within 120 s" % " ".join(args))
    return p


units = []
for u in spec.get("units") or []:
    units += [dict(u, name=n) for n in u["names"]] if "names" in u else [u]
if units:
    if not check and any("/systemd/system/" in p for p in changed_paths):
        p = systemctl("daemon-reload")
        if p.returncode != 0:
            fail("systemctl daemon-reload: %s" % (p.stderr.strip() or p.stdout.strip()))
    names = [u["name"] if "." in u["name"] else u["name"] + ".service" for u in units]
    p = systemctl("show", "--property=Id,LoadState,ActiveState,UnitFileState", "--", *names)
    if p.returncode != 0:
        fail("systemctl show: %s" % (p.stderr.strip() or p.stdout.strip()))
    # One block of properties per unit, in the order asked: blocks are separated by a blank line (a
    # block that begins with Id= while the last one has it begins a new one too).
    blocks = [{}]
    for line in p.stdout.splitlines():
        k, _, v = line.partition("=")
        if not line.strip() or (k == "Id" and "Id" in blocks[-1]):
            if blocks[-1]:
                blocks.append({})
            if not line.strip():
                continue
        blocks[-1][k] = v
    blocks = [b for b in blocks if b]
    if len(blocks) != len(names):
        fail("systemctl show answered for %d of %d units" % (len(blocks), len(names)))
    for u, name, props in zip(units, names, blocks):
        load, active = props.get("LoadState", ""), props.get("ActiveState", "") in ACTIVE
        written = any(p.endswith("/systemd/system/" + name) for p in changed_paths)
        if check and written and load == "not-found":
            changed.append("would start %s once its unit is written" % name)
            continue
        actions = []
        if u.get("enabled") and props.get("UnitFileState", "") not in ENABLED:
            actions.append("enable")
        if u.get("state") == "started":
            if u.get("restart") or any(p in changed_paths for p in u.get("restart_if") or []):
                actions.append("restart")
            elif not active:
                actions.append("start")
        elif u.get("state") == "stopped" and active:
            actions.append("stop")
        if actions and load in ("not-found", "masked") and actions != ["stop"]:
            fail("%s: the unit is %s" % (name, load))
        for a in actions:
            changed.append("%s %s" % (a, name))
            if check:
                continue
            p = systemctl(a, name)
            if p.returncode != 0:
                fail("systemctl %s %s: %s" % (a, name, (p.stderr.strip() or p.stdout.strip())[-500:]))

print(json.dumps({"changed": changed}))
