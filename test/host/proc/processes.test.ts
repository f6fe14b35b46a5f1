import { create } from "@bufbuild/protobuf";
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ProcessInfoSchema } from "../../../src/machinery/api/gen/machine/machine_pb.js";
import { formatArgs, kernelPageSize, parseProcStat, readProcesses } from "../../../src/host/proc/processes.js";

const ROOT = fileURLToPath(new URL("../fixtures/x86", import.meta.url));

describe("processes", () => {
  it("reads fixture processes and skips kernel threads", async () => {
    const procs = await readProcesses({ root: ROOT, pageSize: 4096 });
    expect(procs.map((p) => p.pid)).toEqual([4242, 4244]);
    expect(procs[0]).toEqual({
      pid: 4242,
      ppid: 1,
      state: "S",
      threads: 14,
      cpuTime: 18.01,
      virtualMemory: 1978404864n,
      residentMemory: 12345n * 4096n,
      command: "containerd",
      executable: "/usr/local/bin/containerd",
      args: "/usr/local/bin/containerd --address /run/containerd/containerd.sock",
      label: "system_u:system_r:sys_containerd_t:s0",
    });
    expect(procs[1]).toMatchObject({ ppid: 4242, state: "R", command: "we) ird", cpuTime: 3, label: "" });
    expect(create(ProcessInfoSchema, procs[0]).residentMemory).toBe(50565120n);
  });

  it("parses stat lines whose command contains ') '", () => {
    const st = parseProcStat("7 (a) (b) S 3 0 0 0 -1 0 0 0 0 0 11 22 0 0 20 0 5 0 9 4096 2 0");
    expect(st).toMatchObject({ state: "S", ppid: 3, utime: 11, stime: 22, threads: 5, vsize: 4096n, rssPages: 2n });
    expect(() => parseProcStat("garbage")).toThrow();
  });

  it("joins NUL-separated args like upstream", () => {
    expect(formatArgs(Buffer.from("a\0b c\0\0"))).toBe("a b c");
  });

  it("finds this test process with the right parent", async () => {
    const procs = await readProcesses();
    const me = procs.find((p) => p.pid === process.pid);
    expect(me).toBeDefined();
    expect(me!.ppid).toBe(process.ppid);
    expect(me!.executable).toBe(realpathSync(process.execPath));
    expect(me!.threads).toBeGreaterThanOrEqual(1);
    expect(me!.residentMemory).toBeGreaterThan(0n);
    expect(me!.residentMemory % BigInt(await kernelPageSize())).toBe(0n);
    expect(me!.args).toContain(process.argv[1]);
    expect(["R", "S"]).toContain(me!.state);
  });
});
