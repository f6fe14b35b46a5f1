#!/usr/bin/env bash
# Writes containerd registry mirror files (the hosts.toml format of CRI registry.config_path, and of
# `ctr --hosts-dir`): OUT/<upstream host>/hosts.toml for registry.k8s.io, ghcr.io and docker.io, each
# sending pulls and resolves to the registry at ADDR (plain HTTP; image/kube/push.sh put the images there)
# before the upstream server. Upstream stays the fallback, as with any mirror; --no-fallback makes ADDR the
# server too, so that nothing is ever sent past loopback (what tests use).
# Usage: image/kube/mirrors.sh OUT ADDR [--no-fallback]    e.g. image/kube/mirrors.sh /tmp/certs.d 127.0.0.1:5000
set -euo pipefail
[ $# -eq 2 ] || { [ $# -eq 3 ] && [ "$3" = --no-fallback ]; } || { echo "usage: $0 OUT_DIR REGISTRY_ADDR(host:port) [--no-fallback]" >&2; exit 2; }
out=$1 addr=$2 fallback=${3:-}
[[ "$addr" =~ ^[A-Za-z0-9.-]+:[0-9]+$|^\[[0-9a-fA-F:]+\]:[0-9]+$ ]] || { echo "$0: REGISTRY_ADDR must be host:port, not '$addr'" >&2; exit 2; }
for pair in registry.k8s.io=https://registry.k8s.io ghcr.io=https://ghcr.io docker.io=https://registry-1.docker.io; do
  host=${pair%%=*} server=${pair#*=}
  [ -z "$fallback" ] || server=http://$addr
  mkdir -p "$out/$host"
  printf 'server = "%s"\n\n[host."http://%s"]\n  capabilities = ["pull", "resolve"]\n' "$server" "$addr" > "$out/$host/hosts.toml.tmp"
  mv "$out/$host/hosts.toml.tmp" "$out/$host/hosts.toml"
done
echo "$out"
