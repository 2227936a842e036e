#!/usr/bin/env bash
# Runs a distribution's ansible-core with a Python other than the system's, for the ansible-core
# releases the system Python is too old for (Ubuntu 26.04's 2.20 needs >= 3.12; Debian 12 has 3.11).
# Prints "<version> <path of an ansible-playbook>", as tools/ansible-core.sh does.
#
#   tools/ansible-core-python.sh ubuntu-26.04|ubuntu-25.10|ubuntu-24.04|debian-13|debian-12
#
# ansible-core is tools/ansible-core.sh's (that distribution's .deb), the Python is tools/python.sh's
# (CPython built from Debian 13's source package), and the Python libraries ansible-core runs on are that
# same distribution's .debs, unpacked beside it: python3-jinja2, python3-markupsafe, python3-yaml,
# python3-packaging, python3-resolvelib. Their compiled speedups are built for the distribution's own
# Python and do not load; markupsafe and yaml fall back to their pure-Python code. Not taken:
# python3-cryptography (its extension links the distribution's libssl; ansible-core imports it only for
# vault and password hashing, and without it says so when those are used), and the Depends a playbook
# run does not import (dnspython, httplib2, netaddr: lookup and filter plugins). A playbook run of 2.20.1
# imports jinja2, markupsafe, yaml and packaging (resolvelib is ansible-galaxy's).
# Each .deb is checked against the SHA256 its suite's Packages.xz gives, whose SHA256 the suite's InRelease
# gives (signature not checked, as in tools/ansible-core.sh). Kept under
# ${XDG_CACHE_HOME:-~/.cache}/hydra/ansible-core/<version>/python-<python version>/.
# HYDRA_ANSIBLE_OFFLINE=1 uses only the cache.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
case "${1:-}" in
  debian-12) archive=http://deb.debian.org/debian suites=bookworm,bookworm-updates components=main ;;
  debian-13) archive=http://deb.debian.org/debian suites=trixie,trixie-updates components=main ;;
  ubuntu-24.04) archive=http://archive.ubuntu.com/ubuntu suites=noble,noble-updates,noble-security components=main,universe ;;
  ubuntu-25.10) archive=http://archive.ubuntu.com/ubuntu suites=questing,questing-updates,questing-security components=main,universe ;;
  ubuntu-26.04) archive=http://archive.ubuntu.com/ubuntu suites=resolute,resolute-updates,resolute-security components=main,universe ;;
  *) sed -n '2,6p' "$0" >&2; exit 2 ;;
esac
arch=amd64
libs="python3-jinja2 python3-markupsafe python3-yaml python3-packaging python3-resolvelib"
read -r version playbook < <("$here/ansible-core.sh" "$1")
[ -n "${playbook:-}" ] || exit 1
python=$("$here/python.sh")
pyversion=$("$python" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
core=$(dirname "$(dirname "$playbook")")
dir=$core/python-$pyversion
# ansible-core and the libraries byte-compiled once for this Python (see tools/ansible-core.sh).
compiled() {
  local stamp
  stamp=$dir/.compiled-$("$python" -c 'import sys; print(sys.implementation.cache_tag)')
  if [ ! -f "$stamp" ]; then
    "$python" -m compileall -q -j 0 "$core/root/usr/lib/python3/dist-packages" "$dir/root/usr/lib/python3/dist-packages" >/dev/null 2>&1 || true
    touch "$stamp"
  fi
}
if [ -x "$dir/bin/ansible-playbook" ]; then compiled; echo "$version $dir/bin/ansible-playbook"; exit 0; fi
[ "${HYDRA_ANSIBLE_OFFLINE:-0}" != 1 ] || { echo "offline, and ansible-core $version with Python $pyversion is not in $core" >&2; exit 1; }
cache=${XDG_CACHE_HOME:-$HOME/.cache}/hydra/ansible-core
mkdir -p "$cache/index"
tmp=$(mktemp -d "$cache/.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
get() { curl -fsS --retry 3 --max-time 300 -o "$2" "$1"; }

# Every suite and component: "<package> <version> <filename> <sha256>" of the libraries it has.
IFS=, read -r -a slist <<<"$suites"
IFS=, read -r -a clist <<<"$components"
: > "$tmp/all"
for suite in "${slist[@]}"; do
  if ! get "$archive/dists/$suite/InRelease" "$tmp/InRelease" 2>"$tmp/err"; then
    grep -q 'error: 404' "$tmp/err" && [ "$suite" != "${slist[0]}" ] && continue
    cat "$tmp/err" >&2; exit 1
  fi
  for component in "${clist[@]}"; do
    want=$(awk -v f="$component/binary-$arch/Packages.xz" '/^SHA256:/{s=1; next} /^[^ ]/{s=0} s && $3 == f {print $1}' "$tmp/InRelease")
    [ -n "$want" ] || { echo "$archive $suite: InRelease lists no $component/binary-$arch/Packages.xz" >&2; exit 1; }
    entry=$cache/index/libs-$want.entry
    if [ ! -f "$entry" ]; then
      get "$archive/dists/$suite/$component/binary-$arch/Packages.xz" "$tmp/Packages.xz"
      echo "$want  $tmp/Packages.xz" | sha256sum -c --status - ||
        echo "warning: $archive $suite: $component/binary-$arch/Packages.xz does not match its InRelease; used as served" >&2
      xz -dc "$tmp/Packages.xz" | awk -v libs=" $libs " '
        /^Package: /{p = index(libs, " " $2 " ") ? $2 : ""} p != "" && /^Version: /{v=$2} p != "" && /^Filename: /{f=$2} p != "" && /^SHA256: /{s=$2}
        /^$/{if (p != "" && v != "") print p, v, f, s; p=""; v=""}
        END{if (p != "" && v != "") print p, v, f, s}' > "$tmp/entry"
      mv "$tmp/entry" "$entry"
    fi
    cat "$entry" >> "$tmp/all"
  done
done
mkdir -p "$tmp/v/bin" "$tmp/v/debs"
for lib in $libs; do
  best=""
  while read -r p v f s; do
    [ "$p" = "$lib" ] || continue
    if [ -z "$best" ] || dpkg --compare-versions "$v" gt "${best%% *}"; then best="$v $f $s"; fi
  done < "$tmp/all"
  [ -n "$best" ] || { echo "no $lib in $archive $suites ($components)" >&2; exit 1; }
  read -r v f s <<<"$best"
  get "$archive/$f" "$tmp/v/debs/$(basename "$f")"
  echo "$s  $tmp/v/debs/$(basename "$f")" | sha256sum -c --quiet - >&2 || { echo "$archive/$f does not match its index's SHA256" >&2; exit 1; }
  dpkg-deb -x "$tmp/v/debs/$(basename "$f")" "$tmp/v/root"
done
site="$core/root/usr/lib/python3/dist-packages:$dir/root/usr/lib/python3/dist-packages"
for tool in ansible-playbook ansible ansible-config; do
  printf '#!/bin/sh\n# ansible-core %s with Python %s (tools/python.sh) and %s'"'"'s python3 libraries (debs/).\nPYTHONPATH=%s${PYTHONPATH:+:$PYTHONPATH} exec %s %s "$@"\n' \
    "$version" "$pyversion" "$1" "$site" "$python" "$core/root/usr/bin/$tool" > "$tmp/v/bin/$tool"
  chmod +x "$tmp/v/bin/$tool"
done
rm -rf "$dir"
mv "$tmp/v" "$dir" 2>/dev/null || [ -x "$dir/bin/ansible-playbook" ] # another run for the same versions won
compiled
echo "$version $dir/bin/ansible-playbook"
