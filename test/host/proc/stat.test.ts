import { create } from "@bufbuild/protobuf";
import os from "node:os";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { SystemStatSchema } from "../../../src/machinery/api/gen/machine/machine_pb.js";
import { parseStat, readStat } from "../../../src/host/proc/stat.js";

const ROOT = fileURLToPath(new URL("../fixtures/x86", import.meta.url));

describe("stat", () => {
  it("parses a captured /proc/stat with CPU times in seconds", async () => {
    const s = await readStat({ root: ROOT });
    expect(s.bootTime).toBe(1795969386n);
    expect(s.cpuTotal?.user).toBeCloseTo(681.3, 10);
    expect(s.cpuTotal?.softIrq).toBeCloseTo(5.26, 10);
    expect(s.cpuTotal?.steal).toBeCloseTo(10.12, 10);
    expect(s.cpu).toHaveLength(2);
    expect(s.cpu[1].idle).toBeCloseTo(447.96, 10);
    expect(s.irqTotal).toBe(1118268n);
    expect(s.irq[36]).toBe(180958n);
    expect(s.contextSwitches).toBe(2467248n);
    expect(s.processCreated).toBe(27995n);
    expect(s.processRunning).toBe(20n);
    expect(s.processBlocked).toBe(0n);
    expect(s.softIrqTotal).toBe(548666n);
    expect(s.softIrq).toMatchObject({ hi: 0n, timer: 57882n, netRx: 57035n, block: 180954n, sched: 101433n, hrtimer: 1n, rcu: 148217n });
    expect(create(SystemStatSchema, s).cpu[0].user).toBeCloseTo(323.72, 10);
  });

  it("keeps CPU numbering when a CPU is missing", () => {
    const s = parseStat("cpu 1 1 1 1\ncpu0 100 0 0 0\ncpu2 200 0 0 0\n");
    expect(s.cpu.map((c) => c.user)).toEqual([1, 0, 2]);
    expect(s.cpuTotal?.iowait).toBe(0);
  });

  it("reads this machine's counters", async () => {
    const s = await readStat();
    const now = BigInt(Math.floor(Date.now() / 1000));
    expect(s.bootTime).toBeGreaterThan(0n);
    expect(s.bootTime).toBeLessThanOrEqual(now);
    expect(s.cpu.length).toBe(os.cpus().length);
    expect(s.contextSwitches).toBeGreaterThan(0n);
  });
});
