/**
 * ProcessRunner under the supervisor with the in-memory FakeSpawner: restarts after a crash, the SIGTERM →
 * SIGKILL stop of a process that ignores SIGTERM, and a binary that cannot start. (supervisor.test.ts runs
 * the same paths against real processes.)
 */
import { afterAll, describe, expect, it } from "vitest";
import { noCgroups } from "../../src/host/cgroups.js";
import { FakeSpawner, type FakeProcess } from "../../src/host/process.js";
import { LogManager } from "../../src/supervisor/logs.js";
import { ProcessRunner } from "../../src/supervisor/runners/process.js";
import { Supervisor } from "../../src/supervisor/supervisor.js";
import { eventMsgs, waitUntil } from "./helpers.js";

const sups: Supervisor[] = [];
afterAll(async () => {
  await Promise.all(sups.map((s) => s.shutdown()));
});

function supervise(id: string, spawner: FakeSpawner, args = ["/usr/bin/daemon", "--flag"]): Supervisor {
  const sup = new Supervisor({ cgroups: noCgroups, logs: new LogManager(null), waitDescribeIntervalMs: 20 });
  sups.push(sup);
  sup.load({ id, runner: () => new ProcessRunner({ args, gracefulStopMs: 50, spawner }), restart: () => ({ initialDelayMs: 10, maxDelayMs: 20, resetAfterMs: 60_000 }) });
  sup.start(id);
  return sup;
}

describe("ProcessRunner on FakeSpawner", () => {
  it("restarts a process that crashes, with its exit and last log line in the event", async () => {
    let runs = 0;
    const spawner = new FakeSpawner((p) => {
      if (++runs > 1) return; // the second run stays up
      p.output("starting\nboom\n");
      p.exit(1);
    });
    const sup = supervise("crashy", spawner);
    await waitUntil(() => spawner.spawned.length === 2 && sup.info("crashy")?.state === "Running", 5000, "restarted");
    expect(eventMsgs(sup, "crashy").some((m) => m.includes('exit status 1 (last log "boom")'))).toBe(true);
    expect(spawner.spawned[0].opts.args).toEqual(["/usr/bin/daemon", "--flag"]);
    expect(sup.logs.get("crashy").tail().toString()).toBe("starting\nboom\n");
  });

  it("stops a process that ignores SIGTERM with SIGKILL after the grace period", async () => {
    const spawner = new FakeSpawner((p) => p.ignore.add("SIGTERM"));
    const sup = supervise("stubborn", spawner);
    await waitUntil(() => sup.info("stubborn")?.state === "Running", 5000, "running");
    await sup.stop("stubborn");
    const p: FakeProcess = spawner.spawned[0];
    expect(p.signals).toEqual(["SIGTERM", "SIGKILL"]);
    expect(eventMsgs(sup, "stubborn")).toEqual(expect.arrayContaining([expect.stringMatching(/^Sending SIGTERM/), expect.stringMatching(/^Sending SIGKILL/)]));
  });

  it("reports a binary that cannot start as upstream words it", async () => {
    const spawner = new FakeSpawner();
    spawner.missing.add("/usr/bin/none");
    const sup = supervise("missing", spawner, ["/usr/bin/none"]);
    await waitUntil(() => eventMsgs(sup, "missing").some((m) => m.includes("error starting process: fork/exec /usr/bin/none: no such file or directory")), 5000, "failure event");
  });
});
