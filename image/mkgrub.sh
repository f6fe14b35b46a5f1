#!/bin/sh
# Step 4b (amd64 only): GRUB for BIOS firmware, build/amd64/{grub-boot.img,grub-core.img}, from Debian's
# grub-pc-bin (modules, boot.img) and grub-mkimage (grub-common) on the build host. The agent installs them at
# install time the way grub-install's setup step would (src/boot/grub-bios.ts): boot.img into the MBR code area,
# core.img into the BIOS boot partition. Every module GRUB needs for our grub.cfg is embedded, so the ESP holds
# no GRUB modules; the prefix "(,gpt1)/grub" is the ESP (partition 1) of whichever disk the BIOS booted.
. "$(dirname "$0")/env.sh"
[ "$ARCH" = amd64 ] || { log "mkgrub: $ARCH boots with UEFI only, no BIOS GRUB"; exit 0; }
GRUB_DIR=${GRUB_PC_DIR:-/usr/lib/grub/i386-pc}
[ -f "$GRUB_DIR/boot.img" ] && command -v grub-mkimage >/dev/null || {
  echo "mkgrub: $GRUB_DIR/boot.img or grub-mkimage is missing (apt-get install grub-pc-bin grub-common)" >&2; exit 1; }
# biosdisk + part_gpt + fat: read the ESP; normal: runs grub.cfg (menuentry, if, set); test: [ ];
# loadenv: the try counter in grubenv; linux: linux/initrd for bzImage kernels; echo: messages.
grub-mkimage -O i386-pc -d "$GRUB_DIR" -p '(,gpt1)/grub' -o "$OUT/grub-core.img" \
  biosdisk part_gpt fat normal test loadenv linux echo
cp "$GRUB_DIR/boot.img" "$OUT/grub-boot.img"
dpkg-query -W -f '${Version}' grub-pc-bin > "$WORK/grub-version" 2>/dev/null || echo unknown > "$WORK/grub-version"
log "GRUB $(cat "$WORK/grub-version"): core.img $(stat -c %s "$OUT/grub-core.img") bytes (BIOS boot partition: 1 MiB)"
