#!/bin/sh
# Step 1: download the target's Debian packages (apt-get download PKG:ARCH) and Node (npm pack) into
# build/cache/<arch>. Skips what is already there, so re-runs are offline.
. "$(dirname "$0")/env.sh"
mkdir -p "$CACHE/debs" "$CACHE/npm"

if [ "$ARCH" != "$(dpkg --print-architecture)" ] && ! dpkg --print-foreign-architectures | grep -qx "$ARCH"; then
  log "enabling dpkg architecture $ARCH"
  dpkg --add-architecture "$ARCH"
  apt-get update -q >/dev/null
fi

kernel=$(apt-cache depends "linux-image-$ARCH:$ARCH" | sed -n 's/^ *Depends: \(linux-image-[0-9][^: ]*\).*/\1/p' | head -1)
[ -n "$kernel" ] || { echo "cannot resolve the kernel package behind linux-image-$ARCH (apt-get update?)" >&2; exit 1; }

want=""
for p in $(grep -v '^#' "$TOP/image/debs.txt" | sed "s/^@kernel$/$kernel/"); do
  # ca-certificates is Architecture: all; apt-get download accepts no :arch for it
  case "$p" in ca-certificates) spec=$p ;; *) spec=$p:$ARCH ;; esac
  ls "$CACHE/debs/${p}_"*.deb >/dev/null 2>&1 || want="$want $spec"
done
if [ -n "$want" ]; then
  log "apt-get download$want"
  (cd "$CACHE/debs" && apt-get download -q $want 2>&1 | grep -v -e unsandboxed -e '^Get:' >&2 || true)
fi
echo "$kernel" | sed 's/^linux-image-//' > "$CACHE/kernel-release"

tgz=$CACHE/npm/$NODE_PKG-$NODE_VERSION.tgz
if [ ! -s "$tgz" ]; then
  log "npm pack $NODE_PKG@$NODE_VERSION"
  (cd "$CACHE/npm" && npm pack --silent "$NODE_PKG@$NODE_VERSION" >/dev/null)
fi
log "cache ready: $(ls "$CACHE/debs" | wc -l) debs, kernel $(cat "$CACHE/kernel-release"), $NODE_PKG $NODE_VERSION"
