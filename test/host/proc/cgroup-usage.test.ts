/** Per-process cgroup v2 usage (talosctl stats), read through the Files capability from a fake /proc and /sys. */
import { describe, expect, it } from "vitest";
import { MemoryFiles } from "../../../src/host/files/index.js";
import { readCgroupUsage } from "../../../src/host/proc/cgroup-usage.js";

describe("readCgroupUsage", () => {
  const files = () =>
    new MemoryFiles()
      .addFile("/proc/42/cgroup", "0::/system.slice/etcd\n", { pseudo: true })
      .addFile("/sys/fs/cgroup/system.slice/etcd/memory.current", "1048576\n", { pseudo: true })
      .addFile("/sys/fs/cgroup/system.slice/etcd/cpu.stat", "usage_usec 2500\nuser_usec 2000\n", { pseudo: true });

  it("reads memory in bytes and CPU in nanoseconds from the process's cgroup", async () => {
    expect(await readCgroupUsage(42, files())).toEqual({ memory: 1048576n, cpu: 2_500_000n });
  });

  it("is undefined for a process that is gone, a v1-only host, or a cgroup without the files", async () => {
    expect(await readCgroupUsage(7, files())).toBeUndefined();
    expect(await readCgroupUsage(42, files().addFile("/proc/42/cgroup", "4:memory:/x\n"))).toBeUndefined();
    expect(await readCgroupUsage(42, files().fail("/sys/fs/cgroup/system.slice/etcd/memory.current", "read", "ENODEV"))).toBeUndefined();
  });
});
