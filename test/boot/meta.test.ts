import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { openBlockIO, withBlockIO } from "../../src/boot/blockio.js";
import { Meta, MetaTag } from "../../src/boot/meta.js";
import { ADV_DATA_LENGTH, ADV_LENGTH, encodeAdv } from "../../src/boot/meta-format.js";
import { FaultyBlockIO, PowerBudget, PowerCut } from "./fault-io.js";
import { sparseFile, tempDir } from "./helpers.js";

const MiB = 1024 * 1024;
const OFF = 3 * MiB; // META lives inside a bigger image, like a partition

describe("META (Talos ADV)", () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  beforeAll(async () => ({ dir, cleanup } = await tempDir()));
  afterAll(async () => cleanup());

  it("serialises exactly as go-adv's talos format: BE records, SHA-256 at -36 with the field zeroed, magics", () => {
    const block = encodeAdv(new Map([[6, Buffer.from("A")], [0xa0, Buffer.from("B")]]));
    const expected = Buffer.alloc(ADV_LENGTH);
    expected.writeUInt32BE(0x5a4b3c2d, 0);
    Buffer.from("00000006" + "00000001" + "41" + "000000a0" + "00000001" + "42", "hex").copy(expected, 4);
    expected.writeUInt32BE(0xa5b4c3d2, ADV_LENGTH - 4);
    createHash("sha256").update(expected).digest().copy(expected, ADV_LENGTH - 36);
    expect(block.equals(expected)).toBe(true);
  });

  it("opens a zeroed region as empty, stores values, and writes both copies", async () => {
    const img = await sparseFile(join(dir, "m1.img"), 8 * MiB);
    const m = await Meta.open(img, OFF);
    expect(m.source).toBe("empty");
    m.set(MetaTag.Upgrade, "A");
    m.set(MetaTag.UserReserved1, Buffer.from([0, 1, 2, 255]));
    m.set(MetaTag.LastKnownGoodSlot, "A");
    expect(m.delete(MetaTag.UserReserved1)).toBe(true);
    m.set(MetaTag.UserReserved2, "hello");
    await m.flush();
    await m.close();

    const raw = await readFile(img);
    const c1 = raw.subarray(OFF, OFF + ADV_LENGTH);
    const c2 = raw.subarray(OFF + ADV_LENGTH, OFF + 2 * ADV_LENGTH);
    expect(c1.equals(c2)).toBe(true);
    expect(c1.readUInt32BE(0)).toBe(0x5a4b3c2d);

    const again = await Meta.open(img, OFF);
    expect(again.source).toBe("primary");
    expect(again.getString(MetaTag.Upgrade)).toBe("A");
    expect(again.getString(MetaTag.UserReserved2)).toBe("hello");
    expect(again.get(MetaTag.UserReserved1)).toBeUndefined();
    expect(again.list().map((e) => e.tag)).toEqual([MetaTag.Upgrade, MetaTag.UserReserved2, MetaTag.LastKnownGoodSlot]);
    await again.close();
  });

  it("falls back to the second copy when the first is corrupt, and repairs it on the next write", async () => {
    const img = await sparseFile(join(dir, "m2.img"), 8 * MiB);
    const m = await Meta.open(img, OFF);
    m.set(MetaTag.StagedUpgradeImageRef, "ghcr.io/x/installer:v1");
    await m.flush();
    await m.close();
    await withBlockIO(img, { write: true }, (io) => io.write(OFF + 100, Buffer.from("garbage")));

    const r = await Meta.open(img, OFF);
    expect(r.source).toBe("backup");
    expect(r.problems.join()).toMatch(/primary copy .*checksum mismatch/);
    expect(r.getString(MetaTag.StagedUpgradeImageRef)).toBe("ghcr.io/x/installer:v1");
    r.set(MetaTag.UserReserved3, "x");
    await r.flush();
    await r.close();

    const raw = await readFile(img);
    expect(raw.subarray(OFF, OFF + ADV_LENGTH).equals(raw.subarray(OFF + ADV_LENGTH, OFF + 2 * ADV_LENGTH))).toBe(true);
    const fixed = await Meta.open(img, OFF);
    expect(fixed.source).toBe("primary");
    expect(fixed.getString(MetaTag.UserReserved3)).toBe("x");
    await fixed.close();
  });

  it("reports both copies damaged as corrupt (not as a blank partition)", async () => {
    const img = await sparseFile(join(dir, "m3.img"), 8 * MiB);
    await withBlockIO(img, { write: true }, async (io) => {
      await io.write(OFF, Buffer.from("not an adv"));
      await io.write(OFF + ADV_LENGTH + 5, Buffer.from("nor this"));
    });
    const m = await Meta.open(img, OFF);
    expect(m.source).toBe("corrupt");
    expect(m.problems).toHaveLength(2);
    expect(m.problems[1]).toMatch(/backup copy .*bad magic1/);
    expect(m.list()).toEqual([]);
    await m.close();
  });

  it("keeps the previous state when a flush is torn in either copy", async () => {
    for (const allowed of [0, 1, 2, 3]) {
      const img = await sparseFile(join(dir, `torn${allowed}.img`), 8 * MiB);
      const m0 = await Meta.open(img, OFF);
      m0.set(MetaTag.PendingSlot, "old");
      await m0.flush();
      await m0.close();

      const power = new PowerBudget(allowed, "torn");
      const io = await openBlockIO(img, { write: true });
      const m = await Meta.fromIO(new FaultyBlockIO(io, power), OFF);
      m.set(MetaTag.PendingSlot, "new");
      await expect(m.flush()).rejects.toThrow(PowerCut);
      await io.close();

      const after = await Meta.open(img, OFF);
      // ops: write copy1, sync, write copy2, sync. A torn copy1 leaves copy2's "old"; once copy1 is complete it
      // wins (here the un-synced bytes stay in the page cache, so a cut at the sync still reads "new").
      expect(after.getString(MetaTag.PendingSlot)).toBe(allowed === 0 ? "old" : "new");
      expect(after.source).toBe(allowed === 0 ? "backup" : "primary");
      expect(["primary", "backup"]).toContain(after.source);
      await after.close();
    }
  });

  it("rejects values that overflow the block and tags Talos cannot read", async () => {
    const img = await sparseFile(join(dir, "m4.img"), 8 * MiB);
    const m = await Meta.open(img, OFF);
    expect(() => m.set(MetaTag.UserReserved1, Buffer.alloc(ADV_DATA_LENGTH))).toThrow(/does not fit/);
    m.set(MetaTag.UserReserved1, Buffer.alloc(ADV_DATA_LENGTH - 8));
    expect(() => m.set(0, "x")).toThrow(/1\.\.255/);
    expect(() => m.set(256, "x")).toThrow(/1\.\.255/);
    await m.flush();
    await m.close();
    const r = await Meta.open(img, OFF);
    expect(r.get(MetaTag.UserReserved1)?.length).toBe(ADV_DATA_LENGTH - 8);
    await r.close();
  });

  it("refuses a region too small for two copies", async () => {
    const img = await sparseFile(join(dir, "m5.img"), 8 * MiB);
    await expect(Meta.open(img, 0, 256 * 1024)).rejects.toThrow(/smaller than/);
  });
});
