/**
 * GPT GUIDs are stored "mixed-endian": the first three fields little-endian, the last two as plain bytes.
 * Getting this wrong still round-trips through our own reader, so tests compare against sgdisk's output.
 */
import { randomUUID } from "node:crypto";

const GUID_RE = /^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$/;

export function normalizeGuid(guid: string): string {
  const g = guid.trim().toUpperCase();
  if (!GUID_RE.test(g)) throw new Error(`invalid GUID ${JSON.stringify(guid)}`);
  return g;
}

export function guidToBytes(guid: string): Buffer {
  const hex = normalizeGuid(guid).replace(/-/g, "");
  const raw = Buffer.from(hex, "hex");
  const out = Buffer.alloc(16);
  // first three groups are little-endian integers
  out.writeUInt32LE(raw.readUInt32BE(0), 0);
  out.writeUInt16LE(raw.readUInt16BE(4), 4);
  out.writeUInt16LE(raw.readUInt16BE(6), 6);
  raw.copy(out, 8, 8, 16);
  return out;
}

export function guidFromBytes(buf: Uint8Array, offset = 0): string {
  const b = Buffer.from(buf.buffer, buf.byteOffset + offset, 16);
  const p1 = b.readUInt32LE(0).toString(16).padStart(8, "0");
  const p2 = b.readUInt16LE(4).toString(16).padStart(4, "0");
  const p3 = b.readUInt16LE(6).toString(16).padStart(4, "0");
  const p4 = b.subarray(8, 10).toString("hex");
  const p5 = b.subarray(10, 16).toString("hex");
  return `${p1}-${p2}-${p3}-${p4}-${p5}`.toUpperCase();
}

export const ZERO_GUID = "00000000-0000-0000-0000-000000000000";

export function randomGuid(): string {
  return randomUUID().toUpperCase();
}

/** Partition type GUIDs we write (UEFI spec + the Discoverable Partitions Specification). */
export const PartitionType = {
  EFI_SYSTEM: "C12A7328-F81F-11D2-BA4B-00A0C93EC93B",
  BIOS_BOOT: "21686148-6449-6E6F-744E-656564454649",
  LINUX_DATA: "0FC63DAF-8483-4772-8E79-3D69D8477DE4",
  ROOT_X86_64: "4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709",
  ROOT_ARM64: "B921B045-1DF0-41C3-AF44-4C6F280D3FAE",
} as const;

/** GPT attribute bits we use. */
export const PartitionAttr = {
  REQUIRED: 1n << 0n,
  NO_BLOCK_IO: 1n << 1n,
  LEGACY_BIOS_BOOTABLE: 1n << 2n,
} as const;
