import { describe, expect, it } from "vitest";
import { FakeSyscalls } from "../../src/host/syscalls.js";
import { createPower } from "../../src/pid1/power.js";

const pid1 = () => Object.assign(new FakeSyscalls(), { pid: 1 });
const names = (sys: FakeSyscalls) => sys.calls.map((c) => c.name).filter((n) => n !== "getpid");

describe("power", () => {
  it("as PID 1: stop services, sync, then reboot(2) with the right command", async () => {
    const sys = pid1();
    const order: string[] = [];
    const p = createPower({ sys, stopServices: async (a) => void order.push(`stop:${a}`) });
    const r = await p.powerOff();
    expect(order).toEqual(["stop:poweroff"]);
    expect(names(sys)).toEqual(["syncAsync", "reboot"]);
    expect(sys.callsOf("reboot")).toEqual([["poweroff"]]);
    expect(r).toMatchObject({ simulated: false, syncTimedOut: false });

    const sys2 = pid1();
    await createPower({ sys: sys2 }).reboot();
    expect(sys2.callsOf("reboot")).toEqual([["restart"]]);
  });

  it("local mode never calls reboot(2) and reports a simulated result", async () => {
    const sys = new FakeSyscalls();
    const r = await createPower({ sys }).reboot();
    expect(r).toEqual({ action: "reboot", simulated: true, syncTimedOut: false });
    expect(names(sys)).toEqual(["syncAsync"]);
  });

  it("a hanging or throwing stop hook delays, but never prevents, the reboot", async () => {
    const sys = pid1();
    const logs: string[] = [];
    const r = await createPower({ sys, stopServices: () => new Promise(() => {}), stopTimeoutMs: 30, log: (m) => logs.push(m) }).powerOff();
    expect(r.stopError).toBe("stopping services timed out");
    expect(sys.callsOf("reboot")).toEqual([["poweroff"]]);

    const sys2 = pid1();
    const r2 = await createPower({ sys: sys2, stopServices: () => { throw new Error("sync throw"); } }).reboot();
    expect(r2.stopError).toBe("sync throw");
    expect(sys2.callsOf("reboot")).toEqual([["restart"]]);
  });

  it("a hung sync is given up after the timeout", async () => {
    const sys = pid1();
    sys.syncAsync = () => new Promise(() => {});
    const r = await createPower({ sys, syncTimeoutMs: 20 }).powerOff();
    expect(r.syncTimedOut).toBe(true);
    expect(sys.callsOf("reboot")).toEqual([["poweroff"]]);
  });

  it("concurrent requests join the first one", async () => {
    const sys = pid1();
    let stops = 0;
    const p = createPower({ sys, stopServices: async () => void stops++ });
    const [a, b] = await Promise.all([p.powerOff(), p.reboot()]);
    expect(a).toBe(b);
    expect(stops).toBe(1);
    expect(sys.callsOf("reboot")).toEqual([["poweroff"]]);
  });

  it("a refused reboot(2) surfaces as an error", async () => {
    const sys = pid1();
    sys.failWith.set("reboot", "EPERM");
    await expect(createPower({ sys }).powerOff()).rejects.toMatchObject({ code: "EPERM" });
  });
});
