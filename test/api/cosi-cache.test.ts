/**
 * The COSI handlers encode each resource version once: a List sent again, a Get, and one event fanned
 * out to 100 watchers reuse the same encoding; a new version (or a re-created resource) is encoded anew.
 * Counted with a resource type whose encoders count their calls; the handlers run against the real store.
 */
import { getEventListeners } from "node:events";
import { create, fromBinary, toBinary, type DescMessage, type MessageInitShape } from "@bufbuild/protobuf";
import { afterEach, describe, expect, it } from "vitest";
import { cosiHandlers } from "../../src/api/handlers/cosi.js";
import type { ApiDeps } from "../../src/api/deps.js";
import type { CallContext } from "../../src/api/transport/context.js";
import {
  GetRequestSchema, GetResponseSchema, ListRequestSchema, ListResponseSchema, WatchRequestSchema, WatchResponseSchema,
} from "../../src/machinery/api/gen/cosi/state_pb.js";
import { newResource, type ResourceType } from "../../src/machinery/resources/resource.js";
import { TypeRegistry } from "../../src/machinery/resources/registry.js";
import { InMemoryState } from "../../src/state/inmem.js";
import { eventually } from "../state/helpers.js";

const NS = "test";
const TYPE = "Widgets.test.talos.dev";
const counts = { yaml: 0, proto: 0 };
const widgetType: ResourceType<{ n: number }> = {
  type: TYPE,
  defaultNamespace: NS,
  toYaml: (s) => (counts.yaml++, `n: ${s.n}\n`),
  toProto: (s) => (counts.proto++, new Uint8Array([8, s.n])),
};

const aborts: AbortController[] = [];
afterEach(() => {
  for (const a of aborts.splice(0)) a.abort();
  counts.yaml = counts.proto = 0;
});

function setup() {
  const state = new InMemoryState();
  const types = new TypeRegistry().register(widgetType).registerNamespace(NS, "test");
  const h = cosiHandlers({ state, types } as unknown as ApiDeps);
  const ctx = (): CallContext => {
    const a = new AbortController();
    aborts.push(a);
    return { method: "", roles: new Set(["os:admin"]), maintenance: false, metadata: undefined as never, peer: "", signal: a.signal };
  };
  const w = (id: string, n: number) => newResource({ namespace: NS, type: TYPE, id }, { n });
  return { state, h, ctx, w };
}

/** What the transport does with a reply: create, encode; then what a client does: decode. */
const wire = <D extends DescMessage>(schema: D, m: MessageInitShape<D>) => fromBinary(schema, toBinary(schema, create(schema, m)));
const listYaml = (m: MessageInitShape<typeof ListResponseSchema>) => wire(ListResponseSchema, m).resource!.spec!.yamlSpec;
const eventYaml = (m: MessageInitShape<typeof WatchResponseSchema>) => wire(WatchResponseSchema, m).event.map((e) => e.resource!.spec!.yamlSpec);

describe("COSI encodings per resource version", () => {
  it("a List sent twice and a Get encode each resource once", async () => {
    const { state, h, ctx, w } = setup();
    for (let i = 0; i < 10; i++) state.create(w(`w${i}`, i), "ctrl");
    const list = async () => {
      const out: string[] = [];
      await h.List(create(ListRequestSchema, { namespace: NS, type: TYPE }), async (m: MessageInitShape<typeof ListResponseSchema>) => void out.push(listYaml(m)), ctx());
      return out;
    };
    expect(await list()).toEqual(Array.from({ length: 10 }, (_, i) => `n: ${i}\n`));
    expect(await list()).toHaveLength(10);
    const got = wire(GetResponseSchema, await h.Get(create(GetRequestSchema, { namespace: NS, type: TYPE, id: "w3" }), ctx()));
    expect(got.resource?.spec?.yamlSpec).toBe("n: 3\n");
    expect(got.resource?.spec?.protoSpec).toEqual(new Uint8Array([8, 3]));
    expect(got.resource?.metadata).toMatchObject({ namespace: NS, type: TYPE, id: "w3", version: "1", owner: "ctrl", phase: "running" });
    expect(counts).toEqual({ yaml: 10, proto: 10 });
  });

  it("one event to 100 watchers is encoded once; the next version once more", async () => {
    const { state, h, ctx, w } = setup();
    state.create(w("a", 1), "ctrl");
    const got: string[][] = Array.from({ length: 100 }, () => []);
    const olds: string[] = [];
    const req = create(WatchRequestSchema, { namespace: NS, type: TYPE, apiVersion: 1 });
    for (let i = 0; i < 100; i++) {
      void h.Watch(req, async (m: MessageInitShape<typeof WatchResponseSchema>) => {
        got[i].push(...eventYaml(m));
        for (const e of wire(WatchResponseSchema, m).event) if (e.old && got[i].length === 1) olds.push(e.old.spec!.yamlSpec);
      }, ctx());
    }
    await new Promise((r) => setTimeout(r, 20));
    state.update(w("a", 2), "ctrl");
    await eventually(() => got.every((g) => g.length === 1), 5000, "100 watchers notified");
    expect(olds).toHaveLength(100);
    expect(got.every((g) => g[0] === "n: 2\n")).toBe(true);
    expect(olds.every((o) => o === "n: 1\n")).toBe(true);
    // The update event carries the old version too: two versions, each encoded once.
    expect(counts).toEqual({ yaml: 2, proto: 2 });
    state.update(w("a", 3), "ctrl");
    await eventually(() => got.every((g) => g.length === 2), 5000, "second event");
    expect(counts).toEqual({ yaml: 3, proto: 3 });
  });

  it("a resource destroyed and created again with the same version number is encoded anew", async () => {
    const { state, h, ctx, w } = setup();
    const get = async () => wire(GetResponseSchema, await h.Get(create(GetRequestSchema, { namespace: NS, type: TYPE, id: "a" }), ctx())).resource?.spec?.yamlSpec;
    state.create(w("a", 1), "ctrl");
    expect(await get()).toBe("n: 1\n");
    state.destroy({ namespace: NS, type: TYPE, id: "a" }, "ctrl");
    state.create(w("a", 7), "ctrl");
    expect(state.get({ namespace: NS, type: TYPE, id: "a" })?.metadata.version).toBe(1);
    expect(await get()).toBe("n: 7\n");
  });

  it("a long Watch holds one abort listener, however many events it sends", async () => {
    const { state, h, ctx, w } = setup();
    state.create(w("a", 0), "ctrl");
    const c = ctx();
    let events = 0;
    const done = h.Watch(create(WatchRequestSchema, { namespace: NS, type: TYPE, id: "a", apiVersion: 1 }), async (m: MessageInitShape<typeof WatchResponseSchema>) => {
      events += wire(WatchResponseSchema, m).event.length;
    }, c);
    await eventually(() => events === 1, 5000, "current state");
    for (let i = 1; i <= 30; i++) {
      state.update(w("a", i), "ctrl");
      await eventually(() => events >= i + 1, 5000, `event ${i}`);
    }
    expect(getEventListeners(c.signal, "abort").length).toBe(1);
    aborts.at(-1)!.abort();
    await done;
    expect(getEventListeners(c.signal, "abort").length).toBe(0);
  });
});
