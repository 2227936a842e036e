#!/usr/bin/env bash
# Installs what hydra's quickstart and tests need on a Debian machine: ansible-core (provisioning),
# ansible-lint (the playbooks' lint in make test), openssh-server and openssh-client (the sandbox's
# machines are real sshd processes on loopback), postgresql (the pipeline tests keep Terraform state in
# the `pg` backend on a private PostgreSQL server each test starts and stops; no system service is used),
# systemd-container and debootstrap (the real-OS tests boot a Debian 12 system container with
# systemd-nspawn from a debootstrap tree; internal/testsupport/realos), sudo (the preflight's probe reads root-only
# files with sudo -n as a login user; playbooks/detect_test.go), curl and xz-utils (tools/ansible-core.sh
# fetches the distributions' ansible-core .debs for TestAnsibleCoreMatrix; they run on the system's
# python3-jinja2, -yaml, -cryptography, -packaging and -resolvelib, which ansible-core brings), gcc,
# make, pkg-config and libssl-dev, libffi-dev, zlib1g-dev, libbz2-dev, liblzma-dev (tools/python.sh
# builds Debian 13's CPython with them, for the ansible-core releases Debian 12's Python is too old for).
# Go and the Terraform CLI must already be there (this machine kind ships both).
set -euo pipefail
need=()
command -v ansible-playbook >/dev/null || need+=(ansible-core)
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v ssh >/dev/null || need+=(openssh-client)
command -v ansible-lint >/dev/null || need+=(ansible-lint)
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || command -v initdb >/dev/null || need+=(postgresql)
command -v systemd-nspawn >/dev/null || need+=(systemd-container)
command -v debootstrap >/dev/null || [ -x /usr/sbin/debootstrap ] || need+=(debootstrap)
[ -x /usr/bin/sudo ] || need+=(sudo)
command -v curl >/dev/null || need+=(curl)
command -v xz >/dev/null || need+=(xz-utils)
for m in jinja2 yaml cryptography packaging resolvelib; do
  [ -x /usr/bin/python3 ] && /usr/bin/python3 -c "import $m" 2>/dev/null || need+=("python3-$m")
done
command -v gcc >/dev/null || need+=(gcc libc6-dev)
command -v make >/dev/null || need+=(make)
command -v pkg-config >/dev/null || need+=(pkg-config)
for p in libssl-dev libffi-dev zlib1g-dev libbz2-dev liblzma-dev; do
  dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "hydra needs: ${need[*]}. Install them with: sudo apt-get install -y ${need[*]}" >&2
    exit 1
  fi
  echo "installing ${need[*]} with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
if ! command -v go >/dev/null; then
  echo "Go is missing: install Go 1.26 or later (https://go.dev/doc/install)" >&2
  exit 1
fi
tf=${TERRAFORM:-$(command -v terraform || echo /usr/local/bin/terraform)}
if [ ! -x "$tf" ]; then
  echo "The Terraform CLI is missing: install Terraform 1.11 or later and put it on PATH (or set TERRAFORM=/path/to/terraform)" >&2
  exit 1
fi
