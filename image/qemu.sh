#!/bin/sh
# `make qemu ARCH=...`: boot build/<arch> under QEMU with TCG (no KVM: see docs/image.md), UEFI firmware, the API
# forwarded to 127.0.0.1:$QEMU_PORT, an empty 8 GiB install disk, and the serial console on stdio (Ctrl-A X quits).
#   BOOT=disk (default)  OVMF/AAVMF -> systemd-boot -> slot A of a copy of disk.raw (second disk, /dev/vdb;
#                        the install disk is /dev/vda as in Talos' QEMU defaults and comes first in the boot
#                        order: while it is empty (or after a reset wiped it) the firmware falls through to the
#                        medium, once installed it boots the installed system, so reboots and upgrades just work)
#   BOOT=kernel          -kernel/-initrd directly (skips firmware and bootloader, ~5 s faster under TCG)
#   QEMU_MEM=1024 QEMU_SMP=2 QEMU_PORT=50000 QEMU_APPEND="..." (BOOT=kernel only) QEMU_TIMEOUT=seconds
#   QEMU_KUBE_PORT=6443  host loopback port forwarded to the guest's Kubernetes API server (empty: none)
#   QEMU_WATCHDOG=reset  what QEMU does when the guest stops feeding the i6300esb watchdog (debug: only log it)
#   QEMU_FRESH=1         start from a new copy of disk.raw, empty install disk and firmware variables
. "$(dirname "$0")/env.sh"
BOOT=${BOOT:-disk}
MEM=${QEMU_MEM:-1024}
SMP=${QEMU_SMP:-2}
PORT=${QEMU_PORT:-50000}
KUBE_PORT=${QEMU_KUBE_PORT-6443}
RUN=${QEMU_RUNDIR:-$OUT/qemu}
mkdir -p "$RUN"
[ -f "$OUT/initramfs.zst" ] || { echo "build/$ARCH is empty: run make image ARCH=$ARCH first" >&2; exit 1; }

if [ -n "${QEMU_FRESH:-}" ]; then rm -f "$RUN/boot.raw" "$RUN/install.qcow2" "$RUN/vars.fd"; fi
[ -f "$RUN/install.qcow2" ] || qemu-img create -q -f qcow2 "$RUN/install.qcow2" 8G
# the boot disk is a copy: systemd-boot's counters and the agent write to it, build outputs stay pristine
[ "$BOOT" != disk ] || [ "$RUN/boot.raw" -nt "$OUT/disk.raw" ] || cp --sparse=always "$OUT/disk.raw" "$RUN/boot.raw"

case "$ARCH" in
  amd64)
    CODE=/usr/share/OVMF/OVMF_CODE_4M.fd; VARS=/usr/share/OVMF/OVMF_VARS_4M.fd
    set -- qemu-system-x86_64 -M q35 -cpu max ;;
  arm64)
    CODE=/usr/share/AAVMF/AAVMF_CODE.fd; VARS=/usr/share/AAVMF/AAVMF_VARS.fd
    # cortex-a72 (ARMv8.0): V8 once died in its deoptimizer under TCG with -cpu max (pointer authentication)
    set -- qemu-system-aarch64 -M virt -cpu cortex-a72 ;;
esac
[ -f "$RUN/vars.fd" ] || cp "$VARS" "$RUN/vars.fd"
set -- "$@" -accel tcg -m "$MEM" -smp "$SMP" -nographic -serial mon:stdio \
  -nic "user,model=virtio-net-pci,hostfwd=tcp:127.0.0.1:$PORT-:50000${KUBE_PORT:+,hostfwd=tcp:127.0.0.1:$KUBE_PORT-:6443}" \
  -drive "if=none,id=install,format=qcow2,file=$RUN/install.qcow2" -device virtio-blk-pci,drive=install,serial=install,bootindex=0 \
  -device i6300esb -watchdog-action "${QEMU_WATCHDOG:-reset}" -device virtio-rng-pci
if [ "$BOOT" = kernel ]; then
  set -- "$@" -kernel "$OUT/vmlinuz" -initrd "$OUT/initramfs.zst" \
    -append "$(cat "$WORK/cmdline") machined.slot=A ${QEMU_APPEND:-}"
else
  set -- "$@" -drive "if=pflash,format=raw,readonly=on,file=$CODE" -drive "if=pflash,format=raw,file=$RUN/vars.fd" \
    -drive "if=none,id=boot,format=raw,file=$RUN/boot.raw" -device virtio-blk-pci,drive=boot,serial=boot,bootindex=1
fi
log "$*"
if [ -n "${QEMU_TIMEOUT:-}" ]; then exec timeout --foreground -k 5 "$QEMU_TIMEOUT" "$@"; fi
exec "$@"
