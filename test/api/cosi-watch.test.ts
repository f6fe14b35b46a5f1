/**
 * COSI Watch over the wire (a real node, real TLS, the real grpc-js client): the replies talosctl reads,
 * now that resources and events travel as bytes encoded once per version: the empty first reply, created
 * events and BOOTSTRAPPED, updates with their old version, destroys, tombstones for a missing resource,
 * aggregated replies and the legacy API version's filtering.
 */
import { fromBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventType, State, WatchRequestSchema, WatchResponseSchema, type WatchResponse } from "../../src/machinery/api/gen/cosi/state_pb.js";
import { MountStatusSpecSchema as RuntimeMountStatusSpecSchema } from "../../src/machinery/api/gen/resource/definitions/runtime/runtime_pb.js";
import { newResource } from "../../src/machinery/resources/resource.js";
import { RuntimeMountStatusType, type RuntimeMountStatusSpec } from "../../src/machinery/resources/types/block.js";
import type { TestClient } from "../helpers/client.js";
import { insecureClient, startNode, type Harness } from "./harness.js";
import { eventually } from "../state/helpers.js";

const NS = RuntimeMountStatusType.defaultNamespace;
const TYPE = RuntimeMountStatusType.type;
const OWNER = "test.MountWriter";

let h: Harness;
let c: TestClient;
beforeAll(async () => {
  h = await startNode();
  c = insecureClient(h);
});
afterAll(async () => {
  c.close();
  await h.stop();
});

const mount = (target: string, fs = "xfs"): RuntimeMountStatusSpec => ({ source: "/dev/vda5", target, filesystemType: fs, options: ["rw"], encrypted: false });
const put = (id: string, spec: RuntimeMountStatusSpec) => h.node.node.state.apply(newResource({ namespace: NS, type: TYPE, id }, spec), OWNER);

/** Opens a Watch and collects its replies until the test is done with it. */
function watch(req: Parameters<TestClient["stream"]>[4]) {
  const replies: WatchResponse[] = [];
  const done = c
    .stream(State, "Watch", WatchRequestSchema, WatchResponseSchema, req as never, { deadlineMs: 20_000, onMessage: (m) => replies.push(m as WatchResponse) })
    .catch(() => undefined);
  const events = () => replies.flatMap((r) => r.event);
  return { replies, events, done };
}

describe("COSI Watch on the wire", () => {
  it("bootstraps, then sends updates with the old version and destroys", async () => {
    put("/a", mount("/a"));
    put("/b", mount("/b"));
    const w = watch({ namespace: NS, type: TYPE, apiVersion: 1, options: { bootstrapContents: true } });
    await eventually(() => w.events().some((e) => e.eventType === EventType.BOOTSTRAPPED), 5000, "bootstrapped");
    expect(w.replies[0].event).toEqual([]);
    const boot = w.events();
    const created = boot.filter((e) => e.eventType === EventType.CREATED).map((e) => e.resource!.metadata!.id);
    expect(created).toEqual(expect.arrayContaining(["/a", "/b"]));
    const bs = boot.find((e) => e.eventType === EventType.BOOTSTRAPPED)!;
    expect(bs.resource?.metadata).toMatchObject({ namespace: NS, type: TYPE, version: "undefined", owner: "" });
    expect(bs.resource?.spec?.yamlSpec ?? "").toBe("");
    const a = boot.find((e) => e.resource?.metadata?.id === "/a")!;
    expect(a.resource?.metadata).toMatchObject({ version: "1", owner: OWNER, phase: "running" });
    expect(a.resource?.spec?.yamlSpec).toContain("target: /a");
    expect(fromBinary(RuntimeMountStatusSpecSchema, a.resource!.spec!.protoSpec).target).toBe("/a");

    const before = w.events().length;
    put("/a", mount("/a", "ext4"));
    await eventually(() => w.events().length > before, 5000, "update");
    const up = w.events()[before];
    expect(up.eventType).toBe(EventType.UPDATED);
    expect(up.resource?.metadata?.version).toBe("2");
    expect(up.resource?.spec?.yamlSpec).toContain("filesystemType: ext4");
    expect(up.old?.metadata?.version).toBe("1");
    expect(up.old?.spec?.yamlSpec).toContain("filesystemType: xfs");

    h.node.node.state.destroy({ namespace: NS, type: TYPE, id: "/b" }, OWNER);
    await eventually(() => w.events().length > before + 1, 5000, "destroy");
    const gone = w.events()[before + 1];
    expect(gone.eventType).toBe(EventType.DESTROYED);
    expect(gone.resource?.metadata).toMatchObject({ id: "/b", version: "1" });
  });

  it("aggregates the bootstrap into fewer replies when asked", async () => {
    put("/c", mount("/c"));
    const w = watch({ namespace: NS, type: TYPE, apiVersion: 1, options: { bootstrapContents: true, aggregated: true } });
    await eventually(() => w.events().some((e) => e.eventType === EventType.BOOTSTRAPPED), 5000, "bootstrapped");
    expect(w.replies.slice(1).some((r) => r.event.length > 1)).toBe(true);
  });

  it("watches one resource: a tombstone while it is missing, then the resource", async () => {
    const w = watch({ namespace: NS, type: TYPE, id: "/later", apiVersion: 1 });
    await eventually(() => w.events().length === 1, 5000, "tombstone");
    expect(w.events()[0].eventType).toBe(EventType.DESTROYED);
    expect(w.events()[0].resource?.metadata).toMatchObject({ id: "/later", version: "undefined" });
    put("/later", mount("/later"));
    await eventually(() => w.events().length === 2, 5000, "created");
    expect(w.events()[1].eventType).toBe(EventType.CREATED);
    expect(w.events()[1].resource?.spec?.yamlSpec).toContain("target: /later");
  });

  it("leaves BOOTSTRAPPED out for the legacy API version", async () => {
    put("/d", mount("/d"));
    const w = watch({ namespace: NS, type: TYPE, apiVersion: 0, options: { bootstrapContents: true } });
    await eventually(() => w.events().some((e) => e.resource?.metadata?.id === "/d"), 5000, "bootstrap contents");
    put("/d", mount("/d", "vfat"));
    await eventually(() => w.events().some((e) => e.eventType === EventType.UPDATED), 5000, "update");
    expect(w.events().some((e) => e.eventType === EventType.BOOTSTRAPPED)).toBe(false);
  });
});
