/** Fatal handler with fake syscalls and short real timers (the real-process runs are in power-namespace.test.ts). */
import { describe, expect, it } from "vitest";
import { FakeSyscalls } from "../../src/host/syscalls.js";
import { createFatalHandler } from "../../src/pid1/fatal.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function setup(pid: number, extra: Partial<Parameters<typeof createFatalHandler>[0]> = {}) {
  const sys = Object.assign(new FakeSyscalls(), { pid });
  const logs: string[] = [];
  const exits: number[] = [];
  const h = createFatalHandler({ sys, log: (l) => logs.push(l), exit: (c) => void exits.push(c), ...extra });
  return { sys, logs, exits, h };
}

describe("fatal handler", () => {
  it("as PID 1: logs, waits the delay, syncs and reboots even though cleanup hangs", async () => {
    const { sys, logs, exits, h } = setup(1, { rebootDelayMs: 60, cleanup: () => new Promise(() => {}) });
    h.fatal(new Error("disk on fire"), "boot sequence");
    expect(logs[0]).toContain("fatal: boot sequence: Error: disk on fire");
    await sleep(20);
    expect(sys.callsOf("reboot")).toEqual([]); // not before the delay
    await sleep(100);
    expect(sys.callsOf("reboot")).toEqual([["restart"]]);
    expect(sys.callsOf("syncAsync").length).toBeGreaterThanOrEqual(2); // immediately, and before reboot
    expect(exits).toEqual([]);
  });

  it("handles only the first error; later ones are logged", async () => {
    const { sys, logs, h } = setup(1, { rebootDelayMs: 20 });
    h.fatal(new Error("first"));
    h.fatal(new Error("second"));
    await sleep(60);
    expect(logs.some((l) => l.includes("another error") && l.includes("second"))).toBe(true);
    expect(sys.callsOf("reboot")).toHaveLength(1);
    expect(h.triggered).toBe(true);
  });

  it("as PID 1: exits (kernel panic) rather than hang when reboot(2) fails", async () => {
    const { sys, exits, h } = setup(1, { rebootDelayMs: 10 });
    sys.failWith.set("reboot", "EPERM");
    h.fatal("string reason");
    await sleep(60);
    expect(exits).toEqual([1]);
  });

  it("local mode: runs cleanup, exits 1, never reboots", async () => {
    let cleaned = false;
    const { sys, exits, h } = setup(4242, { cleanup: async () => void (cleaned = true) });
    h.fatal(new Error("x"));
    await sleep(10);
    expect(cleaned).toBe(true);
    expect(exits).toEqual([1]);
    expect(sys.callsOf("reboot")).toEqual([]);
  });

  it("local mode: a hanging cleanup is cut off by the timeout", async () => {
    const { exits, logs, h } = setup(4242, { cleanupTimeoutMs: 30, cleanup: () => new Promise(() => {}) });
    h.fatal(new Error("x"));
    await sleep(10);
    expect(exits).toEqual([]);
    await sleep(60);
    expect(exits).toEqual([1]);
    expect(logs).toContain("fatal: cleanup did not finish in time");
  });

  it("install() routes unhandled rejections and uninstall removes the hooks", async () => {
    const { h, exits } = setup(4242);
    const before = process.listenerCount("unhandledRejection");
    const uninstall = h.install();
    expect(process.listenerCount("unhandledRejection")).toBe(before + 1);
    process.emit("unhandledRejection", new Error("lost promise"), Promise.resolve());
    await sleep(10);
    expect(exits).toEqual([1]);
    uninstall();
    expect(process.listenerCount("unhandledRejection")).toBe(before);
  });
});
