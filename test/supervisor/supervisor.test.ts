/**
 * The supervisor core against real processes: ordering, backoff, process-group stops, hanging health
 * checks, restart policies and event publication.
 */
import { afterAll, describe, expect, it } from "vitest";
import { groupMembers } from "../../src/host/process.js";
import { ServiceStateEventSchema, ServiceStateEvent_Action, type ServiceStateEvent } from "../../src/machinery/api/gen/machine/machine_pb.js";
import { EventBus } from "../../src/state/events.js";
import { fileExists, pollCondition } from "../../src/supervisor/conditions.js";
import { LogManager } from "../../src/supervisor/logs.js";
import { toServiceInfo } from "../../src/supervisor/proto.js";
import { GoroutineRunner } from "../../src/supervisor/runners/goroutine.js";
import { ProcessRunner } from "../../src/supervisor/runners/process.js";
import { Supervisor } from "../../src/supervisor/supervisor.js";
import { ServiceState, type RestartSettings, type Service } from "../../src/supervisor/types.js";
import { noCgroups } from "../../src/host/cgroups.js";
import { alive, eventMsgs, startedPid, tempDir, waitUntil } from "./helpers.js";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const sups: Supervisor[] = [];
function newSupervisor(events?: EventBus): Supervisor {
  const s = new Supervisor({ events, cgroups: noCgroups, waitDescribeIntervalMs: 20, logs: new LogManager(null) });
  sups.push(s);
  return s;
}
afterAll(async () => {
  await Promise.all(sups.map((s) => s.shutdown()));
});

const fast: Partial<RestartSettings> = { initialDelayMs: 50, maxDelayMs: 400, resetAfterMs: 60_000 };

function proc(id: string, script: string, extra: Partial<Service> = {}): Service {
  return {
    id,
    runner: () => new ProcessRunner({ args: ["/bin/sh", "-c", script], gracefulStopMs: 300 }),
    restart: () => fast,
    ...extra,
  };
}

describe("supervisor", () => {
  it("starts a dependent only after its dependency is running and healthy", async () => {
    const sup = newSupervisor();
    let healthy = false;
    const order: string[] = [];
    sup.onChange((i) => order.push(`${i.id}:${i.state}:${i.events[i.events.length - 1].msg}`));
    sup.load(
      proc("b", "exec sleep 100", { dependsOn: () => ["a"] }),
      proc("a", "exec sleep 100", {
        health: () => ({
          check: async () => {
            if (!healthy) throw new Error("not yet");
          },
          settings: { initialDelayMs: 10, periodMs: 30, timeoutMs: 100 },
        }),
      }),
    );
    sup.start("b", "a");
    await waitUntil(() => sup.info("a")?.state === "Running", 5000, "a running");
    await new Promise((r) => setTimeout(r, 150));
    // a runs but is unhealthy: b must still wait
    expect(sup.info("b")?.state).toBe("Waiting");
    expect(eventMsgs(sup, "b")).toContain('Waiting for service "a" to be "up"');
    expect(eventMsgs(sup, "a")).toContain("Health check failed: not yet");
    healthy = true;
    await sup.waitFor("b", "up", AbortSignal.timeout(5000));
    const aHealthy = order.indexOf("a:Running:Health check successful");
    const bPrep = order.indexOf("b:Preparing:Running pre state");
    expect(aHealthy).toBeGreaterThanOrEqual(0);
    expect(bPrep).toBeGreaterThan(aHealthy);
    await sup.stop("a", "b");
    expect(sup.info("a")?.state).toBe("Finished");
    expect(eventMsgs(sup, "a")).toContain("Service stopped");
  });

  it("waits for conditions, describing only the unsatisfied ones", async () => {
    const sup = newSupervisor();
    const dir = tempDir("sup-cond");
    let net = false;
    sup.load(
      proc("c", "exec sleep 100", {
        conditions: () => [fileExists(join(dir, "ready"), 20), pollCondition("network", () => net, 20)],
      }),
    );
    sup.start("c");
    await waitUntil(() => sup.info("c")?.state === "Waiting");
    expect(eventMsgs(sup, "c")).toContain(`Waiting for file ${JSON.stringify(join(dir, "ready"))} to exist, network`);
    writeFileSync(join(dir, "ready"), "");
    await waitUntil(() => eventMsgs(sup, "c").includes("Waiting for network"), 3000, "description update");
    net = true;
    await sup.waitFor("c", "up", AbortSignal.timeout(5000));
    await sup.stop("c");
  });

  it("backs off a crash loop with growing delays while other services keep running", async () => {
    const sup = newSupervisor();
    sup.load(proc("crash", "echo boom; exit 1"), proc("steady", "exec sleep 100"));
    sup.start("crash", "steady");
    await waitUntil(() => eventMsgs(sup, "crash").filter((m) => m.includes("retrying in")).length >= 5, 10_000, "5 retries");
    const info = sup.info("crash")!;
    const retries = info.events.filter((e) => e.msg.includes("retrying in"));
    expect(retries[0].msg).toMatch(/^Error running Process\(\["\/bin\/sh" "-c" "echo boom; exit 1"\]\), going to restart forever: exit status 1 \(last log "boom"\), retrying in 50ms$/);
    expect(retries.map((e) => /retrying in (\S+)$/.exec(e.msg)?.[1])).toEqual(["50ms", "100ms", "200ms", "400ms", "400ms"].slice(0, retries.length));
    // measured gaps between restarts grow too
    const starts = info.events.filter((e) => e.msg.includes("started with PID")).map((e) => e.ts.getTime());
    expect(starts.length).toBeGreaterThanOrEqual(4);
    expect(starts[3] - starts[2]).toBeGreaterThan(starts[1] - starts[0]);
    expect(sup.info("steady")?.state).toBe("Running");
    expect(alive(startedPid(sup, "steady"))).toBe(true);
    await sup.stop("crash", "steady");
    expect(sup.info("crash")?.state).toBe("Finished");
  });

  it("reports a missing binary in the events and keeps retrying without harm", async () => {
    const sup = newSupervisor();
    sup.load(
      { id: "ghost", runner: () => new ProcessRunner({ args: ["/nonexistent/bin/ghostd", "--x"] }), restart: () => fast },
      proc("fine", "exec sleep 100"),
    );
    sup.start("ghost", "fine");
    await waitUntil(() => eventMsgs(sup, "ghost").some((m) => m.includes("retrying in")));
    expect(eventMsgs(sup, "ghost").find((m) => m.includes("retrying"))).toContain(
      "error starting process: fork/exec /nonexistent/bin/ghostd: no such file or directory",
    );
    await sup.waitFor("fine", "up", AbortSignal.timeout(5000));
    await sup.stop("ghost", "fine");
  });

  it("stop kills the whole process group (no survivors)", async () => {
    const sup = newSupervisor();
    sup.load(proc("tree", "sleep 100 & sleep 100"));
    sup.start("tree");
    await sup.waitFor("tree", "up", AbortSignal.timeout(5000));
    const pid = startedPid(sup, "tree");
    await waitUntil(() => groupMembers(pid).length >= 3, 3000, "sh + 2 sleeps");
    const members = groupMembers(pid);
    await sup.stop("tree");
    expect(groupMembers(pid)).toEqual([]);
    for (const p of members) expect(alive(p)).toBe(false);
    expect(eventMsgs(sup, "tree")).toContain('Sending SIGTERM to Process(["/bin/sh" "-c" "sleep 100 & sleep 100"])');
  });

  it("escalates to SIGKILL when the group ignores SIGTERM", async () => {
    const sup = newSupervisor();
    sup.load(proc("stubborn", "trap '' TERM; sleep 100 & sleep 100"));
    sup.start("stubborn");
    await sup.waitFor("stubborn", "up", AbortSignal.timeout(5000));
    const pid = startedPid(sup, "stubborn");
    await waitUntil(() => groupMembers(pid).length >= 3, 3000, "group");
    const t0 = Date.now();
    await sup.stop("stubborn");
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250);
    expect(eventMsgs(sup, "stubborn").some((m) => m.startsWith("Sending SIGKILL to"))).toBe(true);
    expect(groupMembers(pid)).toEqual([]);
  });

  it("kills leftovers of a crashed run before restarting", async () => {
    const sup = newSupervisor();
    sup.load(proc("leaky", "sleep 100 & exit 3", { restart: () => ({ ...fast, initialDelayMs: 200 }) }));
    sup.start("leaky");
    await waitUntil(() => eventMsgs(sup, "leaky").some((m) => m.includes("exit status 3")));
    const pid = startedPid(sup, "leaky");
    expect(groupMembers(pid)).toEqual([]);
    await sup.stop("leaky");
  });

  it("counts a hanging health check as failed after its timeout", async () => {
    const sup = newSupervisor();
    sup.load(
      proc("hang", "exec sleep 100", {
        health: () => ({ check: () => new Promise(() => {}), settings: { initialDelayMs: 10, periodMs: 50, timeoutMs: 100 } }),
      }),
    );
    sup.start("hang");
    await waitUntil(() => eventMsgs(sup, "hang").includes("Health check failed: context deadline exceeded"), 3000, "health failure");
    const h = sup.info("hang")!.health;
    expect(h).toMatchObject({ unknown: false, healthy: false, lastMessage: "context deadline exceeded" });
    expect(sup.info("hang")?.state).toBe("Running");
    await sup.stop("hang");
  });

  it("follows the restart policies once and untilSuccess", async () => {
    const sup = newSupervisor();
    const dir = tempDir("sup-policy");
    sup.load(
      proc("once-bad", "exit 2", { restart: () => ({ ...fast, policy: "once" }) }),
      proc("once-good", "exit 0", { restart: () => ({ ...fast, policy: "once" }) }),
      // fails twice, then succeeds
      proc("until", `n=$(cat ${dir}/n 2>/dev/null || echo 0); echo $((n+1)) > ${dir}/n; [ $n -ge 2 ]`, {
        restart: () => ({ ...fast, policy: "untilSuccess" }),
      }),
    );
    sup.start("once-bad", "once-good", "until");
    await sup.waitFor("once-bad", "down", AbortSignal.timeout(5000));
    await sup.waitFor("once-good", "finished", AbortSignal.timeout(5000));
    await sup.waitFor("until", "finished", AbortSignal.timeout(5000));
    expect(sup.info("once-bad")?.state).toBe("Failed");
    expect(sup.info("once-bad")?.events.at(-1)?.msg).toBe('Failed running service: exit status 2 (last log "")');
    expect(sup.info("once-good")?.events.at(-1)?.msg).toBe("Service finished successfully");
    expect(eventMsgs(sup, "until").filter((m) => m.includes("going to restart until it succeeds"))).toHaveLength(2);
  });

  it("skips a service without a runner and treats it as up for dependents", async () => {
    const sup = newSupervisor();
    sup.load({ id: "noop", runner: () => null }, proc("after", "exec sleep 100", { dependsOn: () => ["noop"] }));
    sup.start("noop", "after");
    await sup.waitFor("after", "up", AbortSignal.timeout(5000));
    expect(sup.info("noop")?.state).toBe("Skipped");
    await sup.stop("after");
  });

  it("publishes ServiceStateEvents and change callbacks; list() converts to ServiceInfo", async () => {
    const bus = new EventBus();
    const sup = newSupervisor(bus);
    const seen: ServiceStateEvent[] = [];
    bus.subscribe((e) => {
      if (e.schema === ServiceStateEventSchema) seen.push(e.payload as ServiceStateEvent);
    });
    sup.load({ id: "gor", runner: () => new GoroutineRunner("gor", (ctx) => new Promise((r) => ctx.signal.addEventListener("abort", () => r()))) });
    sup.start("gor");
    await sup.waitFor("gor", "up", AbortSignal.timeout(2000));
    await sup.stop("gor");
    const mine = seen.filter((e) => e.service === "gor");
    expect(mine.map((e) => e.action)).toEqual([
      ServiceStateEvent_Action.STARTING,
      ServiceStateEvent_Action.PREPARING,
      ServiceStateEvent_Action.PREPARING,
      ServiceStateEvent_Action.RUNNING,
      ServiceStateEvent_Action.STOPPING,
      ServiceStateEvent_Action.FINISHED,
    ]);
    expect(mine[3].message).toBe("Service started as goroutine");
    expect(mine.every((e) => e.health !== undefined)).toBe(true);
    const info = toServiceInfo(sup.list().find((s) => s.id === "gor")!);
    expect(info.state).toBe("Finished");
    expect(info.events?.events.length).toBe(6);
    expect(info.health?.unknown).toBe(true);
    expect(sup.list().map((s) => s.id)).toEqual(["gor"]);
    expect(sup.state("gor")).toBe(ServiceState.Finished);
    // transitions also land in the agent's own log, upstream style
    expect(sup.logs.get("machined").tail().toString()).toContain("service[gor](Running): Service started as goroutine\n");
  });

  it("guards the API operations like upstream", async () => {
    const sup = newSupervisor();
    sup.load(proc("locked", "exec sleep 100"), proc("open", "exec sleep 100", { api: { start: true, stop: true, restart: true } }));
    await expect(sup.apiStart("locked")).rejects.toThrow(`service "locked" doesn't support start operation via API`);
    await expect(sup.apiStart("nope")).rejects.toThrow(`service "nope" not defined`);
    await sup.apiStart("open");
    await sup.waitFor("open", "up", AbortSignal.timeout(5000));
    const pid1 = startedPid(sup, "open");
    await sup.apiRestart("open");
    await sup.waitFor("open", "up", AbortSignal.timeout(5000));
    expect(startedPid(sup, "open")).not.toBe(pid1);
    expect(alive(pid1)).toBe(false);
    await sup.apiStop("open");
    expect(sup.isRunning("open")).toBe(false);
  });

  it("shutdown stops dependents before their dependencies", async () => {
    const sup = newSupervisor();
    const stops: string[] = [];
    sup.onChange((i) => {
      if (i.state === "Finished") stops.push(i.id);
    });
    sup.load(proc("base", "exec sleep 100"), proc("mid", "exec sleep 100", { dependsOn: () => ["base"] }), proc("top", "exec sleep 100", { dependsOn: () => ["mid"] }));
    sup.startAll();
    await sup.waitFor("top", "up", AbortSignal.timeout(5000));
    await sup.shutdown();
    expect(stops).toEqual(["top", "mid", "base"]);
  });
});
