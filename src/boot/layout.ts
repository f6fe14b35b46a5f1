/**
 * Disk layout: plan (pure, layout-plan.ts), write (GPT + filesystems + empty META + ESP skeleton) and read back.
 * Works on image files without root (filesystems are created inside partition regions, see mkfs.ts) and on
 * block devices (partition nodes are formatted after the kernel re-reads the table).
 */
import { setTimeout as sleep } from "node:timers/promises";
import { basename } from "node:path";
import { hostFiles as files } from "../host/files/index.js";
import { openBlockIO, type BlockIO } from "./blockio.js";
import { MtoolsEsp } from "./esp-mtools.js";
import { readGpt, readGptStrict, writeGpt, GptError, type GptPartition, type GptTable } from "./gpt/index.js";
import { installGrubBios } from "./grub-bios.js";
import { GRUB_DIR, writeBootVars } from "./grubenv.js";
import { LABELS, roleForLabel, type LayoutPlan, type PartitionRole } from "./layout-plan.js";
import { Meta } from "./meta.js";
import { mkfsDevice, mkfsExt4Region, mkfsVfatRegion, mkfsXfsRegion } from "./mkfs.js";
import { ENTRIES_DIR, installSystemdBoot, writeLoaderConf } from "./sdboot.js";
import { runTool, which } from "./tools.js";

export * from "./layout-plan.js";

export interface LayoutPartition extends GptPartition {
  role?: PartitionRole;
  offset: number;
  size: number;
}

export interface DiskLayout {
  path: string;
  diskSizeBytes: number;
  sectorSize: number;
  diskGuid: string;
  partitions: LayoutPartition[];
  /** True when every partition our layout needs is present (by label). */
  machined: boolean;
  /** GPT inconsistencies found while reading (empty for a clean disk). */
  problems: string[];
}

const REQUIRED_ROLES: PartitionRole[] = ["esp", "slot-a", "slot-b", "meta"];

function toLayout(path: string, table: GptTable, problems: string[]): DiskLayout {
  const partitions = table.partitions.map((p) => ({
    ...p,
    role: roleForLabel(p.name),
    offset: p.firstLba * table.sectorSize,
    size: (p.lastLba - p.firstLba + 1) * table.sectorSize,
  }));
  return {
    path,
    diskSizeBytes: table.totalSectors * table.sectorSize,
    sectorSize: table.sectorSize,
    diskGuid: table.diskGuid,
    partitions,
    machined: REQUIRED_ROLES.every((r) => partitions.some((p) => p.role === r)),
    problems,
  };
}

/** Reads the partition table; throws GptError when neither GPT copy is usable. */
export async function readLayout(path: string, opts: { sectorSize?: number } = {}): Promise<DiskLayout> {
  const io = await openBlockIO(path);
  try {
    const res = await readGpt(io, opts);
    if (!res.table) throw new GptError(path, res.problems);
    return toLayout(path, res.table, res.problems);
  } finally {
    await io.close();
  }
}

/** Why a disk must not be overwritten without `wipe`, or undefined when it is blank. */
export async function describeExistingContent(io: BlockIO): Promise<string | undefined> {
  const gpt = await readGpt(io);
  if (gpt.table && gpt.table.partitions.length > 0) {
    const layout = toLayout(io.path, gpt.table, gpt.problems);
    const names = layout.partitions.map((p) => p.name || `#${p.index}`).join(", ");
    return layout.machined ? `it already carries a machined layout (${names})` : `it carries a GPT partition table with ${layout.partitions.length} partition(s) (${names})`;
  }
  if (!gpt.table && !gpt.problems.some((p) => p.startsWith("no GPT header found"))) {
    return `it carries a damaged GPT (${gpt.problems.join("; ")})`;
  }
  const mbr = await io.read(0, 512);
  if (mbr[510] === 0x55 && mbr[511] === 0xaa) {
    for (let i = 0; i < 4; i++) {
      const type = mbr[446 + i * 16 + 4];
      if (type !== 0 && type !== 0xee) return `it carries an MBR partition table (partition ${i + 1} has type 0x${type.toString(16)})`;
    }
  }
  if (await which("blkid")) {
    try {
      const { stdout } = await runTool("blkid", ["-p", "-o", "value", "-s", "TYPE", io.path]);
      const type = stdout.toString("utf8").trim();
      if (type) return `it carries a ${type} filesystem on the whole disk`;
    } catch {
      // exit 2: nothing found
    }
  }
  return undefined;
}

export interface WriteLayoutOptions {
  /** Overwrite a disk that already has partitions or a filesystem. */
  wipe?: boolean;
  /** systemd-boot EFI binary to place on the ESP (e.g. /usr/lib/systemd/boot/efi/systemd-bootx64.efi). */
  systemdBootEfi?: string;
  /** GRUB's boot.img and core.img for BIOS firmware (amd64 layouts; installed last, see grub-bios.ts). */
  grubBios?: { boot: string; core: string };
}

function planToTable(plan: LayoutPlan): GptTable {
  const ss = plan.sectorSize;
  const totalSectors = plan.diskSizeBytes / ss;
  const arraySectors = Math.ceil((128 * 128) / ss);
  return {
    sectorSize: ss,
    totalSectors,
    diskGuid: plan.diskGuid,
    firstUsableLba: 2 + arraySectors,
    lastUsableLba: totalSectors - 2 - arraySectors,
    entryCount: 128,
    entrySize: 128,
    partitions: plan.partitions.map((p) => ({
      index: p.index,
      typeGuid: p.typeGuid,
      uniqueGuid: p.uniqueGuid,
      firstLba: p.firstLba,
      lastLba: p.lastLba,
      attributes: p.attributes,
      name: p.label,
    })),
  };
}

/** /dev/sda + 1 → /dev/sda1; /dev/nvme0n1 + 1 → /dev/nvme0n1p1 (kernel naming when the disk name ends in a digit). */
export function partitionDevicePath(dev: string, index: number): string {
  return /\d$/.test(dev) ? `${dev}p${index}` : `${dev}${index}`;
}

async function waitForPartitions(dev: string, count: number): Promise<void> {
  const name = basename(dev);
  for (let i = 0; i < 50; i++) {
    const entries = await files.readdir(`/sys/class/block/${name}`).catch(() => [] as string[]);
    if (entries.filter((e) => e.startsWith(name)).length >= count) return;
    await sleep(100);
  }
  throw new Error(`${dev}: the kernel did not create ${count} partition devices after re-reading the table`);
}

export async function writeLayout(path: string, plan: LayoutPlan, opts: WriteLayoutOptions = {}): Promise<DiskLayout> {
  const exists = await files.stat(path).then(
    () => true,
    () => false,
  );
  if (!exists) {
    // local mode: machine.install.disk may name an image file that does not exist yet
    await files.writeFile(path, "", { flag: "wx", mode: 0o644 });
    await files.truncate(path, plan.diskSizeBytes);
  }
  const io = await openBlockIO(path, { write: true });
  try {
    const isFile = (await files.stat(path)).isFile();
    const size = await io.size();
    if (size !== plan.diskSizeBytes) {
      throw new Error(`${path}: the plan is for ${plan.diskSizeBytes} bytes but the disk has ${size}; plan again for this disk`);
    }
    const existing = await describeExistingContent(io);
    if (existing && !opts.wipe) {
      throw new Error(`refusing to install on ${path}: ${existing}; set wipe: true to erase it`);
    }

    if (isFile) {
      // a regular file is wiped by dropping all its blocks: instant, and every region then reads as zeros
      await io.sync();
      await files.truncate(path, 0);
      await files.truncate(path, plan.diskSizeBytes);
    } else {
      const zero = Buffer.alloc(1024 * 1024);
      await io.write(0, zero);
      await io.write(size - zero.length, zero);
      for (const p of plan.partitions) await io.write(p.offset, zero.subarray(0, Math.min(zero.length, p.size)));
    }

    await writeGpt(io, planToTable(plan));

    if (!isFile) {
      await runTool("blockdev", ["--rereadpt", path]);
      await waitForPartitions(path, plan.partitions.length);
    }
    for (const p of plan.partitions) {
      const region = { offset: p.offset, size: p.size, label: p.label };
      if (!isFile) {
        await mkfsDevice(partitionDevicePath(path, p.index), p.fs, p.label, plan.sectorSize);
        continue;
      }
      if (p.fs === "vfat") await mkfsVfatRegion(path, region, plan.sectorSize);
      else if (p.fs === "ext4") await mkfsExt4Region(path, region);
      else if (p.fs === "xfs") await mkfsXfsRegion(io, path, region, plan.sectorSize, true);
    }
    // The partitions were formatted through their own device nodes, whose page cache is not the whole disk's: the
    // zeros written above through the disk may still be cached there, and mtools (disk@@offset) would read them
    // ("non DOS media", seen under a loaded TCG guest). Flushing the disk's buffers makes it read the new filesystems.
    if (!isFile) await runTool("blockdev", ["--flushbufs", path]);

    const meta = plan.partitions.find((p) => p.role === "meta");
    if (meta) {
      const m = await Meta.fromIO(io, meta.offset, meta.size);
      await m.flush(); // a valid empty ADV, so "blank" and "corrupt" are never confused later
    }

    const espPart = plan.partitions.find((p) => p.role === "esp");
    if (espPart) {
      const esp = new MtoolsEsp(path, espPart.offset);
      await esp.mkdir("/EFI/BOOT");
      await esp.mkdir(ENTRIES_DIR);
      await writeLoaderConf(esp);
      if (plan.arch === "amd64") {
        await esp.mkdir(GRUB_DIR);
        await writeBootVars(esp, { bootTries: 0 });
      }
      if (opts.systemdBootEfi) await installSystemdBoot(esp, plan.arch, opts.systemdBootEfi);
    }
    const biosPart = plan.partitions.find((p) => p.role === "bios");
    if (biosPart && opts.grubBios) {
      const images = { boot: await files.readFile(opts.grubBios.boot), core: await files.readFile(opts.grubBios.core) };
      await installGrubBios(io, biosPart, images, plan.sectorSize);
    }
    await io.sync();

    return toLayout(path, await readGptStrict(io, { sectorSize: plan.sectorSize }), []);
  } finally {
    await io.close();
  }
}

/** Labels in plan order, for messages and docs. */
export function layoutLabels(plan: LayoutPlan): string[] {
  return plan.partitions.map((p) => LABELS[p.role]);
}
