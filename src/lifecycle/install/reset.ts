/**
 * Reset's wipe tasks. On a disk-image file a wipe drops the blocks (truncate to 0 and back: instant, the file
 * stays sparse); on a device the first and last MiB are zeroed (what a "fast" wipe does), which kills the
 * partition table and filesystem signatures.
 *
 * In local mode the state folder plays the system partitions' roles, so a wipe clears their files too:
 *   STATE     → config.yaml, config.staged.yaml, node-identity.yaml (the machine config and identity);
 *   EPHEMERAL → etcd/, etcd.snapshot, containerd/ (what /var holds on a real node).
 */
import { join } from "node:path";
import { hostFiles as files } from "../../host/files/index.js";
import { openBlockIO, withBlockIO } from "../../boot/blockio.js";
import { partitionDevicePath } from "../../boot/layout.js";
import { Meta } from "../../boot/meta.js";
import { mkfsDevice, mkfsExt4Region, mkfsXfsRegion } from "../../boot/mkfs.js";
import { invalidArgument } from "../../machinery/errors.js";
import type { SystemDisk } from "./system-disk.js";

export const WIPEABLE_LABELS = ["STATE", "EPHEMERAL", "META"] as const;
export type WipeableLabel = (typeof WIPEABLE_LABELS)[number];

export const STATE_FILES = ["config.yaml", "config.staged.yaml", "node-identity.yaml"];
export const EPHEMERAL_FILES = ["etcd", "etcd.snapshot", "containerd"];

const MiB = 1 << 20;

export function checkLabels(labels: string[]): WipeableLabel[] {
  for (const l of labels) {
    if (!(WIPEABLE_LABELS as readonly string[]).includes(l)) {
      throw invalidArgument(`failed to get volume status with label ${JSON.stringify(l)}: not a system volume that reset can wipe (${WIPEABLE_LABELS.join(", ")})`);
    }
  }
  return labels as WipeableLabel[];
}

/** Fast wipe of a whole disk or image file. */
export async function wipeDisk(path: string): Promise<void> {
  const st = await files.stat(path);
  if (st.isFile()) {
    await files.truncate(path, 0);
    await files.truncate(path, st.size);
    return;
  }
  await withBlockIO(path, { write: true }, async (io) => {
    const size = await io.size();
    const zero = Buffer.alloc(MiB);
    await io.write(0, zero);
    await io.write(Math.max(0, size - MiB), zero);
    await io.sync();
  });
}

/** Removes what a folder holds and keeps the folder (it may be a mount point or a service's bind source). */
export async function emptyDir(dir: string): Promise<void> {
  const entries = await files.readdir(dir).catch((e: NodeJS.ErrnoException) => {
    if (e.code === "ENOENT") return [] as string[];
    throw e;
  });
  for (const e of entries) await files.rm(join(dir, e), { recursive: true, force: true });
}

export async function removeStateFiles(stateDir: string, names: string[]): Promise<void> {
  for (const n of names) await files.rm(join(stateDir, n), { recursive: true, force: true });
}

/** Re-creates one system partition empty (STATE ext4, EPHEMERAL xfs, META an empty ADV). */
export async function wipePartition(disk: SystemDisk, label: WipeableLabel): Promise<void> {
  const role = label === "STATE" ? "state" : label === "EPHEMERAL" ? "ephemeral" : "meta";
  const part = disk.layout.partitions.find((p) => p.role === role);
  if (!part) return;
  const isFile = (await files.stat(disk.path)).isFile();
  if (label === "META") {
    await withBlockIO(disk.path, { write: true }, async (io) => {
      await io.write(part.offset, Buffer.alloc(part.size));
      await (await Meta.fromIO(io, part.offset, part.size)).flush();
    });
    return;
  }
  const fs = label === "STATE" ? "ext4" : "xfs";
  if (!isFile) {
    await mkfsDevice(partitionDevicePath(disk.path, part.index), fs, label, disk.layout.sectorSize);
    return;
  }
  const region = { offset: part.offset, size: part.size, label };
  if (fs === "ext4") {
    await mkfsExt4Region(disk.path, region);
    return;
  }
  const io = await openBlockIO(disk.path, { write: true });
  try {
    await io.write(part.offset, Buffer.alloc(Math.min(MiB, part.size)));
    await mkfsXfsRegion(io, disk.path, region, disk.layout.sectorSize);
    await io.sync();
  } finally {
    await io.close();
  }
}
