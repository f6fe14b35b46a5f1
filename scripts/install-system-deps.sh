#!/usr/bin/env bash
# Installs the Debian packages machined's tests and local services use. Idempotent; needs root.
set -euo pipefail
pkgs=(containerd runc etcd-server etcd-client docker-registry skopeo umoci busybox-static
      gdisk dosfstools mtools xfsprogs iproute2 zstd cpio kmod openssl util-linux procps)
missing=()
for p in "${pkgs[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p"); done
if [ "${#missing[@]}" -eq 0 ]; then echo "system packages: all present"; exit 0; fi
if [ "$(id -u)" -ne 0 ]; then echo "missing packages (${missing[*]}) and not root: install them or run as root" >&2; exit 1; fi
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
