#!/usr/bin/env bash
# Installs Debian packages the project needs; idempotent, needs root for anything missing.
# Without arguments: what the tests and local services use. With a file argument: the packages listed
# there (one or more per line, `#` comments), e.g. image/packages.txt for `make image` and the VM tests.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$#" -gt 0 ]; then
  mapfile -t pkgs < <(grep -v '^#' "$1" | tr ' ' '\n' | sed '/^$/d')
else
  pkgs=(containerd runc etcd-server etcd-client docker-registry skopeo umoci busybox-static
        gdisk dosfstools mtools xfsprogs iproute2 zstd cpio kmod openssl util-linux procps
        curl binutils gcc libc6-dev)
fi
missing=()
for p in "${pkgs[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p"); done
if [ "${#missing[@]}" -eq 0 ]; then echo "system packages: all present"; exit 0; fi
if [ "$(id -u)" -ne 0 ]; then echo "missing packages (${missing[*]}) and not root: install them or run as root" >&2; exit 1; fi
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
