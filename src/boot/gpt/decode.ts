/** Parses and validates on-disk GPT structures. Every check reports a sentence that names the structure and LBA. */
import { crc32 } from "node:zlib";
import { guidFromBytes, ZERO_GUID } from "./guid.js";
import { GPT_REVISION, GPT_SIGNATURE, HEADER_SIZE, type GptPartition } from "./types.js";

export interface RawHeader {
  myLba: number;
  alternateLba: number;
  firstUsableLba: number;
  lastUsableLba: number;
  diskGuid: string;
  entriesLba: number;
  entryCount: number;
  entrySize: number;
  entriesCrc: number;
}

/** Returns the header or the list of reasons it is unusable. */
export function decodeHeader(sector: Buffer, expectedLba: number, which: string): { header?: RawHeader; problems: string[] } {
  const problems: string[] = [];
  if (sector.toString("ascii", 0, 8) !== GPT_SIGNATURE) {
    return { problems: [`${which} GPT header at LBA ${expectedLba} has no "EFI PART" signature`] };
  }
  const revision = sector.readUInt32LE(8);
  if (revision !== GPT_REVISION) problems.push(`${which} GPT header revision is 0x${revision.toString(16)}, expected 0x00010000`);
  const size = sector.readUInt32LE(12);
  if (size < HEADER_SIZE || size > sector.length) {
    problems.push(`${which} GPT header size ${size} is outside ${HEADER_SIZE}..${sector.length}`);
    return { problems };
  }
  const stored = sector.readUInt32LE(16);
  const copy = Buffer.from(sector.subarray(0, size));
  copy.writeUInt32LE(0, 16);
  const actual = crc32(copy) >>> 0;
  if (stored !== actual) {
    problems.push(`${which} GPT header CRC32 mismatch at LBA ${expectedLba}: stored 0x${stored.toString(16)}, computed 0x${actual.toString(16)}`);
    return { problems };
  }
  const header: RawHeader = {
    myLba: Number(sector.readBigUInt64LE(24)),
    alternateLba: Number(sector.readBigUInt64LE(32)),
    firstUsableLba: Number(sector.readBigUInt64LE(40)),
    lastUsableLba: Number(sector.readBigUInt64LE(48)),
    diskGuid: guidFromBytes(sector, 56),
    entriesLba: Number(sector.readBigUInt64LE(72)),
    entryCount: sector.readUInt32LE(80),
    entrySize: sector.readUInt32LE(84),
    entriesCrc: sector.readUInt32LE(88),
  };
  if (header.myLba !== expectedLba) problems.push(`${which} GPT header says it lives at LBA ${header.myLba}, but was read from LBA ${expectedLba}`);
  if (header.entrySize < 128 || header.entrySize % 128 !== 0 || (header.entrySize & (header.entrySize - 1)) !== 0) {
    problems.push(`${which} GPT header has an invalid partition entry size ${header.entrySize}`);
  }
  if (header.entryCount === 0 || header.entryCount > 4096) problems.push(`${which} GPT header has an implausible entry count ${header.entryCount}`);
  if (header.firstUsableLba > header.lastUsableLba) {
    problems.push(`${which} GPT header first usable LBA ${header.firstUsableLba} is after last usable LBA ${header.lastUsableLba}`);
  }
  return { header: problems.length === 0 ? header : undefined, problems };
}

export function checkEntriesCrc(entries: Buffer, header: RawHeader, which: string): string[] {
  const actual = crc32(entries) >>> 0;
  if (actual !== header.entriesCrc) {
    return [`${which} partition entry array at LBA ${header.entriesLba} fails its CRC32: header says 0x${header.entriesCrc.toString(16)}, computed 0x${actual.toString(16)}`];
  }
  return [];
}

export function decodeName(raw: Buffer): string {
  let end = 0;
  while (end + 1 < raw.length && (raw[end] !== 0 || raw[end + 1] !== 0)) end += 2;
  return raw.toString("utf16le", 0, end);
}

export function decodeEntries(entries: Buffer, header: RawHeader): GptPartition[] {
  const parts: GptPartition[] = [];
  for (let i = 0; i < header.entryCount; i++) {
    const e = entries.subarray(i * header.entrySize, (i + 1) * header.entrySize);
    const typeGuid = guidFromBytes(e, 0);
    if (typeGuid === ZERO_GUID) continue; // unused slot
    parts.push({
      index: i + 1,
      typeGuid,
      uniqueGuid: guidFromBytes(e, 16),
      firstLba: Number(e.readBigUInt64LE(32)),
      lastLba: Number(e.readBigUInt64LE(40)),
      attributes: e.readBigUInt64LE(48),
      name: decodeName(e.subarray(56, 128)),
    });
  }
  return parts;
}

/** Partition ranges must sit inside the usable area and never overlap. */
export function checkPartitions(parts: GptPartition[], header: RawHeader): string[] {
  const problems: string[] = [];
  for (const p of parts) {
    const label = `partition ${p.index} (${p.name || "unnamed"})`;
    if (p.firstLba > p.lastLba) problems.push(`${label} ends (LBA ${p.lastLba}) before it starts (LBA ${p.firstLba})`);
    if (p.firstLba < header.firstUsableLba || p.lastLba > header.lastUsableLba) {
      problems.push(`${label} spans LBA ${p.firstLba}..${p.lastLba}, outside the usable area ${header.firstUsableLba}..${header.lastUsableLba}`);
    }
  }
  const sorted = [...parts].sort((a, b) => a.firstLba - b.firstLba);
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i].firstLba <= sorted[i - 1].lastLba) {
      problems.push(`partitions ${sorted[i - 1].index} and ${sorted[i].index} overlap at LBA ${sorted[i].firstLba}`);
    }
  }
  return problems;
}

export function checkProtectiveMbr(lba0: Buffer): string[] {
  if (lba0[510] !== 0x55 || lba0[511] !== 0xaa) return ["protective MBR at LBA 0 has no 0x55AA signature"];
  for (let i = 0; i < 4; i++) {
    if (lba0[446 + i * 16 + 4] === 0xee) return [];
  }
  return ["MBR at LBA 0 has no 0xEE protective partition (hybrid or missing protective MBR)"];
}
