# hydra preflight waits, each bounded by its share of the create timeout. When a wait runs out, the
# message names it and the variable that bounds it. Reads only.
#
#   waits.py cloud-init SECONDS           wait for cloud-init to finish (cloud-init status --wait)
#   waits.py dpkg-lock SECONDS PATH...    wait until nothing holds the dpkg locks
import fcntl
import os
import subprocess
import sys
import time

what, limit = sys.argv[1], int(sys.argv[2])
deadline = time.time() + limit


def ran_out(name, var, detail=""):
    sys.exit("the wait for %s ran out after %d s (%s, from the create timeout's budget)%s" % (
        name, limit, var, ": " + detail if detail else ""))


if what == "cloud-init":
    try:
        p = subprocess.run(["cloud-init", "status", "--wait"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=limit)
    except subprocess.TimeoutExpired:
        ran_out("cloud-init", "hydra_wait_cloud_init_seconds")
    # 0: done; 2: done with recoverable errors (cloud-init 23.4 and later)
    if p.returncode not in (0, 2):
        sys.exit("cloud-init failed (exit code %d): %s" % (p.returncode, p.stdout.strip()[-500:]))
    print(p.stdout.strip().splitlines()[-1] if p.stdout.strip() else "done")
elif what == "dpkg-lock":
    for path in sys.argv[3:]:
        while True:
            try:
                fd = os.open(path, os.O_RDWR)
            except FileNotFoundError:
                break
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.lockf(fd, fcntl.LOCK_UN)
                os.close(fd)
                break
            except OSError:
                os.close(fd)
                if time.time() > deadline:
                    ran_out("the dpkg lock", "hydra_wait_dpkg_lock_seconds", "%s is still held" % path)
                time.sleep(3)
    print("free")
else:
    sys.exit("waits.py: unknown wait %r" % what)
