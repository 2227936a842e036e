# hydra provisioning marker: a small JSON file recording that hydra's playbooks completed a run on this
# machine, with which provisioning digest (playbooks and variables) and playbook, and when. hydra reads
# it to adopt a machine (terraform import) without running the playbooks again.
#
#   marker.py invalidate PATH DIGEST PLAYBOOK       remove a marker of another digest or playbook
#   marker.py record PATH DIGEST PLAYBOOK TIME [MACHINE]
#                                                   write the marker unless it already says the same;
#                                                   MACHINE (JSON) says what kind of machine it is and
#                                                   how its exporters run
#
# Prints "unchanged", "removed", "written" or "refreshed" (the same provisioning, its health criteria
# recorded anew, its time kept). Needs nothing beyond Python 3.
import json
import os
import sys
import tempfile

action, path, digest, playbook = sys.argv[1:5]


def current():
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}


cur = current()
machine = json.loads(sys.argv[6]) if action == "record" and len(sys.argv) > 6 and sys.argv[6] else None


def without_health_spec(m):
    """The machine record minus the health criteria, which a re-run may word differently."""
    if not isinstance(m, dict):
        return m
    return {k: v for k, v in m.items() if k != "health_spec"}


same = (isinstance(cur, dict) and cur.get("digest") == digest and cur.get("playbook") == playbook and
        isinstance(cur.get("provisioned_at"), str) and
        (action != "record" or without_health_spec(cur.get("machine")) == without_health_spec(machine)))

if action == "invalidate":
    if cur is None or same:
        print("unchanged")
    else:
        os.remove(path)
        print("removed")
elif action == "record":
    if same and cur.get("machine") == machine:
        print("unchanged")
    else:
        if same:
            # The same provisioning, with health criteria worded anew: keep when it happened.
            sys.argv[5] = cur["provisioned_at"]
        d = os.path.dirname(path)
        os.makedirs(d, mode=0o755, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".provisioned.")
        try:
            with os.fdopen(fd, "w") as f:
                record = {"digest": digest, "playbook": playbook, "provisioned_at": sys.argv[5]}
                if machine is not None:
                    record["machine"] = machine
                json.dump(record, f, indent=2, sort_keys=True)
                f.write("\n")
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
        # "refreshed" is no change of the provisioning (the task reports changed only on "written").
        print("refreshed" if same else "written")
else:
    sys.exit("marker.py: unknown action %r" % action)
