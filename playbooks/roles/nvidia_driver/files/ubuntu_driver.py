# hydra: which of Canonical's driver builds to install, read from the archive apt knows (apt-cache),
# printed as one JSON object: {"version": upstream version, "full": the package version, "error": why
# none}. Ubuntu's archive keeps only recent builds of a "-server" branch, turns an ended branch into a
# transitional package depending on a newer branch (never installed: it is another branch), and builds
# the precompiled module of each kernel against one driver version, named in the module package's
# dependency on nvidia-kernel-common-<branch>-server (>= version).
#
#   ubuntu_driver.py BRANCH MODULE_PACKAGE|"" WANTED_VERSION|"" KERNEL
import json
import re
import subprocess
import sys

branch, module, wanted, kernel = sys.argv[1:5]
utils = "nvidia-utils-%s-server" % branch


def apt_cache(*args):
    p = subprocess.run(["apt-cache"] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=120)
    return p.returncode, p.stdout


def depends(pkg, version):
    rc, out = apt_cache("show", "%s=%s" % (pkg, version))
    m = re.search(r"(?m)^Depends: (.*)$", out) if rc == 0 else None
    return m.group(1) if m else ""


def answer(version="", full="", error=""):
    print(json.dumps({"version": version, "full": full, "error": " ".join(error.split())}))
    sys.exit(0)


rc, out = apt_cache("madison", utils)
versions = [f.split("|")[1].strip() for f in out.splitlines() if f.count("|") >= 2] if rc == 0 else []
rc, out = apt_cache("policy", utils)
m = re.search(r"(?m)^\s*Candidate: (\S+)", out)
candidate = m.group(1) if m and m.group(1) != "(none)" else ""


def transitional(full):
    other = [b for b in re.findall(r"nvidia-utils-([0-9]+)-server", depends(utils, full)) if b != branch]
    return other[0] if other else ""


if not versions:
    answer(error="Ubuntu's archive has no %s (no driver of branch %s in the suites this machine lists)" % (utils, branch))
needs = ""
if module:
    rc, out = apt_cache("show", "--no-all-versions", module)
    if rc != 0:
        to = transitional(candidate) if candidate else ""
        if to:
            answer(error="Ubuntu's archive carries branch %s only as a transitional package (%s %s depends on nvidia-utils-%s-server): "
                   "installing it would install branch %s. Set hydra_nvidia_driver_branch to \"%s\", or use hydra_nvidia_driver_source cuda"
                   % (branch, utils, candidate, to, to, to))
        answer(error="Ubuntu's archive has no precompiled module of branch %s for kernel %s (the kernel the machine boots into; "
               "no package %s): use hydra_nvidia_driver_kernel_modules dkms, or boot a kernel the archive has modules for" % (branch, kernel, module))
    m = re.search(r"nvidia-kernel-common-%s-server \(>= ([^)-]+)" % re.escape(branch), out)
    needs = m.group(1) if m else ""
want = needs or wanted or (candidate.split("-")[0] if candidate else "")
if wanted and needs and wanted != needs:
    answer(error="the precompiled module of kernel %s (%s) is built for driver %s, not hydra_nvidia_driver_version %s: "
           "leave the version unset, or use hydra_nvidia_driver_kernel_modules dkms" % (kernel, module, needs, wanted))
full = next((v for v in versions if v.split("-")[0] == want), "")
if not full:
    answer(error="Ubuntu's archive carries %s %s, not %s%s (it keeps only recent builds of a branch)%s" % (
        utils, ", ".join(versions), want, " (the version kernel %s's precompiled module is built for)" % kernel if needs else "",
        ": leave hydra_nvidia_driver_version unset" if wanted and not needs else
        ": update the kernel to the newest, or use hydra_nvidia_driver_kernel_modules dkms" if needs else ""))
to = transitional(full)
if to:
    answer(error="Ubuntu's archive carries branch %s only as a transitional package (%s %s depends on nvidia-utils-%s-server): "
           "installing it would install branch %s. Set hydra_nvidia_driver_branch to \"%s\", or use hydra_nvidia_driver_source cuda"
           % (branch, utils, full, to, to, to))
answer(version=want, full=full)
