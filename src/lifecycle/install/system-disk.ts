/**
 * The installed system disk: our GPT layout on an image file (local mode) or a block device (PID 1). Everything
 * the lifecycle tasks touch goes through here: the ESP (mtools at the partition's offset, no mounts), META, and
 * the BOOT-A/BOOT-B regions. Each operation opens and closes the disk, so nothing stays open across reboots.
 */
import { join } from "node:path";
import { hostFiles } from "../../host/files/index.js";
import { openBlockIO, type BlockIO } from "../../boot/blockio.js";
import { MtoolsEsp } from "../../boot/esp-mtools.js";
import type { EspFs } from "../../boot/esp.js";
import { partitionFor, readLayout, type DiskLayout, type Slot } from "../../boot/layout.js";
import { Meta } from "../../boot/meta.js";
import { PartitionSlotWriter } from "../../boot/slot-files.js";
import type { SlotContext } from "../../boot/slots.js";
import { writeFileAtomic } from "../../host/atomic-file.js";
import { MANIFEST_NAME, type InstallerManifest } from "./payload.js";

export class SystemDisk {
  readonly esp: EspFs;

  private constructor(
    readonly path: string,
    readonly layout: DiskLayout,
  ) {
    this.esp = new MtoolsEsp(path, partitionFor(layout.partitions, "esp").offset);
  }

  /** Opens a disk that carries our layout; the error says what is there instead. */
  static async open(path: string): Promise<SystemDisk> {
    let layout: DiskLayout;
    try {
      layout = await readLayout(path);
    } catch (err) {
      throw new Error(`system disk ${path} has no readable partition table: ${(err as Error).message}`);
    }
    if (!layout.machined) {
      throw new Error(`system disk ${path} does not carry a machined layout (partitions: ${layout.partitions.map((p) => p.name || `#${p.index}`).join(", ") || "none"})`);
    }
    return new SystemDisk(path, layout);
  }

  region(label: "slot-a" | "slot-b" | "meta" | "state" | "ephemeral" | "esp"): { offset: number; size: number } {
    const p = partitionFor(this.layout.partitions, label);
    return { offset: p.offset, size: p.size };
  }

  /** Runs fn with META loaded and a slot writer; the disk is closed afterwards whatever happens. */
  async withCtx<T>(fn: (ctx: SlotContext, io: BlockIO) => Promise<T>): Promise<T> {
    const io = await openBlockIO(this.path, { write: true });
    try {
      const meta = this.region("meta");
      const ctx: SlotContext = {
        meta: await Meta.fromIO(io, meta.offset, meta.size),
        esp: this.esp,
        slotImages: new PartitionSlotWriter(io, { A: this.region("slot-a"), B: this.region("slot-b") }),
      };
      return await fn(ctx, io);
    } finally {
      await io.close();
    }
  }

  withMeta<T>(fn: (meta: Meta) => Promise<T>): Promise<T> {
    return this.withCtx((ctx) => fn(ctx.meta));
  }

  /** The installer manifest stored next to a slot's boot files (what was written there, and its test markers). */
  async slotManifest(slot: Slot): Promise<InstallerManifest | undefined> {
    const raw = await this.esp.read(`/${slot}/${MANIFEST_NAME}`);
    if (!raw) return undefined;
    try {
      return JSON.parse(raw.toString("utf8")) as InstallerManifest;
    } catch {
      return undefined; // informational only; a torn copy must not block boot
    }
  }
}

/**
 * Local mode remembers which image file it installed to (`<stateDir>/system-disk.json`): the simulated
 * firmware reads it at every boot, as real firmware knows its boot disk.
 */
export class SystemDiskRecord {
  private readonly file: string;
  constructor(stateDir: string) {
    this.file = join(stateDir, "system-disk.json");
  }

  async get(): Promise<string | undefined> {
    try {
      return (JSON.parse(await hostFiles.readFile(this.file, "utf8")) as { path?: string }).path;
    } catch {
      return undefined;
    }
  }

  async set(path: string): Promise<void> {
    await writeFileAtomic(this.file, new TextEncoder().encode(JSON.stringify({ path, recorded: new Date().toISOString() }) + "\n"));
  }

  async clear(): Promise<void> {
    await hostFiles.rm(this.file, { force: true });
  }
}
