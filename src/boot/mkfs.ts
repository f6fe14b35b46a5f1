/**
 * Creates filesystems inside a partition region of an image file with the Debian mkfs tools, so install works
 * without loop devices or root:
 *   vfat: mkfs.vfat --offset (sectors) writes in place;
 *   ext4: mkfs.ext4 -E offset= writes in place;
 *   xfs:  mkfs.xfs has no offset option, so it formats a sparse temp file of the partition size and we copy
 *         only its data extents (found with xfs_io's SEEK_DATA walk) into the region — ~tens of MB, not GBs.
 * On a real block device the caller formats the partition nodes instead (mkfsDevice).
 */
import { dirname, join } from "node:path";
import { randomBytes } from "node:crypto";
import { hostFiles as files } from "../host/files/index.js";
import type { BlockIO } from "./blockio.js";
import { openBlockIO } from "./blockio.js";
import type { FsKind } from "./layout-plan.js";
import { runTool } from "./tools.js";

export interface Region {
  offset: number;
  size: number;
  label: string;
}

/** FAT32 is only valid with at least 65525 clusters; leave a margin for the reserved and FAT sectors. */
const FAT32_MIN_CLUSTERS = 65525 + 1024;

/**
 * Sectors per cluster for the ESP: the largest power of two up to 4 KiB clusters that still gives a valid FAT32.
 * mkfs.vfat would size clusters from the whole image (it ignores the block count when guessing), which on a
 * big disk yields too few clusters for a FAT32 that mtools and firmware accept.
 */
export function fat32SectorsPerCluster(sizeBytes: number, sectorSize: number): number {
  for (let spc = Math.max(1, 4096 / sectorSize); spc >= 1; spc /= 2) {
    if (sizeBytes / (spc * sectorSize) >= FAT32_MIN_CLUSTERS) return spc;
  }
  throw new Error(`an ESP of ${sizeBytes} bytes is too small for FAT32 with ${sectorSize}-byte sectors (needs ${FAT32_MIN_CLUSTERS} clusters)`);
}

export async function mkfsVfatRegion(path: string, r: Region, sectorSize: number): Promise<void> {
  const startSector = r.offset / sectorSize;
  await runTool("mkfs.vfat", [
    "-F", "32", // firmware only promises FAT32 support on the ESP
    "-s", String(fat32SectorsPerCluster(r.size, sectorSize)),
    "-n", r.label,
    "-S", String(sectorSize),
    "-h", String(startSector), // "hidden sectors" = partition start; some firmware checks it
    `--offset=${startSector}`,
    path,
    String(r.size / 1024),
  ]);
}

export async function mkfsExt4Region(path: string, r: Region): Promise<void> {
  // nodiscard: on an image file a discard would punch holes, and there is nothing to discard anyway
  await runTool("mkfs.ext4", ["-q", "-F", "-L", r.label, "-b", "4096", "-E", `offset=${r.offset},nodiscard`, path, `${r.size / 1024}k`]);
}

function xfsArgs(label: string, sectorSize: number): string[] {
  const args = ["-q", "-f", "-K", "-n", "ftype=1", "-L", label]; // ftype=1: overlayfs (containerd) needs d_type
  if (sectorSize !== 512) args.push("-s", `size=${sectorSize}`);
  return args;
}

/** Parses `xfs_io -c "seek -a -r 0"` output into [start, end) data ranges. */
export function parseSeekOutput(text: string, fileSize: number): [number, number][] {
  const marks: { kind: "DATA" | "HOLE"; at: number }[] = [];
  for (const line of text.split("\n")) {
    const m = /^(DATA|HOLE)\s+(\d+)/.exec(line.trim());
    if (m) marks.push({ kind: m[1] as "DATA" | "HOLE", at: Number(m[2]) });
  }
  const ranges: [number, number][] = [];
  for (let i = 0; i < marks.length; i++) {
    if (marks[i].kind !== "DATA") continue;
    const end = i + 1 < marks.length ? marks[i + 1].at : fileSize;
    if (end > marks[i].at) ranges.push([marks[i].at, end]);
  }
  return ranges;
}

const COPY_CHUNK = 4 * 1024 * 1024;

// Allocated on first use: 4 MiB every start of the agent would otherwise hold for the rare mkfs.
let zeroChunk: Buffer | undefined;

/**
 * `targetIsZero`: the region is known to read as zeros (a freshly truncated image), so all-zero chunks — mkfs
 * zeroes the whole log — can be skipped and the image stays sparse.
 */
export async function mkfsXfsRegion(target: BlockIO, imagePath: string, r: Region, sectorSize: number, targetIsZero = false): Promise<void> {
  const tmp = join(dirname(imagePath), `.machined-xfs-${randomBytes(6).toString("hex")}.img`);
  try {
    await files.writeFile(tmp, "", { flag: "wx", mode: 0o600 });
    await files.truncate(tmp, r.size);
    await runTool("mkfs.xfs", [...xfsArgs(r.label, sectorSize), tmp]);
    const { stdout } = await runTool("xfs_io", ["-r", "-c", "seek -a -r 0", tmp]);
    const src = await openBlockIO(tmp);
    try {
      for (const [start, end] of parseSeekOutput(stdout.toString("utf8"), r.size)) {
        for (let off = start; off < end; off += COPY_CHUNK) {
          const len = Math.min(COPY_CHUNK, end - off);
          const chunk = await src.read(off, len);
          if (targetIsZero && chunk.equals((zeroChunk ??= Buffer.alloc(COPY_CHUNK)).subarray(0, len))) continue;
          await target.write(r.offset + off, chunk);
        }
      }
    } finally {
      await src.close();
    }
  } finally {
    await files.rm(tmp, { force: true });
  }
}

/** Formats a partition device node (real disks, after the kernel re-read the table). */
export async function mkfsDevice(partPath: string, fs: FsKind, label: string, sectorSize: number): Promise<void> {
  switch (fs) {
    case "vfat":
      await runTool("mkfs.vfat", ["-F", "32", "-n", label, "-S", String(sectorSize), partPath]);
      return;
    case "ext4":
      await runTool("mkfs.ext4", ["-q", "-F", "-L", label, partPath]);
      return;
    case "xfs":
      await runTool("mkfs.xfs", [...xfsArgs(label, sectorSize), partPath]);
      return;
    case "none":
      return;
  }
}
