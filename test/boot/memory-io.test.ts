/** GPT and META on MemoryBlockIO: the boot layer's disk logic needs no image file, only the BlockIO capability. */
import { describe, expect, it } from "vitest";
import { MemoryBlockIO } from "../../src/host/block/io.js";
import { RegionIO } from "../../src/boot/blockio.js";
import { emptyGptTable, readGptStrict, writeGpt } from "../../src/boot/gpt/index.js";
import { Meta, MetaTag } from "../../src/boot/meta.js";

const MiB = 1 << 20;

describe("boot logic on an in-memory disk", () => {
  it("writes a GPT and reads the same table back, syncing once it is written", async () => {
    const io = new MemoryBlockIO(64 * MiB, "mem-disk");
    const table = emptyGptTable(64 * MiB);
    await writeGpt(io, table);
    expect(io.syncs).toBeGreaterThan(0);
    const back = await readGptStrict(io);
    expect(back.diskGuid).toBe(table.diskGuid);
    expect(back.totalSectors).toBe(table.totalSectors);
  });

  it("keeps META values across a reopen, inside a partition window", async () => {
    const io = new MemoryBlockIO(8 * MiB);
    const part = new RegionIO(io, 2 * MiB, MiB);
    const m = await Meta.fromIO(part);
    expect(m.source).toBe("empty");
    m.set(MetaTag.Upgrade, "B");
    await m.flush();
    const again = await Meta.fromIO(new RegionIO(io, 2 * MiB, MiB));
    expect(again.source).toBe("primary");
    expect(again.list().find((t) => t.tag === MetaTag.Upgrade)?.value.toString()).toBe("B");
    // nothing outside the window was touched
    expect(io.bytes().subarray(0, 2 * MiB).every((b) => b === 0)).toBe(true);
  });

  it("refuses writes past the end of a fixed-size disk", async () => {
    await expect(new MemoryBlockIO(512).write(256, Buffer.alloc(512))).rejects.toThrow(/past the end/);
  });
});
