#!/bin/sh
# `make image ARCH=...`: runs the steps in order and prints the report. Each step is its own script so it can
# be re-run alone while iterating (e.g. `image/mkinitramfs.sh amd64` after editing rootfs/).
#   AGENT=path|smoke   the agent bundle (default dist/machined.mjs, built by `npm run build` when missing;
#                      "smoke" bundles image/smoke-agent.ts into /tmp)
#   ZSTD_LEVEL=3       fast iteration; default 19 for final outputs
#   SKIP_SYSROOT=1     reuse work/sysroot from the last build (saves ~30 s of dpkg-deb -x + depmod)
. "$(dirname "$0")/env.sh"
started=$(date +%s%3N)
mkdir -p "$OUT" "$WORK"

case "${AGENT:-}" in
  smoke) AGENT=$(sh "$TOP/image/smoke-agent.sh") ;;
  "") AGENT=$TOP/dist/machined.mjs
      # always rebuild the bundle (esbuild, ~1 s) so the image never ships a stale agent
      if [ -f "$TOP/scripts/build.mjs" ]; then log "npm run build"; (cd "$TOP" && npm run -s build >&2); fi
      [ -s "$AGENT" ] || { echo "no agent bundle at $AGENT; use AGENT=smoke or AGENT=/path/to/bundle.mjs" >&2; exit 1; } ;;
esac
export AGENT

pkgver=$(node -p "require('$TOP/package.json').version")
sha=$(git -C "$TOP" rev-parse --short HEAD 2>/dev/null || echo dev)
echo "${IMAGE_VERSION:-$pkgver-$sha}" > "$WORK/version"
export IMAGE_VERSION=$(cat "$WORK/version")
case "$ARCH" in
  amd64) console="console=tty0 console=ttyS0,115200n8" ;;
  arm64) console="console=ttyAMA0,115200n8" ;;
esac
# The image has no DHCP client: the boot entry carries a static address (src/pid1/cmdline-net.ts). The default is
# QEMU user networking (guest 10.0.2.15, host 10.0.2.2, DNS 10.0.2.3); NET_CMDLINE= overrides or drops it.
# CMDLINE_EXTRA adds words (e.g. machined.insecure-registries=10.0.2.2:5000, machined.testfail=exit for tests).
NET_CMDLINE=${NET_CMDLINE-machined.ip=10.0.2.15/24 machined.gw=10.0.2.2 machined.dns=10.0.2.3}
echo "$console panic=10 $NET_CMDLINE ${CMDLINE_EXTRA:-}" | tr -s ' ' | sed 's/ $//' > "$WORK/cmdline"

step() { s=$(date +%s%3N); log "step $1"; nice sh "$TOP/image/$1" "$ARCH"; log "step $1 done in $(( ($(date +%s%3N) - s) ))ms"; }
step fetch.sh
[ -n "${SKIP_SYSROOT:-}" ] && [ -d "$SYSROOT/opt/node" ] || step sysroot.sh
s=$(date +%s%3N); nice node "$TOP/image/mkroot.mjs"; log "step mkroot.mjs done in $(( $(date +%s%3N) - s ))ms"
step mkinitramfs.sh
step mkgrub.sh
nice node "$TOP/image/mkmanifest.mjs"
step mkdisk.sh
step mkinstaller.sh
node "$TOP/image/report.mjs" "$started"
