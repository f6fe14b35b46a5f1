/**
 * The State conformance suite: every store implementation runs it (see inmem.test.ts). It pins down
 * the COSI behaviour talosctl and our controllers depend on; implementation-specific limits (history
 * size, overrun) are tested next to each implementation.
 */
import { describe, expect, it } from "vitest";
import { ApiError, Code } from "../../src/machinery/errors.js";
import type { LabelTerm, State } from "../../src/state/types.js";
import { NS, Recorder, TYPE, settle, sleep, widget } from "./helpers.js";

const ptr = (id: string, type = TYPE) => ({ namespace: NS, type, id });

function expectApiError(fn: () => unknown, code: Code, ...fragments: string[]): void {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  expect(caught, "expected an ApiError").toBeInstanceOf(ApiError);
  expect((caught as ApiError).code).toBe(code);
  for (const f of fragments) expect((caught as ApiError).message).toContain(f);
}

export function runStateConformance(name: string, makeState: () => State): void {
  describe(`State conformance: ${name}`, () => {
    describe("writes", () => {
      it("create sets version 1, owner and timestamps; a second create is AlreadyExists", () => {
        const s = makeState();
        const before = Date.now();
        const r = s.create(widget("a", { n: 1 }), "ctrl");
        expect(r.metadata.version).toBe(1);
        expect(r.metadata.owner).toBe("ctrl");
        expect(r.metadata.phase).toBe("running");
        expect(r.metadata.created.getTime()).toBeGreaterThanOrEqual(before);
        expect(r.metadata.updated.getTime()).toBe(r.metadata.created.getTime());
        expect(s.get(ptr("a"))?.spec).toEqual({ n: 1 });
        expectApiError(() => s.create(widget("a", { n: 2 }), "ctrl"), Code.AlreadyExists, "a");
        expect(s.get(ptr("a"))?.spec).toEqual({ n: 1 });
      });

      it("update bumps the version on every call and keeps created", async () => {
        const s = makeState();
        const r = s.create(widget("a", { n: 1 }), "ctrl");
        await sleep(5);
        const u1 = s.update(widget("a", { n: 2 }), "ctrl");
        const u2 = s.update(widget("a", { n: 2 }), "ctrl");
        expect([u1.metadata.version, u2.metadata.version]).toEqual([2, 3]);
        expect(u2.metadata.created.getTime()).toBe(r.metadata.created.getTime());
        expect(u1.metadata.updated.getTime()).toBeGreaterThan(r.metadata.created.getTime());
        expect(u2.metadata.owner).toBe("ctrl");
        expect(s.get(ptr("a"))?.metadata.version).toBe(3);
      });

      it("missing resources are NotFound for update and destroy; get returns undefined", () => {
        const s = makeState();
        expect(s.get(ptr("nope"))).toBeUndefined();
        expectApiError(() => s.update(widget("nope", {}), "ctrl"), Code.NotFound, "nope");
        expectApiError(() => s.destroy(ptr("nope"), "ctrl"), Code.NotFound, "nope");
      });

      it("only the owner may update, apply or destroy; the error names both owners", () => {
        const s = makeState();
        s.create(widget("a", { n: 1 }), "owner-one");
        expectApiError(() => s.update(widget("a", { n: 2 }), "owner-two"), Code.PermissionDenied, "owner-one", "owner-two");
        expectApiError(() => s.apply(widget("a", { n: 2 }), "owner-two"), Code.PermissionDenied, "owner-one", "owner-two");
        expectApiError(() => s.destroy(ptr("a"), "owner-two"), Code.PermissionDenied, "owner-one", "owner-two");
        expectApiError(() => s.destroy(ptr("a"), ""), Code.PermissionDenied, "owner-one");
        expect(s.get(ptr("a"))?.metadata.version).toBe(1);
        s.destroy(ptr("a"), "owner-one");
        expect(s.get(ptr("a"))).toBeUndefined();
      });

      it("apply creates, then updates only when spec, labels or annotations change", () => {
        const s = makeState();
        const created = s.apply(widget("a", { n: 1, list: [1, 2], when: new Date(5), raw: new Uint8Array([1]) }), "c");
        expect(created.metadata.version).toBe(1);
        const same = s.apply(widget("a", { n: 1, list: [1, 2], when: new Date(5), raw: new Uint8Array([1]) }), "c");
        expect(same.metadata.version).toBe(1);
        expect(s.apply(widget("a", { n: 1, list: [1, 3], when: new Date(5), raw: new Uint8Array([1]) }), "c").metadata.version).toBe(2);
        expect(s.apply(widget("a", { n: 1, list: [1, 3], when: new Date(5), raw: new Uint8Array([1]) }, { l: "x" }), "c").metadata.version).toBe(3);
        const annotated = widget("a", { n: 1, list: [1, 3], when: new Date(5), raw: new Uint8Array([1]) }, { l: "x" });
        annotated.metadata.annotations = { note: "y" };
        expect(s.apply(annotated, "c").metadata.version).toBe(4);
        expect(s.apply(annotated, "c").metadata.version).toBe(4);
        const got = s.get(ptr("a"))!;
        expect(got.metadata.created.getTime()).toBe(created.metadata.created.getTime());
        expect(got.metadata.labels).toEqual({ l: "x" });
        expect(got.metadata.annotations).toEqual({ note: "y" });
      });

      it("a no-op apply emits no event", async () => {
        const s = makeState();
        s.apply(widget("a", { n: 1 }), "c");
        const rec = new Recorder();
        s.watchKind(NS, TYPE, {}, rec.cb);
        s.apply(widget("a", { n: 1 }), "c");
        s.apply(widget("a", { n: 2 }), "c");
        await rec.count(1);
        await settle();
        expect(rec.trace).toEqual(["updated:a@2"]);
      });

      it("hands out copies: callers cannot mutate the store", () => {
        const s = makeState();
        const input = widget("a", { nested: { n: 1 }, arr: [1] }, { k: "v" });
        const created = s.create(input, "c");
        (input.spec as { nested: { n: number } }).nested.n = 99;
        input.metadata.labels.k = "changed";
        (created.spec as { arr: number[] }).arr.push(2);
        created.metadata.version = 42;
        const got = s.get(ptr("a"))!;
        (got.spec as { nested: { n: number } }).nested.n = 100;
        got.metadata.labels.k = "mutated";
        s.list(NS, TYPE)[0].metadata.finalizers.push("x");
        const fresh = s.get(ptr("a"))!;
        expect(fresh.spec).toEqual({ nested: { n: 1 }, arr: [1] });
        expect(fresh.metadata.labels).toEqual({ k: "v" });
        expect(fresh.metadata.version).toBe(1);
        expect(fresh.metadata.finalizers).toEqual([]);
      });

      it("destroy removes the resource and allows re-creating it at version 1", () => {
        const s = makeState();
        s.create(widget("a", {}), "c");
        s.update(widget("a", { x: 1 }), "c");
        s.destroy(ptr("a"), "c");
        expect(s.get(ptr("a"))).toBeUndefined();
        expect(s.list(NS, TYPE)).toEqual([]);
        expect(s.create(widget("a", {}), "c").metadata.version).toBe(1);
      });
    });

    describe("list and queries", () => {
      it("lists one kind, sorted by id", () => {
        const s = makeState();
        for (const id of ["b", "c", "a", "a-2"]) s.create(widget(id, { id }), "c");
        s.create(widget("z", {}, {}, "Others.test.talos.dev"), "c");
        s.create({ ...widget("y", {}), metadata: { ...widget("y", {}).metadata, namespace: "elsewhere" } }, "c");
        expect(s.list(NS, TYPE).map((r) => r.metadata.id)).toEqual(["a", "a-2", "b", "c"]);
        expect(s.list(NS, "Others.test.talos.dev").map((r) => r.metadata.id)).toEqual(["z"]);
        expect(s.list("elsewhere", TYPE).map((r) => r.metadata.id)).toEqual(["y"]);
        expect(s.list("nowhere", TYPE)).toEqual([]);
      });

      const labelled = (s: State) => {
        s.create(widget("none", {}), "c");
        s.create(widget("small", {}, { role: "worker", size: "2Gi", name: "alpha" }), "c");
        s.create(widget("big", {}, { role: "controlplane", size: "3000M", name: "beta" }), "c");
        s.create(widget("odd", {}, { role: "worker", size: "lots", name: "gamma" }), "c");
      };
      const ids = (s: State, ...labels: LabelTerm[]) => s.list(NS, TYPE, { labels }).map((r) => r.metadata.id);

      it("exists, equal, in, and invert (a missing key inverts to true)", () => {
        const s = makeState();
        labelled(s);
        expect(ids(s, { key: "role", op: "exists", values: [] })).toEqual(["big", "odd", "small"]);
        expect(ids(s, { key: "role", op: "exists", values: [], invert: true })).toEqual(["none"]);
        expect(ids(s, { key: "role", op: "equal", values: ["worker"] })).toEqual(["odd", "small"]);
        expect(ids(s, { key: "role", op: "equal", values: ["worker"], invert: true })).toEqual(["big", "none"]);
        expect(ids(s, { key: "name", op: "in", values: ["alpha", "gamma", "delta"] })).toEqual(["odd", "small"]);
        expect(ids(s, { key: "role", op: "equal", values: [] })).toEqual([]);
        // Terms are ANDed.
        expect(
          ids(s, { key: "role", op: "equal", values: ["worker"] }, { key: "name", op: "equal", values: ["gamma"] }),
        ).toEqual(["odd"]);
      });

      it("lt/lte compare strings", () => {
        const s = makeState();
        labelled(s);
        expect(ids(s, { key: "name", op: "lt", values: ["beta"] })).toEqual(["small"]);
        expect(ids(s, { key: "name", op: "lte", values: ["beta"] })).toEqual(["big", "small"]);
        // "2Gi" < "3000M" as strings, though not as numbers.
        expect(ids(s, { key: "size", op: "lt", values: ["3000M"] })).toEqual(["small"]);
      });

      it("ltNumeric/lteNumeric parse units; unparsable values never match, even inverted", () => {
        const s = makeState();
        labelled(s);
        // 3000M = 3e9 > 2Gi = 2147483648.
        expect(ids(s, { key: "size", op: "ltNumeric", values: ["3000M"] })).toEqual(["small"]);
        expect(ids(s, { key: "size", op: "ltNumeric", values: ["2Gi"] })).toEqual([]);
        expect(ids(s, { key: "size", op: "lteNumeric", values: ["2Gi"] })).toEqual(["small"]);
        expect(ids(s, { key: "size", op: "lteNumeric", values: ["2147483648"] })).toEqual(["small"]);
        expect(ids(s, { key: "size", op: "ltNumeric", values: ["3000M"], invert: true })).toEqual(["big", "none"]);
        expect(ids(s, { key: "size", op: "ltNumeric", values: ["many"] })).toEqual([]);
      });

      it("filters ids by regexp (unanchored, like Go's MatchString)", () => {
        const s = makeState();
        labelled(s);
        expect(s.list(NS, TYPE, { idRegexp: /^[bo]/ }).map((r) => r.metadata.id)).toEqual(["big", "odd"]);
        expect(s.list(NS, TYPE, { idRegexp: /al/g }).map((r) => r.metadata.id)).toEqual(["small"]);
        expect(s.list(NS, TYPE, { idRegexp: /al/g }).map((r) => r.metadata.id)).toEqual(["small"]);
      });
    });

    describe("single-resource watch", () => {
      it("starts with a destroyed tombstone (version 0) for a missing resource, then follows it", async () => {
        const s = makeState();
        const rec = new Recorder();
        s.watch(ptr("a"), rec.cb);
        const [first] = await rec.count(1);
        expect(first.type).toBe("destroyed");
        expect(first.resource.metadata).toMatchObject({ namespace: NS, type: TYPE, id: "a", version: 0 });
        s.create(widget("a", { n: 1 }), "c");
        s.create(widget("other", {}), "c");
        s.update(widget("a", { n: 2 }), "c");
        s.destroy(ptr("a"), "c");
        const events = await rec.count(4);
        expect(rec.trace).toEqual(["destroyed:a@0", "created:a@1", "updated:a@2", "destroyed:a@2"]);
        expect(events[2].old?.spec).toEqual({ n: 1 });
        expect(events[2].resource.spec).toEqual({ n: 2 });
        expect(events[3].resource.spec).toEqual({ n: 2 });
        await settle();
        expect(rec.events).toHaveLength(4);
      });

      it("starts with created carrying the current state of an existing resource", async () => {
        const s = makeState();
        s.create(widget("a", { n: 1 }), "c");
        s.update(widget("a", { n: 2 }), "c");
        const rec = new Recorder();
        s.watch(ptr("a"), rec.cb);
        const [first] = await rec.count(1);
        expect(first.type).toBe("created");
        expect(first.resource.metadata.version).toBe(2);
        expect(first.resource.spec).toEqual({ n: 2 });
      });
    });

    describe("kind watch", () => {
      it("bootstrap replays existing resources sorted by id, then a bootstrapped tombstone", async () => {
        const s = makeState();
        for (const id of ["c", "a", "b"]) s.create(widget(id, {}), "c");
        const rec = new Recorder();
        s.watchKind(NS, TYPE, { bootstrapContents: true }, rec.cb);
        const events = await rec.count(4);
        expect(rec.trace).toEqual(["created:a@1", "created:b@1", "created:c@1", "bootstrapped:@0"]);
        expect(events[3].resource.metadata).toMatchObject({ namespace: NS, type: TYPE, id: "" });
        s.update(widget("b", { n: 1 }), "c");
        s.destroy(ptr("a"), "c");
        s.create(widget("d", {}), "c");
        await rec.count(7);
        expect(rec.trace.slice(4)).toEqual(["updated:b@2", "destroyed:a@1", "created:d@1"]);
        expect(rec.events[4].old?.metadata.version).toBe(1);
      });

      it("bootstrap of an empty kind sends only the bootstrapped marker", async () => {
        const s = makeState();
        const rec = new Recorder();
        s.watchKind(NS, TYPE, { bootstrapContents: true }, rec.cb);
        await rec.count(1);
        expect(rec.trace).toEqual(["bootstrapped:@0"]);
      });

      it("without bootstrap or tail, only later changes arrive", async () => {
        const s = makeState();
        s.create(widget("a", {}), "c");
        const rec = new Recorder();
        s.watchKind(NS, TYPE, {}, rec.cb);
        s.create(widget("b", {}), "c");
        s.create(widget("x", {}, {}, "Others.test.talos.dev"), "c");
        await rec.count(1);
        await settle();
        expect(rec.trace).toEqual(["created:b@1"]);
      });

      it("applies the query to bootstrap and to changes, turning updates across the query into created/destroyed", async () => {
        const s = makeState();
        s.create(widget("in", {}, { role: "worker" }), "c");
        s.create(widget("out", {}, { role: "cp" }), "c");
        const rec = new Recorder();
        s.watchKind(NS, TYPE, { bootstrapContents: true, labels: [{ key: "role", op: "equal", values: ["worker"] }] }, rec.cb);
        await rec.count(2);
        s.update(widget("in", { n: 1 }, { role: "worker" }), "c");
        s.update(widget("out", { n: 1 }, { role: "worker" }), "c");
        s.update(widget("in", { n: 2 }, { role: "cp" }), "c");
        s.update(widget("in", { n: 3 }, { role: "cp" }), "c");
        s.destroy(ptr("in"), "c");
        s.destroy(ptr("out"), "c");
        await rec.count(6);
        await settle();
        expect(rec.trace).toEqual([
          "created:in@1",
          "bootstrapped:@0",
          "updated:in@2",
          "created:out@2",
          "destroyed:in@3",
          "destroyed:out@2",
        ]);
        expect(rec.events[3].old).toBeUndefined();
      });

      it("filters by id regexp", async () => {
        const s = makeState();
        const rec = new Recorder();
        s.watchKind(NS, TYPE, { idRegexp: /^eth/ }, rec.cb);
        s.create(widget("lo", {}), "c");
        s.create(widget("eth0", {}), "c");
        await rec.count(1);
        await settle();
        expect(rec.trace).toEqual(["created:eth0@1"]);
      });

      it("tailEvents replays the last N events of the kind, then continues live", async () => {
        const s = makeState();
        s.create(widget("a", {}), "c");
        s.update(widget("a", { n: 1 }), "c");
        s.create(widget("b", {}), "c");
        s.destroy(ptr("a"), "c");
        s.create(widget("x", {}, {}, "Others.test.talos.dev"), "c");
        const rec = new Recorder();
        s.watchKind(NS, TYPE, { tailEvents: 3 }, rec.cb);
        await rec.count(3);
        s.create(widget("c", {}), "c");
        await rec.count(4);
        await settle();
        expect(rec.trace).toEqual(["updated:a@2", "created:b@1", "destroyed:a@2", "created:c@1"]);
        const all = new Recorder();
        s.watchKind(NS, TYPE, { tailEvents: 100 }, all.cb);
        await all.count(5);
        expect(all.trace[0]).toBe("created:a@1");
      });

      it("rejects bootstrapContents together with tailEvents", () => {
        const s = makeState();
        expectApiError(() => s.watchKind(NS, TYPE, { bootstrapContents: true, tailEvents: 1 }, () => {}), Code.InvalidArgument);
      });
    });

    describe("delivery", () => {
      it("is asynchronous: never inside the write that caused it", async () => {
        const s = makeState();
        let writing = false;
        const calledDuringWrite: string[] = [];
        const rec = new Recorder();
        const cb = (e: Parameters<Recorder["cb"]>[0]) => {
          if (writing) calledDuringWrite.push(e.type);
          rec.cb(e);
        };
        s.watchKind(NS, TYPE, {}, cb);
        s.watch(ptr("a"), cb);
        writing = true;
        s.create(widget("a", {}), "c");
        s.update(widget("a", { n: 1 }), "c");
        writing = false;
        await rec.count(5);
        expect(calledDuringWrite).toEqual([]);
      });

      it("keeps order per subscriber under a burst and when callbacks write", async () => {
        const s = makeState();
        const rec = new Recorder();
        s.create(widget("a", { n: 0 }), "c");
        s.watch(ptr("a"), (e) => {
          rec.cb(e);
          // Writing from a callback must not reorder what this subscriber sees.
          if (e.resource.metadata.version === 5) s.create(widget("side", {}), "c");
        });
        for (let i = 1; i <= 50; i++) s.update(widget("a", { n: i }), "c");
        await rec.count(51);
        const versions = rec.events.map((e) => e.resource.metadata.version);
        expect(versions).toEqual(Array.from({ length: 51 }, (_, i) => i + 1));
        expect(s.get(ptr("side"))).toBeDefined();
      });

      it("unsubscribe stops delivery, including events already queued", async () => {
        const s = makeState();
        const rec = new Recorder();
        const stop = s.watchKind(NS, TYPE, {}, rec.cb);
        s.create(widget("a", {}), "c");
        stop();
        s.create(widget("b", {}), "c");
        const single = new Recorder();
        const stopSingle = s.watch(ptr("a"), single.cb);
        stopSingle();
        await settle();
        expect(rec.events).toEqual([]);
        expect(single.events).toEqual([]);
      });

      it("a throwing callback does not stop delivery to it or to other subscribers", async () => {
        const s = makeState();
        const good = new Recorder();
        let badCalls = 0;
        s.watchKind(NS, TYPE, {}, () => {
          badCalls++;
          throw new Error("boom");
        });
        s.watchKind(NS, TYPE, {}, good.cb);
        s.create(widget("a", {}), "c");
        s.create(widget("b", {}), "c");
        await good.count(2);
        expect(badCalls).toBe(2);
      });

      it("event payloads are copies: mutating one does not affect the store or other watchers", async () => {
        const s = makeState();
        const first = new Recorder();
        const second = new Recorder();
        s.watchKind(NS, TYPE, {}, (e) => {
          (e.resource.spec as { n: number }).n = 666;
          e.resource.metadata.labels.hacked = "yes";
          first.cb(e);
        });
        s.watchKind(NS, TYPE, {}, second.cb);
        s.create(widget("a", { n: 1 }), "c");
        await first.count(1);
        await second.count(1);
        expect(second.events[0].resource.spec).toEqual({ n: 1 });
        expect(s.get(ptr("a"))?.spec).toEqual({ n: 1 });
        expect(s.get(ptr("a"))?.metadata.labels).toEqual({});
      });
    });
  });
}
