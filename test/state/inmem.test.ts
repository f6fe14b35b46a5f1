import { describe, expect, it } from "vitest";
import { ApiError, Code } from "../../src/machinery/errors.js";
import { InMemoryState } from "../../src/state/inmem.js";
import { versionKey } from "../../src/state/versions.js";
import type { WatchEvent } from "../../src/state/types.js";
import { runStateConformance } from "./conformance.js";
import { NS, Recorder, TYPE, settle, widget } from "./helpers.js";

runStateConformance("InMemoryState", () => new InMemoryState());

describe("InMemoryState specifics", () => {
  const ptr = (id: string) => ({ namespace: NS, type: TYPE, id });

  it("keeps a bounded history per kind for tailEvents", async () => {
    const s = new InMemoryState({ historyCapacity: 4 });
    for (let i = 0; i < 10; i++) s.create(widget(`w${i}`, {}), "c");
    s.create(widget("x", {}, {}, "Others.test.talos.dev"), "c");
    const rec = new Recorder();
    s.watchKind(NS, TYPE, { tailEvents: 100 }, rec.cb);
    await rec.count(4);
    await settle();
    expect(rec.trace).toEqual(["created:w6@1", "created:w7@1", "created:w8@1", "created:w9@1"]);
  });

  it("sends one errored event and stops when a watcher falls too far behind", async () => {
    const s = new InMemoryState({ historyCapacity: 8, subscriberLimit: 5 });
    const rec = new Recorder();
    s.watchKind(NS, TYPE, {}, rec.cb);
    // Six writes in one synchronous burst overflow a 5-event queue.
    for (let i = 0; i < 6; i++) s.create(widget(`w${i}`, {}), "c");
    await rec.count(1);
    s.create(widget("later", {}), "c");
    await settle();
    expect(rec.events.map((e) => e.type)).toEqual(["errored"]);
    expect(rec.events[0].error).toContain("buffer overrun");
    expect(rec.events[0].error).toContain(TYPE);
    // A watcher that keeps up is unaffected.
    const ok = new Recorder();
    s.watchKind(NS, TYPE, {}, ok.cb);
    s.create(widget("again", {}), "c");
    await ok.count(1);
    expect(ok.trace).toEqual(["created:again@1"]);
  });

  it("teardown marks the phase; finalizers block destroy until removed", async () => {
    const s = new InMemoryState();
    s.create(widget("a", {}), "owner");
    s.addFinalizer(ptr("a"), "user");
    s.addFinalizer(ptr("a"), "user");
    expect(s.get(ptr("a"))?.metadata.finalizers).toEqual(["user"]);
    expect(s.teardown(ptr("a"), "owner")).toBe(false);
    expect(s.get(ptr("a"))?.metadata.phase).toBe("tearingDown");
    const version = s.get(ptr("a"))!.metadata.version;
    expect(s.teardown(ptr("a"), "owner")).toBe(false);
    expect(s.get(ptr("a"))!.metadata.version).toBe(version);
    let err: unknown;
    try {
      s.destroy(ptr("a"), "owner");
    } catch (e) {
      err = e;
    }
    expect((err as ApiError).code).toBe(Code.FailedPrecondition);
    s.removeFinalizer(ptr("a"), "user");
    expect(s.teardown(ptr("a"), "owner")).toBe(true);
    s.destroy(ptr("a"), "owner");
    expect(s.get(ptr("a"))).toBeUndefined();
  });

  it("apply keeps the stored finalizers and phase", () => {
    const s = new InMemoryState();
    s.create(widget("a", { n: 1 }), "owner");
    s.addFinalizer(ptr("a"), "user");
    s.teardown(ptr("a"), "owner");
    const applied = s.apply(widget("a", { n: 2 }), "owner");
    expect(applied.metadata.finalizers).toEqual(["user"]);
    expect(applied.metadata.phase).toBe("tearingDown");
  });
});

describe("InMemoryState versions and read-only access", () => {
  const ptr = (id: string) => ({ namespace: NS, type: TYPE, id });
  it("every copy of one version shares its versionKey; a new version, or the same number after re-creation, does not", () => {
    const s = new InMemoryState();
    s.create(widget("a", { n: 1 }), "owner");
    const k1 = versionKey(s.get(ptr("a"))!);
    expect(k1).toBeDefined();
    expect(versionKey(s.list(NS, TYPE)[0])).toBe(k1);
    s.apply(widget("a", { n: 1 }), "owner"); // unchanged: same version
    expect(versionKey(s.get(ptr("a"))!)).toBe(k1);
    s.update(widget("a", { n: 2 }), "owner");
    const k2 = versionKey(s.get(ptr("a"))!);
    expect(k2).not.toBe(k1);
    s.destroy(ptr("a"), "owner");
    s.create(widget("a", { n: 3 }), "owner");
    expect(s.get(ptr("a"))!.metadata.version).toBe(1);
    expect(versionKey(s.get(ptr("a"))!)).not.toBe(k1);
    expect(versionKey(widget("x", {}))).toBeUndefined();
  });

  it("read-only lists and watches hand out the stored objects, others get copies", async () => {
    const s = new InMemoryState();
    s.create(widget("a", { n: 1 }), "owner");
    const [r1] = s.list(NS, TYPE, { readOnly: true });
    const [r2] = s.list(NS, TYPE, { readOnly: true });
    expect(r1).toBe(r2);
    expect(s.list(NS, TYPE)[0]).not.toBe(r1);
    const seen: Record<string, WatchEvent[]> = { ro1: [], ro2: [], copy: [], id: [] };
    const stops = [
      s.watchKind(NS, TYPE, { readOnly: true }, (e) => seen.ro1.push(e)),
      s.watchKind(NS, TYPE, { readOnly: true }, (e) => seen.ro2.push(e)),
      s.watchKind(NS, TYPE, {}, (e) => seen.copy.push(e)),
      s.watch(ptr("a"), (e) => seen.id.push(e), { readOnly: true }),
    ];
    await settle();
    s.update(widget("a", { n: 2 }), "owner");
    await settle();
    const last = (k: string) => seen[k].at(-1)!;
    expect(last("ro1").resource).toBe(last("ro2").resource);
    expect(last("ro1").old).toBe(last("ro2").old);
    expect(last("id").resource).toBe(last("ro1").resource);
    expect(last("copy").resource).not.toBe(last("ro1").resource);
    expect(last("copy").resource).toEqual(last("ro1").resource);
    expect(versionKey(last("copy").resource)).toBe(versionKey(last("ro1").resource));
    for (const stop of stops) stop();
  });
});
