#!/usr/bin/env bash
# Lints hydra's playbooks with Debian's ansible-lint (apt-get install ansible-lint) and the repository's
# .ansible-lint configuration. Exits non-zero on any finding, or when ansible-lint is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v ansible-lint >/dev/null; then
  echo "ansible-lint is missing: apt-get install ansible-lint (Debian/Ubuntu)" >&2
  exit 1
fi
# A private home, so that nothing from the caller's ~/.ansible or ~/.cache changes the result, and
# ansible-lint neither downloads nor installs anything.
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
export ANSIBLE_HOME="$home/ansible" ANSIBLE_LOCAL_TEMP="$home/tmp" XDG_CACHE_HOME="$home/cache"
export ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=False ANSIBLE_NOCOLOR=1 NO_COLOR=1
unset ANSIBLE_CONFIG
cd playbooks
playbooks=(*.yml)
# --strict: warnings fail too. The configuration lives at the repository's root.
exec ansible-lint --nocolor --strict -c ../.ansible-lint "${playbooks[@]}"
