/** Reaper decisions on a fake /proc tree with the fake syscalls (the real-OS runs are in reaper-namespace.test.ts). */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FakeSyscalls } from "../../src/host/syscalls.js";
import { listChildren, parseStat, startReaper, type Reaper } from "../../src/pid1/reaper.js";

let root: string;
let reaper: Reaper | undefined;
afterEach(() => {
  reaper?.stop();
  rmSync(root, { recursive: true, force: true });
});

/** procs: pid → state; children files per thread unless `noChildrenFiles` (CONFIG_PROC_CHILDREN off). */
function fakeProc(procs: Record<number, string>, opts: { noChildrenFiles?: boolean } = {}): string {
  root = mkdtempSync(join(tmpdir(), "fake-proc-"));
  const pids = Object.keys(procs);
  for (const [i, tid] of ["1", "7"].entries()) {
    mkdirSync(join(root, "self/task", tid), { recursive: true });
    // split the children over two threads: orphans can be re-parented to any thread
    const mine = pids.filter((_, j) => j % 2 === i);
    if (!opts.noChildrenFiles) writeFileSync(join(root, "self/task", tid, "children"), mine.map((p) => `${p} `).join(""));
  }
  for (const [pid, state] of Object.entries(procs)) {
    mkdirSync(join(root, pid));
    writeFileSync(join(root, pid, "stat"), `${pid} (odd) name) ${state} ${process.pid} 0 0 0`);
  }
  mkdirSync(join(root, "999"));
  writeFileSync(join(root, "999", "stat"), `999 (other) Z 12345 0 0`); // someone else's zombie
  return root;
}

describe("reaper scan", () => {
  it("waits only for untracked zombies, skips libuv's tracked ones and running children", () => {
    const procRoot = fakeProc({ 10: "Z", 11: "Z", 12: "S", 13: "Z" });
    const sys = new FakeSyscalls();
    sys.waitResults.set(10, 0).set(13, 9);
    const reaped: number[] = [];
    reaper = startReaper({ sys, procRoot, tracked: new Set([11]), intervalMs: 60_000, onReap: (p) => reaped.push(p) });
    expect(reaper.scan()).toBe(2);
    expect(reaped.sort()).toEqual([10, 13]);
    expect(sys.callsOf("waitpidNoHang").flat().sort()).toEqual([10, 13]);
    expect(reaper.stats).toMatchObject({ reaped: 2, skippedTracked: 1, errors: 0 });
  });

  it("treats ECHILD (already reaped elsewhere) as harmless and counts other errors", () => {
    const procRoot = fakeProc({ 20: "Z" });
    const sys = new FakeSyscalls(); // no waitResult → ECHILD
    const errors: unknown[] = [];
    reaper = startReaper({ sys, procRoot, intervalMs: 60_000, onError: (e) => errors.push(e) });
    expect(reaper.scan()).toBe(0);
    expect(reaper.stats.errors).toBe(0);
    sys.failWith.set("waitpidNoHang", "EINVAL");
    reaper.scan();
    expect(reaper.stats.errors).toBe(1);
    expect(errors).toHaveLength(1);
  });

  it("falls back to scanning /proc/<pid>/stat for our pid as parent without children files", () => {
    const procRoot = fakeProc({ 30: "Z", 31: "R" }, { noChildrenFiles: true });
    expect(listChildren(procRoot).sort()).toEqual([30, 31]);
  });

  it("becomes a subreaper only when asked", () => {
    const sys = new FakeSyscalls();
    reaper = startReaper({ sys, procRoot: fakeProc({}), intervalMs: 60_000 });
    reaper.stop();
    expect(sys.callsOf("setChildSubreaper")).toHaveLength(0);
    reaper = startReaper({ sys, procRoot: root, intervalMs: 60_000, subreaper: true });
    expect(sys.callsOf("setChildSubreaper")).toHaveLength(1);
  });

  it("parseStat copes with ')' and spaces in comm", () => {
    expect(parseStat("42 (a) b) c) Z 1 42 42")).toEqual({ state: "Z", ppid: 1 });
    expect(parseStat("garbage")).toBeNull();
  });
});
