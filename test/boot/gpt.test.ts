import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFile, truncate } from "node:fs/promises";
import { join } from "node:path";
import { openBlockIO, withBlockIO } from "../../src/boot/blockio.js";
import { emptyGptTable, GptError, PartitionAttr, PartitionType, readGpt, readGptStrict, writeGpt, type GptTable } from "../../src/boot/gpt/index.js";
import { guidFromBytes, guidToBytes } from "../../src/boot/gpt/guid.js";
import { runTool as run } from "../../src/boot/tools.js";
import { missingTools, sparseFile, tempDir } from "./helpers.js";

const MiB = 1024 * 1024;
const noGdisk = (await missingTools("gpt sgdisk cross-checks", ["sgdisk"])).length > 0;

function sampleTable(size: number, ss = 512): GptTable {
  const t = emptyGptTable(size, ss, "11111111-2222-3333-4444-555555555555");
  const mib = MiB / ss;
  t.partitions = [
    { index: 1, typeGuid: PartitionType.EFI_SYSTEM, uniqueGuid: "AAAAAAAA-0000-4000-8000-000000000001", firstLba: mib, lastLba: 9 * mib - 1, attributes: 0n, name: "EFI" },
    { index: 2, typeGuid: PartitionType.BIOS_BOOT, uniqueGuid: "AAAAAAAA-0000-4000-8000-000000000002", firstLba: 9 * mib, lastLba: 10 * mib - 1, attributes: PartitionAttr.LEGACY_BIOS_BOOTABLE, name: "BIOS" },
    { index: 3, typeGuid: PartitionType.LINUX_DATA, uniqueGuid: "AAAAAAAA-0000-4000-8000-000000000003", firstLba: 10 * mib, lastLba: 20 * mib - 1, attributes: 0n, name: "DATA-Ünï" },
  ];
  return t;
}

describe("GPT GUID encoding", () => {
  it("stores the first three groups little-endian (ESP type GUID bytes as in the UEFI spec)", () => {
    const b = guidToBytes(PartitionType.EFI_SYSTEM);
    expect(b.toString("hex")).toBe("28732ac11ff8d211ba4b00a0c93ec93b");
    expect(guidFromBytes(b)).toBe(PartitionType.EFI_SYSTEM);
  });
});

describe("GPT write/read", () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  beforeAll(async () => ({ dir, cleanup } = await tempDir()));
  afterAll(async () => cleanup());

  it("round-trips a table with names, attributes and GUIDs (512-byte sectors)", async () => {
    const img = await sparseFile(join(dir, "rt512.img"), 64 * MiB);
    const t = sampleTable(64 * MiB);
    await withBlockIO(img, { write: true }, (io) => writeGpt(io, t));
    const res = await withBlockIO(img, {}, (io) => readGpt(io));
    expect(res.problems).toEqual([]);
    expect(res.primaryValid && res.backupValid).toBe(true);
    expect(res.table).toEqual(t);
  });

  it("round-trips and auto-detects 4096-byte sectors", async () => {
    const img = await sparseFile(join(dir, "rt4k.img"), 64 * MiB);
    const t = sampleTable(64 * MiB, 4096);
    expect(t.firstUsableLba).toBe(6); // 2 + 16 KiB entry array / 4 KiB
    await withBlockIO(img, { write: true }, (io) => writeGpt(io, t));
    const res = await withBlockIO(img, {}, (io) => readGpt(io));
    expect(res.sectorSize).toBe(4096);
    expect(res.problems).toEqual([]);
    expect(res.table).toEqual(t);
  });

  it.skipIf(noGdisk)("is accepted by sgdisk -v and printed correctly by sgdisk -p / -i", async () => {
    const img = await sparseFile(join(dir, "sgdisk.img"), 64 * MiB);
    await withBlockIO(img, { write: true }, (io) => writeGpt(io, sampleTable(64 * MiB)));
    const v = (await run("sgdisk", ["-v", img])).stdout.toString();
    expect(v).toContain("No problems found");
    const p = (await run("sgdisk", ["-p", img])).stdout.toString();
    expect(p).toContain("Disk identifier (GUID): 11111111-2222-3333-4444-555555555555");
    expect(p).toMatch(/1\s+2048\s+18431\s+8\.0 MiB\s+EF00\s+EFI/);
    expect(p).toMatch(/2\s+18432\s+20479\s+1024\.0 KiB\s+EF02\s+BIOS/);
    expect(p).toMatch(/3\s+20480\s+40959\s+10\.0 MiB\s+8300\s+DATA-Ünï/);
    const i2 = (await run("sgdisk", ["-i", "2", img])).stdout.toString();
    expect(i2).toContain("Partition unique GUID: AAAAAAAA-0000-4000-8000-000000000002");
    expect(i2).toContain("Attribute flags: 0000000000000004");
  });

  it.skipIf(noGdisk)("reads a table written by sgdisk", async () => {
    const img = await sparseFile(join(dir, "bysgdisk.img"), 64 * MiB);
    await run("sgdisk", ["-n1:1M:+10M", "-t1:EF00", "-c1:EFI", "-n2:0:+5M", "-t2:8300", "-c2:META", "-A2:set:2", img]);
    const t = await withBlockIO(img, {}, (io) => readGptStrict(io));
    expect(t.partitions.map((p) => [p.index, p.name, p.typeGuid, p.firstLba, p.lastLba])).toEqual([
      [1, "EFI", PartitionType.EFI_SYSTEM, 2048, 22527],
      [2, "META", PartitionType.LINUX_DATA, 22528, 32767],
    ]);
    expect(t.partitions[1].attributes).toBe(4n);
  });

  it("reads from the backup when the primary header is corrupt, and says so", async () => {
    const img = await sparseFile(join(dir, "badprimary.img"), 64 * MiB);
    const t = sampleTable(64 * MiB);
    await withBlockIO(img, { write: true }, (io) => writeGpt(io, t));
    await withBlockIO(img, { write: true }, (io) => io.write(512 + 60, Buffer.from([0xff]))); // inside the disk GUID
    const res = await withBlockIO(img, {}, (io) => readGpt(io));
    expect(res.primaryValid).toBe(false);
    expect(res.backupValid).toBe(true);
    expect(res.problems.join("\n")).toMatch(/primary GPT header CRC32 mismatch at LBA 1/);
    expect(res.table?.partitions).toEqual(t.partitions);
    await expect(withBlockIO(img, {}, (io) => readGptStrict(io))).rejects.toThrow(GptError);
  });

  it("detects a corrupt primary entry array", async () => {
    const img = await sparseFile(join(dir, "badentries.img"), 64 * MiB);
    await withBlockIO(img, { write: true }, (io) => writeGpt(io, sampleTable(64 * MiB)));
    await withBlockIO(img, { write: true }, (io) => io.write(2 * 512 + 56, Buffer.from("X", "utf16le")));
    const res = await withBlockIO(img, {}, (io) => readGpt(io));
    expect(res.problems.join("\n")).toMatch(/primary partition entry array at LBA 2 fails its CRC32/);
    expect(res.table?.partitions[0].name).toBe("EFI"); // from the backup
  });

  it("reports copies that are each valid but disagree", async () => {
    const a = await sparseFile(join(dir, "a.img"), 64 * MiB);
    const b = await sparseFile(join(dir, "b.img"), 64 * MiB);
    const ta = sampleTable(64 * MiB);
    const tb = sampleTable(64 * MiB);
    tb.partitions = tb.partitions.slice(0, 2);
    await withBlockIO(a, { write: true }, (io) => writeGpt(io, ta));
    await withBlockIO(b, { write: true }, (io) => writeGpt(io, tb));
    // graft b's backup (last 33 sectors) onto a
    const tail = 33 * 512;
    const bytes = (await readFile(b)).subarray(64 * MiB - tail);
    await withBlockIO(a, { write: true }, (io) => io.write(64 * MiB - tail, bytes));
    const res = await withBlockIO(a, {}, (io) => readGpt(io));
    expect(res.primaryValid && res.backupValid).toBe(true);
    expect(res.problems.join("\n")).toMatch(/primary and backup GPT headers disagree on entriesCrc/);
  });

  it("notices a disk that grew after the table was written", async () => {
    const img = await sparseFile(join(dir, "grown.img"), 64 * MiB);
    await withBlockIO(img, { write: true }, (io) => writeGpt(io, sampleTable(64 * MiB)));
    await truncate(img, 64 * MiB + 512); // one more sector moves the last LBA
    const res = await withBlockIO(img, {}, (io) => readGpt(io));
    expect(res.problems.join("\n")).toMatch(/backup at LBA 131071, but the disk's last LBA is 131072/);
  });

  it("refuses to write overlapping partitions and says which", async () => {
    const img = await sparseFile(join(dir, "overlap.img"), 64 * MiB);
    const t = sampleTable(64 * MiB);
    t.partitions[2].firstLba = t.partitions[1].lastLba; // overlap by one sector
    const io = await openBlockIO(img, { write: true });
    await expect(writeGpt(io, t)).rejects.toThrow(/partitions 2 and 3 overlap/);
    await io.close();
  });

  it("reports a blank disk clearly", async () => {
    const img = await sparseFile(join(dir, "blank.img"), 8 * MiB);
    const res = await withBlockIO(img, {}, (io) => readGpt(io));
    expect(res.table).toBeUndefined();
    expect(res.problems[0]).toMatch(/no GPT header found/);
  });
});
