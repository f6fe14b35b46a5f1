#!/usr/bin/env bash
# Installs the host tools `make image` and the VM tests use (image/packages.txt). Idempotent; needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t pkgs < <(grep -v '^#' image/packages.txt | tr ' ' '\n' | sed '/^$/d')
missing=()
for p in "${pkgs[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p"); done
if [ "${#missing[@]}" -eq 0 ]; then echo "image packages: all present"; exit 0; fi
if [ "$(id -u)" -ne 0 ]; then echo "missing packages (${missing[*]}) and not root: install them or run as root" >&2; exit 1; fi
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
