/**
 * Real-OS tests of the reaper and signal handling: the harness runs as PID 1 of a new PID namespace (needs root
 * and unshare), and as a child subreaper without root. Asserts on the harness's JSON report.
 */
import { describe, expect, it } from "vitest";
import { runFixture, unshareUnavailable } from "./run-fixture.js";

const skipPid = unshareUnavailable("pid");
if (skipPid) console.log(`skipping PID-namespace reaper tests: ${skipPid}`);

interface ReapReport {
  pid: number;
  expected: number;
  matched: number;
  mismatches: string[];
  apis: Record<string, boolean>;
  zombiesLeft: number;
  expectedOrphans: number;
  reapedOrphans: number;
  reaperErrors: number;
  trackedLeft: number;
  sigterm?: boolean;
}

function expectCleanRun(r: ReapReport): void {
  expect(r.mismatches).toEqual([]);
  expect(r.matched).toBe(r.expected);
  expect(r.expected).toBeGreaterThanOrEqual(130);
  expect(Object.entries(r.apis).filter(([, ok]) => !ok)).toEqual([]);
  expect(Object.keys(r.apis)).toEqual(
    expect.arrayContaining(["exec", "execFile", "execa", "execSync", "spawnSync", "fork"]),
  );
  expect(r.zombiesLeft).toBe(0);
  expect(r.reapedOrphans).toBe(r.expectedOrphans);
  expect(r.reaperErrors).toBe(0);
  expect(r.trackedLeft).toBe(0);
}

describe("reaper as PID 1 of a PID namespace", () => {
  it.skipIf(skipPid)("keeps every exit event, reaps all orphans, and receives SIGTERM from inside", async () => {
    const run = await runFixture("pid1-harness.ts", ["reap"], { prefix: ["unshare", "--pid", "--fork", "--mount-proc"] });
    expect(run.rc, run.stderr).toBe(0);
    const r = run.lines[0] as unknown as ReapReport;
    expect(r.pid).toBe(1);
    expectCleanRun(r);
    expect(r.sigterm).toBe(true);
  });
});

describe("reaper as child subreaper (local mode)", () => {
  it("keeps every exit event and reaps all orphans", async () => {
    const run = await runFixture("pid1-harness.ts", ["reap"]);
    expect(run.rc, run.stderr).toBe(0);
    const r = run.lines[0] as unknown as ReapReport;
    expect(r.pid).not.toBe(1);
    expectCleanRun(r);
  });

  it("negative control: without the reaper the orphans stay zombies (the zombie count is real)", async () => {
    const run = await runFixture("pid1-harness.ts", ["reap"], { env: { REAPER: "off" } });
    expect(run.rc, run.stderr).toBe(0);
    const r = run.lines[0] as unknown as ReapReport;
    expect(r.matched).toBe(r.expected);
    expect(r.zombiesLeft).toBe(r.expectedOrphans);
    expect(r.reapedOrphans).toBe(0);
  });
});
