import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { readDiskstats } from "../../../src/host/proc/diskstats.js";

const ROOT = fileURLToPath(new URL("../fixtures/x86", import.meta.url));

describe("diskstats", () => {
  it("reports disks and partitions, skips short legacy lines, and totals with an empty name", async () => {
    const { total, devices } = await readDiskstats({ root: ROOT });
    expect(devices.map((d) => d.name)).toEqual(["loop0", "loop1", "loop2", "vda", "vda1"]);
    const vda1 = devices[4];
    expect(vda1).toMatchObject({
      readCompleted: 1000n, readMerged: 10n, readSectors: 20000n, readTimeMs: 30n, writeCompleted: 40n,
      writeMerged: 50n, writeSectors: 600n, writeTimeMs: 70n, ioInProgress: 0n, ioTimeMs: 80n, ioTimeWeightedMs: 90n,
    });
    expect(total.name).toBe("");
    expect(total.readCompleted).toBe(devices[3].readCompleted + 1000n);
    expect(total.discardSectors).toBe(devices[3].discardSectors);
  });

  it("reads this machine's disks", async () => {
    const { devices } = await readDiskstats();
    expect(Array.isArray(devices)).toBe(true);
  });
});
