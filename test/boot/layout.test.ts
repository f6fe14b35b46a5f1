import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import { stat, writeFile } from "node:fs/promises";
import { withBlockIO } from "../../src/boot/blockio.js";
import { MtoolsEsp } from "../../src/boot/esp-mtools.js";
import { PartitionAttr, PartitionType } from "../../src/boot/gpt/index.js";
import { parseGrubEnv } from "../../src/boot/grubenv.js";
import { GiB, MiB, partitionFor, planLayout, readLayout, writeLayout } from "../../src/boot/layout.js";
import { Meta } from "../../src/boot/meta.js";
import { fat32SectorsPerCluster, parseSeekOutput } from "../../src/boot/mkfs.js";
import { runTool as run } from "../../src/boot/tools.js";
import { missingTools, sparseFile, tempDir } from "./helpers.js";

const missing = await missingTools("layout on image files", ["sgdisk", "mkfs.vfat", "mkfs.ext4", "mkfs.xfs", "xfs_io", "mcopy", "blkid", "xfs_repair"]);

describe("planLayout", () => {
  it("plans EFI, BIOS, BOOT-A, BOOT-B, META, STATE, EPHEMERAL on 1 MiB boundaries for amd64", () => {
    const plan = planLayout(4 * GiB, { arch: "amd64" });
    expect(plan.partitions.map((p) => [p.index, p.label, p.size / MiB, p.fs])).toEqual([
      [1, "EFI", 512, "vfat"],
      [2, "BIOS", 1, "none"],
      [3, "BOOT-A", 1024, "none"],
      [4, "BOOT-B", 1024, "none"],
      [5, "META", 1, "none"],
      [6, "STATE", 100, "ext4"],
      [7, "EPHEMERAL", 4096 - 1 - 512 - 1 - 2048 - 1 - 100 - 1, "xfs"],
    ]);
    expect(plan.partitions[0].offset).toBe(MiB);
    for (const p of plan.partitions) expect(p.offset % MiB).toBe(0);
    const bios = partitionFor(plan.partitions, "bios");
    expect(bios.typeGuid).toBe(PartitionType.BIOS_BOOT);
    expect(bios.attributes).toBe(PartitionAttr.LEGACY_BIOS_BOOTABLE);
    expect(partitionFor(plan.partitions, "slot-a").typeGuid).toBe(PartitionType.ROOT_X86_64);
    expect(partitionFor(plan.partitions, "esp").typeGuid).toBe(PartitionType.EFI_SYSTEM);
  });

  it("has no BIOS partition on arm64 and uses the arm64 root type for slots", () => {
    const plan = planLayout(8 * GiB, { arch: "arm64" });
    expect(plan.partitions.map((p) => p.label)).toEqual(["EFI", "BOOT-A", "BOOT-B", "META", "STATE", "EPHEMERAL"]);
    expect(partitionFor(plan.partitions, "slot-b").typeGuid).toBe(PartitionType.ROOT_ARM64);
  });

  it("supports 4096-byte sectors", () => {
    const plan = planLayout(4 * GiB, { arch: "amd64", sectorSize: 4096 });
    expect(plan.partitions[0].firstLba).toBe(256);
  });

  it("sizes FAT32 clusters so the ESP stays a valid FAT32 (4 KiB clusters when possible)", () => {
    expect(fat32SectorsPerCluster(512 * MiB, 512)).toBe(8);
    expect(fat32SectorsPerCluster(64 * MiB, 512)).toBe(1);
    expect(fat32SectorsPerCluster(512 * MiB, 4096)).toBe(1);
    expect(() => fat32SectorsPerCluster(64 * MiB, 4096)).toThrow(/too small for FAT32/);
  });

  it("explains what does not fit on a small disk", () => {
    expect(() => planLayout(3 * GiB, { arch: "amd64" })).toThrow(/too small: the layout needs at least .*EFI 512 MiB.*EPHEMERAL at least 1 GiB/);
  });
});

describe.skipIf(missing.length > 0)("writeLayout / readLayout on a 4 GiB image file", () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let img: string;
  beforeAll(async () => {
    ({ dir, cleanup } = await tempDir());
    img = await sparseFile(join(dir, "disk.img"), 4 * GiB);
  });
  afterAll(async () => cleanup());

  it("writes a layout that sgdisk -v accepts and reads it back", async () => {
    const plan = planLayout(4 * GiB, { arch: "amd64" });
    const t0 = performance.now();
    const layout = await writeLayout(img, plan);
    console.log(`install layout on a 4 GiB sparse image: ${(performance.now() - t0).toFixed(0)} ms (${((await stat(img)).blocks * 512) / MiB} MiB allocated)`);
    expect((await run("sgdisk", ["-v", img])).stdout.toString()).toContain("No problems found");

    const back = await readLayout(img);
    expect(back.machined).toBe(true);
    expect(back.problems).toEqual([]);
    expect(back.diskGuid).toBe(plan.diskGuid);
    expect(back.partitions.map((p) => [p.index, p.name, p.role, p.typeGuid, p.uniqueGuid, p.offset, p.size, p.attributes])).toEqual(
      plan.partitions.map((p) => [p.index, p.label, p.role, p.typeGuid, p.uniqueGuid, p.offset, p.size, p.attributes]),
    );
    expect(layout.partitions).toEqual(back.partitions);
  });

  it("creates the filesystems inside the partition regions", async () => {
    const layout = await readLayout(img);
    const probe = async (role: Parameters<typeof partitionFor>[1]) => {
      const p = partitionFor(layout.partitions, role);
      return (await run("blkid", ["-p", "-o", "export", "-O", String(p.offset), img])).stdout.toString();
    };
    const esp = await probe("esp");
    expect(esp).toContain("LABEL=EFI");
    expect(esp).toContain("TYPE=vfat");
    expect(esp).toContain("VERSION=FAT32");
    expect(await probe("state")).toMatch(/LABEL=STATE[\s\S]*TYPE=ext4/);
    expect(await probe("ephemeral")).toMatch(/LABEL=EPHEMERAL[\s\S]*TYPE=xfs/);

    // the XFS copy must be a complete filesystem, not just a superblock: check it with xfs_repair
    const eph = partitionFor(layout.partitions, "ephemeral");
    const out = join(dir, "eph.img");
    await extractRegion(img, eph.offset, eph.size, out);
    await run("xfs_repair", ["-n", "-f", out]);
  });

  it("leaves an empty valid META and an ESP skeleton with loader.conf and grubenv", async () => {
    const layout = await readLayout(img);
    const meta = partitionFor(layout.partitions, "meta");
    const m = await Meta.open(img, meta.offset, meta.size);
    expect(m.source).toBe("primary");
    expect(m.list()).toEqual([]);
    await m.close();

    const esp = new MtoolsEsp(img, partitionFor(layout.partitions, "esp").offset);
    expect((await esp.read("/loader/loader.conf"))?.toString()).toContain("timeout 3");
    expect(await esp.exists("/loader/entries")).toBe(true);
    const env = await esp.read("/grub/grubenv");
    expect(env?.length).toBe(1024);
    expect(parseGrubEnv(env!)).toEqual({ next_slot: "", boot_tries: "0", last_good: "" });
  });

  it("refuses to reinstall over our layout unless wipe is set", async () => {
    const before = await readLayout(img);
    await expect(writeLayout(img, planLayout(4 * GiB, { arch: "amd64" }))).rejects.toThrow(/refusing to install on .*already carries a machined layout \(EFI, BIOS, BOOT-A, BOOT-B, META, STATE, EPHEMERAL\); set wipe: true/);
    expect((await readLayout(img)).diskGuid).toBe(before.diskGuid);
    const again = await writeLayout(img, planLayout(4 * GiB, { arch: "amd64" }), { wipe: true });
    expect(again.diskGuid).not.toBe(before.diskGuid);
    expect((await run("sgdisk", ["-v", img])).stdout.toString()).toContain("No problems found");
  });

  it("refuses disks with a foreign partition table or a whole-disk filesystem", async () => {
    const foreign = await sparseFile(join(dir, "foreign.img"), 4 * GiB);
    await run("sgdisk", ["-n1:1M:+100M", "-c1:data", foreign]);
    await expect(writeLayout(foreign, planLayout(4 * GiB, { arch: "amd64" }))).rejects.toThrow(/GPT partition table with 1 partition\(s\) \(data\)/);

    const fsDisk = await sparseFile(join(dir, "fs.img"), 4 * GiB);
    await run("mkfs.ext4", ["-q", "-F", fsDisk, "64M"]);
    await expect(writeLayout(fsDisk, planLayout(4 * GiB, { arch: "amd64" }))).rejects.toThrow(/carries a ext4 filesystem on the whole disk/);
  });

  it("creates a missing image file (local mode) and checks the plan matches the disk", async () => {
    const fresh = join(dir, "new.img");
    const efi = join(dir, "fake-systemd-bootaa64.efi");
    await writeFile(efi, "MZ fake sd-boot");
    const layout = await writeLayout(fresh, planLayout(4 * GiB, { arch: "arm64" }), { systemdBootEfi: efi });
    expect(layout.partitions.map((p) => p.name)).toEqual(["EFI", "BOOT-A", "BOOT-B", "META", "STATE", "EPHEMERAL"]);
    const esp = new MtoolsEsp(fresh, partitionFor(layout.partitions, "esp").offset);
    expect((await esp.read("/EFI/BOOT/BOOTAA64.EFI"))?.toString()).toBe("MZ fake sd-boot");
    expect(await esp.exists("/grub")).toBe(false); // no BIOS on arm64, so no GRUB files
    const other = await sparseFile(join(dir, "other.img"), 5 * GiB);
    await expect(writeLayout(other, planLayout(4 * GiB, { arch: "amd64" }))).rejects.toThrow(/plan is for 4294967296 bytes but the disk has 5368709120/);
  });
});

/** Copies only the data extents of a region into a sparse file (reading 1.4 GiB of holes takes seconds here). */
async function extractRegion(img: string, offset: number, size: number, out: string): Promise<void> {
  await sparseFile(out, size);
  const imgSize = (await stat(img)).size;
  const ranges = parseSeekOutput((await run("xfs_io", ["-r", "-c", "seek -a -r 0", img])).stdout.toString(), imgSize);
  await withBlockIO(img, {}, (src) =>
    withBlockIO(out, { write: true }, async (dst) => {
      for (const [s0, e0] of ranges) {
        const s1 = Math.max(s0, offset);
        const e1 = Math.min(e0, offset + size);
        for (let o = s1; o < e1; o += 4 * MiB) await dst.write(o - offset, await src.read(o, Math.min(4 * MiB, e1 - o)));
      }
    }),
  );
}

describe.skipIf(missing.length > 0)("writeLayout with 4096-byte sectors", () => {
  it("writes and reads back a 4Kn layout with working filesystems", async () => {
    const { dir, cleanup } = await tempDir();
    try {
      const img = join(dir, "4kn.img");
      const plan = planLayout(4 * GiB, { arch: "amd64", sectorSize: 4096 });
      await writeLayout(img, plan);
      const back = await readLayout(img);
      expect(back.sectorSize).toBe(4096);
      expect(back.problems).toEqual([]);
      expect(back.partitions.map((p) => [p.name, p.firstLba, p.offset])).toEqual(plan.partitions.map((p) => [p.label, p.firstLba, p.offset]));
      const esp = partitionFor(back.partitions, "esp");
      const probe = (await run("blkid", ["-p", "-o", "export", "-O", String(esp.offset), img])).stdout.toString();
      expect(probe).toContain("BLOCK_SIZE=4096");
      expect(probe).toContain("TYPE=vfat");
      expect((await new MtoolsEsp(img, esp.offset).read("/loader/loader.conf"))?.toString()).toContain("timeout");
      const eph = partitionFor(back.partitions, "ephemeral");
      expect((await run("blkid", ["-p", "-o", "export", "-O", String(eph.offset), img])).stdout.toString()).toMatch(/TYPE=xfs/);
    } finally {
      await cleanup();
    }
  });
});

describe("parseSeekOutput", () => {
  it("turns xfs_io seek output into data ranges, the last one running to EOF", () => {
    const out = "Whence\tResult\nDATA\t0\nHOLE\t131072\nDATA\t367001600\nHOLE\t367026176\nDATA\t1467875328\n";
    expect(parseSeekOutput(out, 1468006400)).toEqual([
      [0, 131072],
      [367001600, 367026176],
      [1467875328, 1468006400],
    ]);
  });
});
