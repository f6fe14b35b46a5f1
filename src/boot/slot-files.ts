/**
 * What a slot consists of: kernel + initramfs in /<SLOT>/ on the ESP (the only filesystem every firmware and
 * GRUB can read) and, optionally, a rootfs image written raw into the BOOT-<SLOT> partition.
 */
import { hostFiles } from "../host/files/index.js";
import type { BlockIO } from "./blockio.js";
import { copyInAtomic, TMP_SUFFIX, type EspFs } from "./esp.js";
import type { Slot } from "./layout-plan.js";

export interface SlotPayload {
  /** OS version shown in menus and recorded in META (e.g. "v1.2.3"). */
  osVersion: string;
  /** Installer image reference, recorded for `talosctl upgrade` history. */
  image?: string;
  /** Host paths of the boot files. */
  kernel: string;
  initramfs: string;
  /** Host path of a rootfs image (squashfs) for the BOOT-<SLOT> partition. */
  rootfs?: string;
  /** Kernel command line without the slot marker (added here). */
  cmdline: string;
}

export const slotKernelPath = (s: Slot) => `/${s}/vmlinuz`;
export const slotInitrdPath = (s: Slot) => `/${s}/initramfs.img`;

/** The kernel argument that tells the booted system which slot it came from. */
export const SLOT_CMDLINE_KEY = "machined.slot";

export function slotCmdline(base: string, slot: Slot): string {
  const kept = base.split(/\s+/).filter((w) => w && !w.startsWith(`${SLOT_CMDLINE_KEY}=`));
  return [...kept, `${SLOT_CMDLINE_KEY}=${slot}`].join(" ");
}

export function slotFromCmdline(cmdline: string): Slot | undefined {
  const m = new RegExp(`(?:^|\\s)${SLOT_CMDLINE_KEY.replace(".", "\\.")}=([AB])(?:\\s|$)`).exec(cmdline);
  return m ? (m[1] as Slot) : undefined;
}

export async function writeSlotBootFiles(esp: EspFs, slot: Slot, p: SlotPayload): Promise<void> {
  await esp.mkdir(`/${slot}`);
  await copyInAtomic(esp, p.kernel, slotKernelPath(slot));
  await copyInAtomic(esp, p.initramfs, slotInitrdPath(slot));
}

/** Leftovers of writes cut by a power loss; they are never read, only take space. */
export async function removeTemporaries(esp: EspFs, dirs: string[]): Promise<void> {
  for (const dir of dirs) {
    for (const e of await esp.list(dir)) {
      if (!e.dir && e.name.endsWith(TMP_SUFFIX)) await esp.remove(`${dir}/${e.name}`);
    }
  }
}

export interface SlotImageWriter {
  write(slot: Slot, hostPath: string): Promise<void>;
}

/** Copies a rootfs image into the slot's partition region of the system disk. */
export class PartitionSlotWriter implements SlotImageWriter {
  constructor(
    private readonly disk: BlockIO,
    private readonly regions: Record<Slot, { offset: number; size: number }>,
  ) {}

  async write(slot: Slot, hostPath: string): Promise<void> {
    const region = this.regions[slot];
    const src = await hostFiles.open(hostPath, "r");
    try {
      const { size } = await src.stat();
      if (size > region.size) throw new Error(`rootfs image ${hostPath} (${size} bytes) does not fit slot ${slot} (${region.size} bytes)`);
      const buf = Buffer.alloc(4 * 1024 * 1024);
      for (let off = 0; off < size; ) {
        const { bytesRead } = await src.read(buf, 0, buf.length, off);
        if (bytesRead === 0) break;
        await this.disk.write(region.offset + off, buf.subarray(0, bytesRead));
        off += bytesRead;
      }
      await this.disk.sync();
    } finally {
      await src.close();
    }
  }
}
