/**
 * GRUB for BIOS firmware: the two patches grub-install's setup step would make, checked byte by byte, and the
 * install into a layout on an image file (partition table kept, sgdisk still happy). Synthetic boot.img/core.img
 * here; test/vm/grub-bios.test.ts boots Debian's real ones under SeaBIOS.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { writeFile } from "node:fs/promises";
import { openBlockIO, withBlockIO } from "../../src/boot/blockio.js";
import { bootSectorTarget, installGrubBios, patchBootSector, patchCoreImg } from "../../src/boot/grub-bios.js";
import { GiB, MiB, partitionFor, planLayout, readLayout, writeLayout } from "../../src/boot/layout.js";
import { runTool as run } from "../../src/boot/tools.js";
import { missingTools, tempDir } from "./helpers.js";

const missing = await missingTools("GRUB BIOS install on image files", ["sgdisk", "mkfs.vfat", "mkfs.ext4", "mkfs.xfs", "xfs_io", "mcopy", "blkid"]);

/** A boot.img stand-in: recognisable code bytes everywhere GRUB has code, and the 55 AA signature. */
function fakeBootImg(): Buffer {
  const b = Buffer.alloc(512);
  for (let i = 0; i < 512; i++) b[i] = (i * 7 + 3) & 0xff;
  b[0x66] = 0xeb; // the jump GRUB's setup turns into NOPs for hard disks
  b[0x67] = 0x05;
  b.writeUInt16LE(0xaa55, 0x1fe);
  return b;
}

/** A core.img stand-in: 139 KiB (Debian's with our modules is ~136 KiB) with an empty blocklist. */
function fakeCoreImg(size = 139_517): Buffer {
  const c = randomBytes(size);
  c.fill(0, 512 - 24, 512);
  return c;
}

describe("patchCoreImg", () => {
  it("points the first sector's blocklist at the rest of core.img, right after it, loaded at 0x820", () => {
    const core = fakeCoreImg();
    const out = patchCoreImg(core, 2048n);
    const sectors = Math.ceil(core.length / 512);
    expect(out.length).toBe(sectors * 512);
    expect(out.readBigUInt64LE(0x1f4)).toBe(2049n);
    expect(out.readUInt16LE(0x1fc)).toBe(sectors - 1);
    expect(out.readUInt16LE(0x1fe)).toBe(0x820);
    expect(out.subarray(0x1e8, 0x1f4).equals(Buffer.alloc(12))).toBe(true); // terminator
    expect(out.subarray(0, 0x1e8).equals(core.subarray(0, 0x1e8))).toBe(true);
    expect(out.subarray(512, core.length).equals(core.subarray(512))).toBe(true);
    expect(out.subarray(core.length).equals(Buffer.alloc(out.length - core.length))).toBe(true);
  });

  it("re-patching a core.img that was set up for another place gives the same bytes as a fresh one", () => {
    const core = fakeCoreImg();
    expect(patchCoreImg(patchCoreImg(core, 4096n), 2048n).equals(patchCoreImg(core, 2048n))).toBe(true);
  });
});

describe("patchBootSector", () => {
  it("keeps the disk's BPB area, signature and partition table, and jumps to core.img on the boot drive", () => {
    const boot = fakeBootImg();
    const existing = randomBytes(512);
    existing.writeUInt16LE(0xaa55, 0x1fe);
    const out = patchBootSector(boot, existing, 2048n);
    expect(out.length).toBe(512);
    expect(out.subarray(0, 3).equals(boot.subarray(0, 3))).toBe(true);
    expect(out.subarray(3, 0x5a).equals(existing.subarray(3, 0x5a))).toBe(true);
    expect(out.readBigUInt64LE(0x5c)).toBe(2048n);
    expect(out[0x64]).toBe(0xff);
    expect([out[0x66], out[0x67]]).toEqual([0x90, 0x90]);
    expect(out.subarray(0x68, 0x1b8).equals(boot.subarray(0x68, 0x1b8))).toBe(true);
    expect(out.subarray(0x1b8, 0x200).equals(existing.subarray(0x1b8, 0x200))).toBe(true);
    expect(bootSectorTarget(out, boot)).toBe(2048n);
    expect(bootSectorTarget(existing, boot)).toBeUndefined();
  });
});

describe.skipIf(missing.length > 0)("installGrubBios on a disk-image file", () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let files: { boot: string; core: string };
  beforeAll(async () => {
    ({ dir, cleanup } = await tempDir());
    files = { boot: join(dir, "boot.img"), core: join(dir, "core.img") };
    await writeFile(files.boot, fakeBootImg());
    await writeFile(files.core, fakeCoreImg());
  });
  afterAll(() => cleanup());

  it("writes core.img into the BIOS boot partition and GRUB's code into LBA 0; the GPT stays valid", async () => {
    const img = join(dir, "disk.img");
    const plan = planLayout(4 * GiB, { arch: "amd64" });
    await writeLayout(img, plan, { grubBios: files });
    const bios = partitionFor(plan.partitions, "bios");
    const core = patchCoreImg(fakeCoreImg().fill(0), 0n); // only for the length
    await withBlockIO(img, {}, async (io) => {
      const s0 = await io.read(0, 512);
      expect(bootSectorTarget(s0, fakeBootImg())).toBe(BigInt(bios.offset / 512));
      expect(s0[0x1c2]).toBe(0xee); // the protective MBR entry survived
      const written = await io.read(bios.offset, core.length);
      expect(written.readBigUInt64LE(0x1f4)).toBe(BigInt(bios.offset / 512) + 1n);
    });
    expect((await run("sgdisk", ["-v", img])).stdout.toString()).toMatch(/No problems found/);
    const layout = await readLayout(img);
    expect(layout.machined).toBe(true);
    expect(layout.partitions.map((p) => p.name)).toContain("BIOS");
  });

  it("refuses a core.img larger than the BIOS boot partition, and disks with 4 KiB sectors", async () => {
    const img = join(dir, "small.img");
    await writeLayout(img, planLayout(4 * GiB, { arch: "amd64" }));
    const io = await openBlockIO(img, { write: true });
    try {
      const boot = fakeBootImg();
      await expect(installGrubBios(io, { offset: MiB, size: 64 * 1024 }, { boot, core: fakeCoreImg() })).rejects.toThrow(
        /GRUB core\.img needs 139776 bytes; the BIOS boot partition has 65536/,
      );
      await expect(installGrubBios(io, { offset: MiB, size: MiB }, { boot, core: fakeCoreImg() }, 4096)).rejects.toThrow(/BIOS boot needs 512-byte sectors/);
      await expect(installGrubBios(io, { offset: MiB, size: MiB }, { boot: Buffer.alloc(512), core: fakeCoreImg() })).rejects.toThrow(/boot\.img must be one 512-byte sector ending in 55 AA/);
      // nothing was written by the refused calls: LBA 0 still has no GRUB code
      expect(bootSectorTarget(await io.read(0, 512), boot)).toBeUndefined();
    } finally {
      await io.close();
    }
  });
});
