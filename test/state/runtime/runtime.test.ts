import { afterEach, describe, expect, it } from "vitest";
import { DependencyEdgeType } from "../../../src/machinery/api/gen/inspect/inspect_pb.js";
import { InMemoryState } from "../../../src/state/inmem.js";
import { ControllerRuntime, type Controller, type ReconcileContext } from "../../../src/state/runtime/index.js";
import { NS, TYPE, eventually, settle, sleep, widget } from "../helpers.js";

const DOUBLES = "Doubles.test.talos.dev";
const QUADS = "Quads.test.talos.dev";

/** Widget{n} → Double{n*2}, one per widget, stale ones cleaned up. */
function doubler(name = "test.DoubleController"): Controller & { runs: number } {
  return {
    name,
    runs: 0,
    inputs: [{ namespace: NS, type: TYPE, kind: "strong" }],
    outputs: [{ type: DOUBLES, kind: "exclusive" }],
    async reconcile(ctx: ReconcileContext) {
      this.runs++;
      const keep: string[] = [];
      for (const w of ctx.list(NS, TYPE)) {
        const n = (w.spec as { n: number }).n;
        ctx.apply({ namespace: NS, type: DOUBLES, id: w.metadata.id, spec: { n: n * 2 } });
        keep.push(w.metadata.id);
      }
      ctx.cleanup(NS, DOUBLES, keep);
    },
  };
}

const specs = (s: InMemoryState, type: string) =>
  Object.fromEntries(s.list(NS, type).map((r) => [r.metadata.id, (r.spec as { n: number }).n]));

let runtime: ControllerRuntime | undefined;
afterEach(async () => {
  await runtime?.stop();
  runtime = undefined;
});

describe("ControllerRuntime", () => {
  it("converges outputs from inputs, through a chain of controllers, and cleans up", async () => {
    const s = new InMemoryState();
    s.create(widget("a", { n: 1 }), "");
    runtime = new ControllerRuntime(s);
    runtime.register(doubler());
    runtime.register({
      name: "test.QuadController",
      inputs: [{ namespace: NS, type: DOUBLES, kind: "weak" }],
      outputs: [{ type: QUADS, kind: "exclusive" }],
      reconcile(ctx) {
        const doubles = ctx.list(NS, DOUBLES);
        for (const d of doubles) ctx.apply({ namespace: NS, type: QUADS, id: d.metadata.id, spec: { n: (d.spec as { n: number }).n * 2 } });
        ctx.cleanup(NS, QUADS, doubles.map((d) => d.metadata.id));
      },
    });
    runtime.start();
    await eventually(() => JSON.stringify(specs(s, QUADS)) === JSON.stringify({ a: 4 }), 2000, "quads a=4");
    expect(s.get({ namespace: NS, type: DOUBLES, id: "a" })?.metadata.owner).toBe("test.DoubleController");

    s.create(widget("b", { n: 5 }), "");
    s.update(widget("a", { n: 3 }), "");
    await eventually(() => JSON.stringify(specs(s, QUADS)) === JSON.stringify({ a: 12, b: 20 }), 2000, "quads a=12 b=20");

    s.destroy({ namespace: NS, type: TYPE, id: "a" }, "");
    await eventually(() => JSON.stringify(specs(s, QUADS)) === JSON.stringify({ b: 20 }), 2000, "quads b only");
    expect(specs(s, DOUBLES)).toEqual({ b: 10 });
  });

  it("coalesces a burst of 100 input updates into a few runs", async () => {
    const s = new InMemoryState();
    s.create(widget("a", { n: 0 }), "");
    const c = doubler();
    runtime = new ControllerRuntime(s);
    runtime.register(c);
    runtime.start();
    await eventually(() => c.runs === 1 && specs(s, DOUBLES).a === 0);
    for (let i = 1; i <= 100; i++) s.update(widget("a", { n: i }), "");
    await eventually(() => specs(s, DOUBLES).a === 200, 2000, "double of the last update");
    await settle();
    // One initial run plus one for the whole burst; allow one more for scheduling slack.
    expect(c.runs).toBeGreaterThanOrEqual(2);
    expect(c.runs).toBeLessThanOrEqual(3);
    // Doubles saw the burst as at most two writes, not 100.
    expect(s.get({ namespace: NS, type: DOUBLES, id: "a" })!.metadata.version).toBeLessThanOrEqual(3);
  });

  it("runs once more, not once per event, for changes during a slow reconcile", async () => {
    const s = new InMemoryState();
    let runs = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    runtime = new ControllerRuntime(s);
    runtime.register({
      name: "test.SlowController",
      inputs: [{ namespace: NS, type: TYPE, kind: "strong" }],
      outputs: [],
      async reconcile() {
        runs++;
        if (runs === 1) await gate;
      },
    });
    runtime.start();
    await eventually(() => runs === 1);
    for (let i = 0; i < 10; i++) {
      s.create(widget(`w${i}`, {}), "");
      await sleep(1);
    }
    release();
    await eventually(() => runs === 2);
    await settle();
    expect(runs).toBe(2);
  });

  it("retries a failing controller with capped exponential backoff while others keep working", async () => {
    const s = new InMemoryState();
    s.create(widget("a", { n: 1 }), "");
    const attempts: number[] = [];
    let healthy = false;
    runtime = new ControllerRuntime(s, { backoff: { initialMs: 10, maxMs: 40, factor: 2 } });
    runtime.register({
      name: "test.FlakyController",
      inputs: [{ namespace: NS, type: TYPE, kind: "strong" }],
      outputs: [],
      reconcile() {
        attempts.push(Date.now());
        if (!healthy) throw new Error(`attempt ${attempts.length} failed`);
      },
    });
    const d = doubler();
    runtime.register(d);
    runtime.start();

    await eventually(() => attempts.length >= 5, 3000, "five attempts");
    const st = runtime.status("test.FlakyController")!;
    expect(st.consecutiveFailures).toBeGreaterThanOrEqual(4);
    expect(st.lastError).toMatch(/^attempt \d+ failed$/);
    // Delays double from 10 ms (timers never fire early, allow 2 ms of clock rounding)...
    const gaps = attempts.slice(1, 4).map((t, i) => t - attempts[i]);
    expect(gaps[0]).toBeGreaterThanOrEqual(8);
    expect(gaps[1]).toBeGreaterThanOrEqual(18);
    expect(gaps[2]).toBeGreaterThanOrEqual(38);
    // ...and are capped.
    expect(st.retryAt!.getTime() - st.lastErrorAt!.getTime()).toBeLessThanOrEqual(41);

    // The other controller is unaffected.
    s.update(widget("a", { n: 7 }), "");
    await eventually(() => specs(s, DOUBLES).a === 14, 2000, "doubler keeps working");

    healthy = true;
    await eventually(() => runtime!.status("test.FlakyController")!.consecutiveFailures === 0, 2000, "recovery");
    const after = runtime.status("test.FlakyController")!;
    expect(after.lastSuccessAt).toBeDefined();
    expect(after.lastError).toMatch(/failed/); // kept for diagnostics
    const n = attempts.length;
    await sleep(60);
    expect(attempts.length).toBe(n); // no more retries once healthy
  });

  it("restricts writes to declared outputs and to resources the controller owns", async () => {
    const s = new InMemoryState();
    s.create({ ...widget("foreign", { n: 1 }, {}, DOUBLES) }, "someone.Else");
    runtime = new ControllerRuntime(s, { backoff: { initialMs: 1000, maxMs: 1000, factor: 2 } });
    runtime.register({
      name: "test.SneakyController",
      inputs: [],
      outputs: [{ type: DOUBLES, kind: "shared" }],
      reconcile(ctx) {
        ctx.apply({ namespace: NS, type: QUADS, id: "x", spec: {} });
      },
    });
    runtime.register({
      name: "test.ThiefController",
      inputs: [],
      outputs: [{ type: DOUBLES, kind: "shared" }],
      reconcile(ctx) {
        ctx.apply({ namespace: NS, type: DOUBLES, id: "foreign", spec: { n: 2 } });
      },
    });
    runtime.start();
    await eventually(() => runtime!.status("test.ThiefController")!.consecutiveFailures === 1);
    await eventually(() => runtime!.status("test.SneakyController")!.consecutiveFailures === 1);
    expect(runtime.status("test.SneakyController")!.lastError).toContain("not among its outputs");
    expect(runtime.status("test.ThiefController")!.lastError).toContain("someone.Else");
    expect(s.get({ namespace: NS, type: QUADS, id: "x" })).toBeUndefined();
    expect(s.get({ namespace: NS, type: DOUBLES, id: "foreign" })!.spec).toEqual({ n: 1 });
  });

  it("cleanup destroys only this controller's stale resources and defers those with finalizers", async () => {
    const s = new InMemoryState();
    s.create(widget("foreign", {}, {}, QUADS), "someone.Else");
    s.create(widget("stale", {}, {}, QUADS), "test.SharedController");
    s.create(widget("held", {}, {}, QUADS), "test.SharedController");
    s.create(widget("kept", {}, {}, QUADS), "test.SharedController");
    s.addFinalizer({ namespace: NS, type: QUADS, id: "held" }, "user");
    const logs: string[] = [];
    let destroyed = -1;
    runtime = new ControllerRuntime(s, { logger: (c, msg) => logs.push(`${c}: ${msg}`) });
    runtime.register({
      name: "test.SharedController",
      inputs: [],
      outputs: [{ type: QUADS, kind: "shared" }],
      reconcile(ctx) {
        destroyed = ctx.cleanup(NS, QUADS, ["kept"]);
      },
    });
    runtime.start();
    await eventually(() => destroyed >= 0);
    expect(destroyed).toBe(1);
    expect(s.list(NS, QUADS).map((r) => r.metadata.id)).toEqual(["foreign", "held", "kept"]);
    expect(logs).toEqual(["test.SharedController: cleanup deferred: resource has finalizers"]);
    expect(runtime.status("test.SharedController")!.consecutiveFailures).toBe(0);
  });

  it("rejects ambiguous output ownership and duplicate names at registration", () => {
    runtime = new ControllerRuntime(new InMemoryState());
    runtime.register(doubler("a.One"));
    expect(() => runtime!.register(doubler("a.One"))).toThrow(/already registered/);
    expect(() => runtime!.register(doubler("a.Two"))).toThrow(/exclusive/);
    runtime.register({ name: "a.S1", inputs: [], outputs: [{ type: QUADS, kind: "shared" }], reconcile() {} });
    runtime.register({ name: "a.S2", inputs: [], outputs: [{ type: QUADS, kind: "shared" }], reconcile() {} });
    expect(() =>
      runtime!.register({ name: "a.X", inputs: [], outputs: [{ type: QUADS, kind: "exclusive" }], reconcile() {} }),
    ).toThrow(/a\.S1/);
  });

  it("re-runs after requeueAfterMs until the controller stops asking", async () => {
    const s = new InMemoryState();
    let runs = 0;
    runtime = new ControllerRuntime(s);
    runtime.register({
      name: "test.PollController",
      inputs: [],
      outputs: [],
      reconcile() {
        runs++;
        return runs < 4 ? { requeueAfterMs: 10 } : undefined;
      },
    });
    runtime.start();
    await eventually(() => runs === 4, 2000, "four runs");
    await sleep(50);
    expect(runs).toBe(4);
  });

  it("takes a requeue beyond setTimeout's range as a long wait, not an immediate re-run", async () => {
    const s = new InMemoryState();
    let runs = 0;
    runtime = new ControllerRuntime(s);
    runtime.register({
      name: "test.InfiniteLeaseController",
      inputs: [],
      outputs: [],
      reconcile() {
        runs++;
        return { requeueAfterMs: 2 ** 32 * 500 }; // half an infinite DHCP lease
      },
    });
    runtime.start();
    await eventually(() => runs === 1, 2000, "the first run");
    await sleep(100);
    expect(runs).toBe(1);
  });

  it("wakes only on the watched id for an input with an id", async () => {
    const s = new InMemoryState();
    let runs = 0;
    runtime = new ControllerRuntime(s);
    runtime.register({
      name: "test.OneController",
      inputs: [{ namespace: NS, type: TYPE, id: "watched", kind: "strong" }],
      outputs: [],
      reconcile() {
        runs++;
      },
    });
    runtime.start();
    await eventually(() => runs === 1);
    await settle();
    expect(runs).toBe(1); // the watch's initial event does not cause a second run
    s.create(widget("other", {}), "");
    await settle();
    expect(runs).toBe(1);
    s.create(widget("watched", {}), "");
    await eventually(() => runs === 2);
  });

  it("stop() aborts the signal, waits for the in-flight run, and ends all activity", async () => {
    const s = new InMemoryState();
    let runs = 0;
    let seenSignal: AbortSignal | undefined;
    let finished = false;
    runtime = new ControllerRuntime(s);
    runtime.register({
      name: "test.StopController",
      inputs: [{ namespace: NS, type: TYPE, kind: "strong" }],
      outputs: [],
      async reconcile(ctx) {
        runs++;
        seenSignal = ctx.signal;
        await sleep(30);
        finished = true;
        return { requeueAfterMs: 5 };
      },
    });
    runtime.start();
    await eventually(() => runs === 1);
    await runtime.stop();
    expect(finished).toBe(true);
    expect(seenSignal?.aborted).toBe(true);
    s.create(widget("late", {}), "");
    await sleep(40);
    expect(runs).toBe(1);
    runtime = undefined;
  });

  it("reports the dependency graph with proto edge types", () => {
    runtime = new ControllerRuntime(new InMemoryState());
    runtime.register({
      name: "z.Last",
      inputs: [
        { namespace: "runtime", type: "MachineStatuses.runtime.talos.dev", id: "machine", kind: "strong" },
        { namespace: "network", type: "LinkStatuses.net.talos.dev", kind: "weak" },
      ],
      outputs: [{ type: "Services.v1alpha1.talos.dev", kind: "shared" }],
      reconcile() {},
    });
    runtime.register(doubler("a.First"));
    const edges = runtime.dependencyGraph();
    expect(edges).toEqual([
      { controllerName: "a.First", edgeType: "OUTPUT_EXCLUSIVE", namespace: "", type: DOUBLES },
      { controllerName: "a.First", edgeType: "INPUT_STRONG", namespace: NS, type: TYPE },
      { controllerName: "z.Last", edgeType: "OUTPUT_SHARED", namespace: "", type: "Services.v1alpha1.talos.dev" },
      {
        controllerName: "z.Last",
        edgeType: "INPUT_STRONG",
        namespace: "runtime",
        type: "MachineStatuses.runtime.talos.dev",
        id: "machine",
      },
      { controllerName: "z.Last", edgeType: "INPUT_WEAK", namespace: "network", type: "LinkStatuses.net.talos.dev" },
    ]);
    expect(edges.map((e) => DependencyEdgeType[e.edgeType])).toEqual([0, 1, 3, 1, 2]);
  });

  it("wakes a controller on outside events, coalesced, and ends the subscription when stopping", async () => {
    const s = new InMemoryState();
    let wake: (() => void) | undefined;
    let subscribed = 0;
    let runs = 0;
    const logs: string[] = [];
    runtime = new ControllerRuntime(s, { logger: (_c, msg) => logs.push(msg) });
    runtime.register({
      name: "test.OutsideController",
      inputs: [],
      outputs: [],
      reconcile() {
        runs++;
      },
      wakeups(w) {
        wake = w;
        subscribed++;
        return () => {
          subscribed--;
          wake = undefined;
        };
      },
    });
    runtime.register({
      name: "test.BrokenSourceController",
      inputs: [],
      outputs: [],
      reconcile() {},
      wakeups() {
        throw new Error("no such socket");
      },
    });
    runtime.start();
    await eventually(() => runs === 1, 2000, "first run");
    expect(subscribed).toBe(1);
    await sleep(50);
    expect(runs).toBe(1);
    wake!();
    wake!();
    wake!();
    await eventually(() => runs === 2, 2000, "woken");
    await sleep(50);
    expect(runs).toBe(2);
    expect(logs).toContain("cannot subscribe to outside events");
    expect(runtime.statuses().find((c) => c.name === "test.BrokenSourceController")?.runs).toBe(1);
    await runtime.stop();
    runtime = undefined;
    expect(subscribed).toBe(0);
  });
});
