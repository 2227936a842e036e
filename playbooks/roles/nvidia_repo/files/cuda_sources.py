# hydra: make room for NVIDIA's CUDA repository as cuda-keyring lists it (signed by KEYRING). An image
# that already lists the same repository with another keyring (or none) breaks every apt update with
# "Conflicting values set for option Signed-By"; such entries are switched off: a line of a .list file is
# commented out, a deb822 .sources file is renamed to .sources.hydra-disabled. Prints "changed" or
# "unchanged".
#
#   cuda_sources.py PREFIX KEYRING
import os
import re
import sys

prefix, keyring = sys.argv[1].rstrip("/"), sys.argv[2]
REPO = "developer.download.nvidia.com/compute/cuda/repos"
changed = False
files = [prefix + "/etc/apt/sources.list"]
d = prefix + "/etc/apt/sources.list.d"
if os.path.isdir(d):
    files += sorted(os.path.join(d, n) for n in os.listdir(d) if n.endswith((".list", ".sources")))
for path in files:
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        continue
    if REPO not in text:
        continue
    if path.endswith(".sources"):
        m = re.search(r"^Signed-By:\s*(\S+)", text, re.M | re.I)
        if not m or m.group(1) != keyring:
            os.replace(path, path + ".hydra-disabled")
            changed = True
        continue
    out, here = [], False
    for line in text.splitlines(True):
        s = line.strip()
        if s.startswith("deb") and REPO in s:
            m = re.search(r"signed-by=([^\s\]]+)", s)
            if not m or m.group(1) != keyring:
                line = "# disabled by hydra (NVIDIA's CUDA repository with another keyring): " + line
                here = True
        out.append(line)
    if here:
        changed = True
        tmp = path + ".hydra-tmp"
        with open(tmp, "w") as f:
            f.write("".join(out))
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
print("changed" if changed else "unchanged")
