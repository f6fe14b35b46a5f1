/**
 * A small real disk image for slot tests: our GPT layout with a 64 MiB FAT32 ESP, 4 MiB slots and META, slot A
 * installed as v1. Boot files carry their version in their bytes, so "is this slot intact?" is checked against
 * what is really on the ESP and in the BOOT-<slot> partition.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { openBlockIO, type BlockIO } from "../../src/boot/blockio.js";
import { MtoolsEsp } from "../../src/boot/esp-mtools.js";
import type { EspFs } from "../../src/boot/esp.js";
import { simulateGrubBoot } from "../../src/boot/grub-script.js";
import { MiB, partitionFor, planLayout, writeLayout, type Arch, type DiskLayout, type Slot } from "../../src/boot/layout.js";
import { Meta } from "../../src/boot/meta.js";
import { simulateSdBoot } from "../../src/boot/sdboot.js";
import { PartitionSlotWriter, slotInitrdPath, slotKernelPath, type SlotPayload } from "../../src/boot/slot-files.js";
import { installFirstSlot, type SlotContext } from "../../src/boot/slots.js";
import { runTool as run } from "../../src/boot/tools.js";
import { sparseFile } from "./helpers.js";

export const RIG_SIZE = 100 * MiB;
const ROOTFS_SIZE = 64 * 1024;

export const rootfsBytes = (v: string) => Buffer.alloc(ROOTFS_SIZE, `rootfs ${v};`);

export async function payload(dir: string, v: string): Promise<SlotPayload> {
  const kernel = join(dir, `vmlinuz-${v}`);
  const initramfs = join(dir, `initramfs-${v}`);
  const rootfs = join(dir, `rootfs-${v}`);
  await writeFile(kernel, `kernel ${v}`);
  await writeFile(initramfs, `initramfs ${v}`);
  await writeFile(rootfs, rootfsBytes(v));
  return { osVersion: v, image: `ghcr.io/example/installer:${v}`, kernel, initramfs, rootfs, cmdline: "console=ttyS0 panic=10" };
}

export class Rig {
  esp: EspFs;
  private constructor(
    readonly img: string,
    readonly layout: DiskLayout,
  ) {
    // power cuts are simulated above the page cache, so per-write fsyncs would only slow these images down
    this.esp = new MtoolsEsp(img, partitionFor(layout.partitions, "esp").offset, { durable: false });
  }

  static async create(dir: string, name = "rig.img", arch: Arch = "amd64"): Promise<Rig> {
    const v1 = await payload(dir, "v1");
    const img = await sparseFile(join(dir, name), RIG_SIZE);
    const plan = planLayout(RIG_SIZE, { arch, sizes: { esp: 64 * MiB, slot: 4 * MiB, state: 16 * MiB, ephemeralMin: 4 * MiB } });
    plan.partitions.find((p) => p.role === "ephemeral")!.fs = "none";
    const rig = new Rig(img, await writeLayout(img, plan));
    await rig.withCtx((ctx) => installFirstSlot(ctx, v1));
    return rig;
  }

  /** A sparse copy of this disk (cp keeps holes), for one crash case. */
  async copy(path: string): Promise<Rig> {
    await run("cp", ["--sparse=always", this.img, path]);
    return new Rig(path, this.layout);
  }

  regions(): Record<Slot, { offset: number; size: number }> {
    const a = partitionFor(this.layout.partitions, "slot-a");
    const b = partitionFor(this.layout.partitions, "slot-b");
    return { A: { offset: a.offset, size: a.size }, B: { offset: b.offset, size: b.size } };
  }

  /** Opens META and the disk, runs fn with a slot context, closes. `wrap` lets crash tests inject faults. */
  async withCtx<T>(fn: (ctx: SlotContext) => Promise<T>, wrap?: { io?: (io: BlockIO) => BlockIO; esp?: (e: EspFs) => EspFs }): Promise<T> {
    const raw = await openBlockIO(this.img, { write: true });
    const io = wrap?.io ? wrap.io(raw) : raw;
    try {
      const meta = partitionFor(this.layout.partitions, "meta");
      const ctx: SlotContext = {
        meta: await Meta.fromIO(io, meta.offset, meta.size),
        esp: wrap?.esp ? wrap.esp(this.esp) : this.esp,
        slotImages: new PartitionSlotWriter(io, this.regions()),
        now: () => new Date("2026-11-29T12:00:00Z"),
      };
      return await fn(ctx);
    } finally {
      await raw.close();
    }
  }

  /** Which version a slot really holds, or undefined when its files do not agree (torn or half-written). */
  async slotVersion(slot: Slot): Promise<string | undefined> {
    const kernel = (await this.esp.read(slotKernelPath(slot)))?.toString();
    const m = /^kernel (\S+)$/.exec(kernel ?? "");
    if (!m) return undefined;
    const v = m[1];
    if ((await this.esp.read(slotInitrdPath(slot)))?.toString() !== `initramfs ${v}`) return undefined;
    const region = this.regions()[slot];
    const io = await openBlockIO(this.img);
    try {
      const bytes = await io.read(region.offset, ROOTFS_SIZE);
      return bytes.equals(rootfsBytes(v)) ? v : undefined;
    } finally {
      await io.close();
    }
  }
}

export interface BootOutcome {
  slot: Slot;
  version: string;
  /** Slots started in order, including failed attempts. */
  attempts: string[];
}

/**
 * Power the machine on repeatedly through a bootloader model until a slot comes up healthy. A slot fails (crashes,
 * the watchdog reboots) when its files are inconsistent or its version is in `broken`.
 */
export async function bootUntilHealthy(rig: Rig, loader: "sd-boot" | "grub", broken: Set<string>, maxBoots = 12): Promise<BootOutcome> {
  const attempts: string[] = [];
  for (let i = 0; i < maxBoots; i++) {
    let slot: Slot | undefined;
    if (loader === "sd-boot") {
      slot = (await simulateSdBoot(rig.esp))?.entry.slot;
    } else {
      const loadable = new Map<Slot, boolean>();
      for (const s of ["A", "B"] as Slot[]) loadable.set(s, await rig.esp.exists(slotKernelPath(s)));
      slot = (await simulateGrubBoot(rig.esp, (s) => loadable.get(s) === true)).slot;
    }
    if (!slot) throw new Error(`${loader}: nothing bootable after attempts ${attempts.join(", ")}`);
    const version = await rig.slotVersion(slot);
    attempts.push(`${slot}:${version ?? "torn"}`);
    if (version !== undefined && !broken.has(version)) return { slot, version, attempts };
  }
  throw new Error(`${loader}: no healthy boot within ${maxBoots} attempts: ${attempts.join(", ")}`);
}

export async function openMeta(rig: Rig): Promise<Meta> {
  const meta = partitionFor(rig.layout.partitions, "meta");
  return Meta.open(rig.img, meta.offset, meta.size);
}
