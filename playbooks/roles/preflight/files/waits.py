# hydra preflight waits, in one run before the machine is looked at: cloud-init finished, a running
# automatic upgrade stopped for the run, the dpkg lock free. Each wait is bounded by its share of the
# create timeout; when one runs out, the message names it and the variable that bounds it. Finds for
# itself what is needed (a machine that needs no wait waits for nothing) and says on stderr what it
# stopped ("hydra: stopping UNIT for this run"); prints nothing on stdout (the probe's output follows).
#
#   waits.py SPEC
#
# SPEC (JSON): {"cloud_init": SECONDS, "dpkg": SECONDS (stopping the upgrade and the dpkg lock's wait),
# "time_left": SECONDS (what was left of the budget when the waits began), "units": [UNIT...] (the
# services of an automatic upgrade), "timers": [TIMER...] (the timers that start them), "check": BOOL}.
# In check mode nothing is stopped (the waits still run: they change nothing).
#
# Automatic upgrades are paused for the run, so that none starts while hydra installs (Canonical
# publishes driver updates in the security pocket: an upgrade mid-run could leave a library that does
# not match the loaded module, or hold the dpkg lock): the running timers are stopped and the services
# masked with --runtime (under /run: gone at the next boot), the paused timers recorded in
# /run/hydra/upgrades-paused, and a transient timer (hydra-resume-upgrades) set to undo it all once the
# run's budget is spent, should the run never reach its end. The package_holds role resumes them at the
# end of the run, once the NVIDIA packages are held. Pausing and resuming leave the machine as it was:
# neither counts as a change.
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time

spec = json.loads(sys.argv[1])
started = time.time()
prefix = (os.environ.get("HYDRA_ROOT") or "/").rstrip("/")


def ran_out(name, var, limit, detail=""):
    sys.exit("the wait for %s ran out after %d s (%s, from the create timeout's budget)%s" % (
        name, limit, var, ": " + detail if detail else ""))


# cloud-init: still running when it is installed and has not written its result for this boot.
if os.access(prefix + "/usr/bin/cloud-init", os.X_OK) and not os.path.exists(prefix + "/run/cloud-init/result.json"):
    limit = int(spec["cloud_init"])
    try:
        p = subprocess.run(["cloud-init", "status", "--wait"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=limit)
    except subprocess.TimeoutExpired:
        ran_out("cloud-init", "hydra_wait_cloud_init_seconds", limit)
    # 0: done; 2: done with recoverable errors (cloud-init 23.4 and later)
    if p.returncode not in (0, 2):
        sys.exit("cloud-init failed (exit code %d): %s" % (p.returncode, p.stdout.strip()[-500:]))

# The dpkg lock's wait (with stopping a running upgrade) gets its share of what is left once cloud-init
# is done: the share computed when the waits began, shrunk in proportion to the time cloud-init took.
limit = int(spec["dpkg"])
left = int(spec.get("time_left") or 0)
if left > 0:
    limit = max(1, int(limit * max(0, left - (time.time() - started)) / left))
deadline = time.time() + limit

# Automatic upgrades paused for the run (see above). Only where systemd runs.
units = spec.get("units") or []
timers = spec.get("timers") or []
systemd = os.path.isdir(prefix + "/run/systemd/system") and shutil.which("systemctl")
PAUSED = prefix + "/run/hydra/upgrades-paused"
if systemd and timers and not spec.get("check"):
    p = subprocess.run(["systemctl", "is-active", "--"] + timers, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=60)
    running = [t for t, state in zip(timers, p.stdout.split()) if state in ("active", "activating")]
    try:
        with open(PAUSED) as f:
            earlier = f.read().split()  # paused by a run that did not reach its end
    except OSError:
        earlier = []
    paused = sorted(set(running + earlier))
    if paused:
        os.makedirs(os.path.dirname(PAUSED), mode=0o755, exist_ok=True)
        with open(PAUSED + ".tmp", "w") as f:
            f.write("\n".join(paused) + "\n")
        os.replace(PAUSED + ".tmp", PAUSED)
        sys.stderr.write("hydra: pausing automatic upgrades for this run (%s)\n" % " ".join(paused))
        for args in (["mask", "--runtime", "--"] + units, ["stop", "--"] + running):
            if args[-1] == "--":
                continue
            p = subprocess.run(["systemctl"] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               universal_newlines=True, timeout=120)
            if p.returncode != 0:
                sys.exit("systemctl %s failed: %s" % (" ".join(args), p.stdout.strip()[-500:]))
        # The safety net: resumed when the run's budget is spent, whatever became of the run.
        resume = "systemctl unmask --runtime -- %s; systemctl start -- $(cat %s); rm -f %s" % (
            " ".join(units), PAUSED, PAUSED)
        subprocess.run(["systemctl", "stop", "hydra-resume-upgrades.timer"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=60)
        subprocess.run(["systemctl", "reset-failed", "hydra-resume-upgrades.service"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=60)
        p = subprocess.run(["systemd-run", "--quiet", "--unit=hydra-resume-upgrades",
                            "--on-active=%ds" % max(600, int(spec.get("time_left") or 0)), "/bin/sh", "-c", resume],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=60)
        if p.returncode != 0:
            sys.stderr.write("hydra: no timer to resume automatic upgrades should the run stop early: %s\n" % p.stdout.strip()[-300:])

# A running automatic upgrade: stopping apt-daily-upgrade.service asks unattended-upgrade to stop after
# its current package.
if units and systemd:
    try:
        p = subprocess.run(["systemctl", "is-active", "--"] + units, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=max(1, deadline - time.time()))
    except subprocess.TimeoutExpired:
        ran_out("the dpkg lock", "hydra_wait_dpkg_lock_seconds", limit, "systemctl is-active did not answer")
    states = p.stdout.split()
    for unit, state in zip(units, states):
        if state not in ("active", "activating", "reloading"):
            continue
        sys.stderr.write("hydra: stopping %s for this run%s\n" % (unit, " (check mode: not stopped)" if spec.get("check") else ""))
        if spec.get("check"):
            continue
        try:
            p = subprocess.run(["systemctl", "stop", unit], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               universal_newlines=True, timeout=max(1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            ran_out("the dpkg lock", "hydra_wait_dpkg_lock_seconds", limit, "stopping %s took too long" % unit)
        if p.returncode != 0:
            sys.exit("systemctl stop %s failed: %s" % (unit, p.stdout.strip()[-500:]))

def held_elsewhere(path):
    """Whether a process holds a lock on path, from /proc/locks (for a lock file this user cannot open)."""
    st = os.stat(path)
    ident = "%02x:%02x:%d" % (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    with open("/proc/locks") as f:
        return any(ident in line.split() and "->" not in line for line in f)


for path in (prefix + "/var/lib/dpkg/lock-frontend", prefix + "/var/lib/dpkg/lock"):
    while True:
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            break
        except PermissionError:
            if not held_elsewhere(path):
                break
            if time.time() > deadline:
                ran_out("the dpkg lock", "hydra_wait_dpkg_lock_seconds", limit, "%s is still held" % path)
            time.sleep(3)
            continue
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.lockf(fd, fcntl.LOCK_UN)
            os.close(fd)
            break
        except OSError:
            os.close(fd)
            if time.time() > deadline:
                ran_out("the dpkg lock", "hydra_wait_dpkg_lock_seconds", limit, "%s is still held" % path)
            time.sleep(3)
