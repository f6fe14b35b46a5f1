#!/bin/sh
# Step 4: pack the trees.
#   rootfs.sqsh    squashfs (zstd) of work/rootfs: the read-only root of one slot
#   initramfs.zst  what the bootloader loads: [newc cpio holding /rootfs.sqsh, uncompressed because squashfs is
#                  already compressed] ++ [zstd newc cpio of work/stage]. The kernel unpacks concatenated archives
#                  in order (same mechanism as early-microcode cpios), so one file carries both.
# ZSTD_LEVEL / SQSH_LEVEL: 19 for releases (default), 3 while iterating.
. "$(dirname "$0")/env.sh"
ZSTD_LEVEL=${ZSTD_LEVEL:-19}
SQSH_LEVEL=${SQSH_LEVEL:-$ZSTD_LEVEL}

# device nodes the kernel needs before devtmpfs is mounted (init's stdout is /dev/console)
mkdir -p "$STAGE/dev"
[ -c "$STAGE/dev/console" ] || mknod -m 600 "$STAGE/dev/console" c 5 1
[ -c "$STAGE/dev/null" ] || mknod -m 666 "$STAGE/dev/null" c 1 3
find "$ROOTFS" "$STAGE" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

log "mksquashfs (zstd -$SQSH_LEVEL)"
rm -f "$OUT/rootfs.sqsh"
mksquashfs "$ROOTFS" "$OUT/rootfs.sqsh" -noappend -quiet -no-progress -comp zstd -Xcompression-level "$SQSH_LEVEL" \
  -b 1M -all-root >/dev/null  # times come from SOURCE_DATE_EPOCH (exported by env.sh)

cpio_of() { # cpio_of DIR: reproducible newc archive of DIR on stdout
  (cd "$1" && find . -mindepth 1 -print0 | LC_ALL=C sort -z | cpio --null --create --format=newc --owner=0:0 --reproducible --quiet)
}
log "cpio + zstd -$ZSTD_LEVEL"
rm -rf "$WORK/sqsh-cpio"; mkdir -p "$WORK/sqsh-cpio"
cp "$OUT/rootfs.sqsh" "$WORK/sqsh-cpio/rootfs.sqsh"
touch -d "@$SOURCE_DATE_EPOCH" "$WORK/sqsh-cpio/rootfs.sqsh"
cpio_of "$WORK/sqsh-cpio" > "$WORK/rootfs.cpio"
cpio_of "$STAGE" | zstd -q -"$ZSTD_LEVEL" -T0 > "$WORK/stage.cpio.zst"
cat "$WORK/rootfs.cpio" "$WORK/stage.cpio.zst" > "$OUT/initramfs.zst"
rm -rf "$WORK/sqsh-cpio" "$WORK/rootfs.cpio"

kver=$(cat "$CACHE/kernel-release")
cp "$SYSROOT/boot/vmlinuz-$kver" "$OUT/vmlinuz"
