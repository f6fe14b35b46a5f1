/**
 * Our own GPT reader/writer. Works on any BlockIO (image file or block device) with 512- or 4096-byte sectors.
 * Writing always lays down both copies plus the protective MBR; reading validates both copies and says which
 * one is broken, so a torn repartition is diagnosable rather than silently half-read.
 */
import { crc32 } from "node:zlib";
import type { BlockIO } from "../blockio.js";
import { checkEntriesCrc, checkPartitions, checkProtectiveMbr, decodeEntries, decodeHeader, type RawHeader } from "./decode.js";
import { encodeEntryArray, encodeHeader, encodeProtectiveMbr } from "./encode.js";
import { gptGeometry } from "./geometry.js";
import { randomGuid } from "./guid.js";
import { DEFAULT_ENTRY_COUNT, DEFAULT_ENTRY_SIZE, GPT_SIGNATURE, GptError, SUPPORTED_SECTOR_SIZES, type GptTable } from "./types.js";

export * from "./types.js";
export * from "./guid.js";
export { gptGeometry } from "./geometry.js";

export function emptyGptTable(diskSizeBytes: number, sectorSize = 512, diskGuid = randomGuid()): GptTable {
  const g = gptGeometry(diskSizeBytes, sectorSize);
  return {
    sectorSize,
    totalSectors: g.totalSectors,
    diskGuid,
    firstUsableLba: g.firstUsableLba,
    lastUsableLba: g.lastUsableLba,
    entryCount: DEFAULT_ENTRY_COUNT,
    entrySize: DEFAULT_ENTRY_SIZE,
    partitions: [],
  };
}

export async function writeGpt(io: BlockIO, table: GptTable): Promise<void> {
  const size = await io.size();
  const g = gptGeometry(table.totalSectors * table.sectorSize, table.sectorSize, table.entryCount, table.entrySize);
  if (size < table.totalSectors * table.sectorSize) {
    throw new Error(`${io.path}: table is for ${table.totalSectors * table.sectorSize} bytes but the disk has ${size}`);
  }
  const header = { myLba: 1, alternateLba: g.backupHeaderLba, firstUsableLba: table.firstUsableLba, lastUsableLba: table.lastUsableLba, entriesLba: 2 };
  const problems = checkPartitions(table.partitions, { ...header, diskGuid: table.diskGuid, entryCount: table.entryCount, entrySize: table.entrySize, entriesCrc: 0 });
  if (problems.length > 0) throw new GptError(io.path, problems);

  const entries = encodeEntryArray(table);
  const entriesCrc = crc32(entries) >>> 0;
  const ss = table.sectorSize;
  await io.write(0, encodeProtectiveMbr(table));
  await io.write(ss, encodeHeader(table, { myLba: 1, alternateLba: g.backupHeaderLba, entriesLba: 2 }, entriesCrc));
  await io.write(2 * ss, entries);
  await io.write(g.backupEntriesLba * ss, entries);
  await io.write(g.backupHeaderLba * ss, encodeHeader(table, { myLba: g.backupHeaderLba, alternateLba: 1, entriesLba: g.backupEntriesLba }, entriesCrc));
  await io.sync();
}

export interface GptReadResult {
  /** The table from the primary copy when it is valid, otherwise from the backup; undefined when neither is. */
  table?: GptTable;
  sectorSize: number;
  primaryValid: boolean;
  backupValid: boolean;
  /** Every inconsistency found; empty means both copies and the protective MBR are clean. */
  problems: string[];
}

async function detectSectorSize(io: BlockIO, size: number): Promise<number | undefined> {
  for (const ss of SUPPORTED_SECTOR_SIZES) {
    if ((await io.read(ss, 8)).toString("ascii") === GPT_SIGNATURE) return ss;
  }
  for (const ss of SUPPORTED_SECTOR_SIZES) {
    if (size % ss === 0 && size >= 2 * ss && (await io.read(size - ss, 8)).toString("ascii") === GPT_SIGNATURE) return ss;
  }
  return undefined;
}

interface Copy {
  header?: RawHeader;
  entries?: Buffer;
  valid: boolean;
  problems: string[];
}

async function readCopy(io: BlockIO, lba: number, ss: number, which: string): Promise<Copy> {
  const { header, problems } = decodeHeader(await io.read(lba * ss, ss), lba, which);
  if (!header) return { valid: false, problems };
  const entries = await io.read(header.entriesLba * ss, header.entryCount * header.entrySize);
  const crcProblems = checkEntriesCrc(entries, header, which);
  return { header, entries, valid: crcProblems.length === 0, problems: crcProblems };
}

export async function readGpt(io: BlockIO, opts: { sectorSize?: number } = {}): Promise<GptReadResult> {
  const size = await io.size();
  const ss = opts.sectorSize ?? (await detectSectorSize(io, size));
  if (ss === undefined) {
    return { sectorSize: 512, primaryValid: false, backupValid: false, problems: ["no GPT header found (neither at LBA 1 nor in the last sector, for 512- or 4096-byte sectors)"] };
  }
  const totalSectors = Math.floor(size / ss);
  const problems = checkProtectiveMbr(await io.read(0, 512));

  const primary = await readCopy(io, 1, ss, "primary");
  problems.push(...primary.problems);
  const backupLba = primary.header ? primary.header.alternateLba : totalSectors - 1;
  if (primary.header && backupLba !== totalSectors - 1) {
    problems.push(`primary GPT header places the backup at LBA ${backupLba}, but the disk's last LBA is ${totalSectors - 1} (was the disk resized?)`);
  }
  const backup = backupLba < totalSectors ? await readCopy(io, backupLba, ss, "backup") : { valid: false, problems: [`backup GPT header LBA ${backupLba} is beyond the end of the disk`] };
  problems.push(...backup.problems);

  if (primary.valid && backup.valid) problems.push(...compareCopies(primary, backup));
  const chosen = primary.valid ? primary : backup.valid ? backup : undefined;
  if (!chosen?.header || !chosen.entries) return { sectorSize: ss, primaryValid: false, backupValid: false, problems };

  const partitions = decodeEntries(chosen.entries, chosen.header);
  problems.push(...checkPartitions(partitions, chosen.header));
  const table: GptTable = {
    sectorSize: ss,
    totalSectors,
    diskGuid: chosen.header.diskGuid,
    firstUsableLba: chosen.header.firstUsableLba,
    lastUsableLba: chosen.header.lastUsableLba,
    entryCount: chosen.header.entryCount,
    entrySize: chosen.header.entrySize,
    partitions,
  };
  return { table, sectorSize: ss, primaryValid: primary.valid, backupValid: backup.valid, problems };
}

function compareCopies(primary: Copy, backup: Copy): string[] {
  const p = primary.header!;
  const b = backup.header!;
  const out: string[] = [];
  if (b.alternateLba !== 1) out.push(`backup GPT header points at LBA ${b.alternateLba} for the primary instead of LBA 1`);
  for (const key of ["diskGuid", "firstUsableLba", "lastUsableLba", "entryCount", "entrySize", "entriesCrc"] as const) {
    if (p[key] !== b[key]) out.push(`primary and backup GPT headers disagree on ${key}: ${String(p[key])} vs ${String(b[key])}`);
  }
  if (p.entriesCrc === b.entriesCrc && !primary.entries!.equals(backup.entries!)) {
    out.push("primary and backup partition entry arrays differ");
  }
  return out;
}

/** readGpt, but any problem at all is an error: used after our own writes and before trusting a disk. */
export async function readGptStrict(io: BlockIO, opts: { sectorSize?: number } = {}): Promise<GptTable> {
  const res = await readGpt(io, opts);
  if (!res.table || res.problems.length > 0) throw new GptError(io.path, res.problems);
  return res.table;
}
