#!/bin/sh
# Step 2: unpack every cached .deb and the npm Node binary into build/<arch>/work/sysroot, then run depmod
# over the full module tree so later steps can compute module closures from its modules.dep.
. "$(dirname "$0")/env.sh"
rm -rf "$SYSROOT"; mkdir -p "$SYSROOT"
for d in "$CACHE"/debs/*.deb; do dpkg-deb -x "$d" "$SYSROOT"; done
tar -xzf "$CACHE/npm/$NODE_PKG-$NODE_VERSION.tgz" -C "$WORK" package/bin/node package/LICENSE
mkdir -p "$SYSROOT/opt/node"; mv "$WORK/package/bin/node" "$WORK/package/LICENSE" "$SYSROOT/opt/node/"; rm -rf "$WORK/package"
kver=$(cat "$CACHE/kernel-release")
depmod -b "$SYSROOT" "$kver"
log "sysroot: $(du -sm "$SYSROOT" | cut -f1) MiB, kernel $kver"
