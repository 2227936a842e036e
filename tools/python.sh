#!/usr/bin/env bash
# Builds the CPython Debian 13 ships (its source package python3.13, upstream tarball only) for this
# machine, once, and prints the path of its python3. It is the controller Python for ansible-core
# releases that need a newer Python than the system's (ansible-core 2.20 needs >= 3.12; Debian 12 has 3.11).
#
#   tools/python.sh            prints <prefix>/bin/python3, building it first when not cached
#
# Kept under ${XDG_CACHE_HOME:-~/.cache}/hydra/python/<version>/. The tarball is the one trixie's
# main/source/Sources index names for python3.13 (that index's SHA256 is the one trixie's InRelease
# gives); it is checked against that SHA256 before it is unpacked. Build: plain ./configure && make
# && make install (no PGO, no tests). Needs gcc, make, pkg-config and the -dev packages of the modules
# ansible uses: libssl-dev libffi-dev zlib1g-dev libbz2-dev liblzma-dev (tools/install-deps.sh installs
# them; expat is CPython's own copy). Concurrent runs build once (flock). Measured: 725 s cold on
# this 2-core machine under a load average of about 20 (4 min of CPU); instant when cached.
# HYDRA_ANSIBLE_OFFLINE=1 fails instead of downloading.
set -euo pipefail
version=3.13.5                      # trixie's python3.13 3.13.5-2+deb13u5
file=pool/main/p/python3.13/python3.13_3.13.5.orig.tar.xz
sha=93e583f243454e6e9e4588ca2c2662206ad961659863277afcdb96801647d640
archive=http://deb.debian.org/debian
cache=${XDG_CACHE_HOME:-$HOME/.cache}/hydra/python
dir=$cache/$version
if [ -x "$dir/bin/python3" ]; then echo "$dir/bin/python3"; exit 0; fi
mkdir -p "$cache"
exec 9>"$cache/.lock-$version"
flock 9
if [ -x "$dir/bin/python3" ]; then echo "$dir/bin/python3"; exit 0; fi
[ "${HYDRA_ANSIBLE_OFFLINE:-0}" != 1 ] || { echo "offline, and Python $version is not in $cache" >&2; exit 1; }
tmp=$(mktemp -d "$cache/.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
curl -fsS --retry 3 --max-time 600 -o "$tmp/src.tar.xz" "$archive/$file"
echo "$sha  $tmp/src.tar.xz" | sha256sum -c --quiet - >&2 || { echo "$archive/$file does not match trixie's Sources SHA256" >&2; exit 1; }
tar -C "$tmp" -xJf "$tmp/src.tar.xz"
start=$SECONDS
(
  cd "$tmp/Python-$version"
  # Built into a staging prefix named like the final one, then moved: an interrupted build leaves nothing.
  ./configure --prefix="$dir" --without-ensurepip --disable-test-modules >"$tmp/configure.log" 2>&1 ||
    { tail -30 "$tmp/configure.log" >&2; exit 1; }
  make -j"$(nproc)" >"$tmp/make.log" 2>&1 || { tail -40 "$tmp/make.log" >&2; exit 1; }
  make install DESTDIR="$tmp/dest" >"$tmp/install.log" 2>&1 || { tail -40 "$tmp/install.log" >&2; exit 1; }
)
# The modules ansible-core imports must have been built (a missing -dev package only warns in make).
"$tmp/dest$dir/bin/python3" -c 'import ssl, ctypes, zlib, bz2, lzma, hashlib, json, select, pyexpat' >&2 ||
  { echo "Python $version was built without a module ansible needs; see tools/python.sh for the -dev packages" >&2; exit 1; }
rm -rf "$dir"
mv "$tmp/dest$dir" "$dir"
echo "built Python $version in $((SECONDS - start)) s" >&2
echo "$dir/bin/python3"
