#!/usr/bin/env bash
# Fetches the ansible-core a distribution ships, as its own .deb from its archive, and prints
# "<version> <path of an ansible-playbook that runs it with /usr/bin/python3>".
#
#   tools/ansible-core.sh debian-12|ubuntu-24.04|ubuntu-25.04|debian-13|ubuntu-25.10|ubuntu-26.04
#   tools/ansible-core.sh <archive URL> <suite>[,<suite>...] <component> <arch>   (any other release)
#
# The suites' InRelease files name the SHA256 of their Packages.xz; the index is fetched (by hash where
# the archive offers it) only when that changed, and the newest ansible-core among the suites is taken. The .deb is downloaded once, checked
# against the SHA256 the index gives, unpacked with `dpkg-deb -x` and kept by version under
# ${XDG_CACHE_HOME:-~/.cache}/hydra/ansible-core/<version>/. Its Python dependencies (jinja2, yaml,
# cryptography, packaging, resolvelib) are the system's python3 packages; nothing comes from pip.
# HYDRA_ANSIBLE_OFFLINE=1 uses what the cache resolved last and fails when it holds nothing.
# Not checked: InRelease's signature (no distribution's keyring is assumed here), and an index that does
# not match its InRelease (a cache between here and the mirror serving an older InRelease) is used with
# a warning; the .deb is always checked against the index it came from.
set -euo pipefail
case "${1:-}" in
  debian-12) set -- http://deb.debian.org/debian bookworm,bookworm-updates main all ;;
  debian-13) set -- http://deb.debian.org/debian trixie,trixie-updates main all ;;
  ubuntu-24.04) set -- http://archive.ubuntu.com/ubuntu noble,noble-updates,noble-security universe amd64 ;;
  ubuntu-25.04) set -- http://archive.ubuntu.com/ubuntu plucky,plucky-updates,plucky-security universe amd64 ;;
  ubuntu-25.10) set -- http://archive.ubuntu.com/ubuntu questing,questing-updates,questing-security universe amd64 ;;
  ubuntu-26.04) set -- http://archive.ubuntu.com/ubuntu resolute,resolute-updates,resolute-security universe amd64 ;;
esac
if [ $# -ne 4 ]; then
  sed -n '2,7p' "$0" >&2
  exit 2
fi
archive=${1%/} suites=$2 component=$3 arch=$4
cache=${XDG_CACHE_HOME:-$HOME/.cache}/hydra/ansible-core
mkdir -p "$cache/index"
tmp=$(mktemp -d "$cache/.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
get() { curl -fsS --retry 3 --max-time 300 -o "$2" "$1"; }

# One suite: prints "<version> <filename> <sha256>" of its ansible-core, or nothing when it has none.
resolve() {
  local suite=$1 key want have
  key=$(echo "$archive $suite $component $arch" | tr -c 'A-Za-z0-9.\n-' _)
  if [ "${HYDRA_ANSIBLE_OFFLINE:-0}" = 1 ]; then
    if [ ! -f "$cache/index/$key.entry" ]; then
      [ "$suite" != "${suites%%,*}" ] && return 0 # an -updates suite with nothing (or nothing yet)
      echo "offline, and nothing cached for $archive $suite" >&2
      return 1
    fi
    cat "$cache/index/$key.entry"
    return
  fi
  if ! get "$archive/dists/$suite/InRelease" "$tmp/InRelease" 2>"$tmp/err"; then
    # An -updates or -security suite that does not exist (yet) has nothing to add.
    grep -q 'error: 404' "$tmp/err" && [ "$suite" != "${suites%%,*}" ] && return 0
    cat "$tmp/err" >&2
    return 1
  fi
  want=$(awk -v f="$component/binary-$arch/Packages.xz" '/^SHA256:/{s=1; next} /^[^ ]/{s=0} s && $3 == f {print $1}' "$tmp/InRelease")
  [ -n "$want" ] || { echo "$archive $suite: InRelease lists no $component/binary-$arch/Packages.xz" >&2; return 1; }
  have=$(cat "$cache/index/$key.sha256" 2>/dev/null || true)
  if [ "$want" != "$have" ]; then
    # By hash where the archive offers it (a mirror in the middle of a sync serves the index the
    # InRelease names); else, or when that is gone, by name. An index that does not match its
    # InRelease (a cache between here and the mirror keeps an older InRelease) is said, and used: the
    # .deb is checked against the index either way.
    if ! { grep -q '^Acquire-By-Hash: yes' "$tmp/InRelease" &&
           get "$archive/dists/$suite/$component/binary-$arch/by-hash/SHA256/$want" "$tmp/Packages.xz" 2>/dev/null; }; then
      get "$archive/dists/$suite/$component/binary-$arch/Packages.xz" "$tmp/Packages.xz"
    fi
    echo "$want  $tmp/Packages.xz" | sha256sum -c --status - ||
      echo "warning: $archive $suite: $component/binary-$arch/Packages.xz does not match its InRelease; used as served" >&2
    xz -dc "$tmp/Packages.xz" | awk '
      /^Package: /{p = ($2 == "ansible-core")} p && /^Version: /{v=$2} p && /^Filename: /{f=$2} p && /^SHA256: /{s=$2}
      /^$/{if (p && v != "") print v, f, s; p=0; v=""}
      END{if (p && v != "") print v, f, s}' > "$tmp/entry"
    mv "$tmp/entry" "$cache/index/$key.entry"
    echo "$want" > "$cache/index/$key.sha256"
  fi
  cat "$cache/index/$key.entry"
}

best=""
IFS=, read -r -a list <<<"$suites"
for suite in "${list[@]}"; do
  while read -r v f s; do
    [ -n "$v" ] || continue
    if [ -z "$best" ] || dpkg --compare-versions "$v" gt "${best%% *}"; then best="$v $f $s"; fi
  done < <(resolve "$suite")
done
[ -n "$best" ] || { echo "no ansible-core in $archive $suites $component" >&2; exit 1; }
read -r version file sha <<<"$best"
dir=$cache/$version
if [ ! -x "$dir/bin/ansible-playbook" ]; then
  [ "${HYDRA_ANSIBLE_OFFLINE:-0}" != 1 ] || { echo "offline, and ansible-core $version is not in $cache" >&2; exit 1; }
  get "$archive/$file" "$tmp/core.deb"
  echo "$sha  $tmp/core.deb" | sha256sum -c --quiet - >&2 || { echo "$archive/$file does not match its index's SHA256" >&2; exit 1; }
  mkdir -p "$tmp/v/bin"
  dpkg-deb -x "$tmp/core.deb" "$tmp/v/root"
  mv "$tmp/core.deb" "$tmp/v/$(basename "$file")"
  site=$(cd "$tmp/v/root" && ls -d usr/lib/python3/dist-packages)
  for tool in ansible-playbook ansible ansible-config; do
    printf '#!/bin/sh\n# ansible-core %s from %s, with the system Python and its python3 packages.\nPYTHONPATH=%s${PYTHONPATH:+:$PYTHONPATH} exec /usr/bin/python3 %s "$@"\n' \
      "$version" "$archive/$file" "$dir/root/$site" "$dir/root/usr/bin/$tool" > "$tmp/v/bin/$tool"
    chmod +x "$tmp/v/bin/$tool"
  done
  # Another fetch of the same version (another test process) may have finished first: its copy stays.
  if [ ! -x "$dir/bin/ansible-playbook" ]; then
    rm -rf "$dir"
    mv -T "$tmp/v" "$dir" 2>/dev/null || [ -x "$dir/bin/ansible-playbook" ]
  fi
fi
# Byte-compiled once (as the distribution's postinst does with py3compile): without it every
# ansible-playbook, and each worker it forks, compiles every module it imports from source on every run
# (Python writes no cache under PYTHONDONTWRITEBYTECODE). Modules for a newer Python fail to compile with
# this one: tools/ansible-core-python.sh compiles them with its own.
stamp=$dir/.compiled-$(/usr/bin/python3 -c 'import sys; print(sys.implementation.cache_tag)')
if [ ! -f "$stamp" ]; then
  /usr/bin/python3 -m compileall -q -j 0 "$dir/root/usr/lib/python3/dist-packages" >/dev/null 2>&1 || true
  touch "$stamp"
fi
echo "$version $dir/bin/ansible-playbook"
