/** Serialises a GptTable into the on-disk structures: protective MBR, headers and the partition entry array. */
import { crc32 } from "node:zlib";
import { guidToBytes } from "./guid.js";
import { GPT_REVISION, GPT_SIGNATURE, HEADER_SIZE, NAME_MAX_UNITS, type GptPartition, type GptTable } from "./types.js";

/**
 * LBA 0: one partition of type 0xEE covering the disk (capped at 2^32-1 sectors), so MBR-only tools see the
 * disk as in use. The boot indicator stays 0x00 as the UEFI spec requires; bytes 0..439 (boot code) are left
 * zero for a BIOS bootloader installer to fill.
 */
export function encodeProtectiveMbr(table: GptTable): Buffer {
  const buf = Buffer.alloc(table.sectorSize);
  const p = 446;
  buf[p] = 0x00; // not active
  buf[p + 1] = 0x00; // CHS start: head 0, sector 2, cylinder 0
  buf[p + 2] = 0x02;
  buf[p + 3] = 0x00;
  buf[p + 4] = 0xee;
  buf[p + 5] = 0xff; // CHS end: saturated
  buf[p + 6] = 0xff;
  buf[p + 7] = 0xff;
  buf.writeUInt32LE(1, p + 8);
  buf.writeUInt32LE(Math.min(table.totalSectors - 1, 0xffffffff), p + 12);
  buf[510] = 0x55;
  buf[511] = 0xaa;
  return buf;
}

export function encodeName(name: string): Buffer {
  const out = Buffer.alloc(NAME_MAX_UNITS * 2);
  const units = Buffer.from(name, "utf16le");
  if (units.length > out.length) throw new Error(`partition name ${JSON.stringify(name)} is longer than ${NAME_MAX_UNITS} UTF-16 units`);
  units.copy(out);
  return out;
}

function encodeEntry(p: GptPartition, entrySize: number): Buffer {
  const e = Buffer.alloc(entrySize);
  guidToBytes(p.typeGuid).copy(e, 0);
  guidToBytes(p.uniqueGuid).copy(e, 16);
  e.writeBigUInt64LE(BigInt(p.firstLba), 32);
  e.writeBigUInt64LE(BigInt(p.lastLba), 40);
  e.writeBigUInt64LE(p.attributes, 48);
  encodeName(p.name).copy(e, 56);
  return e;
}

export function encodeEntryArray(table: GptTable): Buffer {
  const buf = Buffer.alloc(table.entryCount * table.entrySize);
  for (const p of table.partitions) {
    if (p.index < 1 || p.index > table.entryCount) throw new Error(`partition index ${p.index} is outside 1..${table.entryCount}`);
    encodeEntry(p, table.entrySize).copy(buf, (p.index - 1) * table.entrySize);
  }
  return buf;
}

export interface HeaderPlacement {
  myLba: number;
  alternateLba: number;
  entriesLba: number;
}

export function encodeHeader(table: GptTable, place: HeaderPlacement, entriesCrc: number): Buffer {
  const h = Buffer.alloc(table.sectorSize);
  h.write(GPT_SIGNATURE, 0, "ascii");
  h.writeUInt32LE(GPT_REVISION, 8);
  h.writeUInt32LE(HEADER_SIZE, 12);
  // 16: header CRC, filled below; 20: reserved
  h.writeBigUInt64LE(BigInt(place.myLba), 24);
  h.writeBigUInt64LE(BigInt(place.alternateLba), 32);
  h.writeBigUInt64LE(BigInt(table.firstUsableLba), 40);
  h.writeBigUInt64LE(BigInt(table.lastUsableLba), 48);
  guidToBytes(table.diskGuid).copy(h, 56);
  h.writeBigUInt64LE(BigInt(place.entriesLba), 72);
  h.writeUInt32LE(table.entryCount, 80);
  h.writeUInt32LE(table.entrySize, 84);
  h.writeUInt32LE(entriesCrc >>> 0, 88);
  h.writeUInt32LE(crc32(h.subarray(0, HEADER_SIZE)) >>> 0, 16);
  return h;
}
