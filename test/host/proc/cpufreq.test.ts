import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parseCpuList, readCpufreq } from "../../../src/host/proc/cpufreq.js";

const ROOT = fileURLToPath(new URL("../fixtures/x86", import.meta.url));

describe("cpufreq", () => {
  it("reads online CPUs in numeric order, skipping CPUs without cpufreq", async () => {
    // Fixture: cpu0 and cpu10 complete, cpu1 only has scaling_cur_freq, cpu2 offline, cpu3 no cpufreq.
    expect(await readCpufreq({ root: ROOT })).toEqual([
      { currentFrequency: 1996250n, minimumFrequency: 400000n, maximumFrequency: 3500000n, governor: "schedutil" },
      { currentFrequency: 2100000n, minimumFrequency: 800000n, maximumFrequency: 3000000n, governor: "performance" },
      { currentFrequency: 1996250n, minimumFrequency: 400000n, maximumFrequency: 3000000n, governor: "schedutil" },
    ]);
  });

  it("returns an empty list when the kernel has no cpufreq", async () => {
    expect(await readCpufreq({ root: mkdtempSync(path.join(os.tmpdir(), "cpufreq-")) })).toEqual([]);
  });

  it("parses CPU ranges", () => {
    expect([...parseCpuList("0-2,5\n")]).toEqual([0, 1, 2, 5]);
    expect([...parseCpuList("\n")]).toEqual([]);
  });

  it("reads this machine without failing", async () => {
    const list = await readCpufreq();
    for (const f of list) expect(f.maximumFrequency).toBeGreaterThanOrEqual(f.minimumFrequency);
  });
});
