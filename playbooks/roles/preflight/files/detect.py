# hydra preflight: report, as one JSON object, what the machine already has, so every later role can
# skip what is present without probing again. Reads only; needs nothing beyond Python 3.
import json
import os
import pwd
import shutil
import subprocess
import sys
import urllib.request

execlet_bin = sys.argv[1] if len(sys.argv) > 1 else "/usr/local/bin/hydra-execlet"

# hydra's sandbox machines keep the files hydra manages under HYDRA_ROOT; real machines use "/".
root = os.environ.get("HYDRA_ROOT") or "/"
prefix = root.rstrip("/")


def run(argv, timeout=120):
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                           timeout=timeout)
        return p.returncode, p.stdout.strip(), p.stderr.strip()
    except OSError as e:
        return 127, "", "%s: %s" % (argv[0], e.strerror)
    except subprocess.TimeoutExpired:
        return 124, "", "%s: timed out" % argv[0]


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
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as r:
            return r.status == 200
    except Exception:
        return False


pw = pwd.getpwuid(os.getuid())
rel = os_release()
out = {
    "user": pw.pw_name,
    "home": pw.pw_dir,
    "root": root,
    "sandbox": os.environ.get("HYDRA_SANDBOX") == "1",
    "distribution": rel.get("ID", ""),
    "distribution_version": rel.get("VERSION_ID", ""),
    "arch": os.uname().machine,
    "cloud_init": os.access(prefix + "/usr/bin/cloud-init", os.X_OK),
    "dpkg": os.path.exists(prefix + "/var/lib/dpkg/lock-frontend"),
    "apt": os.path.isdir(prefix + "/etc/apt/apt.conf.d"),
    "nvswitch_count": 0,
    "execlet_present": os.path.exists(prefix + execlet_bin),
}
nvs = prefix + "/proc/driver/nvidia-nvswitch/devices"
if os.path.isdir(nvs):
    out["nvswitch_count"] = len(os.listdir(nvs))

rc, so, se = run(["nvidia-smi", "--query-gpu=driver_version,persistence_mode", "--format=csv,noheader"])
first = [f.strip() for f in so.splitlines()[0].split(",")] if rc == 0 and so else []
out["driver"] = {
    "ok": len(first) >= 1,
    "version": first[0] if first else "",
    "persistence": first[1] if len(first) > 1 else "",
    "error": "" if first else (se or so or "nvidia-smi gave no output")[:500],
}
out["tools"] = {t: shutil.which(t) is not None for t in ("nvidia-ctk", "dcgmi", "nv-fabricmanager", "docker")}

rc, so, _ = run(["docker", "info", "--format", "{" + "{json .Runtimes}" + "}"]) if out["tools"]["docker"] else (127, "", "")
out["docker"] = {"ok": rc == 0, "nvidia_runtime": rc == 0 and '"nvidia"' in so}

services = {}
if shutil.which("systemctl"):
    for unit in ("nvidia-fabricmanager", "nvidia-dcgm", "docker", "hydra-execlet"):
        services[unit] = {
            "active": run(["systemctl", "is-active", "--quiet", unit])[0] == 0,
            "enabled": run(["systemctl", "is-enabled", "--quiet", unit])[0] == 0,
        }
out["services"] = services

ports = {
    "node_exporter": int(os.environ.get("HYDRA_NODE_EXPORTER_PORT") or 9100),
    "dcgm_exporter": int(os.environ.get("HYDRA_DCGM_EXPORTER_PORT") or 9400),
}
out["exporters"] = {name: {"port": port, "answers": answers(port)} for name, port in ports.items()}
print(json.dumps(out, sort_keys=True))
