#!/bin/sh
# Step 6: the installer image, build/<arch>/installer-<arch>.oci.tar (OCI image layout, one layer).
# The layer holds /usr/install/<arch>/{vmlinuz,initramfs.zst,systemd-boot<arch>.efi,manifest.json}, and on amd64
# grub-boot.img + grub-core.img for BIOS firmware. The agent's
# upgrade path pulls it from a registry, checks manifest.json (sizes, sha256) and writes the files into the
# inactive slot. There is no installer program in it: the running agent is the installer.
. "$(dirname "$0")/env.sh"
version=$(cat "$WORK/version")
oci=$WORK/oci
payload=$WORK/installer/$ARCH
rm -rf "$oci" "$WORK/installer"; mkdir -p "$payload"
cp "$OUT/vmlinuz" "$OUT/initramfs.zst" "$OUT/manifest.json" "$payload/"
cp "$SYSROOT/usr/lib/systemd/boot/efi/systemd-boot$EFI_ARCH.efi" "$payload/"
[ "$ARCH" != amd64 ] || cp "$OUT/grub-boot.img" "$OUT/grub-core.img" "$payload/"
find "$WORK/installer" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
created=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)

umoci init --layout "$oci"
umoci new --image "$oci:$version"
umoci insert --image "$oci:$version" --history.created "$created" --history.created_by "make image" \
  "$payload" "/usr/install/$ARCH" >/dev/null
umoci config --image "$oci:$version" --os linux --architecture "$ARCH" --created "$created" \
  --history.created "$created" --config.label "org.opencontainers.image.title=machined-installer" \
  --config.label "org.opencontainers.image.version=$version" \
  --config.label "dev.machined.manifest=/usr/install/$ARCH/manifest.json" >/dev/null
umoci gc --layout "$oci"
tar -C "$oci" --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
  -cf "$OUT/installer-$ARCH.oci.tar" oci-layout index.json blobs
rm -rf "$oci" "$WORK/installer"
