/**
 * Our partition plan (pure: no I/O). See docs/disk-layout.md for the reasoning behind every size.
 * Order on disk: EFI, BIOS (amd64 only), BOOT-A, BOOT-B, META, STATE, EPHEMERAL (takes the rest).
 */
import { PartitionAttr, PartitionType, randomGuid } from "./gpt/guid.js";
import { gptGeometry } from "./gpt/geometry.js";

export type Arch = "amd64" | "arm64";
export type PartitionRole = "esp" | "bios" | "slot-a" | "slot-b" | "meta" | "state" | "ephemeral";
export type FsKind = "vfat" | "ext4" | "xfs" | "none";
export type Slot = "A" | "B";

export const MiB = 1024 * 1024;
export const GiB = 1024 * MiB;

export interface LayoutSizes {
  esp: number;
  bios: number;
  slot: number;
  meta: number;
  state: number;
  ephemeralMin: number;
}

export const DEFAULT_SIZES: Readonly<LayoutSizes> = {
  esp: 512 * MiB,
  bios: 1 * MiB,
  slot: 1 * GiB,
  meta: 1 * MiB,
  state: 100 * MiB,
  ephemeralMin: 1 * GiB,
};

/** Partitions start and end on 1 MiB boundaries: right for 512e/4Kn disks, SSD erase blocks and RAID stripes. */
export const ALIGNMENT = 1 * MiB;

export const LABELS: Readonly<Record<PartitionRole, string>> = {
  esp: "EFI",
  bios: "BIOS",
  "slot-a": "BOOT-A",
  "slot-b": "BOOT-B",
  meta: "META",
  state: "STATE",
  ephemeral: "EPHEMERAL",
};

const FS: Readonly<Record<PartitionRole, FsKind>> = {
  esp: "vfat",
  bios: "none",
  "slot-a": "none", // the slot holds a raw rootfs image (squashfs), written at install/upgrade time
  "slot-b": "none",
  meta: "none",
  state: "ext4",
  ephemeral: "xfs",
};

export interface PlannedPartition {
  index: number;
  role: PartitionRole;
  label: string;
  typeGuid: string;
  uniqueGuid: string;
  attributes: bigint;
  firstLba: number;
  lastLba: number;
  offset: number;
  size: number;
  fs: FsKind;
}

export interface LayoutPlan {
  diskSizeBytes: number;
  sectorSize: number;
  arch: Arch;
  diskGuid: string;
  partitions: PlannedPartition[];
}

export interface PlanOptions {
  arch: Arch;
  sectorSize?: number;
  /** Override sizes (tests, or a future config knob); each must be a multiple of 1 MiB. */
  sizes?: Partial<LayoutSizes>;
  diskGuid?: string;
}

export function slotRole(slot: Slot): "slot-a" | "slot-b" {
  return slot === "A" ? "slot-a" : "slot-b";
}

function rootType(arch: Arch): string {
  return arch === "amd64" ? PartitionType.ROOT_X86_64 : PartitionType.ROOT_ARM64;
}

function typeFor(role: PartitionRole, arch: Arch): string {
  switch (role) {
    case "esp":
      return PartitionType.EFI_SYSTEM;
    case "bios":
      return PartitionType.BIOS_BOOT;
    case "slot-a":
    case "slot-b":
      return rootType(arch);
    default:
      return PartitionType.LINUX_DATA;
  }
}

const fmt = (n: number) => (n % GiB === 0 ? `${n / GiB} GiB` : `${(n / MiB).toFixed(n % MiB === 0 ? 0 : 2)} MiB`);

export function planLayout(diskSizeBytes: number, opts: PlanOptions): LayoutPlan {
  const sectorSize = opts.sectorSize ?? 512;
  const sizes = { ...DEFAULT_SIZES, ...opts.sizes };
  for (const [k, v] of Object.entries(sizes)) {
    if (!Number.isInteger(v) || v <= 0 || v % ALIGNMENT !== 0) throw new Error(`layout size ${k}=${v} must be a positive multiple of 1 MiB`);
  }
  if (opts.arch !== "amd64" && opts.arch !== "arm64") throw new Error(`unsupported architecture ${String(opts.arch)} (amd64 or arm64)`);
  const geo = gptGeometry(diskSizeBytes, sectorSize);

  const fixed: [PartitionRole, number][] = [["esp", sizes.esp]];
  if (opts.arch === "amd64") fixed.push(["bios", sizes.bios]); // GRUB's core.img for BIOS boot; UEFI-only arm64 has no use for it
  fixed.push(["slot-a", sizes.slot], ["slot-b", sizes.slot], ["meta", sizes.meta], ["state", sizes.state]);

  // usable bytes end at the last 1 MiB boundary before the backup GPT
  const usableEnd = Math.floor(((geo.lastUsableLba + 1) * sectorSize) / ALIGNMENT) * ALIGNMENT;
  const fixedTotal = fixed.reduce((n, [, s]) => n + s, 0);
  const needed = ALIGNMENT + fixedTotal + sizes.ephemeralMin + ALIGNMENT;
  if (usableEnd - ALIGNMENT - fixedTotal < sizes.ephemeralMin) {
    throw new Error(
      `disk of ${diskSizeBytes} bytes (${fmt(diskSizeBytes)}) is too small: the layout needs at least ${fmt(needed)} ` +
        `(${fixed.map(([r, s]) => `${LABELS[r]} ${fmt(s)}`).join(", ")}, EPHEMERAL at least ${fmt(sizes.ephemeralMin)}, plus GPT and alignment)`,
    );
  }

  const partitions: PlannedPartition[] = [];
  let cursor = ALIGNMENT;
  const add = (role: PartitionRole, size: number) => {
    partitions.push({
      index: partitions.length + 1,
      role,
      label: LABELS[role],
      typeGuid: typeFor(role, opts.arch),
      uniqueGuid: randomGuid(),
      attributes: role === "bios" ? PartitionAttr.LEGACY_BIOS_BOOTABLE : 0n,
      firstLba: cursor / sectorSize,
      lastLba: (cursor + size) / sectorSize - 1,
      offset: cursor,
      size,
      fs: FS[role],
    });
    cursor += size;
  };
  for (const [role, size] of fixed) add(role, size);
  add("ephemeral", usableEnd - cursor);

  return { diskSizeBytes, sectorSize, arch: opts.arch, diskGuid: opts.diskGuid ?? randomGuid(), partitions };
}

export function partitionFor<T extends { role?: PartitionRole }>(parts: readonly T[], role: PartitionRole): T {
  const p = parts.find((x) => x.role === role);
  if (!p) throw new Error(`layout has no ${LABELS[role]} partition`);
  return p;
}

export function roleForLabel(label: string): PartitionRole | undefined {
  return (Object.keys(LABELS) as PartitionRole[]).find((r) => LABELS[r] === label);
}
