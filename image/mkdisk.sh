#!/bin/sh
# Step 5: build/<arch>/disk.raw, a UEFI-bootable GPT disk that boots slot A into maintenance mode with
# systemd-boot. Plain files only (mkfs.vfat -C, mtools, sgdisk, dd): no loop devices, no root mounts.
#   p1 EFI   ESP, FAT32, 1 GiB: EFI/BOOT/BOOT<arch>.EFI (systemd-boot), loader/, A/{vmlinuz,initramfs.img}
#            (names, entry and loader.conf format as src/boot/{slot-files,sdboot-entry}.ts write them, so the agent
#            can upgrade a machine that runs straight from this disk)
#   p2 META  1 MiB raw, zeroed: the agent's redundant key/value block (upgrade/rollback state)
# STATE and EPHEMERAL are created by the agent at install/boot time (like Talos >= 1.8), so the image stays small
# and the same file works for any disk size. The file is sparse: ~1 GiB apparent, ~initramfs size allocated.
. "$(dirname "$0")/env.sh"
ESP_MIB=${ESP_MIB:-1024}
kver=$(cat "$CACHE/kernel-release")
efi=$SYSROOT/usr/lib/systemd/boot/efi/systemd-boot$EFI_ARCH.efi
BOOTNAME=$(echo "BOOT$EFI_ARCH.EFI" | tr a-z A-Z)
esp=$WORK/esp.img
disk=$OUT/disk.raw
export MTOOLS_SKIP_CHECK=1

rm -f "$esp" "$disk"
mkfs.vfat -F 32 -n EFI -i 4d414348 --invariant -C "$esp" $((ESP_MIB * 1024)) >/dev/null
mmd -i "$esp" ::/EFI ::/EFI/BOOT ::/loader ::/loader/entries ::/A
mcopy -i "$esp" "$efi" "::/EFI/BOOT/$BOOTNAME"
mcopy -i "$esp" "$OUT/vmlinuz" ::/A/vmlinuz
mcopy -i "$esp" "$OUT/initramfs.zst" ::/A/initramfs.img
# timeout 0: boot the default at once (a key held at power-on still shows the menu); editor no: the kernel
# cmdline cannot be edited at the console of an API-only OS.
printf 'timeout 0\neditor no\nauto-entries no\nconsole-mode keep\n' > "$WORK/loader.conf"
mcopy -i "$esp" "$WORK/loader.conf" ::/loader/loader.conf
# One entry, generation 1, no boot counter: this is the install/maintenance medium. Installs and upgrades write
# "<slot>+3.conf" entries with a higher version so that systemd-boot counts tries (docs/image.md).
version=$(cat "$WORK/version")
cat > "$WORK/a.conf" <<ENTRY
# machined slot=A generation=1 os=$version
title machined $version (slot A)
sort-key machined
version 1
linux /A/vmlinuz
initrd /A/initramfs.img
options $(cat "$WORK/cmdline") machined.slot=A
ENTRY
mcopy -i "$esp" "$WORK/a.conf" ::/loader/entries/a.conf

truncate -s $((1 + ESP_MIB + 1 + 1))M "$disk"
# Fixed GUIDs keep the image reproducible; the installer gives every installed disk fresh ones.
sgdisk -U 6D616368-696E-6564-0000-000000000000 \
  -n 1:1M:+${ESP_MIB}M -t 1:EF00 -c 1:EFI -u 1:6D616368-696E-6564-0000-000000000001 \
  -n 2:0:+1M -t 2:8300 -c 2:META -u 2:6D616368-696E-6564-0000-000000000002 "$disk" >/dev/null  # (-q skips the write in gdisk 1.0.9)
dd if="$esp" of="$disk" bs=1M seek=1 conv=notrunc,sparse status=none
rm -f "$esp"
log "disk.raw: ESP ${ESP_MIB} MiB with systemd-boot $(dpkg-deb -f "$CACHE"/debs/systemd-boot-efi_*.deb Version), slot A"
